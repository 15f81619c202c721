"""Pretraining throughput: bertlab's training step against transformers' BertForPreTraining.

    python benchmarks/throughput.py                  # on a GPU: base and the reference-run config
    python benchmarks/throughput.py --quick          # anywhere (CPU included): a tiny config, seconds
    python benchmarks/throughput.py --json out.json  # also write the numbers

Both sides do one full optimiser step of MLM + NSP pretraining on the same batch shape and
precision: random tokens, 15% of the positions chosen for the MLM, fused AdamW (on CUDA), gradient
clipping, bf16 autocast (fp16 + loss scaling on GPUs without bf16, fp32 on a CPU).

    bertlab        bertlab.train.Trainer.train_step itself: the objective compiled with
                   torch.compile, fused SDPA attention, the MLM head on the chosen positions only
    transformers   BertForPreTraining(attn_implementation="sdpa"), torch.compile'd, labels -100
                   at the positions not chosen (its MLM head runs on every position)

Timing excludes the warm-up steps (compilation) and brackets the measured steps with
torch.cuda.synchronize(). MFU = model FLOPs per second / the GPU's dense bf16 peak, with the same
model-FLOPs count for both sides (bertlab.logs.pretraining_flops: matmuls, attention, and the MLM
head on the chosen positions only), so the extra work transformers does at unchosen positions
counts as waste, not as useful FLOPs.

Targets for one H100 (see the project's anchors: transformers sdpa + compile reached 444k tokens/s
= 24.5% MFU at base): bertlab >= 1.5x transformers at base and at the reference config, and
MFU >= 40% at base.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass

import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab.logs import pretraining_flops
from bertlab.masking import default_max_predictions
from bertlab.model import IGNORE_INDEX
from bertlab.runtime import Runtime, device_name, make_runtime

CONFIGS = {
    # name: (L, H, A, vocab, seq_len, batch)
    "base": (12, 768, 12, 30522, 128, 256),
    "reference": (8, 512, 8, 16384, 128, 256),  # the reference run's model (medium) and batch
    "tiny": (2, 128, 2, 2000, 64, 8),  # --quick: checks that the script runs, anywhere
}


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


def random_batch(B: int, T: int, V: int, generator: torch.Generator, mlm_probability: float = 0.15):
    """Random token ids; round(15% x T) positions chosen per row, in the agreed batch format."""
    P = default_max_predictions(T, mlm_probability)
    n = round(mlm_probability * T)
    ids = torch.randint(5, V, (B, T), generator=generator)
    chosen = torch.rand(B, T - 1, generator=generator).argsort(1)[:, :n].sort(1).values + 1  # never [CLS]
    positions = torch.zeros(B, P, dtype=torch.long)
    positions[:, :n] = chosen
    labels = torch.full((B, P), IGNORE_INDEX, dtype=torch.long)
    labels[:, :n] = ids.gather(1, chosen)
    return {"input_ids": ids, "token_type_ids": (torch.arange(T) >= T // 2).long().expand(B, T).contiguous(),
            "attention_mask": torch.ones(B, T, dtype=torch.long), "mlm_positions": positions,
            "mlm_labels": labels, "nsp_labels": torch.randint(0, 2, (B,), generator=generator)}


def _sync(rt: Runtime) -> None:
    if rt.device.type == "cuda":
        torch.cuda.synchronize(rt.device)


def _time(step, rt: Runtime, warmup: int, steps: int) -> float:
    for _ in range(warmup):
        step()
    _sync(rt)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(rt)
    return (time.perf_counter() - t) / steps


def bench_bertlab(name, L, H, A, V, T, B, rt: Runtime, warmup: int, steps: int, compile: bool) -> Measurement:
    from bertlab.train import PretrainConfig, Trainer
    torch.manual_seed(0)
    config = BertConfig(vocab_size=V, num_layers=L, hidden_size=H, num_heads=A)
    model = BertForPreTraining(config)
    with tempfile.TemporaryDirectory() as out:
        cfg = PretrainConfig(steps=warmup + steps, batch_size=B, seq_len=T, nsp=True, compile=compile, out=out,
                             progress=False)
        trainer = Trainer(cfg, model, source=None, eval_batches=None, rt=rt)  # the real training step
        batch = rt.to_device(random_batch(B, T, V, torch.Generator().manual_seed(0)))
        stats = torch.zeros(7, dtype=torch.float64, device=rt.device)
        first_bad = torch.full((), -1, dtype=torch.long, device=rt.device)
        _reset_memory(rt)
        sec = _time(lambda: trainer.train_step([batch], stats, first_bad), rt, warmup, steps)
        if first_bad.item() >= 0:
            raise RuntimeError("bertlab's loss became non-finite during the benchmark")
    return _measurement(name, "bertlab", config, B, T, rt, compile, sec)


def bench_transformers(name, L, H, A, V, T, B, rt: Runtime, warmup: int, steps: int, compile: bool) -> Measurement:
    import transformers
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
                                        intermediate_size=4 * H)
    model = transformers.BertForPreTraining._from_config(hf_config, attn_implementation="sdpa").to(rt.device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6, weight_decay=0.01,
                            **({"fused": True} if rt.fused_adamw else {}))
    scaler = rt.grad_scaler()
    fwd = torch.compile(model) if compile else model
    b = random_batch(B, T, V, torch.Generator().manual_seed(0))
    labels = torch.full((B, T), IGNORE_INDEX, dtype=torch.long)  # transformers' format: one label per token
    labels.scatter_(1, b["mlm_positions"], b["mlm_labels"])  # unused slots write -100 at [CLS]
    inputs = rt.to_device({"input_ids": b["input_ids"], "token_type_ids": b["token_type_ids"],
                           "attention_mask": b["attention_mask"], "labels": labels,
                           "next_sentence_label": b["nsp_labels"]})

    def step():
        with rt.autocast():
            loss = fwd(**inputs).loss
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    _reset_memory(rt)
    sec = _time(step, rt, warmup, steps)
    config = BertConfig(vocab_size=V, num_layers=L, hidden_size=H, num_heads=A)
    return _measurement(name, "transformers", config, B, T, rt, compile, sec)


def _reset_memory(rt: Runtime) -> None:
    if rt.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(rt.device)


def _measurement(name, impl, config, B, T, rt, compile, sec) -> Measurement:
    flops = pretraining_flops(config, B, T, round(0.15 * T))
    peak = rt.peak_flops
    mem = torch.cuda.max_memory_allocated(rt.device) / 1e9 if rt.device.type == "cuda" else None
    return Measurement(name, impl, B, T, rt.precision, compile, sec, B * T / sec,
                       None if peak is None else flops / sec / peak, mem)


def print_table(rows: list[Measurement], device: str) -> None:
    print(f"\nPretraining step throughput on {device} (MLM + NSP, AdamW{' fused' if 'cpu' not in device else ''})")
    head = f"{'config':<10} {'impl':<13} {'batch':>5} {'seq':>4} {'prec':>5} {'compiled':>8} " \
           f"{'ms/step':>9} {'tokens/s':>12} {'MFU':>7} {'mem GB':>7}"
    print(head)
    print("-" * len(head))
    for r in rows:
        mfu = f"{100 * r.mfu:.1f}%" if r.mfu is not None else "n/a"
        mem = f"{r.peak_memory_gb:.1f}" if r.peak_memory_gb is not None else "n/a"
        print(f"{r.config:<10} {r.impl:<13} {r.batch:>5} {r.seq_len:>4} {r.precision:>5} {str(r.compiled):>8} "
              f"{1e3 * r.seconds_per_step:>9.1f} {r.tokens_per_s:>12,.0f} {mfu:>7} {mem:>7}")
    for name in dict.fromkeys(r.config for r in rows):
        ours = [r for r in rows if r.config == name and r.impl == "bertlab"]
        theirs = [r for r in rows if r.config == name and r.impl == "transformers"]
        if ours and theirs:
            print(f"{name}: bertlab / transformers = {ours[0].tokens_per_s / theirs[0].tokens_per_s:.2f}x tokens/s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", nargs="+", default=None, choices=sorted(CONFIGS),
                   help="default: base and reference (tiny with --quick)")
    p.add_argument("--quick", action="store_true", help="tiny config, few steps: runs on a CPU in seconds")
    p.add_argument("--impl", nargs="+", default=["bertlab", "transformers"], choices=["bertlab", "transformers"])
    p.add_argument("--batch", type=int, default=None, help="override the batch size")
    p.add_argument("--steps", type=int, default=None, help="measured steps (default 20; quick: 3)")
    p.add_argument("--warmup", type=int, default=None, help="steps before timing (default 5; quick: 1)")
    p.add_argument("--precision", default="auto", help="auto, fp32, bf16, fp16")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile both (default: on for GPUs, off on CPUs)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", default=None, help="also write the measurements to this JSON file")
    args = p.parse_args(argv)

    rt = make_runtime(args.device, args.precision, distributed=False)
    configs = args.configs or (["tiny"] if args.quick else ["base", "reference"])
    if rt.device.type == "cpu" and not args.quick and any(c != "tiny" for c in configs):
        print("error: base/reference configs need a GPU; on a CPU use --quick", file=sys.stderr)
        return 2
    compile = args.compile if args.compile is not None else rt.device.type == "cuda"
    rt.compile = compile
    steps = args.steps or (3 if args.quick else 20)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 5)
    rows = []
    for name in configs:
        L, H, A, V, T, B = CONFIGS[name]
        B = args.batch or B
        for impl in args.impl:
            fn = bench_bertlab if impl == "bertlab" else bench_transformers
            rows.append(fn(name, L, H, A, V, T, B, rt, warmup, steps, compile))
            if rt.device.type == "cuda":
                torch.cuda.empty_cache()
    print_table(rows, device_name(rt.device))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device_name(rt.device), "torch": torch.__version__,
                       "rows": [r.__dict__ for r in rows]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
