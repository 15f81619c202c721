"""What a run reports: JSON-lines metrics, a progress bar and the book's plots.

Every `log_every` steps the training loop appends one JSON object to `<run>/metrics.jsonl`:

    {"step": 200, "split": "train", "loss": 5.1, "mlm_loss": 4.5, "nsp_loss": 0.6, "mlm_acc": 0.21,
     "nsp_acc": 0.71, "lr": 0.0007, "tokens_per_s": 91000.0, "mfu": 0.31, "elapsed_s": 12.3, ...}

and every `eval_every` steps a line with "split": "eval". Each line is flushed, so the file
survives a crash; `read_metrics` reads it back and `plot_metrics` draws the book's curves.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterable

from bertlab.files import write_text


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "nan" / "inf": valid JSON, and visible
    return v


class MetricsLogger:
    """Appends one JSON object per line; does nothing on ranks other than 0 (enabled=False)."""

    def __init__(self, path: str | Path, enabled: bool = True):
        self.path = Path(path)
        self.enabled = enabled
        self.records: list[dict[str, Any]] = []
        self._f = None
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "a", buffering=1)

    def log(self, record: dict[str, Any]) -> None:
        record = {k: _clean(v) for k, v in record.items()}
        self.records.append(record)
        if self._f is not None:
            self._f.write(json.dumps(record) + "\n")
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
            self._f = None


def read_metrics(path: str | Path, split: str | None = None) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl (optionally only "train" or "eval" lines); where a resumed run
    logged a step twice, the later line wins."""
    by_key: dict[tuple, dict[str, Any]] = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if split is not None and r.get("split") != split:
            continue
        by_key[(r.get("split"), r.get("step"))] = r
    return sorted(by_key.values(), key=lambda r: (r.get("step", 0), str(r.get("split"))))


def heldout_by_phase(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The held-out evaluations grouped by the training sequence length in force (a run with length
    phases): per phase, its `seq_len`, the `steps` evaluated and the `mlm_acc` of its first and last
    evaluation. Evaluations before any training line with a `seq_len` are left out."""
    records = sorted(records, key=lambda r: r.get("step", 0))
    phases: list[dict[str, Any]] = []
    seq_len = None
    for r in records:
        if r.get("split") == "train":
            seq_len = r.get("seq_len", seq_len)
        elif r.get("split") == "eval" and seq_len is not None and r.get("mlm_acc") is not None:
            if not phases or phases[-1]["seq_len"] != seq_len:
                phases.append({"seq_len": seq_len, "steps": [], "first_acc": r["mlm_acc"]})
            phases[-1]["steps"].append(r["step"])
            phases[-1]["last_acc"] = r["mlm_acc"]
    return phases


def truncate_metrics(path: str | Path, after_step: int) -> None:
    """Drop lines logged after `after_step` (used on resume, so the file shows one history)."""
    path = Path(path)
    if not path.exists():
        return
    keep = [
        line for line in path.read_text().splitlines() if line.strip() and json.loads(line).get("step", 0) <= after_step
    ]
    write_text(path, "".join(line + "\n" for line in keep), fsync=False)


def progress_bar(total: int | None, desc: str, enabled: bool = True, initial: int = 0):
    """A tqdm.auto bar (a widget in Jupyter, text in a terminal); off when not enabled or BERTLAB_PROGRESS=0."""
    from tqdm.auto import tqdm

    disable = (not enabled) or os.environ.get("BERTLAB_PROGRESS", "1") == "0"
    return tqdm(
        total=total,
        desc=desc,
        unit="step",
        initial=initial,
        disable=disable,
        dynamic_ncols=True,
        file=sys.stderr,
        mininterval=1.0,
    )


def format_postfix(record: dict[str, Any]) -> dict[str, str]:
    out = {}
    if "loss" in record:
        out["loss"] = f"{record['loss']:.3f}" if isinstance(record["loss"], float) else str(record["loss"])
    if record.get("mlm_acc") is not None:
        out["mlm_acc"] = f"{record['mlm_acc']:.3f}"
    if record.get("tokens_per_s"):
        out["tok/s"] = f"{record['tokens_per_s'] / 1e3:.1f}k"
    if record.get("mfu") is not None:
        out["mfu"] = f"{100 * record['mfu']:.1f}%"
    return out


def plot_metrics(source: str | Path | Iterable[dict[str, Any]], axes=None, title: str | None = None, x: str = "step"):
    """Draw the loss, the LM's accuracy, NSP accuracy (when trained) and tokens/s, training (lines)
    and held-out (markers), against `x` ("step" or "tokens"), from a metrics.jsonl path or a list
    of records. Axes beyond the panels drawn are hidden. Returns the Figure."""
    import matplotlib.pyplot as plt

    records = read_metrics(source) if isinstance(source, (str, Path)) else list(source)
    train = [r for r in records if r.get("split", "train") == "train"]
    evals = [r for r in records if r.get("split") == "eval"]
    if x == "tokens" and evals and not all("tokens" in r for r in evals):
        # held-out records carry the step only: the tokens of the training record at that step
        at = {r["step"]: r.get("tokens") for r in train}
        evals = [{**r, "tokens": at.get(r["step"])} for r in evals]
    logged = {k for r in records for k, v in r.items() if isinstance(v, (int, float))}
    panels = [("loss", "loss (MLM + NSP)" if "nsp_loss" in logged else "loss")]
    accuracies = {"mlm_acc": "MLM accuracy", "next_token_acc": "next-token accuracy", "nsp_acc": "NSP accuracy"}
    panels += [(k, label) for k, label in accuracies.items() if k in logged]
    panels.append(("tokens_per_s", "tokens / s"))
    if axes is None:
        _, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
    axes, fig = list(axes), axes[0].figure
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    for ax, (key, label) in zip(axes, panels):
        for rows, style, name in ((train, "-", "train"), (evals, "o-", "held-out")):
            pts = [(r[x], r[key]) for r in rows if isinstance(r.get(key), (int, float)) and r.get(x) is not None]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, style, label=name, lw=1.2 if name == "train" else 1.5, ms=3)
        if not ax.lines:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes, color="grey")
        ax.set_xlabel(x)
        ax.set_title(label)
        ax.grid(alpha=0.3)
        if len(ax.lines) > 1:
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
