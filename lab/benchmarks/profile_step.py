"""Where a compiled bertlab pretraining step spends its time on this machine: torch.profiler over
a few of the benchmark's own steps (lab/benchmarks/throughput.py: Trainer.train_step, random batch,
bf16 where native), the operators sorted by their own time, matmuls apart from the rest.

    python lab/benchmarks/profile_step.py --preset mini --vocab-size 8192 --dropout 0.1
    python lab/benchmarks/profile_step.py --dropout 0 --rows 30

Inductor's generated C++ kernels are named in the profile (cpp_fused_...: one per fusion of
elementwise work, a softmax, a LayerNorm, a dropout mask, a dtype cast) when
`torch._inductor.config.cpp.enable_kernel_profile` is on, which this script sets.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput  # noqa: E402  (the benchmark's batch and step, measured the same way)

from bertlab import BertForPreTraining  # noqa: E402
from bertlab.runtime import make_runtime  # noqa: E402
from bertlab.training.pretrain import PretrainConfig, Trainer, zero_stats  # noqa: E402

MATMUL_OPS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::linear", "aten::matmul", "mkldnn", "onednn")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    throughput.add_step_arguments(p, dropout=0.1)
    p.add_argument("--steps", type=int, default=3, help="profiled steps (after 2 warm-up steps)")
    p.add_argument("--rows", type=int, default=25)
    p.add_argument("--no-compile", action="store_true")
    a = p.parse_args(argv)
    import torch._inductor.config as inductor_config

    inductor_config.cpp.enable_kernel_profile = True
    rt = make_runtime("cpu", "auto", compile=not a.no_compile, distributed=False)
    torch.manual_seed(0)
    config = throughput.step_config(a)
    with tempfile.TemporaryDirectory() as out:
        cfg = PretrainConfig(
            steps=100,
            batch_size=a.batch_size,
            seq_len=a.seq_len,
            nsp=True,
            out=out,
            compile=not a.no_compile,
            progress=False,
        )
        trainer = Trainer(cfg, BertForPreTraining(config), source=None, eval_batches=None, rt=rt)
        g = torch.Generator().manual_seed(0)
        batch = throughput.random_batch(a.batch_size, a.seq_len, a.vocab_size, g, a.mlm_probability)
        stats, bad = zero_stats(rt.device), torch.full((), -1, dtype=torch.long)
        for _ in range(2):
            trainer.train_step([batch], stats, bad)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(a.steps):
                trainer.train_step([batch], stats, bad)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    mm = sum(e.self_cpu_time_total for e in events if any(k in e.key for k in MATMUL_OPS))
    print(
        f"{a.preset} ({config.num_layers}/{config.hidden_size}/{config.num_heads}), vocab {a.vocab_size:,}, "
        f"batch {a.batch_size} x {a.seq_len}, {a.mlm_probability:.0%} masked, dropout {a.dropout:g}, {rt.describe()}"
    )
    print(
        f"self time per step {total / a.steps / 1e3:.1f} ms: matmuls {mm / a.steps / 1e3:.1f} ms "
        f"({100 * mm / total:.0f}%), everything else {(total - mm) / a.steps / 1e3:.1f} ms"
    )
    print(events.table(sort_by="self_cpu_time_total", row_limit=a.rows, max_name_column_width=60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
