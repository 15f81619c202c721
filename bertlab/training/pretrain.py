"""Pretraining: the loop that turns a corpus into a BERT.

    result = pretrain(PretrainConfig(preset="mini", corpus="books+wiki", steps=2000, out="runs/mini"))
    result.history            # every logged metric (also in runs/mini/metrics.jsonl)
    result.model              # the trained BertForPreTraining

or `python -m bertlab pretrain ...` (several GPUs: `torchrun --nproc_per_node N`). One step, as in
the paper (sections 3.1, A.2): loss = mean MLM cross-entropy at the masked positions + mean NSP
cross-entropy; backward, clipping, the scheduled lr, an AdamW update. objective="ltr" is section
5.1's "LTR & No NSP". Checkpoints are atomic (every `checkpoint_every` steps, at the end, on SIGTERM
/ Ctrl-C) and `resume=True` continues exactly where a run stopped; a NaN/inf loss stops the run
before its weights are saved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from bertlab import checkpoint as ckpt
from bertlab import files
from bertlab.config import BertConfig
from bertlab.model import IGNORE_INDEX, BertForPreTraining
from bertlab.runtime import Runtime, git_commit, keep_freed_memory, make_runtime, seed_everything
from bertlab.training import flops, logs
from bertlab.training.batch_feed import BatchSource, Prefetcher, shard_rows
from bertlab.training.heldout import EVAL_SEED, evaluate_checkpoint, evaluate_pretraining  # noqa: F401 (re-exported)
from bertlab.training.objective import OBJECTIVES, PretrainingObjective, target_labels
from bertlab.training.optim import adamw, optimizer_step
from bertlab.training.pretrain_config import NonFiniteLossError, PretrainConfig, PretrainResult
from bertlab.training.pretrain_data import PretrainingData, prepare_data  # noqa: F401 (re-exported)
from bertlab.training.recipes import phase_ends, phase_ends_by_time
from bertlab.training.stop_signals import StopSignals


def run_fingerprint(cfg: PretrainConfig, model_config: BertConfig, vocab_fingerprint: str | None) -> dict[str, Any]:
    """The settings a checkpoint must share with the run that resumes it."""
    recipe = dataclasses.asdict(cfg.resolved_recipe())
    del recipe["notes"]  # prose, not a setting
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
    """The slots of the running statistics: one float64 tensor, summed on the device without a sync."""

    LM_LOSS_SUM = 0  # summed over the LM's predictions (masked tokens, or next tokens)
    LM_PREDICTIONS = 1
    LM_CORRECT = 2
    NSP_LOSS_SUM = 3  # the NSP loss times the rows it averaged over
    NSP_CORRECT = 4
    NSP_ROWS = 5
    GRAD_NORM_SUM = 6  # summed over steps and processes


def zero_stats(device: torch.device | str) -> torch.Tensor:
    """A fresh running-statistics tensor (indexed by `Stat`) on `device`."""
    return torch.zeros(len(Stat), dtype=torch.float64, device=device)


@dataclass
class Session:
    """What one call of `Trainer.run` keeps between steps for its log lines and time budget."""

    start_step: int  # the step this session started (or resumed) from
    window: tuple[int, float, int]  # (step, elapsed s, tokens) at the last log line
    budget_from: tuple[int, float] | None = None  # (step, elapsed s) after the first step
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
        if not self.recipe.nsp:  # no gradient reaches the pooler and NSP layer: DDP needs them frozen
            for p in list(model.nsp.parameters()) + list(model.bert.pooler.parameters()):
                p.requires_grad_(False)
        r = self.recipe
        self.optimizer = adamw(model, r.lr, r.betas, r.eps, r.weight_decay, fused=rt.fused_adamw)
        self.scaler = rt.grad_scaler()
        self.fingerprint = run_fingerprint(cfg, model.config, vocab_fingerprint)
        objective: nn.Module = PretrainingObjective(model)
        if rt.dist.enabled:
            ids = [rt.device.index] if rt.device.type == "cuda" else None
            objective = nn.parallel.DistributedDataParallel(objective, device_ids=ids)
        self.ddp = objective if rt.dist.enabled else None
        if rt.compile:  # several sequence lengths: one static graph each
            dynamic = False if len(self.recipe.training_phases()) > 1 else None
            objective = torch.compile(objective, backend=cfg.compile_backend, dynamic=dynamic)
        self.objective = objective
        self.step, self.tokens, self.elapsed_offset = 0, 0, 0.0
        self.total_steps: int | None = cfg.steps or (None if cfg.minutes else self.recipe.steps)
        self.batch_shape = (self.recipe.batch_size, self.recipe.seq_len)  # (B, T) of the last step's batch
        self.plan_phases()
        self.last_checkpoint: Path | None = None
        self.data_state: dict[str, Any] | None = None
        self.final_eval: dict[str, Any] | None = None

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
                self.ckpt_root, self.step, self.model, self.state(), self.tokenizer_file, self.cfg.keep_last
            )
        return self.last_checkpoint

    def restore(self, path: Path) -> None:
        c = ckpt.load_checkpoint(path)
        c.state["run"]["recipe"].pop("notes", None)  # prose, not a setting (older checkpoints hold it)
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

    def plan_phases(self, elapsed: float | None = None) -> None:
        """Tell a phased batch source (PhasedBatches) at which steps its phases end, once the run's
        length is known; under a time budget by the clock (`elapsed`; until then a resumed run keeps
        its checkpoint's boundaries)."""
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
        return self.recipe.lr_at(min(self.step, self.total_steps - 1), self.total_steps)

    def _all_reduce(self, t: torch.Tensor, op: str = "SUM") -> torch.Tensor:
        if self.rt.dist.enabled:
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        return t

    def train_step(
        self, micro_batches: list[dict[str, torch.Tensor]], stats: torch.Tensor, first_bad: torch.Tensor
    ) -> None:
        """One optimiser step over the micro-batches of a global batch. Adds to `stats`, and records in
        `first_bad` (without waiting for the device) the first step whose loss or gradient was not finite."""
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
            # running sums on the device (Python numbers are kernel arguments: no sync)
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

    def run(self) -> PretrainResult:
        """Train until the step count (or the time budget) is reached, a stop signal arrives or
        cfg.stop_after steps of this session are done; log, evaluate and checkpoint on the way."""
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
                    # --stop-after is scored where it stops; a signal saves and leaves at once
                    scored_stop = stop_now and signals.received is None
                    if (due.eval or due.last or scored_stop) and self.eval_batches and self.is_main:
                        self.evaluate(logger, due.last)
                    if due.checkpoint or due.last or stop_now:
                        self.save()
                        if self.rt.dist.enabled:  # the others wait for rank 0's checkpoint
                            dist.barrier()
                    if stop_now and not due.last:
                        stopped_by = signals.received or "stop_after"
                        if self.is_main:
                            saved = f"saved {self.last_checkpoint} at step {self.step}"
                            print(f"\nstopped ({stopped_by}): {saved}; continue with --resume", flush=True)
                        break
                    if due.last:
                        break
        finally:
            feeder.close()
            bar.close()
            logger.close()
        return PretrainResult(
            out_dir=self.out,
            step=self.step,
            history=logger.records,
            final_eval=self.final_eval,
            checkpoint=self.last_checkpoint,
            model=self.model,
            stopped_by=stopped_by,
            elapsed_s=self.elapsed(),
            tokens=self.tokens,
        )

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
        """The metrics.jsonl logger, cut back to this step (a resumed run redoes the later ones)."""
        metrics = self.out / "metrics.jsonl"
        if self.is_main:
            logs.truncate_metrics(metrics, self.step)
        logger = logs.MetricsLogger(metrics, enabled=self.is_main)
        if self.is_main and self.step > 0 and metrics.exists():
            logger.records = logs.read_metrics(metrics)
        return logger

    def prepare_batch(self, batch: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """This process's micro-batches of a global batch: on the CPU device, or pinned for a fast copy
        to the GPU (run in the prefetching thread)."""
        rt = self.rt
        micro = shard_rows(batch, rt.dist.rank, rt.dist.world_size, self.cfg.grad_accum)
        if rt.device.type == "cpu":
            return [rt.to_device(mb) for mb in micro]
        return [{k: v.pin_memory() for k, v in mb.items()} for mb in micro]

    def time_first_step(self, session: Session) -> None:
        """The first step's one-off costs (compilation, allocator warm-up), timed apart from tokens/s."""
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
        every_step = self.rt.device.type == "cpu" or self.step == 1
        stop_alone = due.wants_stop and not self.rt.dist.enabled
        return every_step or stop_alone or due.log or due.checkpoint or due.eval or due.last

    def sync(self, first_bad: torch.Tensor, wants_stop: bool) -> tuple[bool, float]:
        """Read the device and agree across processes: NonFiniteLossError if any process saw a
        non-finite loss or gradient; else (stop now, elapsed seconds as rank 0 measured them)."""
        bad, device = first_bad.item(), self.rt.device
        flags = self._all_reduce(torch.tensor([bad if bad >= 0 else 2**62], device=device), "MIN")
        if flags.item() < 2**62:
            raise NonFiniteLossError(int(flags.item()), self.last_checkpoint)
        elapsed = self.elapsed() if self.is_main else 0.0  # rank 0's clock
        agree = self._all_reduce(torch.tensor([float(wants_stop), elapsed], dtype=torch.float64, device=device), "MAX")
        return agree[0].item() > 0, agree[1].item()

    def fit_time_budget(self, session: Session, elapsed: float, bar) -> bool:
        """Re-estimate the steps that fit cfg.minutes (what the lr schedule decays over) and place
        the phase boundaries; whether this step is the last. The speed is the mean since the
        session's first step, evaluations and checkpoints included, since they recur."""
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
        """The metrics line of the steps since the last one, its statistics summed over processes."""
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


def build_model(cfg: PretrainConfig, vocab_size: int, pad_id: int = 0) -> BertForPreTraining:
    """The model a run trains: the preset's size (or its L/H/A overrides), causal for "ltr"."""
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
    """Pretrain a BERT as `cfg` says and return the result (history, final held-out scores, model).
    The data is built from `cfg.corpus`, unless `source` (and `tokenizer`, `eval_batches`) gives
    batches of your own."""
    cfg.validate()
    rt = runtime or make_runtime(cfg.device, cfg.precision, cfg.compile)
    out = Path(cfg.out)
    if rt.dist.is_main:
        out.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.seed)
    tokenizer_file = prior = None
    if source is None:
        data = prepare_data(cfg, rt)
        source, eval_batches, tokenizer = data.train, data.eval_batches, data.tokenizer
        tokenizer_file, prior = data.tokenizer_file, data.unigram_log_probs
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
    if tokenizer is None:
        raise ValueError("pretrain needs a tokenizer (for the vocabulary size) when given a batch source")
    seed_everything(cfg.seed)  # the model's initial weights depend on the seed only
    model = build_model(cfg, tokenizer.vocab_size, getattr(tokenizer, "pad_id", 0))
    if prior is not None:  # start the MLM where a unigram model is: the loss starts near its entropy
        with torch.no_grad():
            model.mlm.bias.copy_(prior)
    # Dropout draws: different in every process (otherwise all would drop the same units).
    torch.manual_seed(cfg.seed + 1 + rt.dist.rank)
    fingerprint = getattr(tokenizer, "fingerprint", None)
    if rt.dist.is_main:  # a resumed run keeps its first session's code and runtime, lists the others'
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
    mask_id = getattr(tokenizer, "mask_id", None)
    result = Trainer(cfg, model, source, eval_batches, rt, fingerprint, tokenizer_file, mask_id).run()
    if result.stopped_by is None and rt.dist.is_main:
        ckpt.save_model(out / "final", model, tokenizer_file=tokenizer_file)
    return result
