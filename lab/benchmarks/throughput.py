"""Pretraining throughput: bertlab's training step against transformers' BertForPreTraining.

    python lab/benchmarks/throughput.py                  # on a GPU: base and the reference-run config
    python lab/benchmarks/throughput.py --quick          # anywhere (CPU included): a tiny config, seconds
    python lab/benchmarks/throughput.py --json out.json  # also write the numbers
    python lab/benchmarks/throughput.py --device cpu --preset mini --json   # one config, one JSON line

Both sides do one full optimiser step of MLM + NSP pretraining on the same batch shape and
precision: random tokens, 15% of the positions chosen for the MLM, fused AdamW (on CUDA), gradient
clipping, bf16 autocast (fp16 + loss scaling on GPUs without bf16; on a CPU fp32, bf16 only where
it is native).

    bertlab        bertlab.training.pretrain.Trainer.train_step itself: the objective compiled with
                   torch.compile, attention as bertlab's model runs it on the device (fused SDPA on
                   a GPU, the written-out formula on a CPU), the MLM head on the chosen positions only
    transformers   BertForPreTraining(attn_implementation="sdpa"), torch.compile'd, labels -100
                   at the positions not chosen (its MLM head runs on every position)

Timing excludes the warm-up steps (compilation) and brackets the measured steps with
torch.cuda.synchronize(). MFU = model FLOPs per second / the GPU's dense bf16 peak, with the same
model-FLOPs count for both sides (bertlab.training.flops.pretraining_flops: matmuls, attention, and the MLM
head on the chosen positions only), so the extra work transformers does at unchosen positions
counts as waste, not as useful FLOPs.

Targets for one H100 (see the project's anchors: transformers sdpa + compile reached 444k tokens/s
= 24.5% MFU at base): bertlab >= 1.5x transformers at base and at the reference config, and
MFU >= 40% at base.

One configuration (--preset, or any of --layers/--hidden/--heads/--vocab-size/--seq-len; the
default on a CPU): L/H/A from bertlab.config.PRESETS (default mini), vocabulary 16384, seq 128,
batch 64 on a CPU (256 on a GPU), both implementations in one process, plus the machine's own
matmul ceiling measured in the same run: the best of a few n^3 matmuls (n = 2048 on a CPU, 8192 on
a GPU) in the run's precision (fp32 tensors, or bf16/fp16 tensors), in GFLOP/s, measured before
and after the models (the best of both counts), so a loaded machine lowers both alike.

    precision      --precision auto (default) = bertlab.runtime.resolve_precision: bf16 only on
                   CPUs with native bf16 (AVX512-BF16 or AMX), else fp32; bf16 asked for on a CPU
                   without it is an error (emulated bf16 is several times slower than fp32)
    --compile      torch.compile (inductor) both sides; the first warm-up step is timed on its own
                   and compile_s = that step's time - the steady per-step time (the one-off cost)
    --dropout      the dropout of both models (default 0.1, the paper's; the CPU recipe trains
                   with 0, which --dropout 0 measures)
    --rounds N     the two models take turns, N rounds of the measured steps each, and each figure
                   is its least disturbed round: on a shared machine the load changes within a run,
                   and one after the other (the default, N = 1) a busy minute falls on one side only
    model FLOPs    bertlab.training.flops.pretraining_flops at round(0.15 * seq) predictions per sequence,
                   the same count for both sides; transformers_executed_gflops counts its MLM head
                   at every position instead (the work it actually does)

With --json the last line of stdout is one JSON object: bertlab_tokens_per_s,
transformers_tokens_per_s, speedup (bertlab / transformers), bertlab_gflops, ceiling_gflops,
fraction_of_ceiling (bertlab_gflops / ceiling_gflops), model_shape_ceiling_tokens_per_s (the step's
own matmuls, forward and backward, at their shapes and precision, each timed alone and summed: the
speed of a step that did nothing else) and fraction_of_model_shape_ceiling (bertlab's tokens/s over
it), precision, compiled, compile_s (bertlab's;
transformers_compile_s beside it; null when not compiled), cpu (/proc/cpuinfo's model name) and
cpu_family_model (its family/model numbers: "AMD EPYC" names Zen 3 and Zen 4 alike),
threads (torch.get_num_threads()), cpu_allocator (on a CPU: "kept" when freed memory stays on the
heap for the next step, bertlab.runtime.keep_freed_memory, else "default"; --cpu-allocator picks it
for both models, once per process), loadavg (the 1-minute load average at the start: a busy
machine makes every number a lower bound) and the configuration, dropout included. --json FILE also writes it there.

    python lab/benchmarks/throughput.py --device cpu --preset mini --vocab-size 8192 --dropout 0 --attribution --json F

--attribution says where the speed-up over transformers comes from. bertlab's step differs from
transformers' by five levers (LEVERS): the MLM decoder at the chosen positions only, the last
encoder layer there too, attention written out on a CPU, bf16 autocast and torch.compile. It times
bertlab's own training step with none of them, each alone, all, and all but each (8 steps each
after one warm-up; with --rounds N every setting is built first and they take turns, N rounds,
each figure its least disturbed round), and transformers in fp32 eager and in bf16 compiled;
every row also records the mean MLM loss of its steps, which must not depend on the levers. The
JSON (the last line) has one row per setting; lab.speed reads it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab.config import PRESETS
from bertlab.data.masking import default_max_predictions
from bertlab.model import IGNORE_INDEX
from bertlab.runtime import (
    CPU_ALLOCATORS,
    Runtime,
    cpu_family_model,
    cpu_model,
    device_name,
    freed_memory_kept,
    keep_freed_memory,
    make_runtime,
)
from bertlab.training.flops import pretraining_flops
from bertlab.training.optim import adamw, optimizer_step

CONFIGS = {
    # name: (L, H, A, vocab, seq_len, batch)
    "base": (12, 768, 12, 30522, 128, 256),
    "reference": (8, 512, 8, 16384, 128, 256),  # the reference run's model (medium) and batch
    "tiny": (2, 128, 2, 2000, 64, 8),  # --quick: checks that the script runs, anywhere
}

# one configuration (--preset ...): defaults per device type
SINGLE_DEFAULTS = {
    # device type: (batch, measured steps, warm-up steps, ceiling matmul size, ceiling repeats)
    "cpu": (64, 15, 1, 2048, 3),
    "cuda": (256, 20, 5, 8192, 10),
}
MLM_PROBABILITY = 0.15


@dataclass
class Measurement:
    config: str
    impl: str
    batch: int
    seq_len: int
    precision: str
    compiled: bool
    seconds_per_step: float
    tokens_per_s: float
    mfu: float | None
    peak_memory_gb: float | None
    first_step_s: float | None = None  # the first warm-up step alone (includes compilation)


def add_step_arguments(p: argparse.ArgumentParser, dropout: float) -> None:
    """The one step the companion scripts (profile_step.py, cpu_allocator.py) measure: a preset's
    size, vocabulary, batch, sequence length, dropout and masking rate."""
    p.add_argument("--preset", default="mini", choices=list(PRESETS))
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--dropout", type=float, default=dropout, help=f"default {dropout:g}")
    p.add_argument(
        "--mlm-probability",
        type=float,
        default=MLM_PROBABILITY,
        help=f"share of each sequence's positions masked (default {MLM_PROBABILITY:g})",
    )


def step_config(a: argparse.Namespace) -> BertConfig:
    """The BertConfig of add_step_arguments' step."""
    L, H, A = PRESETS[a.preset]
    return BertConfig(
        vocab_size=a.vocab_size, num_layers=L, hidden_size=H, num_heads=A, hidden_dropout=a.dropout,
        attention_dropout=a.dropout,
    )  # fmt: skip


def check_masking_rate(mlm_probability: float, T: int) -> None:
    """A ValueError unless the rate chooses at least one position of a T-token sequence and leaves
    [CLS] unchosen."""
    n = round(mlm_probability * T)
    if not 1 <= n <= T - 1:
        raise ValueError(
            f"--mlm-probability {mlm_probability:g} chooses {n} of a {T}-token sequence's positions; "
            f"choose between 1 and {T - 1} (every position but [CLS])"
        )


def random_batch(B: int, T: int, V: int, generator: torch.Generator, mlm_probability: float = MLM_PROBABILITY):
    """Random token ids; round(mlm_probability x T) positions chosen per row, in the agreed batch format."""
    check_masking_rate(mlm_probability, T)
    P = default_max_predictions(T, mlm_probability)
    n = round(mlm_probability * T)
    ids = torch.randint(5, V, (B, T), generator=generator)
    chosen = torch.rand(B, T - 1, generator=generator).argsort(1)[:, :n].sort(1).values + 1  # never [CLS]
    positions = torch.zeros(B, P, dtype=torch.long)
    positions[:, :n] = chosen
    labels = torch.full((B, P), IGNORE_INDEX, dtype=torch.long)
    labels[:, :n] = ids.gather(1, chosen)
    return {
        "input_ids": ids,
        "token_type_ids": (torch.arange(T) >= T // 2).long().expand(B, T).contiguous(),
        "attention_mask": torch.ones(B, T, dtype=torch.long),
        "mlm_positions": positions,
        "mlm_labels": labels,
        "nsp_labels": torch.randint(0, 2, (B,), generator=generator),
    }


def _sync(rt: Runtime) -> None:
    if rt.device.type == "cuda":
        torch.cuda.synchronize(rt.device)


def _time(step, rt: Runtime, warmup: int, steps: int) -> tuple[float | None, float]:
    """(seconds of the first warm-up step alone -- compilation happens there --, seconds per
    measured step after all the warm-up steps)."""
    first = None
    for i in range(warmup):
        t = time.perf_counter()
        step()
        if i == 0:
            _sync(rt)
            first = time.perf_counter() - t
    _sync(rt)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(rt)
    return first, (time.perf_counter() - t) / steps


def bertlab_step(
    config: BertConfig,
    batch: dict,
    rt: Runtime,
    stack: contextlib.ExitStack,
    total_steps: int,
    fused_attention: bool | None = None,
    last_layer: bool = True,
) -> tuple[Callable[[], None], torch.Tensor, torch.Tensor]:
    """bertlab's own training step (Trainer.train_step) on the same `batch` every step, ready to
    run: (step, the step statistics, the first non-finite step or -1). The model is built with
    seed 0; `fused_attention` overrides SelfAttention.fused (None: bertlab's choice for the
    device); `last_layer` False runs the last encoder layer at every position instead of only
    where the MLM and NSP heads read it (BertForPreTraining.last_layer_at_chosen); rt.compile
    compiles the step; its learning-rate schedule runs over `total_steps`. The trainer's folder
    lives as long as `stack`."""
    from bertlab.model import SelfAttention
    from bertlab.training.pretrain import PretrainConfig, Trainer, zero_stats

    torch.manual_seed(0)
    model = BertForPreTraining(config)
    model.last_layer_at_chosen = last_layer
    for module in model.modules():
        if isinstance(module, SelfAttention):
            module.fused = fused_attention
    B, T = batch["input_ids"].shape
    out = stack.enter_context(tempfile.TemporaryDirectory())
    cfg = PretrainConfig(
        steps=total_steps, batch_size=B, seq_len=T, nsp=True, compile=rt.compile, out=out, progress=False
    )
    trainer = Trainer(cfg, model, source=None, eval_batches=None, rt=rt)  # the real training step
    batch = rt.to_device(batch)
    stats = zero_stats(rt.device)
    first_bad = torch.full((), -1, dtype=torch.long, device=rt.device)
    return (lambda: trainer.train_step([batch], stats, first_bad)), stats, first_bad


def time_train_step(
    config: BertConfig,
    batch: dict,
    rt: Runtime,
    warmup: int,
    steps: int,
    fused_attention: bool | None = None,
    last_layer: bool = True,
) -> tuple[float | None, float, torch.Tensor]:
    """bertlab_step, timed: (first warm-up step's seconds, seconds per measured step, the step
    statistics)."""
    with contextlib.ExitStack() as stack:
        step, stats, first_bad = bertlab_step(config, batch, rt, stack, warmup + steps, fused_attention, last_layer)
        _reset_memory(rt)
        first, sec = _time(step, rt, warmup, steps)
        if first_bad.item() >= 0:
            raise RuntimeError("bertlab's loss became non-finite during the benchmark")
    return first, sec, stats


def bench_bertlab(
    name, L, H, A, V, T, B, rt: Runtime, warmup: int, steps: int, compile: bool, dropout: float = 0.1,
    mlm_probability: float = MLM_PROBABILITY,
) -> Measurement:  # fmt: skip
    config = BertConfig(
        vocab_size=V, num_layers=L, hidden_size=H, num_heads=A, hidden_dropout=dropout, attention_dropout=dropout
    )
    batch = random_batch(B, T, V, torch.Generator().manual_seed(0), mlm_probability)
    first, sec, _ = time_train_step(config, batch, rt, warmup, steps)
    return _measurement(name, "bertlab", config, B, T, rt, compile, sec, first, mlm_probability)


def transformers_step(
    L, H, A, V, T, B, rt: Runtime, compile: bool, dropout: float = 0.1, mlm_probability: float = MLM_PROBABILITY
) -> Callable[[], None]:
    """transformers' BertForPreTraining (sdpa attention), seed 0, one optimiser step on the same
    batch every call, ready to run."""
    import transformers

    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=V,
        hidden_size=H,
        num_hidden_layers=L,
        num_attention_heads=A,
        intermediate_size=4 * H,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    model = transformers.BertForPreTraining._from_config(hf_config, attn_implementation="sdpa").to(rt.device)
    model.train()
    opt = adamw(model, lr=1e-4, eps=1e-6, weight_decay=0.01, fused=rt.fused_adamw)
    scaler = rt.grad_scaler()
    fwd = torch.compile(model) if compile else model
    b = random_batch(B, T, V, torch.Generator().manual_seed(0), mlm_probability)
    labels = torch.full((B, T), IGNORE_INDEX, dtype=torch.long)  # transformers' format: one label per token
    labels.scatter_(1, b["mlm_positions"], b["mlm_labels"])  # unused slots write -100 at [CLS]
    inputs = rt.to_device(
        {
            "input_ids": b["input_ids"],
            "token_type_ids": b["token_type_ids"],
            "attention_mask": b["attention_mask"],
            "labels": labels,
            "next_sentence_label": b["nsp_labels"],
        }
    )

    def step():
        with rt.autocast():
            loss = fwd(**inputs).loss
        scaler.scale(loss).backward()
        optimizer_step(opt, scaler, lr=1e-4, grad_clip=1.0)  # the update bertlab's step makes

    return step


def bench_transformers(
    name, L, H, A, V, T, B, rt: Runtime, warmup: int, steps: int, compile: bool, dropout: float = 0.1,
    mlm_probability: float = MLM_PROBABILITY,
) -> Measurement:  # fmt: skip
    step = transformers_step(L, H, A, V, T, B, rt, compile, dropout, mlm_probability)
    _reset_memory(rt)
    first, sec = _time(step, rt, warmup, steps)
    config = BertConfig(vocab_size=V, num_layers=L, hidden_size=H, num_heads=A)
    return _measurement(name, "transformers", config, B, T, rt, compile, sec, first, mlm_probability)


def time_in_turns(
    steps: dict[str, Callable[[], None]], rt: Runtime, warmup: int, n: int, rounds: int
) -> dict[str, tuple[float | None, list[float]]]:
    """Each step warmed up (its first call timed alone: compilation happens there), then `rounds`
    rounds in which each takes its turn of `n` timed calls, so that a change in a shared machine's
    load falls on every step alike. Returns {name: (first call's seconds, [seconds per call in each
    round])}; the least disturbed round is the fairest figure."""
    firsts: dict[str, float | None] = {}
    for name, step in steps.items():
        firsts[name] = None
        for i in range(warmup):
            t = time.perf_counter()
            step()
            _sync(rt)
            if i == 0:
                firsts[name] = time.perf_counter() - t
    secs: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            _sync(rt)
            t = time.perf_counter()
            for _ in range(n):
                step()
            _sync(rt)
            secs[name].append((time.perf_counter() - t) / n)
    return {name: (firsts[name], secs[name]) for name in steps}


def _reset_memory(rt: Runtime) -> None:
    if rt.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(rt.device)


def model_flops(config: BertConfig, B: int, T: int, mlm_probability: float = MLM_PROBABILITY) -> float:
    """The model FLOPs of one step, the same for both sides: MLM head at the chosen positions only."""
    return pretraining_flops(config, B, T, round(mlm_probability * T))


def _measurement(
    name, impl, config, B, T, rt, compile, sec, first=None, mlm_probability=MLM_PROBABILITY, memory=True
):  # fmt: skip
    """memory False: the peak GPU memory is not this step's alone (models taking turns): None."""
    flops = model_flops(config, B, T, mlm_probability)
    peak = rt.peak_flops
    mem = torch.cuda.max_memory_allocated(rt.device) / 1e9 if rt.device.type == "cuda" and memory else None
    return Measurement(
        name,
        impl,
        B,
        T,
        rt.precision,
        compile,
        sec,
        B * T / sec,
        None if peak is None else flops / sec / peak,
        mem,
        first,
    )


def print_table(rows: list[Measurement], device: str) -> None:
    print(f"\nPretraining step throughput on {device} (MLM + NSP, AdamW{' fused' if 'cpu' not in device else ''})")
    head = (
        f"{'config':<10} {'impl':<13} {'batch':>5} {'seq':>4} {'prec':>5} {'compiled':>8} "
        f"{'ms/step':>9} {'tokens/s':>12} {'MFU':>7} {'mem GB':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        mfu = f"{100 * r.mfu:.1f}%" if r.mfu is not None else "n/a"
        mem = f"{r.peak_memory_gb:.1f}" if r.peak_memory_gb is not None else "n/a"
        print(
            f"{r.config:<10} {r.impl:<13} {r.batch:>5} {r.seq_len:>4} {r.precision:>5} {str(r.compiled):>8} "
            f"{1e3 * r.seconds_per_step:>9.1f} {r.tokens_per_s:>12,.0f} {mfu:>7} {mem:>7}"
        )
    for name in dict.fromkeys(r.config for r in rows):
        ours = [r for r in rows if r.config == name and r.impl == "bertlab"]
        theirs = [r for r in rows if r.config == name and r.impl == "transformers"]
        if ours and theirs:
            print(f"{name}: bertlab / transformers = {ours[0].tokens_per_s / theirs[0].tokens_per_s:.2f}x tokens/s")


# ------------------------------------------------------------------------------------------------
# One configuration, with the machine's matmul ceiling (the CPU mode)
# ------------------------------------------------------------------------------------------------
MATMUL_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def matmul_ceiling(n: int, precision: str, device: torch.device, repeats: int) -> float:
    """FLOP/s of the best of `repeats` (n x n) @ (n x n) matmuls in the run's precision (one
    untimed matmul first): what this machine's matmul kernels reach right now."""
    dtype = MATMUL_DTYPES[precision]
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(n, n, generator=g).to(device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    torch.mm(a, b, out=c)
    best = math.inf
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t = time.perf_counter()
        torch.mm(a, b, out=c)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best


def step_matmuls(
    config: BertConfig, batch_size: int, seq_len: int, predictions: int
) -> list[tuple[str, int, int, int, int, int]]:
    """The matrix products of one training step, forward and backward, at their shapes: a list of
    (what, batch, m, k, n, times) for `times` products of a (batch, m, k) by a (batch, k, n)
    tensor. Their FLOPs (2 * batch * m * k * n * times, summed) are exactly bertlab's `pretraining_flops`:
    timing each shape alone gives the fastest a step of this model could run its matmuls (the
    "model-shape ceiling"), a fairer yardstick than one large square matmul.

    Backward of y = x @ w: dx = dy @ w^T and dw = x^T @ dy, each as many FLOPs as the forward."""
    B, T, P, L, H, I, V, A = (
        batch_size,
        seq_len,
        predictions,
        config.num_layers,
        config.hidden_size,
        config.intermediate_size,
        config.vocab_size,
        config.num_heads,
    )
    M, d = B * T, H // A

    def linear(what: str, rows: int, k: int, n: int, times: int, batch: int = 1):
        return [
            (f"{what} forward", batch, rows, k, n, times),
            (f"{what} backward (input)", batch, rows, n, k, times),  # dy @ w^T
            (f"{what} backward (weight)", batch, k, rows, n, times),
        ]  # x^T @ dy

    out = []
    out += linear("Q, K, V projection", M, H, 3 * H, L)
    out += linear("attention scores Q K^T", T, d, T, L, B * A)
    out += linear("attention weights x V", T, T, d, L, B * A)
    out += linear("attention output projection", M, H, H, L)
    out += linear("feed-forward in", M, H, I, L)
    out += linear("feed-forward out", M, I, H, L)
    out += linear("MLM transform", B * P, H, H, 1)
    out += linear("MLM decoder (tied)", B * P, H, V, 1)
    out += linear("pooler", B, H, H, 1)
    out += linear("NSP classifier", B, H, 2, 1)
    return out


def model_shape_ceiling(
    config: BertConfig, B: int, T: int, P: int, precision: str, device: torch.device, repeats: int = 3
) -> dict:
    """The fastest this machine runs the step's own matrix products: every forward and backward
    matmul of one training step (`step_matmuls`) at its own shape and in the run's
    precision, each timed alone (best of `repeats`, after one untimed run), times how often the
    step does it. What is left of a measured step beyond this sum is everything else: softmax,
    LayerNorm, GELU, dropout, the loss, the optimiser, dtype copies. Returns the seconds per step
    and the tokens/s and GFLOP/s that a step doing nothing but its matmuls would reach."""
    dtype = MATMUL_DTYPES[precision]
    g = torch.Generator().manual_seed(0)
    timed: dict[tuple[int, int, int, int], float] = {}
    total, parts = 0.0, {}
    for what, b, m, k, n, times in step_matmuls(config, B, T, P):
        key = (b, m, k, n)
        if key not in timed:
            x = torch.randn(b, m, k, generator=g).to(device=device, dtype=dtype)
            w = torch.randn(b, k, n, generator=g).to(device=device, dtype=dtype)
            mm = (lambda: torch.mm(x[0], w[0])) if b == 1 else (lambda: torch.bmm(x, w))  # noqa: E731
            mm()
            best = math.inf
            for _ in range(repeats):
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t = time.perf_counter()
                mm()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                best = min(best, time.perf_counter() - t)
            timed[key] = best
        total += timed[key] * times
        part = what.split(" forward")[0].split(" backward")[0]
        parts[part] = parts.get(part, 0.0) + timed[key] * times
    flops = pretraining_flops(config, B, T, P)
    return {
        "seconds_per_step": total,
        "tokens_per_s": B * T / total,
        "gflops": flops / total / 1e9,
        "seconds_by_matmul": parts,
    }


def _r(x: float | None, digits: int = 4) -> float | None:
    """Round to `digits` significant digits (JSON readability); None stays None."""
    if x is None:
        return None
    return float(f"{x:.{digits}g}")


def run_single(args, rt: Runtime, compile: bool) -> dict:
    """Both implementations at one configuration and the matmul ceiling; returns the summary."""
    dev = rt.device.type if rt.device.type in SINGLE_DEFAULTS else "cpu"
    batch, steps, warmup, mm_n, mm_reps = SINGLE_DEFAULTS[dev]
    preset = args.preset or "mini"
    L, H, A = PRESETS[preset]
    L, H, A = args.layers or L, args.hidden or H, args.heads or A
    V, T, B = args.vocab_size or 16384, args.seq_len or 128, args.batch or batch
    steps = args.steps or steps
    warmup = args.warmup if args.warmup is not None else warmup
    mm_n = args.matmul_size or mm_n
    if T > 512:
        raise ValueError(f"--seq-len {T} is longer than the models' 512 positions")
    rounds = args.rounds
    if min(steps, warmup, B, V - 5, mm_n, rounds) < 1 or T < 2:
        raise ValueError(
            "--steps, --warmup-steps, --batch-size, --matmul-size and --rounds must be at least 1, "
            "--seq-len at least 2 and --vocab-size at least 6"
        )
    q = args.mlm_probability
    check_masking_rate(q, T)
    config = BertConfig(vocab_size=V, num_layers=L, hidden_size=H, num_heads=A)  # checks H % A == 0
    name = preset if (L, H, A) == PRESETS[preset] else f"{L}/{H}/{A}"
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    log(f"ceiling: {mm_n}^3 matmul in {rt.precision} ...")
    ceilings = [matmul_ceiling(mm_n, rt.precision, rt.device, mm_reps)]
    rows = {}
    by_round: dict[str, list[float]] = {}
    if rounds == 1:  # one after the other
        for impl in args.impl:
            log(
                f"{impl}: {name} ({L}/{H}/{A}, vocab {V}), batch {B} x seq {T}, {rt.precision}, "
                f"{'compiled' if compile else 'eager'}, {warmup} warm-up + {steps} measured steps ..."
            )
            fn = bench_bertlab if impl == "bertlab" else bench_transformers
            rows[impl] = fn(name, L, H, A, V, T, B, rt, warmup, steps, compile, args.dropout, q)
            by_round[impl] = [rows[impl].seconds_per_step]
            if rt.device.type == "cuda":
                torch.cuda.empty_cache()
    else:  # taking turns: a change in a shared machine's load falls on both
        log(
            f"{' and '.join(args.impl)} taking turns: {name} ({L}/{H}/{A}, vocab {V}), batch {B} x seq {T}, "
            f"{rt.precision}, {'compiled' if compile else 'eager'}, {warmup} warm-up, then {rounds} rounds of "
            f"{steps} measured steps each ..."
        )
        dropped = BertConfig(vocab_size=V, num_layers=L, hidden_size=H, num_heads=A, hidden_dropout=args.dropout,
                             attention_dropout=args.dropout)  # fmt: skip
        with contextlib.ExitStack() as stack:
            calls = {}
            if "bertlab" in args.impl:
                batch = random_batch(B, T, V, torch.Generator().manual_seed(0), q)
                calls["bertlab"], _, first_bad = bertlab_step(dropped, batch, rt, stack, warmup + rounds * steps)
            if "transformers" in args.impl:
                calls["transformers"] = transformers_step(L, H, A, V, T, B, rt, compile, args.dropout, q)
            timed = time_in_turns(calls, rt, warmup, steps, rounds)
            if "bertlab" in calls and first_bad.item() >= 0:  # as time_train_step checks, one model at a time
                raise RuntimeError("bertlab's loss became non-finite during the benchmark")
        for impl, (first, secs) in timed.items():
            rows[impl] = _measurement(name, impl, config, B, T, rt, compile, min(secs), first, q, memory=False)
            by_round[impl] = secs
    ceilings.append(matmul_ceiling(mm_n, rt.precision, rt.device, mm_reps))
    ceiling = max(ceilings)
    log(f"model-shape ceiling: the step's own matmuls at their shapes in {rt.precision} ...")
    shape_ceiling = model_shape_ceiling(config, B, T, round(q * T), rt.precision, rt.device)

    flops = model_flops(config, B, T, q)
    executed = pretraining_flops(config, B, T, T)  # transformers' MLM head runs at every position
    ours, theirs = rows.get("bertlab"), rows.get("transformers")

    def gflops(m: Measurement | None, f: float = flops) -> float | None:
        return None if m is None else f / m.seconds_per_step / 1e9

    def compile_s(m: Measurement | None) -> float | None:
        if m is None or not compile or m.first_step_s is None:
            return None
        return max(0.0, m.first_step_s - m.seconds_per_step)

    import transformers

    summary = {
        "device": device_name(rt.device),
        "cpu": (cpu_model() or "unknown"),
        "cpu_family_model": cpu_family_model(),
        "threads": torch.get_num_threads(),
        "cpu_allocator": ("kept" if freed_memory_kept() else "default") if rt.device.type == "cpu" else None,
        "loadavg": _r(loadavg, 3),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "preset": preset if name == preset else None,
        "layers": L,
        "hidden": H,
        "heads": A,
        "intermediate_size": config.intermediate_size,
        "vocab_size": V,
        "seq_len": T,
        "batch_size": B,
        "mlm_probability": q,
        "mlm_predictions": round(q * T),
        "mlm_slots": default_max_predictions(T, q),
        "nsp": True,
        # bertlab's last layer at the chosen positions and [CLS] only (records without the field predate it)
        "last_layer": True if ours is not None else None,
        "dropout": args.dropout,
        "precision": rt.precision,
        "compiled": compile,
        "compile_s": _r(compile_s(ours)),
        "transformers_compile_s": _r(compile_s(theirs)),
        "steps": steps,
        "warmup_steps": warmup,
        "rounds": rounds,  # >1: the models took turns, each figure its least disturbed round
        "model_flops_per_step": flops,
        "transformers_executed_flops_per_step": executed,
    }
    for impl, m in (("bertlab", ours), ("transformers", theirs)):
        summary[f"{impl}_s_per_step"] = _r(None if m is None else m.seconds_per_step)
        summary[f"{impl}_s_per_step_rounds"] = [_r(x) for x in by_round[impl]] if impl in by_round else None
        summary[f"{impl}_first_step_s"] = _r(None if m is None else m.first_step_s)
        summary[f"{impl}_tokens_per_s"] = _r(None if m is None else m.tokens_per_s, 5)
        summary[f"{impl}_gflops"] = _r(gflops(m))
    summary["transformers_executed_gflops"] = _r(gflops(theirs, executed))
    summary["speedup"] = _r(ours.tokens_per_s / theirs.tokens_per_s) if ours and theirs else None
    summary["ceiling_matmul"] = f"{mm_n}^3 {MATMUL_DTYPES[rt.precision]}".replace("torch.", "")
    summary["ceiling_gflops"] = _r(ceiling / 1e9)
    summary["ceiling_gflops_before_after"] = [_r(c / 1e9) for c in ceilings]
    summary["fraction_of_ceiling"] = _r(gflops(ours) * 1e9 / ceiling) if ours else None
    summary["transformers_fraction_of_ceiling"] = _r(gflops(theirs) * 1e9 / ceiling) if theirs else None
    summary["model_shape_ceiling_s_per_step"] = _r(shape_ceiling["seconds_per_step"])
    summary["model_shape_ceiling_tokens_per_s"] = _r(shape_ceiling["tokens_per_s"], 5)
    summary["model_shape_ceiling_gflops"] = _r(shape_ceiling["gflops"])
    summary["model_shape_ceiling_s_by_matmul"] = {k: _r(v) for k, v in shape_ceiling["seconds_by_matmul"].items()}
    summary["fraction_of_model_shape_ceiling"] = _r(ours.tokens_per_s / shape_ceiling["tokens_per_s"]) if ours else None
    summary["transformers_fraction_of_model_shape_ceiling"] = (
        _r(theirs.tokens_per_s / shape_ceiling["tokens_per_s"]) if theirs else None
    )
    # the most bertlab's step could gain over transformers' if it did nothing but its own matmuls
    at_ceiling = shape_ceiling["tokens_per_s"] / theirs.tokens_per_s if theirs else None
    summary["speedup_at_model_shape_ceiling"] = _r(at_ceiling)
    summary["mfu"] = _r(ours.mfu) if ours else None  # vs the GPU's data-sheet peak; None on a CPU
    summary["transformers_mfu"] = _r(theirs.mfu) if theirs else None

    print_table(list(rows.values()), device_name(rt.device))
    print(
        f"model FLOPs per step {flops / 1e9:.2f} G (transformers executes {executed / 1e9:.2f} G: its MLM head "
        f"runs at all {T} positions, bertlab's at {summary['mlm_predictions']})"
    )
    for impl, m in rows.items():
        extra = f", first step {m.first_step_s:.2f} s" if m.first_step_s is not None else ""
        print(f"{impl}: {gflops(m):.1f} model GFLOP/s = {100 * gflops(m) * 1e9 / ceiling:.1f}% of the ceiling{extra}")
    print(
        f"model-shape ceiling: the step's matmuls alone take {1000 * shape_ceiling['seconds_per_step']:.1f} ms "
        f"({shape_ceiling['tokens_per_s']:,.0f} tokens/s, {shape_ceiling['gflops']:.1f} GFLOP/s); bertlab "
        f"reaches {100 * (summary['fraction_of_model_shape_ceiling'] or 0):.1f}% of it"
    )
    if theirs:
        print(
            f"at the model-shape ceiling bertlab would run {summary['speedup_at_model_shape_ceiling']:.2f}x "
            f"transformers' measured step (now {summary['speedup'] or 0:.2f}x)"
        )
    print(
        f"ceiling: {summary['ceiling_matmul']} matmul, best {ceiling / 1e9:.1f} GFLOP/s "
        f"(before {ceilings[0] / 1e9:.1f}, after {ceilings[1] / 1e9:.1f}); {summary['cpu']}, "
        f"{summary['threads']} threads, load average {summary['loadavg']} at the start"
    )
    return summary


# ------------------------------------------------------------------------------------------------
# Where the speed-up over transformers comes from (--attribution)
# ------------------------------------------------------------------------------------------------
# bertlab's step differs from transformers' in five switches; everything else is the same model.
LEVERS = {
    "sparse_head": "the MLM decoder at the chosen positions only (off: at every position, as in transformers)",
    "last_layer": "the last encoder layer computed at the chosen positions and [CLS] only, the vectors the heads "
    "read (off: at every position; with the decoder at every position, every position is chosen)",
    "attention": "attention as bertlab runs it on the device, the formula written out on a CPU "
    "(off: PyTorch's fused SDPA kernel, as transformers calls it)",
    "bf16": "bf16 autocast (off: fp32)",
    "compile": "torch.compile (off: eager)",
}


def every_position_batch(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same batch for an MLM head that runs at every position, as transformers' does: positions
    0..T-1, the chosen tokens' labels in their places and IGNORE_INDEX everywhere else. The loss is
    the same; the decoder's work is T / P times larger."""
    B, T = batch["input_ids"].shape
    chosen = batch["mlm_labels"] != IGNORE_INDEX  # (B, P)
    rows = torch.arange(B)[:, None].expand_as(chosen)
    labels = torch.full((B, T), IGNORE_INDEX, dtype=torch.long)
    labels[rows[chosen], batch["mlm_positions"][chosen]] = batch["mlm_labels"][chosen]
    return {**batch, "mlm_positions": torch.arange(T).expand(B, T).contiguous(), "mlm_labels": labels}


def lever_step(
    L, H, A, V, T, B, on: frozenset, device: str, dropout: float, mlm_probability: float,
    stack: contextlib.ExitStack, total_steps: int,
) -> tuple[Callable[[], None], torch.Tensor, torch.Tensor, Runtime]:  # fmt: skip
    """bertlab's own training step (bertlab_step) with the levers in `on` switched on and the
    others off, ready to run: (step, stats, first non-finite step, its runtime)."""
    if unknown := set(on) - set(LEVERS):
        raise ValueError(f"unknown lever(s) {sorted(unknown)}; the levers are {list(LEVERS)}")
    rt = make_runtime(device, "bf16" if "bf16" in on else "fp32", compile="compile" in on, distributed=False)
    config = BertConfig(
        vocab_size=V, num_layers=L, hidden_size=H, num_heads=A, hidden_dropout=dropout, attention_dropout=dropout
    )
    batch = random_batch(B, T, V, torch.Generator().manual_seed(0), mlm_probability)
    if "sparse_head" not in on:
        batch = every_position_batch(batch)
    fused = None if "attention" in on else True
    last_layer = "last_layer" in on and "sparse_head" in on
    step, stats, first_bad = bertlab_step(config, batch, rt, stack, total_steps, fused, last_layer)
    return step, stats, first_bad, rt


def lever_row(on: frozenset, rt: Runtime, B: int, T: int, first, secs: list[float], stats, first_bad) -> dict:
    """One setting's row of the attribution record: its tokens/s from its least disturbed round
    and the mean MLM loss over all its steps (the same batch every step), which does not depend on
    the levers up to rounding."""
    from bertlab.training.pretrain import Stat

    if first_bad.item() >= 0:
        raise RuntimeError(f"bertlab's loss became non-finite during the benchmark (levers {sorted(on)})")
    loss = (stats[Stat.LM_LOSS_SUM] / stats[Stat.LM_PREDICTIONS]).item()
    return {"on": [lever for lever in LEVERS if lever in on], **timing(rt, B, T, first, secs), "mlm_loss": _r(loss, 6)}


def timing(rt: Runtime, B: int, T: int, first: float | None, secs: list[float]) -> dict:
    """How a setting of the attribution ran and how fast: its least disturbed round of `secs`."""
    sec = min(secs)
    return {
        "precision": rt.precision,
        "compiled": rt.compile,
        "s_per_step": _r(sec),
        "s_per_step_rounds": [_r(x) for x in secs],
        "tokens_per_s": _r(B * T / sec, 5),
        "first_step_s": _r(first),
    }


def bench_levers(
    L, H, A, V, T, B, on: frozenset, device: str, warmup: int, steps: int, dropout: float,
    mlm_probability: float = MLM_PROBABILITY,
) -> dict:  # fmt: skip
    """bertlab's own training step with the levers in `on` switched on and the others off, timed
    alone: its row of the attribution record (lever_row)."""
    with contextlib.ExitStack() as stack:
        step, stats, first_bad, rt = lever_step(L, H, A, V, T, B, on, device, dropout, mlm_probability, stack,
                                                warmup + steps)  # fmt: skip
        first, sec = _time(step, rt, warmup, steps)
        return lever_row(on, rt, B, T, first, [sec], stats, first_bad)


def attribution_settings(levers: list[str]) -> list[frozenset]:
    """The settings measured: none of the levers, each alone, all of them, all but each one."""
    every = frozenset(levers)
    settings = [frozenset()] + [frozenset([x]) for x in levers] + [every] + [every - {x} for x in levers]
    return list(dict.fromkeys(settings))  # with one lever some coincide


def run_attribution(args) -> dict:
    """bertlab at every setting of the levers, and transformers with every lever it has (bf16,
    compile) off and on, at one configuration of the CPU mode; returns the record."""
    L, H, A = PRESETS[args.preset or "mini"]
    L, H, A = args.layers or L, args.hidden or H, args.heads or A
    V, T, B = args.vocab_size or 16384, args.seq_len or 128, args.batch or SINGLE_DEFAULTS["cpu"][0]
    steps, warmup = args.steps or 8, args.warmup if args.warmup is not None else 1
    levers = args.levers or list(LEVERS)
    q = args.mlm_probability
    check_masking_rate(q, T)
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rounds = args.rounds
    if rounds < 1:
        raise ValueError(f"--rounds must be at least 1, got {rounds}")
    ours = attribution_settings(levers)
    theirs = list(dict.fromkeys((frozenset(), frozenset({"bf16", "compile"}) & frozenset(levers))))

    def transformers_row(on, rt, first, secs):
        return {"impl": "transformers", "on": sorted(on), **timing(rt, B, T, first, secs)}

    def their_runtime(on):
        return make_runtime(args.device, "bf16" if "bf16" in on else "fp32", compile="compile" in on, distributed=False)

    rows = []
    if rounds == 1:  # one setting after another
        for on in ours:
            print(f"bertlab with {sorted(on) or 'no lever'} on ...", file=sys.stderr, flush=True)
            rows.append(
                {"impl": "bertlab", **bench_levers(L, H, A, V, T, B, on, args.device, warmup, steps, args.dropout, q)}
            )
        for on in theirs:
            rt = their_runtime(on)
            print(f"transformers with {sorted(on) or 'no lever'} on ...", file=sys.stderr, flush=True)
            m = bench_transformers("attribution", L, H, A, V, T, B, rt, warmup, steps, rt.compile, args.dropout, q)
            rows.append(transformers_row(on, rt, m.first_step_s, [m.seconds_per_step]))
    else:  # every setting built first, then they take turns, so that the machine's load falls on all alike
        import torch._dynamo as dynamo

        # every compiled setting stays alive: one compiled graph each, and never a silent fall-back to eager
        dynamo.config.recompile_limit = max(dynamo.config.recompile_limit, 4 * len(ours))
        dynamo.config.fail_on_recompile_limit_hit = True
        print(f"{len(ours) + len(theirs)} settings taking turns, {rounds} rounds ...", file=sys.stderr, flush=True)
        with contextlib.ExitStack() as stack:
            built, calls = {}, {}
            for on in ours:
                step, stats, first_bad, rt = lever_step(
                    L, H, A, V, T, B, on, args.device, args.dropout, q, stack, warmup + rounds * steps
                )
                built[("bertlab", on)], calls[("bertlab", on)] = (rt, stats, first_bad), step
            for on in theirs:
                rt = their_runtime(on)
                built[("transformers", on)] = (rt,)
                calls[("transformers", on)] = transformers_step(L, H, A, V, T, B, rt, rt.compile, args.dropout, q)
            timed = time_in_turns(calls, rt, warmup, steps, rounds)
            for (impl, on), (first, secs) in timed.items():
                if impl == "bertlab":
                    rt, stats, first_bad = built[(impl, on)]
                    rows.append({"impl": "bertlab", **lever_row(on, rt, B, T, first, secs, stats, first_bad)})
                else:
                    rows.append(transformers_row(on, built[(impl, on)][0], first, secs))
    return {
        "what": "speed-up attribution: bertlab's training step with each lever on or off, transformers beside it",
        "levers": {x: LEVERS[x] for x in levers},
        "cpu": cpu_model() or "unknown",
        "device": args.device,
        "threads": torch.get_num_threads(),
        "loadavg": _r(loadavg, 3),
        "torch": torch.__version__,
        "layers": L,
        "hidden": H,
        "heads": A,
        "vocab_size": V,
        "seq_len": T,
        "batch_size": B,
        "mlm_probability": q,
        "mlm_predictions": round(q * T),
        "dropout": args.dropout,
        "steps": steps,
        "warmup_steps": warmup,
        "rounds": rounds,  # >1: the settings took turns, each figure its least disturbed round
        "rows": rows,
    }


def emit_json(result: dict, where: str | None) -> None:
    """--json: print `result` as one JSON line, the last of stdout; --json FILE also writes it there."""
    if not where:
        return
    line = json.dumps(result)
    if where != "-":
        with open(where, "w") as f:
            f.write(line + "\n")
    print(line, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--configs",
        nargs="+",
        default=None,
        choices=sorted(CONFIGS),
        help="default: base and reference (tiny with --quick)",
    )
    p.add_argument("--quick", action="store_true", help="tiny config, few steps: runs on a CPU in seconds")
    p.add_argument("--impl", nargs="+", default=["bertlab", "transformers"], choices=["bertlab", "transformers"])
    p.add_argument(
        "--batch",
        "--batch-size",
        dest="batch",
        type=int,
        default=None,
        help="override the batch size (one configuration: 64 on a CPU, 256 on a GPU)",
    )
    p.add_argument(
        "--steps", type=int, default=None, help="measured steps (default 20; quick: 3; one configuration on a CPU: 15)"
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="one configuration: the two models take turns for this many rounds of --steps steps, each "
        "figure its least disturbed round (default 1: one after the other)",
    )
    p.add_argument(
        "--warmup",
        "--warmup-steps",
        dest="warmup",
        type=int,
        default=None,
        help="steps before timing, the first timed alone (default 5; quick and CPU: 1)",
    )
    p.add_argument("--precision", default="auto", help="auto, fp32, bf16, fp16")
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torch.compile both (default: on for GPUs, off on CPUs)",
    )
    p.add_argument("--device", default="auto")
    p.add_argument(
        "--dropout",
        type=float,
        default=0.1,
        help="dropout of both models (default 0.1, the paper's; the CPU recipe's is 0)",
    )
    p.add_argument(
        "--mlm-probability",
        type=float,
        default=MLM_PROBABILITY,
        help=f"share of each sequence's positions the MLM predicts (default {MLM_PROBABILITY:g}, the paper's; the "
        "CPU record masks 0.4): bertlab's sparse head runs at these positions only, "
        "transformers' at every position whatever the share",
    )
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="print the numbers as one JSON object, the last line of stdout; with FILE, also write them there",
    )
    one = p.add_argument_group("one configuration (the default on a CPU)")
    one.add_argument(
        "--preset", default=None, choices=list(PRESETS), help="L/H/A from bertlab.config.PRESETS (default mini)"
    )
    one.add_argument("--layers", type=int, default=None, help="override the preset's L")
    one.add_argument("--hidden", type=int, default=None, help="override the preset's H (the FFN is 4H)")
    one.add_argument("--heads", type=int, default=None, help="override the preset's A")
    one.add_argument("--vocab-size", type=int, default=None, help="default 16384")
    one.add_argument("--seq-len", type=int, default=None, help="default 128")
    one.add_argument(
        "--matmul-size",
        type=int,
        default=None,
        help="n of the n^3 ceiling matmul (default 2048 on a CPU, 8192 on a GPU)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument(
        "--cpu-allocator",
        choices=CPU_ALLOCATORS,
        default=None,
        help="on a CPU: kept (freed memory stays on the heap for the next step, bertlab's default) or default "
        "(malloc as it is); both models run under the same one (default: BERTLAB_CPU_ALLOCATOR, else kept)",
    )
    p.add_argument(
        "--attribution",
        action="store_true",
        help="where the speed-up comes from: bertlab's step with each lever (--levers) on alone, all on, "
        "all on but each, none; transformers in fp32 eager and in bf16 compiled (one configuration; 8 steps each)",
    )
    p.add_argument(
        "--levers", nargs="+", default=None, choices=list(LEVERS), help="with --attribution (default: all of them)"
    )
    args = p.parse_args(argv)

    if args.cpu_allocator is not None:  # read by keep_freed_memory; it holds for the whole process
        os.environ["BERTLAB_CPU_ALLOCATOR"] = args.cpu_allocator
    try:
        rt = make_runtime(args.device, args.precision, distributed=False)
        if rt.device.type == "cpu":
            keep_freed_memory()  # as bertlab's pretraining does; transformers' step runs under it too
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.threads is not None:
        if args.threads < 1:
            print("error: --threads must be at least 1", file=sys.stderr)
            return 2
        torch.set_num_threads(args.threads)
    if not 0.0 <= args.dropout < 1.0:
        print(f"error: --dropout must be in [0, 1), not {args.dropout}", file=sys.stderr)
        return 2
    if not 0.0 < args.mlm_probability < 1.0:
        print(f"error: --mlm-probability must be in (0, 1), not {args.mlm_probability}", file=sys.stderr)
        return 2
    if args.attribution:
        if args.configs or args.quick or args.compile is not None or args.precision != "auto":
            print(
                "error: --attribution measures every setting of bf16 and compile itself: drop --configs, --quick, "
                "--compile and --precision",
                file=sys.stderr,
            )
            return 2
        try:
            record = run_attribution(args)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for row in record["rows"]:
            print(f"{row['impl']:<13} {', '.join(row['on']) or '(none)':<40} {row['tokens_per_s']:>10,.0f} tokens/s")
        emit_json(record, args.json)
        return 0
    compile = args.compile if args.compile is not None else rt.device.type == "cuda"
    rt.compile = compile
    single_flags = (args.preset, args.layers, args.hidden, args.heads, args.vocab_size, args.seq_len, args.matmul_size)
    single = any(x is not None for x in single_flags) or (
        rt.device.type == "cpu" and not args.quick and args.configs is None
    )
    if single:
        if args.configs or args.quick:
            print(
                "error: --configs/--quick choose the table of named configs; --preset, --layers, --hidden, "
                "--heads, --vocab-size, --seq-len and --matmul-size choose one configuration: not both",
                file=sys.stderr,
            )
            return 2
        try:
            summary = run_single(args, rt, compile)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        emit_json(summary, args.json)
        return 0

    configs = args.configs or (["tiny"] if args.quick else ["base", "reference"])
    if rt.device.type == "cpu" and not args.quick and any(c != "tiny" for c in configs):
        print("error: base/reference configs need a GPU; on a CPU use --quick or --preset", file=sys.stderr)
        return 2
    steps = args.steps or (3 if args.quick else 20)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 5)
    for name in configs:
        try:
            check_masking_rate(args.mlm_probability, CONFIGS[name][4])
        except ValueError as e:
            print(f"error: config {name}: {e}", file=sys.stderr)
            return 2
    rows = []
    for name in configs:
        L, H, A, V, T, B = CONFIGS[name]
        B = args.batch or B
        for impl in args.impl:
            fn = bench_bertlab if impl == "bertlab" else bench_transformers
            rows.append(fn(name, L, H, A, V, T, B, rt, warmup, steps, compile, args.dropout, args.mlm_probability))
            if rt.device.type == "cuda":
                torch.cuda.empty_cache()
    print_table(rows, device_name(rt.device))
    if args.json:
        result = {"device": device_name(rt.device), "torch": torch.__version__, "rows": [r.__dict__ for r in rows]}
        if args.json == "-":
            print(json.dumps(result), flush=True)
        else:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
