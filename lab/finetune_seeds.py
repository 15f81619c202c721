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
    g.reading()                                   # the gain and that interval, as bertlab.verdict reads it
    seeds_reading(g, target=3.0)                  # the sentence the book prints
    squad_seed_gains(rows, "data/reference_run")  # SQuAD rows of one seed each (record_squad_epochs)
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from bertlab.experiments.reference import ARMS
from bertlab.prose import count, number, rate, verb_agreeing
from bertlab.verdict import Reading


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

    def reading(self, level: float = 0.9) -> Reading:
        """`gain()` with its bootstrap `interval(level)`, for bertlab.verdict's words: the one
        reading of this result that every page quotes."""
        low, high = self.interval(level)
        how = f"{level:.0%} of bootstrap draws over {count(len(self.seeds), 'seed')}"
        return Reading(self.gain(), low, high, how)


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


SQUAD_SETTINGS = ("epochs", "lr", "batch_size", "max_len", "doc_stride")


def squad_seed_gains(
    rows: Sequence[dict[str, Any]],
    record: str,
    meta: dict[str, Any] | None = None,
    record_commit: str | None = None,
    **settings: Any,
) -> SeedGains | None:
    """SQuAD v1.1 F1 of both arms over the seeds they both ran, from rows of
    `scripts/record_squad_epochs.py` (one seed each: init, record, seed, metrics["f1"] and the
    settings in SQUAD_SETTINGS) whose pre-trained arm came from `record`. Rows of the same settings
    only: `settings` pick them (lr=5e-4, batch_size=32, ...), and without them the settings the most
    seeds ran in both arms. With `record_commit` (the commit that made the record now in `record`),
    the file's `meta` must name the same record ("record_git_commit"), else None: a folder such as
    data/reference_run holds another run once the record is made again. A seed run twice in one arm
    is an error; None when no seed has both arms."""
    unknown = set(settings) - set(SQUAD_SETTINGS)
    if unknown:
        raise ValueError(f"unknown SQuAD settings {sorted(unknown)}; choose from {', '.join(SQUAD_SETTINGS)}")
    if record_commit is not None and (meta or {}).get("record_git_commit") != record_commit:
        return None
    by_key: dict[tuple, dict[str, dict[int, float]]] = {}
    for r in rows:
        if r.get("record") != record or r.get("init") not in ARMS:
            continue
        key = tuple(r.get(k) for k in SQUAD_SETTINGS)
        if any(r.get(k) != v for k, v in settings.items()):
            continue
        arm = by_key.setdefault(key, {}).setdefault(r["init"], {})
        if r["seed"] in arm:
            raise ValueError(f"seed {r['seed']} of the {r['init']} arm appears twice for the settings {key}")
        arm[r["seed"]] = r["metrics"]["f1"]
    shared = {k: sorted(set(v.get("pretrained", {})) & set(v.get("scratch", {}))) for k, v in by_key.items()}
    shared = {k: seeds for k, seeds in shared.items() if seeds}
    if not shared:
        return None
    key = max(shared, key=lambda k: len(shared[k]))
    seeds, arms = shared[key], by_key[key]
    lr = key[SQUAD_SETTINGS.index("lr")]
    return SeedGains(
        "squad",
        None,
        lr,
        tuple(seeds),
        tuple(arms["pretrained"][x] for x in seeds),
        tuple(arms["scratch"][x] for x in seeds),
    )


def seeds_reading(g: SeedGains, shown: int = 3, target: float | None = None, level: float = 0.9) -> str:
    """In words: the gain over all the seeds, what the first `shown` seeds (the reference run's)
    said, the paired gains' range, a bootstrap interval with its verdict (bertlab.verdict: "clear of"
    scratch only when the interval excludes zero) and, with a target, how many seeds reach it."""
    n, r = len(g.seeds), g.reading(level)
    lo_hi = (r.low, r.high)
    paired = g.paired()
    size = f" with {g.train_examples:,} labelled sentences" if g.train_examples else ""
    text = (
        f"Over {count(n, 'fine-tuning seed')}{size} (lr {rate(g.lr)}), the pre-trained median is "
        f"{statistics.median(g.pretrained):.1f} against {statistics.median(g.scratch):.1f} from scratch: a "
        f"gain of {g.gain():+.1f} points"
    )
    if 1 <= shown < n:
        first = "the first seed alone gives" if shown == 1 else f"the first {count(shown, 'seed')} alone give"
        text += f", where {first} {g.first(shown).gain():+.1f}"
    text += (
        f". Seed by seed (the same seed draws the same batches in both arms) the gain runs from "
        f"{min(paired):+.1f} to {max(paired):+.1f}; drawing the {count(n, 'seed')} again with replacement puts the "
        f"gain of the medians between {lo_hi[0]:+.1f} and {lo_hi[1]:+.1f} in {level:.0%} of the draws: "
        f"{_verdict_sentence(r.words)}."
    )
    if target is not None:
        reach = sum(p >= target for p in paired)
        reaches = verb_agreeing(reach, "reaches")
        text += f" {number(reach).capitalize()} of the {count(n, 'seed')} {reaches} a gain of {target:+g}."
    return text


def _verdict_sentence(words: str) -> str:
    """What a bootstrap interval's verdict (bertlab.verdict) says of pre-training's gain."""
    return {
        "clear of": "the gain is clear of scratch, the interval excluding zero",
        "below": "pre-training is below scratch, the interval wholly under zero",
    }.get(words, "the gain is within the noise of scratch, the interval reaching zero")


def replay_reading(
    g: SeedGains, pipeline_seeds: Sequence[int], pipeline_scratch: Sequence[float], workers: int = 1
) -> str:
    """Why the first seeds here do not repeat the reference run's own figures, measured on the arm
    no pre-trained weights reach: these rows fine-tune the weights as the book ships them (16-bit)
    where the pipeline fine-tuned its 32-bit ones, and (with `workers` > 1) the pipeline trained its
    seeds side by side in one-thread processes. `pipeline_seeds` and `pipeline_scratch` are the
    pipeline's seeds and its from-scratch scores at this size; they must be the first seeds here."""
    k = len(pipeline_seeds)
    if k == 0 or len(pipeline_scratch) != k:
        raise ValueError(f"give one from-scratch score per pipeline seed ({k} seeds, {len(pipeline_scratch)} scores)")
    if tuple(g.seeds[:k]) != tuple(pipeline_seeds):
        raise ValueError(f"the pipeline's seeds {tuple(pipeline_seeds)} are not the first seeds run here {g.seeds[:k]}")
    here, there = statistics.median(g.first(k).scratch), statistics.median(pipeline_scratch)
    how = "in 16-bit floats, where the pipeline fine-tuned its 32-bit weights"
    if workers > 1:
        how += (
            ", and each seed in one process on every thread, where the pipeline trained its seeds side by side "
            "in one-thread processes"
        )
    seeds = f"seeds {pipeline_seeds[0]}-{pipeline_seeds[-1]}" if k > 1 else f"seed {pipeline_seeds[0]}"
    if round(here, 1) == round(there, 1):
        moved = f"gives the same median on {seeds} both ways ({here:.1f})"
    else:
        moved = f"scored a median {here:.1f} on {seeds} here against {there:.1f} in the pipeline"
    return (
        f"These runs start from the record's weights as the book ships them, {how}; both change the order "
        "in which sums are added up, so the same seeds need not repeat the pipeline's figures. The arm from "
        f"scratch, which no pre-trained weights reach, {moved}."
    )
