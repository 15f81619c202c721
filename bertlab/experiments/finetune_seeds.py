"""How far pre-training's gain on a small task moves with the fine-tuning seed.

The reference run fine-tunes each arm (pre-trained, from scratch) with three seeds and reports the
difference of the two medians. On SST-2 with 2,000 labelled sentences that gain is two or three
points, about twenty dev sentences, and the seed decides the classifier's initial weights, the
order of the batches and the dropout masks. Running more seeds of the same fine-tuning
(`scripts/record_finetune_lr.py --lrs 5e-4 --seeds 0 1 ... 9`, rows in the format of
`pilots.finetune_sweeps`) measures how much of the reported gain is the draw:

    g = seed_gains(rows, train_examples=2000)     # one task, size and rate; both arms, same seeds
    g.gain(), g.paired(), g.first(3).gain()       # the gain of the medians; per seed; the first 3
    g.interval()                                  # a bootstrap over the seeds (paired)
    seeds_reading(g, target=3.0)                  # the sentence the book prints
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from bertlab.experiments.finetune_rates import ARMS


@dataclass(frozen=True)
class SeedGains:
    """Both arms of one fine-tuning setting run with the same seeds: each seed's dev score (%)."""

    task: str
    train_examples: int | None
    lr: float
    seeds: tuple[int, ...]
    pretrained: tuple[float, ...]
    scratch: tuple[float, ...]

    def __post_init__(self):
        if not self.seeds or len(self.pretrained) != len(self.seeds) or len(self.scratch) != len(self.seeds):
            raise ValueError(
                f"need one score per seed in each arm: {len(self.seeds)} seeds, "
                f"{len(self.pretrained)} and {len(self.scratch)} scores"
            )

    def gain(self) -> float:
        """Pre-trained median minus from-scratch median, in points (the reference run's measure)."""
        return statistics.median(self.pretrained) - statistics.median(self.scratch)

    def paired(self) -> tuple[float, ...]:
        """Each seed's pre-trained score minus its from-scratch score (the same seed draws the same
        batches in both arms), in points."""
        return tuple(a - b for a, b in zip(self.pretrained, self.scratch))

    def first(self, k: int) -> SeedGains:
        """The same setting read from its first k seeds only (the reference run's three, say)."""
        if not 1 <= k <= len(self.seeds):
            raise ValueError(f"k must be between 1 and the {len(self.seeds)} seeds run, got {k}")
        return SeedGains(self.task, self.train_examples, self.lr, self.seeds[:k], self.pretrained[:k], self.scratch[:k])

    def interval(self, level: float = 0.9, draws: int = 4000, seed: int = 0) -> tuple[float, float]:
        """A bootstrap interval for `gain()`: the seeds drawn again with replacement, both arms' scores
        of a drawn seed together, `draws` times; the central `level` of the gains of the medians."""
        if not 0 < level < 1:
            raise ValueError(f"level must be between 0 and 1, got {level}")
        rng, n = random.Random(seed), len(self.seeds)
        gains = []
        for _ in range(draws):
            idx = [rng.randrange(n) for _ in range(n)]
            pre = statistics.median(self.pretrained[i] for i in idx)
            scr = statistics.median(self.scratch[i] for i in idx)
            gains.append(pre - scr)
        gains.sort()
        tail = (1 - level) / 2
        return gains[int(tail * draws)], gains[min(draws - 1, int((1 - tail) * draws))]


def seed_gains(
    rows: Sequence[dict[str, Any]], task: str = "sst2", train_examples: int | None = 2000, lr: float | None = None
) -> SeedGains | None:
    """The setting with the most seeds that both arms ran alike (task, train_examples, lr, the same
    seeds) in a sweep's rows (task, train_examples, lr, init, seeds, scores); `lr` picks one rate.
    None when no setting has both arms."""
    by_key: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in rows:
        if r.get("task") != task or r.get("train_examples") != train_examples or r.get("init") not in ARMS:
            continue
        if lr is not None and r["lr"] != lr:
            continue
        by_key.setdefault((r["lr"], tuple(r["seeds"])), {})[r["init"]] = r
    both = {k: v for k, v in by_key.items() if set(v) == set(ARMS)}
    if not both:
        return None
    (rate, seeds), arms = max(both.items(), key=lambda kv: (len(kv[0][1]), kv[0][0]))
    return SeedGains(
        task,
        train_examples,
        rate,
        seeds,
        tuple(arms["pretrained"]["scores"]),
        tuple(arms["scratch"]["scores"]),
    )


def seeds_reading(g: SeedGains, shown: int = 3, target: float | None = None, level: float = 0.9) -> str:
    """In words: the gain over all the seeds, what the first `shown` seeds (the reference run's)
    said, the paired gains' range, a bootstrap interval and, with a target, how many seeds reach it."""
    n, lo_hi = len(g.seeds), g.interval(level)
    paired = g.paired()
    size = f" with {g.train_examples:,} labelled sentences" if g.train_examples else ""
    text = (
        f"Over {n} fine-tuning seeds{size} (lr {g.lr:g}), the pre-trained median is "
        f"{statistics.median(g.pretrained):.1f} against {statistics.median(g.scratch):.1f} from scratch: a "
        f"gain of {g.gain():+.1f} points"
    )
    if 1 <= shown < n:
        text += f", where the first {shown} seeds alone give {g.first(shown).gain():+.1f}"
    text += (
        f". Seed by seed (the same seed draws the same batches in both arms) the gain runs from "
        f"{min(paired):+.1f} to {max(paired):+.1f}; drawing the {n} seeds again with replacement puts the "
        f"gain of the medians between {lo_hi[0]:+.1f} and {lo_hi[1]:+.1f} in {level:.0%} of the draws."
    )
    if target is not None:
        reach = sum(p >= target for p in paired)
        text += f" {reach} of the {n} seeds reach a gain of {target:+g}."
    return text
