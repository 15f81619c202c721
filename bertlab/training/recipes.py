"""Pretraining recipes: the optimiser, learning-rate schedule and batch shape, as named presets.

`paper` -- Devlin et al. (2018), section A.2: Adam with lr 1e-4, betas (0.9, 0.999), weight decay
    0.01, warm-up over 10,000 steps then linear decay, dropout 0.1, batch 256, 1M steps: 90% at 128
    tokens, then 10% at 512 (the recipe's `phases`). From Google's released code: epsilon 1e-6,
    weight decay decoupled (AdamW) and skipping biases and LayerNorm, gradient norm clipped to 1.0.
`budget` -- minutes on one GPU: a higher peak lr (7e-4) to leave the "frequent words" plateau
    sooner, warm-up as 6% of the run, beta2 0.98 (RoBERTa), no NSP (--nsp switches it on).
`cpu` -- an hour on two CPU cores: pre-LN layers (Xiong et al. 2020), stable at lr 2e-3; the MLM
    output bias started at the log unigram frequencies; no dropout; warm-up 3%, batch 64. Cramming
    (Geiping & Goldstein 2022) makes the same choices for a day on one GPU.

What each setting rests on is in lab/README.md ("What the recipes rest on").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Phase:
    """The `fraction` of a run (of its steps, or of its time under a time budget) spent on
    `batch_size` sequences of `seq_len` tokens per step; a run's fractions add up to 1."""

    fraction: float
    seq_len: int
    batch_size: int

    def __post_init__(self):
        if not 0 < self.fraction <= 1:
            raise ValueError(f"a phase's fraction of the run must be in (0, 1], got {self.fraction}")
        if not 8 <= self.seq_len <= 512:
            raise ValueError(
                f"a phase's sequence length must be between 8 and BERT's 512 positions, got {self.seq_len}"
            )
        if self.batch_size < 1:
            raise ValueError(f"a phase's batch size must be at least 1, got {self.batch_size}")


def parse_phases(text: str) -> tuple[Phase, ...]:
    """Phases from the command line: "FRACTION:SEQ_LEN:BATCH,..." (e.g. "0.9:64:128,0.1:128:64")."""
    phases = []
    for part in text.split(","):
        bits = part.strip().split(":")
        try:
            if len(bits) != 3:
                raise ValueError
            phases.append(Phase(float(bits[0]), int(bits[1]), int(bits[2])))
        except ValueError as err:
            detail = f" ({err})" if str(err) else ""
            raise ValueError(
                f"cannot read the phase {part.strip()!r}{detail}: write each phase as "
                f"FRACTION:SEQ_LEN:BATCH, separated by commas, e.g. 0.9:64:128,0.1:128:64"
            ) from None
    return tuple(phases)


PHASE_PLANS = ("steps", "time")  # what a run's phase fractions divide (see Phase)


def phases_text(phases: Sequence[Phase], plan: str = "steps") -> str:
    """The phases in words: "80% of the steps on 128 sequences of 64 tokens, then 10% on 64 of 128
    and 10% on 32 of 256" (plan "time": "80% of the time on ...")."""
    if plan not in PHASE_PLANS:
        raise ValueError(f"a phase plan divides {' or '.join(PHASE_PLANS)}, got {plan!r}")
    if not phases:
        raise ValueError("no phases to describe")
    first, rest = phases[0], phases[1:]
    text = f"{first.fraction:.0%} of the {plan} on {first.batch_size:,} sequences of {first.seq_len} tokens"
    if not rest:
        return text
    parts = [f"{p.fraction:.0%} on {p.batch_size:,} of {p.seq_len}" for p in rest]
    return text + ", then " + (", ".join(parts[:-1]) + " and " if len(parts) > 1 else "") + parts[-1]


def phase_ends(phases: Sequence[Phase], total_steps: int) -> list[int]:
    """The optimiser step at which each phase ends: the running sum of the fractions, rounded to
    whole steps (a phase may get no step in a very short run)."""
    ends, acc = [], 0.0
    for ph in phases:
        acc += ph.fraction
        ends.append(min(total_steps, round(acc * total_steps)))
    ends[-1] = total_steps
    return ends


def phase_ends_by_time(
    phases: Sequence[Phase],
    budget_s: float,
    elapsed_s: float,
    step: int,
    total_steps: int,
    ends_before: Sequence[int] | None = None,
) -> list[int]:
    """The step at which each phase ends in a run of `budget_s` seconds, at `step` after `elapsed_s`
    and expected to end after `total_steps`: phase k ends when the clock passes the running sum of
    the fractions times the budget. A boundary passed stays where the run crossed it (or where
    `ends_before` put it); one ahead gets the same share of the steps left as of the seconds left."""
    if ends_before is not None and len(ends_before) != len(phases):
        raise ValueError(f"need one earlier end per phase ({len(phases)}), got {list(ends_before)}")
    left_s, left_steps = budget_s - elapsed_s, max(total_steps - step, 0)
    ends, acc, last = [], 0.0, 0
    for k, ph in enumerate(phases):
        acc += ph.fraction
        if k == len(phases) - 1:
            end = total_steps
        elif acc * budget_s <= elapsed_s or left_s <= 0:  # passed: where the run crossed it
            end = step if ends_before is None else min(int(ends_before[k]), step)
        else:
            end = step + max(1, math.ceil((acc * budget_s - elapsed_s) / left_s * left_steps))
        last = max(last, min(end, total_steps))  # non-decreasing, inside the run
        ends.append(last)
    ends[-1] = total_steps
    return ends


@dataclass(frozen=True)
class Recipe:
    """A pretraining recipe; the defaults are the paper's."""

    name: str
    lr: float  # peak learning rate
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    weight_decay: float = 0.01  # decoupled (AdamW), not applied to biases and LayerNorm weights
    warmup: float = 10_000  # >= 1: a number of steps; < 1: a fraction of the run
    schedule: str = "linear"  # linear | cosine | constant (after warm-up)
    batch_size: int = 256  # sequences per optimiser step (over all GPUs)
    seq_len: int = 128
    steps: int | None = None  # default run length, when neither --steps nor --minutes is given
    mlm_probability: float = 0.15
    nsp: bool = True
    dropout: float = 0.1
    grad_clip: float | None = 1.0  # global gradient-norm clipping, None = off
    norm_position: str = "post"  # "post" (BERT) or "pre" (pre-LN: stable at high learning rates)
    mlm_bias: str = "zeros"  # the MLM output bias at step 0: "zeros" (BERT) or "unigram" (log frequencies)
    segment_pairs: bool = False  # without NSP, still [CLS] A [SEP] B [SEP]: both segment rows train
    phases: tuple[Phase, ...] = ()  # empty: one phase; with phases, seq_len is the held-out length
    notes: str = ""

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose one of {', '.join(SCHEDULES)}")
        if not self.lr > 0:
            raise ValueError(f"the learning rate must be positive, got {self.lr}")
        if self.warmup < 0:
            raise ValueError(f"warm-up must be >= 0 (steps, or a fraction < 1), got {self.warmup}")
        if self.norm_position not in ("post", "pre"):
            raise ValueError(f"norm_position must be 'post' or 'pre', got {self.norm_position!r}")
        if self.mlm_bias not in MLM_BIAS_INITS:
            raise ValueError(f"mlm_bias must be one of {', '.join(MLM_BIAS_INITS)}, got {self.mlm_bias!r}")
        if self.phases:
            object.__setattr__(self, "phases", tuple(Phase(**p) if isinstance(p, dict) else p for p in self.phases))
            total = sum(p.fraction for p in self.phases)
            if abs(total - 1.0) > 1e-6:
                raise ValueError(
                    f"the phases' fractions add up to {total:g}, not 1: "
                    f"{', '.join(f'{p.fraction:g}' for p in self.phases)}"
                )

    def training_phases(self) -> tuple[Phase, ...]:
        """The run's phases: the recipe's, or one phase of seq_len and batch_size."""
        return self.phases or (Phase(1.0, self.seq_len, self.batch_size),)

    def replace(self, **changes: Any) -> "Recipe":
        """A copy with some fields changed (None values are ignored: 'not given on the command line')."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def warmup_fraction(self, total_steps: int | None) -> float:
        """The warm-up as a fraction of the run."""
        if self.warmup < 1:
            return float(self.warmup)
        if total_steps is None:
            raise ValueError(
                f"the {self.name!r} recipe's warm-up is {int(self.warmup)} steps, but a run "
                f"limited by time has no known number of steps; give the warm-up as a "
                f"fraction, e.g. --warmup 0.06"
            )
        return min(1.0, self.warmup / total_steps)

    def lr_at(self, step: int, total_steps: int) -> float:
        """The learning rate of optimiser update `step` (0-based) in a run of `total_steps`."""
        return self.lr * lr_multiplier(step, total_steps, self.warmup_fraction(total_steps), self.schedule)


SCHEDULES = ("linear", "cosine", "constant")
MLM_BIAS_INITS = ("zeros", "unigram")


def lr_multiplier(step: int, total_steps: int, warmup_fraction: float, schedule: str = "linear") -> float:
    """The multiplier of the peak lr at update `step` (0-based) of `total_steps`: a linear warm-up
    over warmup_fraction of the run, then a linear or cosine decay to 0, or constant. The first
    and last updates get a small non-zero lr (no wasted step)."""
    if total_steps < 1:
        raise ValueError(f"total_steps must be at least 1, got {total_steps}")
    w = warmup_fraction * total_steps  # warm-up length in updates (may be fractional)
    warm = 1.0 if w <= 0 else min(1.0, (step + 1) / w)
    if schedule == "constant" or step < w:
        return warm
    decay_len = max(total_steps - w, 1e-9)
    t = min(max((step - w) / decay_len, 0.0), 1.0)  # 0 at the end of warm-up, 1 at the end of the run
    if schedule == "linear":
        return min(warm, (total_steps - step) / decay_len)
    if schedule == "cosine":
        return min(warm, 0.5 * (1.0 + math.cos(math.pi * t)))
    raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")


RECIPES: dict[str, Recipe] = {
    "paper": Recipe(
        name="paper",
        lr=1e-4,
        steps=1_000_000,
        phases=(Phase(0.9, 128, 256), Phase(0.1, 512, 256)),
        notes="Devlin et al. 2018, A.2: 90% of the steps at 128 tokens, then 10% at 512 (the recipe's "
        "phases). eps, decoupled decay, exclusions and clipping from the released code.",
    ),
    "budget": Recipe(
        name="budget",
        lr=7e-4,
        betas=(0.9, 0.98),
        warmup=0.06,
        nsp=False,
        notes="Short single-GPU runs: a high peak lr and a warm-up of 6% of the run, beta2 0.98 from "
        "RoBERTa, MLM only.",
    ),
    "cpu": Recipe(
        name="cpu",
        lr=2e-3,
        betas=(0.9, 0.98),
        warmup=0.03,
        batch_size=64,
        nsp=False,
        dropout=0.0,
        norm_position="pre",
        mlm_bias="unigram",
        notes="An hour on a 2-core CPU: pre-LN, the MLM bias started at log unigram frequencies and "
        "no dropout let a small model leave the frequent-word plateau within minutes.",
    ),
}


def token_positions(recipe: Recipe, steps: int | None = None) -> float:
    """Token positions a run of `recipe` reads (padding included): steps x batch x length, summed
    over its phases (the paper's recipe: 42.6 billion)."""
    steps = steps if steps is not None else recipe.steps
    if steps is None:
        raise ValueError(f"the {recipe.name!r} recipe has no default length: give steps")
    return float(sum(ph.fraction * steps * ph.batch_size * ph.seq_len for ph in recipe.training_phases()))


def get_recipe(name: str, **overrides: Any) -> Recipe:
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    return RECIPES[name].replace(**overrides)


# Fine-tuning, inside the paper's grid (section A.3): batch 16 or 32, lr 5e-5 / 3e-5 / 2e-5, 2-4 epochs.
FINETUNE_DEFAULTS = {"lr": 5e-5, "batch_size": 32, "epochs": 3, "warmup": 0.1, "weight_decay": 0.01}
