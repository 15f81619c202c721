"""What a pretraining run is asked to do (`PretrainConfig`, whose fields are the options of
`python -m bertlab pretrain`), and what it hands back (`PretrainResult`, or `NonFiniteLossError`).
`validate()` refuses every impossible combination before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from bertlab.config import PRESETS, BertConfig
from bertlab.training.objective import OBJECTIVES
from bertlab.training.recipes import Recipe, get_recipe, parse_phases


@dataclass
class PretrainConfig:
    """Everything a pretraining run depends on. Fields left None take the recipe's value."""

    # the model
    preset: str = "mini"  # model size: tiny, mini, small, medium, base or large (L/H/A in bertlab.config.PRESETS)
    layers: int | None = None  # L, the number of layers, instead of the preset's (other sizes, as in Table 6)
    hidden: int | None = None  # H, the hidden size, instead of the preset's; the feed-forward layer stays 4H wide
    heads: int | None = None  # A, the number of attention heads, instead of the preset's; must divide H
    # the data
    corpus: str = "books+wiki"  # pretraining corpus: books, wiki or books+wiki (bertlab.data.corpus)
    tokenizer: str | None = None  # a tokenizer.json or its folder, instead of training a WordPiece on the corpus
    vocab_size: int = 16384  # size of the WordPiece vocabulary trained on the corpus (unused with --tokenizer)
    max_documents: int | None = None  # only the first N training (and held-out) documents: a quick run
    # how long: steps OR minutes (a time budget), not both; neither = the recipe's steps
    steps: int | None = None  # number of optimiser steps (or give --minutes)
    minutes: float | None = None  # time budget in minutes: the schedule adapts to the measured speed
    # the recipe and its overrides
    recipe: str = "budget"  # cpu (an hour on 2 CPU cores), budget (minutes on a GPU) or paper (Devlin et al.)
    seq_len: int | None = None  # tokens per sequence (with --phases: the held-out windows' length)
    batch_size: int | None = None  # sequences per optimiser step, over all processes
    grad_accum: int = 1  # split each step into this many micro-batches: the same step on a GPU too small for it
    lr: float | None = None  # peak learning rate, reached at the end of the warm-up
    warmup: float | None = None  # warm-up: a number of steps (>= 1) or a fraction of the run (< 1)
    schedule: str | None = None  # the learning rate after warm-up: linear, cosine or constant
    weight_decay: float | None = None  # decoupled (AdamW) weight decay, not on biases and LayerNorm weights
    dropout: float | None = None  # dropout probability in every layer
    nsp: bool | None = None  # next-sentence prediction on or off (--no-nsp: the masked LM alone)
    segment_pairs: bool | None = None  # without NSP, still two segments per sequence: both segment embeddings train
    phases: str | None = None  # sequence-length phases, e.g. 0.9:64:128,0.1:128:64 (FRACTION:SEQ_LEN:BATCH, of the run)
    objective: str = "mlm"  # mlm (BERT's masked LM) or ltr (a left-to-right LM, the paper's "LTR & No NSP")
    whole_word: bool = False  # mask whole words instead of single word pieces
    mlm_probability: float | None = None  # fraction of the tokens chosen for the masked LM to predict
    norm_position: str | None = None  # post (BERT: LayerNorm after the residual sum) or pre (pre-LN: stable at high lr)
    mlm_bias: str | None = None  # the MLM output bias at step 0: zeros (BERT) or unigram (the tokens' log frequencies)
    # the machine
    device: str = "auto"  # auto, cpu, cuda or cuda:N
    precision: str = "auto"  # auto (bf16 where it is native, fp16 on older GPUs, else fp32), fp32, bf16 or fp16
    compile: bool = False  # torch.compile the model and loss: faster after a minute of compiling (GPU or CPU)
    compile_backend: str = "inductor"  # torch.compile's backend (the tests use aot_eager: quick to build)
    seed: int = 0  # random seed of the weights, the data order and the masks
    # output and bookkeeping
    out: str = "runs/pretrain"  # the run's folder: metrics, checkpoints and the final model
    resume: bool = False  # continue from the newest checkpoint in --out (start fresh if there is none)
    keep_last: int = 2  # checkpoints kept in --out (older ones are deleted to save disk)
    log_every: int = 50  # steps between metric lines (each waits for the GPU)
    eval_every: int = 500  # steps between held-out evaluations
    eval_batches: int = 20  # held-out batches per evaluation
    checkpoint_every: int = 1000  # steps between checkpoints
    stop_after: int | None = None  # stop after N steps of this session, checkpointed and scored (--resume goes on)
    progress: bool = True  # a progress bar while it runs (--no-progress for logs)

    def model_size(self) -> tuple[int, int, int]:
        """(L, H, A): the preset's, with the layers / hidden / heads overrides applied."""
        L, H, A = PRESETS[self.preset]
        L, H, A = self.layers or L, self.hidden or H, self.heads or A
        BertConfig(vocab_size=1, num_layers=L, hidden_size=H, num_heads=A)  # raises if impossible
        return L, H, A

    @property
    def phase_plan(self) -> str:
        """What the phases' fractions divide: "steps", or "time" for a run limited by time."""
        return "steps" if self.minutes is None else "time"

    def resolved_recipe(self) -> Recipe:
        return get_recipe(
            self.recipe,
            lr=self.lr,
            warmup=self.warmup,
            schedule=self.schedule,
            weight_decay=self.weight_decay,
            dropout=self.dropout,
            nsp=self.nsp,
            seq_len=self.seq_len,
            batch_size=self.batch_size,
            mlm_probability=self.mlm_probability,
            norm_position=self.norm_position,
            mlm_bias=self.mlm_bias,
            segment_pairs=self.segment_pairs,
            phases=parse_phases(self.phases) if self.phases else None,
        )

    def validate(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}")
        self.model_size()  # H divisible by A, positive sizes (BertConfig's checks)
        r = self.resolved_recipe()  # raises for an unknown recipe
        if self.steps is not None and self.minutes is not None:
            raise ValueError("give --steps or --minutes (a time budget), not both")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"--steps must be at least 1, got {self.steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"--minutes must be positive, got {self.minutes}")
        if self.steps is None and self.minutes is None and r.steps is None:
            raise ValueError(f"the {self.recipe!r} recipe has no default length: give --steps or --minutes")
        if self.grad_accum < 1:
            raise ValueError(f"--grad-accum must be at least 1, got {self.grad_accum}")
        if self.objective not in OBJECTIVES:
            raise ValueError(
                f"unknown objective {self.objective!r}; choose one of {', '.join(OBJECTIVES)} "
                f"(mlm: BERT's masked LM, ltr: a left-to-right LM)"
            )
        if self.objective == "ltr":
            if r.nsp:
                raise ValueError(
                    f"--objective ltr cannot be combined with next-sentence prediction: the paper's "
                    f"left-to-right model is 'LTR & No NSP' (section 5.1), and the {self.recipe!r} "
                    f"recipe {'has NSP on' if self.nsp is None else 'was given --nsp'}; add --no-nsp"
                )
            if self.whole_word or self.mlm_probability is not None:
                raise ValueError(
                    "--whole-word and --mlm-probability are masked-LM settings; the left-to-right "
                    "LM (--objective ltr) masks nothing"
                )
        for name in ("log_every", "eval_every", "checkpoint_every", "keep_last"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if r.seq_len > 512:
            raise ValueError(f"seq_len {r.seq_len} exceeds BERT's 512 learned positions")
        if r.seq_len < 8:
            raise ValueError(f"seq_len {r.seq_len} is too short for [CLS] A [SEP] B [SEP]; use at least 8")
        steps = self.steps if self.steps is not None else (r.steps if self.minutes is None else None)
        if steps is not None and r.warmup >= 1 and r.warmup > steps:
            raise ValueError(
                f"the warm-up of {int(r.warmup):,} steps is longer than the run of {steps:,} steps, so "
                f"the learning rate would never reach its peak; give more --steps or a warm-up "
                f"as a fraction of the run (e.g. --warmup 0.06)"
            )
        if self.minutes is not None and r.warmup >= 1:
            raise ValueError(
                f"with --minutes the warm-up must be a fraction of the run (e.g. --warmup 0.06), "
                f"not {int(r.warmup)} steps: a time-limited run has no known number of steps"
            )


@dataclass
class PretrainResult:
    out_dir: Path
    step: int  # optimiser steps done
    history: list[dict[str, Any]]  # every logged record, train and eval
    final_eval: dict[str, Any] | None
    checkpoint: Path | None  # the last checkpoint written
    model: nn.Module | None = None  # the trained model (bare, on its device)
    stopped_by: str | None = None  # None (finished), "SIGTERM" or "SIGINT"
    elapsed_s: float = 0.0
    tokens: int = 0

    @property
    def train_history(self) -> list[dict[str, Any]]:
        return [r for r in self.history if r.get("split") == "train"]

    @property
    def eval_history(self) -> list[dict[str, Any]]:
        return [r for r in self.history if r.get("split") == "eval"]


class NonFiniteLossError(RuntimeError):
    """The loss or the gradient became NaN or infinite; training cannot continue from there."""

    def __init__(self, step: int, last_checkpoint: Path | None):
        self.step = step
        self.last_checkpoint = last_checkpoint
        where = f"the last good checkpoint is {last_checkpoint}" if last_checkpoint else "no checkpoint was written"
        super().__init__(
            f"the loss or gradient became NaN/inf at step {step}; nothing after it was saved ({where}). "
            f"Usual causes: a learning rate too high for the model (try a lower --lr or a longer --warmup), "
            f"fp16 without loss scaling, or bad input data."
        )
