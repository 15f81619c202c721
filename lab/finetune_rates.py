"""Which fine-tuning learning rate suits pre-trained weights, and which suits random ones.

The paper picks its fine-tuning learning rate per task on the dev set from a short list (section
4.1). A comparison of pre-trained and from-scratch models at *one* rate can be unfair to either:
random weights may want a larger rate than pre-trained ones, which a large rate can wash out. A
grid of rates run for both arms with the same seeds (`scripts/record_finetune_lr.py`, rows in the
format of `pilots.finetune_sweeps`) answers it: each arm read at its own best rate.

    grid = rate_grid(rows, recipe_lr=5e-4)  # rows of one task and one training-set size
    grid.best("pretrained"), grid.gain_at(5e-4), grid.best_gain()
    grid_table(grid), grid_reading(grid, n_dev=872)   # Markdown for the book
    recorded_on(meta)                                 # the machine, from the file's first line
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from bertlab.experiments.reference import ARMS
from bertlab.prose import count, rate
from bertlab.tasks.metrics import against_each_other
from bertlab.verdict import CLEAR, WITHIN


@dataclass(frozen=True)
class RateGrid:
    """One task and training-set size: the median dev score (over the same seeds) of each arm at
    each learning rate that both arms ran."""

    task: str
    train_examples: int | None
    seeds: tuple[int, ...]
    medians: dict[str, dict[float, float]]  # arm -> lr -> median score (%)
    scores: dict[str, dict[float, tuple[float, ...]]]  # arm -> lr -> the seeds' scores
    recipe_lr: float | None = None  # the rate the record's fine-tuning uses, if it is in the grid

    @property
    def rates(self) -> list[float]:
        return sorted(self.medians["pretrained"])

    def best(self, arm: str) -> tuple[float, float]:
        """(learning rate, median) of the arm's highest median; of equal medians, the lower rate."""
        if arm not in ARMS:
            raise ValueError(f"arm must be one of {ARMS}, not {arm!r}")
        return max(((lr, m) for lr, m in self.medians[arm].items()), key=lambda x: (x[1], -x[0]))

    def gain_at(self, lr: float) -> float:
        """Pre-trained median minus from-scratch median at one rate, in points."""
        if lr not in self.medians["pretrained"]:
            raise ValueError(f"lr {rate(lr)} is not in the grid ({', '.join(rate(r) for r in self.rates)})")
        return self.medians["pretrained"][lr] - self.medians["scratch"][lr]

    def best_gain(self) -> float:
        """Each arm at its own best rate: pre-trained best minus from-scratch best, in points."""
        return self.best("pretrained")[1] - self.best("scratch")[1]


def rate_grid(
    rows: Sequence[dict[str, Any]],
    task: str = "sst2",
    train_examples: int | None = 2000,
    recipe_lr: float | None = None,
) -> RateGrid | None:
    """The grid of one task and size from a sweep's rows (task, train_examples, lr, init, seeds,
    scores, median): only rates both arms ran with the same seeds. None when fewer than two such
    rates were run."""
    by_arm: dict[str, dict[float, dict[str, Any]]] = {arm: {} for arm in ARMS}
    for r in rows:
        if r.get("task") == task and r.get("train_examples") == train_examples and r.get("init") in ARMS:
            by_arm[r["init"]][r["lr"]] = r
    both = sorted(
        lr
        for lr in by_arm["pretrained"]
        if lr in by_arm["scratch"] and by_arm["pretrained"][lr]["seeds"] == by_arm["scratch"][lr]["seeds"]
    )
    if len(both) < 2:
        return None
    seed_sets = {tuple(by_arm["pretrained"][lr]["seeds"]) for lr in both}
    if len(seed_sets) != 1:
        raise ValueError(f"the rates of the grid were run with different seeds: {sorted(seed_sets)}")
    return RateGrid(
        task=task,
        train_examples=train_examples,
        seeds=seed_sets.pop(),
        medians={arm: {lr: float(by_arm[arm][lr]["median"]) for lr in both} for arm in ARMS},
        scores={arm: {lr: tuple(by_arm[arm][lr]["scores"]) for lr in both} for arm in ARMS},
        recipe_lr=recipe_lr if recipe_lr in both else None,
    )


def grid_table(grid: RateGrid) -> str:
    """Markdown: one row per learning rate, both arms' medians (each arm's best in bold), the gain,
    and the seeds' spread."""

    def cell(arm: str, lr: float) -> str:
        m, s = grid.medians[arm][lr], grid.scores[arm][lr]
        text = f"{m:.1f}"
        text = f"**{text}**" if grid.best(arm)[0] == lr else text
        return f"{text} ({min(s):.1f}-{max(s):.1f})" if len(s) > 1 else text

    rows = ["| learning rate | pre-trained | from scratch | gain |", "|---|---|---|---|"]
    for lr in grid.rates:
        name = rate(lr) + (" (the recipe's)" if lr == grid.recipe_lr else "")
        rows.append(f"| {name} | {cell('pretrained', lr)} | {cell('scratch', lr)} | {grid.gain_at(lr):+.1f} |")
    return "\n".join(rows)


def grid_reading(grid: RateGrid, n_dev: int) -> str:
    """A paragraph on the grid: each arm's best rate, the gain at the recipe's rate and at each
    arm's own best, and whether that gain is more than two standard errors of a difference between
    two accuracies on `n_dev` examples."""
    (lr_p, m_p), (lr_s, m_s) = grid.best("pretrained"), grid.best("scratch")
    seeds = len(grid.seeds)
    med = f"the median of {count(seeds, 'seed')}" if seeds > 1 else "one seed"
    text = (
        f"Over the {count(len(grid.rates), 'learning rate')} tried ({med} each), the pre-trained encoder "
        f"does best at {rate(lr_p)} ({m_p:.1f}%) and its twin from scratch at {rate(lr_s)} ({m_s:.1f}%). "
    )
    if lr_p == lr_s:
        text += "Both arms prefer the same rate. "
    else:
        faster = "pre-trained encoder" if lr_p > lr_s else "model from scratch"
        text += f"The {faster} wants the larger rate. "
    best = grid.best_gain()
    if grid.recipe_lr is not None:
        at = grid.gain_at(grid.recipe_lr)
        text += (
            f"At the recipe's rate of {rate(grid.recipe_lr)} pre-training gains {at:+.1f} points; with each arm "
            f"at its own best rate, {best:+.1f}"
        )
        if round(best, 1) <= round(at, 1):
            text += ", so the shared rate was not hiding a larger gain. "
        else:
            text += f", so the shared rate understates pre-training's gain by {best - at:.1f} points. "
    else:
        text += f"With each arm at its own best rate pre-training gains {best:+.1f} points. "
    r = against_each_other(m_p, m_s, n_dev)
    if r.words == WITHIN:
        verdict = "within two standard errors"
        then = "so on this dev set alone the two arms are hard to tell apart"
    else:
        verdict = "more than two standard errors"
        ahead = "pre-trained encoder" if r.words == CLEAR else "model from scratch"
        then = f"a difference the dev set's luck alone rarely makes, with the {ahead} ahead"
    text += (
        f"A gain of {best:+.1f} at each arm's best is {verdict} ({r.high - r.gain:.1f} points) of a difference "
        f"between two accuracies on {n_dev:,} sentences, {then}. Choosing each arm's rate on the dev "
        "set flatters both arms alike, by the luck of the best of several tries."
    )
    widest = max(grid.rates, key=grid.gain_at)
    if widest not in (lr_p, lr_s) and grid.gain_at(widest) > best:
        below_p = m_p - grid.medians["pretrained"][widest]
        below_s = m_s - grid.medians["scratch"][widest]
        text += (
            f" The widest gap of the table, {grid.gain_at(widest):+.1f} at {rate(widest)}, is no measure of "
            f"pre-training: that rate harms both arms ({below_p:.1f} and {below_s:.1f} points below their "
            f"best), {'the model from scratch' if below_s > below_p else 'the pre-trained one'} more."
        )
    return text


def recorded_on(meta: dict[str, Any]) -> str:
    """Where a grid ran, in words, from its file's `meta` (runtime.machine's fields): "Recorded in
    fp32 on a 2-core AMD EPYC (family/model 25/1), torch 2.13.0+cpu." """
    m = meta.get("machine")
    if not isinstance(m, dict) or "device" not in m:
        return "The machine was not recorded."
    if str(m["device"]).startswith("cpu"):
        cores = f"a {m['cores']}-core " if m.get("cores") else "a "
        family = f" (family/model {m['cpu_family_model']})" if m.get("cpu_family_model") else ""
        where = f"{cores}{m.get('cpu') or 'CPU'}{family}"
    else:
        where = str(m["device"])
    precision = f"in {m['precision']} " if m.get("precision") else ""
    torch = f", torch {m['torch']}" if m.get("torch") else ""
    return f"Recorded {precision}on {where}{torch}."
