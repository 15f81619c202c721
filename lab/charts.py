"""The charts of the lab's own records: pilot series, whole runs by tokens, and what pretraining
bought task by task. The lab's pages draw them; the book's chapters draw theirs with
bertlab.analysis.viz."""

from __future__ import annotations

import numpy as np

from lab.record_gains import TASK_TITLES


def pilot_curves(series, ax=None, title: str | None = None, threshold: float | None = None):
    """Held-out MLM accuracy against training tokens for every run of a pilot series
    (lab.pilots.Series): up to the series' common tokens, or whole for a timed series;
    a pilot that trained past the common tokens (two layers for the CPU time of four) goes on as a
    dashed line in its colour. `threshold` (a fraction, e.g. 0.2) draws a dotted line there."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7, 3.6), layout="tight")
    for run in series.runs:
        pts = [q for q in run["heldout"] if series.minutes or q["tokens"] <= series.tokens]
        (line,) = ax.plot(
            [q["tokens"] / 1e6 for q in pts],
            [100 * q["mlm_acc"] for q in pts],
            "o-",
            ms=3,
            label=run["name"],
            lw=2.2 if run is series.baseline else 1.2,
        )
        past = [q for q in run["heldout"] if q["tokens"] >= series.tokens]
        if not series.minutes and run is not series.baseline and len(past) > 1:
            ax.plot(
                [q["tokens"] / 1e6 for q in past],
                [100 * q["mlm_acc"] for q in past],
                "o--",
                ms=3,
                lw=1.2,
                color=line.get_color(),
            )
    if threshold is not None:
        ax.axhline(100 * threshold, color="grey", ls=":", lw=1)
    ax.set(
        xlabel="training tokens (millions)",
        ylabel="held-out MLM accuracy (%)",
        title=title or f"{series.name} and one change at a time",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def gains_chart(rows, floors=None, ax=None, title: str | None = None):
    """What pretraining bought, task by task: one line per fine-tuning (`rows` as
    bertlab.experiments.reference.ReferenceRun.gains returns them), every seed a dot, from scratch
    (grey circles) and from the pretrained weights (blue diamonds), the medians joined by an arrow
    labelled with the gain in points, and the task's trivial floor (`floors`: {(task, n) or task:
    points}, e.g. the majority class or all-"paraphrase" F1) as a black bar. Scores in points, 0-100."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.3), layout="tight")
    floors = floors or {}
    names = TASK_TITLES
    y = np.arange(len(rows))[::-1]
    labels = []
    for yi, r in zip(y, rows):
        n = r.get("train_examples")
        size = f", {n:,} {'questions' if r['task'] == 'squad' else 'examples'}" if n else ""
        labels.append(f"{names.get(r['task'], r['task'])}{size}\n({r['metric']})")
        jitter = np.linspace(-0.12, 0.12, max(len(r["scratch_scores"]), 1))
        ax.scatter(r["scratch_scores"], yi + jitter[: len(r["scratch_scores"])], s=22, color="0.55", zorder=3)
        jitter = np.linspace(-0.12, 0.12, max(len(r["pretrained_scores"]), 1))
        ax.scatter(
            r["pretrained_scores"],
            yi + jitter[: len(r["pretrained_scores"])],
            s=30,
            marker="D",
            color="tab:blue",
            zorder=3,
        )
        ax.annotate(
            "",
            xy=(r["pretrained"], yi + 0.3),
            xytext=(r["scratch"], yi + 0.3),
            arrowprops={"arrowstyle": "->", "color": "tab:green" if r["gain"] >= 0 else "tab:red"},
        )
        ax.text(max(r["pretrained"], r["scratch"]) + 1, yi + 0.3, f"{r['gain']:+.1f}", va="center", fontsize=8)
        floor = floors.get((r["task"], n), floors.get(r["task"]))
        if floor is not None:
            ax.plot([floor, floor], [yi - 0.3, yi + 0.3], color="black", lw=2, zorder=2)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("dev score (points): grey = from scratch, blue = pretrained, black bar = trivial floor")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    return ax


def runs_by_tokens(runs, threshold: float | None = None, ax=None, title: str | None = None):
    """Held-out MLM accuracy against training tokens for whole runs of different lengths: `runs`
    is a list of (label, points), each point a dict with "tokens" and "mlm_acc" (a fraction), as
    lab.pilots.whole_run_rows gives them; `threshold` (a fraction, e.g. 0.2) draws
    a dotted line there. Returns the Axes."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7, 3.6), layout="tight")
    for label, points in runs:
        ax.plot([q["tokens"] / 1e6 for q in points], [100 * q["mlm_acc"] for q in points], "o-", ms=3, label=label)
    if threshold is not None:
        ax.axhline(100 * threshold, color="grey", ls=":", lw=1)
    ax.set(xlabel="training tokens (millions)", ylabel="held-out MLM accuracy (%)")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax
