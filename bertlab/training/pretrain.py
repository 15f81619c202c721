"""Pretraining: the loop that turns a corpus into a BERT.

    result = pretrain(PretrainConfig(preset="mini", corpus="books+wiki", steps=2000, out="runs/mini"))
    result.history            # every logged metric (also in runs/mini/metrics.jsonl)
    result.model              # the trained BertForPreTraining

or from a shell: `python -m bertlab pretrain --preset mini --steps 2000 --out runs/mini`, and on
several GPUs the same command after `torchrun --nproc_per_node N`.

One optimiser step, as the paper describes it (section 3.1 and appendix A.2):

    1. take the next batch of sequences, already masked (bertlab.data.masking: 15% of the tokens chosen,
       80% [MASK] / 10% random / 10% unchanged) and move it to the device;
    2. run BertForPreTraining on it; the MLM head only at the P chosen positions (mlm_positions);
    3. loss = mean cross-entropy over the chosen tokens + mean NSP cross-entropy (when NSP is on);
    4. backpropagate, clip the gradient norm, set the learning rate from the schedule, AdamW update.

The paper's ablation of the pre-training task (section 5.1, Table 5) is the same loop with
objective="ltr": a left-to-right LM ("LTR & No NSP", like OpenAI GPT). The model is built with
causal attention (BertConfig.causal, kept at fine-tuning); batches are unmasked
(bertlab.data.masking.NextTokenCollator); every position t predicts token t+1 with the MLM head's
tied decoder; loss = mean next-token cross-entropy over the real tokens; no NSP. Its accuracy is
logged as next_token_acc (and its loss as ltr_loss), never under the MLM's names.

The rest of this file makes that loop fast and safe:
  - precision, compilation, fused AdamW, device placement: bertlab.runtime;
  - batches come from a background thread (collated and pinned while the GPU works), and the GPU
    is never waited for inside a step: metrics are accumulated on the device and read (one sync)
    every `log_every` steps;
  - checkpoints (bertlab.checkpoint) every `checkpoint_every` steps, at the end, and when the
    process receives SIGTERM or Ctrl-C (SIGINT); `resume=True` continues exactly where it stopped
    (on a CPU the resumed run is bit-identical to an uninterrupted one);
  - a loss or gradient that turns NaN/inf stops the run with the step where it happened, before
    any checkpoint of the damaged weights is written;
  - several processes (torchrun): DistributedDataParallel; every process draws the same global
    batch and keeps its own rows; only rank 0 logs, evaluates and saves.

Why the loss is computed here rather than by BertForPreTraining's own `loss`: with several
processes (or gradient accumulation) each one sees a different number of masked tokens, and the
mean over all of them is not the mean of the per-process means. The loop sums the cross-entropy,
counts the masked tokens over all processes, and divides once, so N processes compute exactly
the gradient of one process with the whole batch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import queue
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import torch
import torch.distributed as dist
from torch import nn

from bertlab import checkpoint as ckpt
from bertlab import files
from bertlab.config import PRESETS, BertConfig
from bertlab.data.corpus import load_corpus
from bertlab.data.masking import make_collator
from bertlab.data.pretraining_data import PhasedBatches, PretrainingBatches, prepare_pretraining_data, unigram_log_probs
from bertlab.data.tokenizer import WordPieceTokenizer, train_wordpiece
from bertlab.model import IGNORE_INDEX, BertForPreTraining
from bertlab.runtime import Runtime, git_commit, keep_freed_memory, make_runtime, seed_everything
from bertlab.training import flops, logs
from bertlab.training.heldout import (  # noqa: F401  (evaluate_checkpoint, EVAL_SEED: re-exported)
    EVAL_SEED,
    HELDOUT_MLM_PROBABILITY,
    evaluate_checkpoint,
    evaluate_pretraining,
    heldout_batches,
)
from bertlab.training.objective import OBJECTIVES, PretrainingObjective, target_labels
from bertlab.training.optim import adamw, optimizer_step
from bertlab.training.recipes import (
    RECIPES,
    Recipe,
    get_recipe,
    lr_multiplier,
    parse_phases,
    phase_ends,
    phase_ends_by_time,
)


# ------------------------------------------------------------------------------------------------
# Settings and results
# ------------------------------------------------------------------------------------------------
@dataclass
class PretrainConfig:
    """Everything a pretraining run depends on. Fields left None take the recipe's value."""

    # the model
    preset: str = "mini"  # tiny, mini, small, medium, base, large (bertlab.config.PRESETS)
    layers: int | None = None  # L, H, A: override the preset's (a size between the named ones,
    hidden: int | None = None  # as in the paper's model-size study, Table 6); the FFN stays 4H
    heads: int | None = None
    # the data
    corpus: str = "books+wiki"  # a corpus name understood by bertlab.data.corpus.load_corpus
    tokenizer: str | None = None  # a tokenizer.json / folder; None = train a WordPiece on the corpus
    vocab_size: int = 16384  # size of the WordPiece vocabulary to train (ignored with `tokenizer`)
    max_documents: int | None = None  # only the first N training (and held-out) documents: quick runs
    # how long: steps OR minutes (a time budget), not both; neither = the recipe's steps
    steps: int | None = None
    minutes: float | None = None
    # the recipe and its overrides
    recipe: str = "budget"
    seq_len: int | None = None
    batch_size: int | None = None  # sequences per optimiser step, over all processes
    grad_accum: int = 1  # micro-batches per step (for GPUs too small for the whole batch)
    lr: float | None = None
    warmup: float | None = None  # steps (>= 1) or a fraction of the run (< 1)
    schedule: str | None = None
    weight_decay: float | None = None
    dropout: float | None = None
    nsp: bool | None = None
    segment_pairs: bool | None = None  # without NSP: two segments per sequence anyway (both segment rows train)
    # sequence-length phases, "FRACTION:SEQ_LEN:BATCH,..." (e.g. "0.9:64:128,0.1:128:64"): fractions of
    # the steps, or of the time under a time budget (phase_plan)
    phases: str | None = None
    objective: str = "mlm"  # "mlm": BERT's masked LM; "ltr": a left-to-right LM (no NSP, section 5.1)
    whole_word: bool = False
    mlm_probability: float | None = None
    norm_position: str | None = None  # "post" (BERT) or "pre" (pre-LN)
    mlm_bias: str | None = None  # the MLM output bias at step 0: "zeros" or "unigram"
    # the machine
    device: str = "auto"
    precision: str = "auto"  # auto, fp32, bf16, fp16
    compile: bool = False
    compile_backend: str = "inductor"  # torch.compile backend (tests use "aot_eager": fast to build)
    seed: int = 0
    # output and bookkeeping
    out: str = "runs/pretrain"
    resume: bool = False
    keep_last: int = 2  # checkpoints kept
    log_every: int = 50
    eval_every: int = 500
    eval_batches: int = 20
    checkpoint_every: int = 1000
    stop_after: int | None = None  # stop (with a checkpoint and a held-out score) after this many
    #                                steps of THIS session; continue later with resume=True
    progress: bool = True

    def model_size(self) -> tuple[int, int, int]:
        """(L, H, A): the preset's, with the layers / hidden / heads overrides applied."""
        L, H, A = PRESETS[self.preset]
        L, H, A = self.layers or L, self.hidden or H, self.heads or A
        BertConfig(vocab_size=1, num_layers=L, hidden_size=H, num_heads=A)  # raises if impossible
        return L, H, A

    @property
    def phase_plan(self) -> str:
        """What the fractions of the recipe's sequence-length phases divide: the steps of a run of
        fixed length, the time of a run limited by time (see recipes.Phase)."""
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
        if self.recipe not in RECIPES:
            raise ValueError(f"unknown recipe {self.recipe!r}; choose one of {', '.join(RECIPES)}")
        if self.steps is not None and self.minutes is not None:
            raise ValueError("give --steps or --minutes (a time budget), not both")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"--steps must be at least 1, got {self.steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"--minutes must be positive, got {self.minutes}")
        if self.steps is None and self.minutes is None and self.resolved_recipe().steps is None:
            raise ValueError(f"the {self.recipe!r} recipe has no default length: give --steps or --minutes")
        if self.grad_accum < 1:
            raise ValueError(f"--grad-accum must be at least 1, got {self.grad_accum}")
        if self.objective not in OBJECTIVES:
            raise ValueError(
                f"unknown objective {self.objective!r}; choose one of {', '.join(OBJECTIVES)} "
                f"(mlm: BERT's masked LM, ltr: a left-to-right LM)"
            )
        if self.objective == "ltr":
            if self.resolved_recipe().nsp:
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
        r = self.resolved_recipe()
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


# ------------------------------------------------------------------------------------------------
# Batches
# ------------------------------------------------------------------------------------------------
class BatchSource(Protocol):
    """What the loop consumes: the next GLOBAL batch (a dict of CPU tensors in the agreed format,
    batch_size rows), and a state_dict that restores the position exactly."""

    def __next__(self) -> dict[str, torch.Tensor]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def shard_rows(batch: dict[str, torch.Tensor], rank: int, world: int, accum: int) -> list[dict[str, torch.Tensor]]:
    """This process's rows of a global batch, split into `accum` micro-batches. Rank r of W takes
    the r-th contiguous block of B/W rows, so the W processes together see the global batch."""
    B = next(iter(batch.values())).shape[0]
    if B % (world * accum):
        raise ValueError(
            f"the batch of {B} sequences does not split evenly over {world} processes x "
            f"{accum} micro-batches; choose --batch-size divisible by {world * accum}"
        )
    per = B // world
    mine = {k: v[rank * per : (rank + 1) * per] for k, v in batch.items()}
    m = per // accum
    return [{k: v[i * m : (i + 1) * m] for k, v in mine.items()} for i in range(accum)]


class Prefetcher:
    """Draws batches from a BatchSource in a background thread (so collating, masking and pinning
    overlap with the model's step) and hands them out in order, each with the source's state
    right after it was drawn: checkpointing that state resumes at the next unconsumed batch."""

    def __init__(self, source: BatchSource, prepare: Callable[[dict], Any], depth: int = 3):
        self.source, self.prepare = source, prepare
        self.q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="bertlab-prefetch")
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = next(self.source)
                item = (self.prepare(batch), self.source.state_dict())
                while not self._stop.is_set():
                    try:
                        self.q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as err:  # StopIteration included: hand it to the consumer
            self.q.put(err)

    def __next__(self):
        item = self.q.get()
        if isinstance(item, BaseException):
            if isinstance(item, StopIteration):
                raise RuntimeError("the batch source ran out; pretraining sources must repeat (epochs)")
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self.q.get_nowait()
        self.thread.join(timeout=5)


# ------------------------------------------------------------------------------------------------
# The objective
# ------------------------------------------------------------------------------------------------
def make_optimizer(model: nn.Module, recipe: Recipe, rt: Runtime) -> torch.optim.AdamW:
    return adamw(model, recipe.lr, recipe.betas, recipe.eps, recipe.weight_decay, fused=rt.fused_adamw)


# ------------------------------------------------------------------------------------------------
# Signals: SIGTERM (a scheduler pre-empting the job) and SIGINT (Ctrl-C, a notebook's "interrupt")
# ------------------------------------------------------------------------------------------------
class StopSignals:
    """While active, SIGTERM and SIGINT only set a flag; the loop saves a checkpoint and returns
    at the end of the current step. A second Ctrl-C interrupts at once."""

    def __init__(self):
        self.received: str | None = None
        self._old: dict[int, Any] = {}

    def _handler(self, signum, frame):
        name = signal.Signals(signum).name
        if self.received == "SIGINT" and name == "SIGINT":
            raise KeyboardInterrupt
        self.received = name

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGTERM, signal.SIGINT):
                self._old[s] = signal.signal(s, self._handler)
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        return False


# ------------------------------------------------------------------------------------------------
# The loop
# ------------------------------------------------------------------------------------------------
def run_fingerprint(cfg: PretrainConfig, model_config: BertConfig, vocab_fingerprint: str | None) -> dict[str, Any]:
    """The settings a checkpoint must share with the run that resumes it."""
    recipe = dataclasses.asdict(cfg.resolved_recipe())
    for key, off in (("segment_pairs", False), ("phases", [])):  # settings added later: a run without
        if recipe[key] == off:  # them resumes checkpoints written before they existed
            del recipe[key]
    return {
        "model_config": model_config.to_dict(),
        "vocab": vocab_fingerprint,
        "corpus": cfg.corpus,
        "max_documents": cfg.max_documents,
        "recipe": recipe,
        "steps": cfg.steps,
        "minutes": cfg.minutes,
        "grad_accum": cfg.grad_accum,
        "whole_word": cfg.whole_word,
        "seed": cfg.seed,
        "objective": cfg.objective,
    }


class Stat(enum.IntEnum):
    """The slots of the running statistics: one float64 tensor on the device, summed there at every
    micro-batch without a sync, read (and agreed across processes) once per log line."""

    LM_LOSS_SUM = 0  # the LM's summed loss over its predictions (masked tokens, or next tokens)
    LM_PREDICTIONS = 1  # how many predictions: masked tokens (MLM) or next tokens (LTR)
    LM_CORRECT = 2  # predictions that were right
    NSP_LOSS_SUM = 3  # the NSP loss times the rows it averaged over
    NSP_CORRECT = 4  # NSP answers that were right
    NSP_ROWS = 5  # rows (sequence pairs) with an NSP label
    GRAD_NORM_SUM = 6  # the gradient norm, summed over steps (and processes)


def zero_stats(device: torch.device | str) -> torch.Tensor:
    """A fresh running-statistics tensor (indexed by `Stat`) on `device`."""
    return torch.zeros(len(Stat), dtype=torch.float64, device=device)


@dataclass
class Session:
    """What one call of `Trainer.run` keeps between steps for its log lines and time budget."""

    start_step: int  # the step this session started (or resumed) from
    window: tuple[int, float, int]  # (step, elapsed s, tokens) at the last log line: tokens/s since
    budget_from: tuple[int, float] | None = None  # (step, elapsed s) after the first step: the budget's speed
    first_step_s: float | None = None  # the first step's time (one-off costs), logged once
    steady_from: tuple[float, int] | None = None  # (elapsed s, tokens) after the first step


@dataclass
class Due:
    """What is due after a step: a log line, a checkpoint, an evaluation, the end, a stop."""

    log: bool
    checkpoint: bool
    eval: bool
    last: bool
    wants_stop: bool


class Trainer:
    """Runs the pretraining loop for a model on a batch source (see `pretrain` for the usual entry)."""

    def __init__(
        self,
        cfg: PretrainConfig,
        model: BertForPreTraining,
        source: BatchSource,
        eval_batches: list[dict[str, torch.Tensor]] | None,
        rt: Runtime,
        vocab_fingerprint: str | None = None,
        tokenizer_file: str | Path | None = None,
        mask_id: int | None = None,
    ):
        self.cfg, self.rt, self.source = cfg, rt, source
        self.mask_id = mask_id  # the [MASK] id: held-out accuracy at [MASK] positions too
        self.recipe = cfg.resolved_recipe()
        self.eval_batches = eval_batches or []
        self.tokenizer_file = tokenizer_file
        self.out = Path(cfg.out)
        self.ckpt_root = self.out / "checkpoints"
        self.is_main = rt.dist.is_main
        if model.config.causal != (cfg.objective == "ltr"):
            raise ValueError(
                f"objective {cfg.objective!r} needs a model with causal={cfg.objective == 'ltr'} "
                f"(left-to-right attention goes with the left-to-right LM, bidirectional with the "
                f"masked LM), got causal={model.config.causal}; build it with build_model(cfg, ...)"
            )
        self.model = model.to(rt.device)
        if rt.device.type == "cpu":
            keep_freed_memory()  # the same shapes every step: the next step reuses this one's memory
        if not self.recipe.nsp:
            # Without NSP the pooler and the NSP classifier get no gradient: freeze them (DDP needs
            # every trainable parameter to receive one; AdamW would otherwise decay them for nothing).
            for p in list(model.nsp.parameters()) + list(model.bert.pooler.parameters()):
                p.requires_grad_(False)
        self.optimizer = make_optimizer(model, self.recipe, rt)
        self.scaler = rt.grad_scaler()
        self.fingerprint = run_fingerprint(cfg, model.config, vocab_fingerprint)
        objective: nn.Module = PretrainingObjective(model)
        if rt.dist.enabled:
            ids = [rt.device.index] if rt.device.type == "cuda" else None
            objective = nn.parallel.DistributedDataParallel(objective, device_ids=ids)
        self.ddp = objective if rt.dist.enabled else None
        if rt.compile:
            # several sequence lengths: one static graph each (not one dynamic-shape graph for all)
            dynamic = False if len(self.recipe.training_phases()) > 1 else None
            objective = torch.compile(objective, backend=cfg.compile_backend, dynamic=dynamic)
        self.objective = objective
        self.step = 0
        self.tokens = 0
        self.elapsed_offset = 0.0
        self.total_steps: int | None = cfg.steps or (None if cfg.minutes else self.recipe.steps)
        self.batch_shape = (self.recipe.batch_size, self.recipe.seq_len)  # (B, T) of the last step's batch
        self.plan_phases()
        self.last_checkpoint: Path | None = None
        self.data_state: dict[str, Any] | None = None
        self.history: list[dict[str, Any]] = []
        self.final_eval: dict[str, Any] | None = None

    # --- checkpoints ----------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler.is_enabled() else {},
            "rng": ckpt.rng_state(),
            "data": self.data_state if self.data_state is not None else self.source.state_dict(),
            "trainer": {
                "step": self.step,
                "tokens": self.tokens,
                "elapsed_s": self.elapsed(),
                "total_steps": self.total_steps,
                "world_size": self.rt.dist.world_size,
            },
            "run": self.fingerprint,
        }

    def save(self) -> Path | None:
        if self.is_main:
            self.last_checkpoint = ckpt.save_checkpoint(
                self.ckpt_root,
                self.step,
                self.model,
                self.state(),
                tokenizer_file=self.tokenizer_file,
                keep_last=self.cfg.keep_last,
            )
        return self.last_checkpoint

    def restore(self, path: Path) -> None:
        c = ckpt.load_checkpoint(path)
        ckpt.check_compatible(c.state["run"], self.fingerprint, path)
        self.model.load_state_dict(c.model_state)
        self.optimizer.load_state_dict(c.state["optimizer"])
        if self.scaler.is_enabled() and c.state.get("scaler"):
            self.scaler.load_state_dict(c.state["scaler"])
        self.source.load_state_dict(c.state["data"])
        self.data_state = c.state["data"]
        t = c.state["trainer"]
        self.step, self.tokens, self.elapsed_offset = int(t["step"]), int(t["tokens"]), float(t["elapsed_s"])
        self.total_steps = t["total_steps"] if self.cfg.minutes else self.total_steps
        self.plan_phases()
        ckpt.set_rng_state(c.state["rng"])
        self.last_checkpoint = path

    # --- bookkeeping ----------------------------------------------------------------------------
    def plan_phases(self, elapsed: float | None = None) -> None:
        """Tell a phased batch source (bertlab.data.pretraining_data.PhasedBatches) at which steps its
        phases end, once the run's length is known. A time budget places them by the clock
        (`elapsed` seconds, re-estimated as it goes); until it has read the clock, a resumed run
        keeps the boundaries its checkpoint saved."""
        if self.total_steps is None or not hasattr(self.source, "set_ends"):
            return
        phases = self.recipe.training_phases()
        if self.cfg.phase_plan == "steps":
            self.source.set_ends(phase_ends(phases, self.total_steps))
        elif elapsed is not None:
            budget = self.cfg.minutes * 60
            ends = phase_ends_by_time(phases, budget, elapsed, self.step, self.total_steps, self.source.ends)
            self.source.set_ends(ends)

    def elapsed(self) -> float:
        return self.elapsed_offset + (time.perf_counter() - self._t0 if hasattr(self, "_t0") else 0.0)

    def lr_now(self) -> float:
        if self.total_steps is None:  # a time budget before the first speed measurement
            return 0.0
        w = self.recipe.warmup_fraction(self.total_steps)
        return self.recipe.lr * lr_multiplier(
            min(self.step, self.total_steps - 1), self.total_steps, w, self.recipe.schedule
        )

    def _all_reduce(self, t: torch.Tensor, op=None) -> torch.Tensor:
        if self.rt.dist.enabled:
            dist.all_reduce(t, op=op or dist.ReduceOp.SUM)
        return t

    # --- one optimiser step ---------------------------------------------------------------------
    def train_step(
        self, micro_batches: list[dict[str, torch.Tensor]], stats: torch.Tensor, first_bad: torch.Tensor
    ) -> None:
        """One optimiser step over the micro-batches of a global batch. Adds to `stats` (see `Stat`)
        and records in `first_bad` the first step whose loss (or gradient) was not finite, both on
        the device: nothing here waits for the device."""
        rt = self.rt
        world = rt.dist.world_size
        # the LM's predictions in the whole global batch: masked tokens (MLM) or next tokens (LTR)
        n_lm = sum((target_labels(b) != IGNORE_INDEX).sum() for b in micro_batches).double()
        n_lm = self._all_reduce(n_lm).clamp(min=1)
        k = len(micro_batches)
        step_loss = torch.zeros((), dtype=torch.float64, device=rt.device)
        for i, b in enumerate(micro_batches):
            sync = self.ddp is None or i == k - 1
            with contextlib.nullcontext() if sync else self.ddp.no_sync():
                with rt.autocast():
                    lm_sum, nsp_loss, lm_correct, nsp_correct = self.objective(**b)
                # DDP averages gradients over processes, hence the factor `world`.
                loss = lm_sum * (world / n_lm) + nsp_loss / k
                self.scaler.scale(loss).backward()
            rows = b["input_ids"].shape[0] if "nsp_labels" in b else 0
            step_loss += (lm_sum.detach().double() / n_lm) * world + nsp_loss.detach().double() / k
            # running sums on the device (Python numbers go in as kernel arguments: no copy, no sync)
            stats[Stat.LM_LOSS_SUM] += lm_sum.detach()
            stats[Stat.LM_PREDICTIONS] += (target_labels(b) != IGNORE_INDEX).sum()
            stats[Stat.LM_CORRECT] += lm_correct
            stats[Stat.NSP_LOSS_SUM] += nsp_loss.detach() * rows
            stats[Stat.NSP_CORRECT] += nsp_correct
            stats[Stat.NSP_ROWS] += rows
        gnorm = optimizer_step(self.optimizer, self.scaler, self.lr_now(), self.recipe.grad_clip)
        stats[Stat.GRAD_NORM_SUM] += gnorm.detach().double()
        bad = ~torch.isfinite(step_loss)
        if not rt.uses_grad_scaler:  # with fp16 loss scaling, inf gradients are expected and skipped
            bad = bad | ~torch.isfinite(gnorm)
        first_bad.copy_(torch.where(bad & (first_bad < 0), self.step + 1, first_bad))  # 1-based, as logged

    # --- the loop -------------------------------------------------------------------------------
    def run(self) -> PretrainResult:
        """Train until the step count (or the time budget) is reached, a stop signal arrives or
        cfg.stop_after steps of this session are done; log, evaluate and checkpoint on the way. The
        device is read only at sync points (`needs_sync`): every step on a CPU, else at log lines,
        evaluations, checkpoints, the first step and stop requests."""
        cfg = self.cfg
        self.resume_if_asked()
        logger = self.open_metrics()
        feeder = Prefetcher(self.source, self.prepare_batch)
        stats = zero_stats(self.rt.device)
        first_bad = torch.full((), -1, dtype=torch.long, device=self.rt.device)
        bar = logs.progress_bar(self.total_steps, "pretrain", enabled=self.is_main and cfg.progress, initial=self.step)
        self._t0 = time.perf_counter()
        session = Session(start_step=self.step, window=(self.step, self.elapsed(), self.tokens))
        stopped_by = None
        self.model.train()
        try:
            with StopSignals() as signals:
                while self.total_steps is None or self.step < self.total_steps:
                    micro, self.data_state = next(feeder)
                    if self.rt.device.type != "cpu":
                        micro = [self.rt.to_device(mb) for mb in micro]
                    self.train_step(micro, stats, first_bad)
                    self.step += 1
                    rows, T = micro[0]["input_ids"].shape
                    self.batch_shape = (rows * len(micro) * self.rt.dist.world_size, T)
                    self.tokens += self.batch_shape[0] * T
                    bar.update(1)
                    if self.step == session.start_step + 1:
                        self.time_first_step(session)
                    due = self.due(session, signals)
                    if not self.needs_sync(due):
                        continue
                    stop_now, elapsed = self.sync(first_bad, due.wants_stop)
                    if cfg.minutes is not None:
                        due.last = self.fit_time_budget(session, elapsed, bar)
                    if due.log or due.last:
                        rec = self.train_record(stats, session, elapsed)
                        logger.log(rec)
                        bar.set_postfix(logs.format_postfix(rec), refresh=False)
                        stats.zero_()
                        session.window = (self.step, elapsed, self.tokens)
                    # a session stopped by --stop-after is scored where it stops (a pilot's last point);
                    # one stopped by a signal saves and leaves at once
                    scored_stop = stop_now and signals.received is None
                    if (due.eval or due.last or scored_stop) and self.eval_batches and self.is_main:
                        self.evaluate(logger, due.last)
                    if due.checkpoint or due.last or stop_now:
                        self.save()
                        ckpt_root_barrier(self.rt)
                    if stop_now and not due.last:
                        stopped_by = signals.received or "stop_after"
                        if self.is_main:
                            print(
                                f"\nstopped ({stopped_by}): saved {self.last_checkpoint} at step {self.step}; "
                                f"continue with --resume",
                                flush=True,
                            )
                        break
                    if due.last:
                        break
        finally:
            feeder.close()
            bar.close()
            logger.close()
        self.history = logger.records
        return PretrainResult(
            out_dir=self.out,
            step=self.step,
            history=self.history,
            final_eval=self.final_eval,
            checkpoint=self.last_checkpoint,
            model=self.model,
            stopped_by=stopped_by,
            elapsed_s=self.elapsed(),
            tokens=self.tokens,
        )

    # --- the steps of the loop ------------------------------------------------------------------
    def resume_if_asked(self) -> None:
        """With cfg.resume: continue from the newest checkpoint, if there is one."""
        if not self.cfg.resume:
            return
        path = ckpt.latest_checkpoint(self.ckpt_root)
        if path is not None:
            self.restore(path)
            if self.is_main:
                print(f"resuming from {path} (step {self.step})", flush=True)
        elif self.is_main:
            print(f"--resume: no checkpoint in {self.ckpt_root}; starting from step 0", flush=True)

    def open_metrics(self) -> logs.MetricsLogger:
        """The metrics.jsonl logger, cut back to this step (a resumed run drops the lines of steps
        it is about to redo) and holding the earlier lines."""
        metrics = self.out / "metrics.jsonl"
        if self.is_main:
            logs.truncate_metrics(metrics, self.step)
        logger = logs.MetricsLogger(metrics, enabled=self.is_main)
        if self.is_main and self.step > 0 and metrics.exists():
            logger.records = logs.read_metrics(metrics)
        return logger

    def prepare_batch(self, batch: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """This process's micro-batches of a global batch: on the device (CPU), or in pinned memory
        for a fast copy to the GPU (run in the prefetching thread)."""
        rt = self.rt
        micro = shard_rows(batch, rt.dist.rank, rt.dist.world_size, self.cfg.grad_accum)
        if rt.device.type == "cpu":
            return [rt.to_device(mb) for mb in micro]
        return [{k: v.pin_memory() for k, v in mb.items()} for mb in micro]

    def time_first_step(self, session: Session) -> None:
        """The first step of a session carries one-off costs (torch.compile's compilation,
        allocator warm-up): timed apart, and left out of tokens/s."""
        if self.rt.device.type == "cuda":
            torch.cuda.synchronize(self.rt.device)
        session.first_step_s = time.perf_counter() - self._t0
        session.budget_from = (self.step, self.elapsed())
        if self.cfg.log_every > 1:  # tokens/s of the first window: from step 2 on
            session.steady_from = (self.elapsed(), self.tokens)
        if self.rt.compile and self.is_main:
            print(f"first step, compilation included: {session.first_step_s:.1f} s", flush=True)

    def due(self, session: Session, signals: StopSignals) -> Due:
        """What the step just done calls for (before the time budget is re-estimated)."""
        cfg, s = self.cfg, self.step
        return Due(
            log=s % cfg.log_every == 0,
            checkpoint=s % cfg.checkpoint_every == 0,
            eval=s % cfg.eval_every == 0 and bool(self.eval_batches),
            last=self.total_steps is not None and s >= self.total_steps,
            wants_stop=signals.received is not None
            or (cfg.stop_after is not None and s - session.start_step >= cfg.stop_after),
        )

    def needs_sync(self, due: Due) -> bool:
        """Whether to read the device's numbers after this step (a sync point)."""
        rt = self.rt
        return (
            due.log
            or due.checkpoint
            or due.eval
            or due.last
            or self.step == 1
            or (due.wants_stop and not rt.dist.enabled)
            or rt.device.type == "cpu"
        )

    def sync(self, first_bad: torch.Tensor, wants_stop: bool) -> tuple[bool, float]:
        """Read the device's numbers and agree across processes: raise NonFiniteLossError if any
        process saw a loss (or gradient) that is not finite; (stop now, elapsed seconds as rank 0
        measured them)."""
        rt = self.rt
        flags = torch.tensor([first_bad.item() if first_bad.item() >= 0 else 2**62], device=rt.device)
        self._all_reduce(flags, dist.ReduceOp.MIN if rt.dist.enabled else None)
        if flags.item() < 2**62:
            raise NonFiniteLossError(int(flags.item()), self.last_checkpoint)
        agree = torch.tensor([1.0 if wants_stop else 0.0, self.elapsed()], dtype=torch.float64, device=rt.device)
        if rt.dist.enabled:
            agree[1] = agree[1] if self.is_main else 0.0
            dist.all_reduce(agree, op=dist.ReduceOp.MAX)
        return agree[0].item() > 0, agree[1].item()

    def fit_time_budget(self, session: Session, elapsed: float, bar) -> bool:
        """Re-estimate the number of steps that fit cfg.minutes from the measured speed (the length
        the learning-rate schedule decays over) and place the phase boundaries by the clock
        (plan_phases); whether this step is the last. The speed is the mean since the session's
        first step (its one-off compilation left out), evaluations and checkpoints included, since
        they recur: read over the few steps since a pause, it would take the pause for a slow run."""
        s, budget = self.step, self.cfg.minutes * 60
        start = session.budget_from
        if start is not None and s > start[0] and elapsed > start[1]:
            rate = (s - start[0]) / (elapsed - start[1])
        else:
            rate = s / max(elapsed, 1e-9)
        self.total_steps = max(s, s + int(max(budget - elapsed, 0.0) * rate))
        self.plan_phases(elapsed)
        bar.total = self.total_steps
        return s >= self.total_steps

    def train_record(self, stats: torch.Tensor, session: Session, elapsed: float) -> dict[str, Any]:
        """The metrics line of the steps since the last one: the statistics summed over processes
        (one read of the device), tokens/s, MFU, learning rate."""
        got = self._all_reduce(stats.clone()).tolist()
        lm_sum, n, correct = got[Stat.LM_LOSS_SUM], got[Stat.LM_PREDICTIONS], got[Stat.LM_CORRECT]
        rows = got[Stat.NSP_ROWS]
        (B, T), world = self.batch_shape, self.rt.dist.world_size
        s = self.step
        steps_in = s - session.window[0]
        since = session.steady_from or session.window[1:]
        session.steady_from = None
        dt = max(elapsed - since[0], 1e-9)
        tok_s = (self.tokens - since[1]) / dt
        step_flops = flops.pretraining_flops(self.model.config, B, T, n / max(steps_in * B, 1))
        loss_key, acc_key = OBJECTIVES[self.cfg.objective]
        rec = {"step": s, "split": "train", loss_key: lm_sum / max(n, 1), acc_key: correct / max(n, 1)}
        if rows:
            rec.update(nsp_loss=got[Stat.NSP_LOSS_SUM] / rows, nsp_acc=got[Stat.NSP_CORRECT] / rows)
        rec["loss"] = rec[loss_key] + rec.get("nsp_loss", 0.0)
        rec.update(
            lr=self.optimizer.param_groups[0]["lr"],
            grad_norm=got[Stat.GRAD_NORM_SUM] / world / max(steps_in, 1),
            tokens_per_s=tok_s,
            mfu=flops.mfu(step_flops * tok_s / (B * T), self.rt.peak_flops),
            tokens=self.tokens,
            elapsed_s=elapsed,
            seq_len=T,
            batch_size=B,
        )
        if session.first_step_s is not None:  # once per session: the first step's one-off time
            rec["first_step_s"] = session.first_step_s
            session.first_step_s = None
        return rec

    def evaluate(self, logger: logs.MetricsLogger, last: bool) -> None:
        """Score the held-out batches and log them (the final scores are kept)."""
        ev = evaluate_pretraining(self.model, self.eval_batches, self.rt, self.mask_id)
        logger.log({"step": self.step, "split": "eval", **ev, "elapsed_s": self.elapsed()})
        if last:
            self.final_eval = ev


def ckpt_root_barrier(rt: Runtime) -> None:
    """Other processes wait for rank 0 to finish writing a checkpoint."""
    if rt.dist.enabled:
        dist.barrier()


# ------------------------------------------------------------------------------------------------
# The whole run: data, model, loop, final weights
# ------------------------------------------------------------------------------------------------
@dataclass
class PretrainingData:
    train: BatchSource  # endless, resumable, masked global batches
    eval_batches: list[dict[str, torch.Tensor]]  # fixed, masked held-out batches
    tokenizer: Any
    tokenizer_file: Path
    train_examples: int = 0
    heldout_examples: int = 0
    unigram_log_probs: torch.Tensor | None = None  # (V,) log frequencies of the training tokens


def _main_first(rt: Runtime, fn: Callable[[], Any]) -> Any:
    """Run fn on rank 0 first (it builds and caches), then on the others (they read the cache)."""
    if not rt.dist.enabled:
        return fn()
    result = fn() if rt.dist.is_main else None
    dist.barrier()
    return result if rt.dist.is_main else fn()


def prepare_data(cfg: PretrainConfig, rt: Runtime) -> PretrainingData:
    """Corpus -> WordPiece vocabulary -> memory-mapped examples -> masked batches.

    Documents of `cfg.corpus` (bertlab.data.corpus: "train" split for training, "heldout" for
    evaluation, whole documents never on both sides); the vocabulary trained on the training
    documents only (or read from `cfg.tokenizer`); examples cut and stored under <out>/data
    (bertlab.data.pretraining_data, reused when the text and vocabulary are unchanged); batches masked
    on the fly (bertlab.data.masking), 15% of the tokens, 80/10/10; or, for objective="ltr", left
    unmasked with next-token labels (bertlab.data.masking.NextTokenCollator)."""
    r = cfg.resolved_recipe()
    out = Path(cfg.out)
    docs = load_corpus(cfg.corpus, "train")
    if cfg.max_documents is not None:
        docs = docs[: cfg.max_documents]
    heldout = load_corpus(cfg.corpus, "heldout")
    if cfg.max_documents is not None:  # a quick run: a quick evaluation too
        heldout = heldout[: max(2, cfg.max_documents)]
    tok_dir = out / "tokenizer"

    resume_from = ckpt.latest_checkpoint(out / "checkpoints") if cfg.resume else None

    def get_tokenizer():
        if cfg.tokenizer is not None:
            tok = WordPieceTokenizer.load(cfg.tokenizer)
            if resume_from is not None and (resume_from / "tokenizer.json").exists():
                saved = WordPieceTokenizer.load(resume_from / "tokenizer.json")
                if saved.fingerprint != tok.fingerprint:  # check before anything is overwritten
                    raise ValueError(
                        f"cannot resume from {resume_from}: it was trained with a different vocabulary "
                        f"({saved.vocab_size} pieces, fingerprint {saved.fingerprint[:12]}) than --tokenizer "
                        f"{cfg.tokenizer} ({tok.vocab_size} pieces, fingerprint {tok.fingerprint[:12]}). "
                        f"Resume without --tokenizer, or start a new run in another --out folder."
                    )
            if rt.dist.is_main:
                tok.save(tok_dir)
            return tok
        if resume_from is not None and (resume_from / "tokenizer.json").exists():
            return WordPieceTokenizer.load(resume_from / "tokenizer.json")
        if (tok_dir / "tokenizer.json").exists():  # a resumed run, or another process built it
            tok = WordPieceTokenizer.load(tok_dir)
            if tok.vocab_size == cfg.vocab_size or not rt.dist.is_main:
                return tok
        tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=cfg.vocab_size)
        tok.save(tok_dir)
        return tok

    tokenizer = _main_first(rt, get_tokenizer)

    phases = r.training_phases()
    lengths = sorted({ph.seq_len for ph in phases})

    def get_examples():
        # one set of examples per sequence length (a run without phases keeps its folder name)
        folder = {T: "train" if not r.phases else f"train-{T}" for T in lengths}
        train = {
            T: prepare_pretraining_data(
                docs, tokenizer, out / "data" / folder[T], max_len=T, nsp=r.nsp, pairs=r.segment_pairs, seed=cfg.seed
            )
            for T in lengths
        }
        held = prepare_pretraining_data(
            heldout,
            tokenizer,
            out / "data" / "heldout",
            max_len=r.seq_len,
            nsp=r.nsp,
            pairs=r.segment_pairs,
            seed=EVAL_SEED,
        )
        return train, held

    train_sets, held_ds = _main_first(rt, get_examples)
    streams = []
    for k, ph in enumerate(phases):  # each phase its own masks and order (the first: the run's seed)
        collator = make_collator(cfg.objective, tokenizer, r.mlm_probability, cfg.whole_word, seed=cfg.seed + k)
        streams.append(PretrainingBatches(train_sets[ph.seq_len], ph.batch_size, collator, seed=cfg.seed + k))
    source = streams[0] if len(streams) == 1 else PhasedBatches(streams)
    eval_bs = min(r.batch_size, 64, len(held_ds))
    # held-out: single pieces masked at the paper's rate, whatever the run trains with (whole words,
    # 30%), so that every run is scored the same way
    eval_batches = heldout_batches(
        held_ds, tokenizer, cfg.objective, eval_bs, cfg.eval_batches, HELDOUT_MLM_PROBABILITY
    )
    train_ds = train_sets[phases[0].seq_len]
    if rt.dist.is_main:
        shapes = "; ".join(
            f"{len(train_sets[ph.seq_len]):,} training sequences of {ph.seq_len} tokens"
            + (f" ({ph.fraction:.0%} of the {cfg.phase_plan}, {ph.batch_size} a batch)" if len(phases) > 1 else "")
            for ph in phases
        )
        print(
            f"data: {shapes} from {len(docs)} documents; {len(eval_batches)} held-out batches of {eval_bs} "
            f"({r.seq_len} tokens) from {len(heldout)} documents; vocabulary {tokenizer.vocab_size:,}",
            flush=True,
        )
    prior = None
    if r.mlm_bias == "unigram":
        # pieces never predicted get -1e4; a left-to-right LM does predict [SEP] (after the last
        # piece of a segment), so it keeps [SEP]'s frequency
        never = [tokenizer.pad_id, tokenizer.cls_id, tokenizer.mask_id]
        if cfg.objective != "ltr":
            never.append(tokenizer.sep_id)
        prior = unigram_log_probs(train_ds, tokenizer.vocab_size, exclude=never)
    return PretrainingData(
        source, eval_batches, tokenizer, tok_dir / "tokenizer.json", len(train_ds), len(held_ds), prior
    )


def build_model(cfg: PretrainConfig, vocab_size: int, pad_id: int = 0) -> BertForPreTraining:
    """The model a run trains: the preset's size (or its L/H/A overrides); causal (left-to-right)
    attention for the "ltr" objective."""
    r = cfg.resolved_recipe()
    L, H, A = cfg.model_size()
    config = BertConfig(
        vocab_size=vocab_size,
        num_layers=L,
        hidden_size=H,
        num_heads=A,
        hidden_dropout=r.dropout,
        attention_dropout=r.dropout,
        pad_token_id=pad_id,
        causal=cfg.objective == "ltr",
        norm_position=r.norm_position,
    )
    return BertForPreTraining(config)


def pretrain(
    cfg: PretrainConfig,
    source: BatchSource | None = None,
    eval_batches: list[dict[str, torch.Tensor]] | None = None,
    tokenizer: Any = None,
    runtime: Runtime | None = None,
) -> PretrainResult:
    """Pretrain a BERT as `cfg` says and return the result (metrics history, final held-out
    scores, the model). By default the data is built from `cfg.corpus` (bertlab.data.pretraining_data);
    pass `source` (and `tokenizer`, `eval_batches`) to train on batches of your own."""
    cfg.validate()
    rt = runtime or make_runtime(cfg.device, cfg.precision, cfg.compile)
    out = Path(cfg.out)
    if rt.dist.is_main:
        out.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.seed)
    tokenizer_file = None
    prior = None
    if source is None:
        data = prepare_data(cfg, rt)
        source, eval_batches, tokenizer = data.train, data.eval_batches, data.tokenizer
        tokenizer_file = data.tokenizer_file
        prior = data.unigram_log_probs
    elif cfg.resolved_recipe().mlm_bias == "unigram":
        raise ValueError(
            "mlm_bias='unigram' needs the token frequencies of the training data, which a custom "
            "batch source does not give; use mlm_bias='zeros' (--mlm-bias zeros) or let pretrain "
            "build the data from cfg.corpus"
        )
    elif tokenizer is not None:
        if rt.dist.is_main:
            tokenizer.save(out / "tokenizer")
        tokenizer_file = out / "tokenizer" / "tokenizer.json"
    vocab_size = tokenizer.vocab_size if tokenizer is not None else None
    if vocab_size is None:
        raise ValueError("pretrain needs a tokenizer (for the vocabulary size) when given a batch source")
    seed_everything(cfg.seed)  # the model's initial weights depend on the seed only
    model = build_model(cfg, vocab_size, getattr(tokenizer, "pad_id", 0))
    if prior is not None:  # start the MLM where a unigram model is: the loss starts near its entropy
        with torch.no_grad():
            model.mlm.bias.copy_(prior)
    # Dropout draws: different in every process (otherwise all would drop the same units).
    torch.manual_seed(cfg.seed + 1 + rt.dist.rank)
    fingerprint = getattr(tokenizer, "fingerprint", None)
    if rt.dist.is_main:
        # A resumed run keeps the code, runtime and torch it started with (its pretraining's), and
        # lists each later session's under "resumed_with".
        run_file = out / "run.json"
        first = json.loads(run_file.read_text()) if cfg.resume and run_file.exists() else None
        this = {"runtime": rt.describe(), "torch": torch.__version__, "git_commit": git_commit()}
        files.write_json(
            run_file,
            {
                "config": dataclasses.asdict(cfg),
                "recipe": dataclasses.asdict(cfg.resolved_recipe()),
                "phase_plan": cfg.phase_plan,
                "model_config": model.config.to_dict(),
                "parameters": model.num_parameters(),
                "world_size": rt.dist.world_size,
                **({k: first.get(k) for k in this} if first else this),
                "vocab_fingerprint": fingerprint,
                **({"resumed_with": [*first.get("resumed_with", []), this]} if first else {}),
            },
        )
    trainer = Trainer(
        cfg,
        model,
        source,
        eval_batches,
        rt,
        vocab_fingerprint=fingerprint,
        tokenizer_file=tokenizer_file,
        mask_id=getattr(tokenizer, "mask_id", None),
    )
    result = trainer.run()
    if result.stopped_by is None and rt.dist.is_main:
        ckpt.save_model(out / "final", model, tokenizer_file=tokenizer_file)
    return result
