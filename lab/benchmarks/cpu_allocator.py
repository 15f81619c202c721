"""What keeping freed memory on the heap (bertlab.runtime.keep_freed_memory) does to bertlab's
pretraining step on this CPU: rounds of one process with freed memory kept and one with malloc as
it is (BERTLAB_CPU_ALLOCATOR=default), alternating (kept first in even rounds, second in odd ones),
so that a machine whose speed drifts (a shared cloud host) slows both settings alike. Separate
processes, because glibc's malloc cannot be put back as it was within one: its threshold for
mapping blocks apart moves by itself until mallopt fixes it.

    python lab/benchmarks/cpu_allocator.py --json data/benchmarks/allocator_cpu_mini_fp32.json
    python lab/benchmarks/cpu_allocator.py --dropout 0.1 --rounds 6

Each process compiles the step (inductor's cache makes that quick after the first), takes two
untimed steps, then times --steps steps and counts their page faults (getrusage's minor faults).
The JSON (the last line of stdout, and --json FILE) holds
every block, the median seconds per step of each setting (wall time, and the CPU time of the
process's threads in user and system mode: page faults are system time), their ratio (speedup: default's time
over kept's), page faults per step, the peak resident memory of the process, and the machine;
lab.speed.allocator_reading reads it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput  # noqa: E402  (the benchmark's random batch, the same step)

from bertlab import BertForPreTraining  # noqa: E402
from bertlab.config import PRESETS  # noqa: E402
from bertlab.data.masking import default_max_predictions  # noqa: E402
from bertlab.runtime import cpu_family_model, cpu_model, freed_memory_kept, make_runtime  # noqa: E402
from bertlab.training.pretrain import PretrainConfig, Trainer, zero_stats  # noqa: E402


def usage() -> tuple[int, float, float]:
    """This process so far: minor page faults, user and system CPU seconds (all its threads)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_minflt, u.ru_utime, u.ru_stime


def one_process(a: argparse.Namespace) -> dict:
    """This process's block: the step under BERTLAB_CPU_ALLOCATOR as set by the parent."""
    rt = make_runtime("cpu", a.precision, compile=a.compile, distributed=False)
    config = throughput.step_config(a)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    batch = throughput.random_batch(a.batch_size, a.seq_len, a.vocab_size, g, a.mlm_probability)
    with tempfile.TemporaryDirectory() as out:
        cfg = PretrainConfig(
            steps=10**6, batch_size=a.batch_size, seq_len=a.seq_len, nsp=True, compile=a.compile, out=out,
            progress=False,
        )  # fmt: skip
        trainer = Trainer(cfg, BertForPreTraining(config), source=None, eval_batches=None, rt=rt)
        stats, bad = zero_stats(rt.device), torch.full((), -1, dtype=torch.long)
        for _ in range(2):  # compiles; the heap settles
            trainer.train_step([batch], stats, bad)
        before, t = usage(), time.perf_counter()
        for _ in range(a.steps):
            trainer.train_step([batch], stats, bad)
        sec = (time.perf_counter() - t) / a.steps
        f, user, system = (x - y for x, y in zip(usage(), before))
    if bad.item() >= 0:
        raise SystemExit("error: the loss became non-finite during the benchmark")
    return {
        "allocator": "kept" if freed_memory_kept() else "default",  # the Trainer keeps it unless told not to
        "precision": rt.precision,
        "s_per_step": round(sec, 4),
        "faults_per_step": round(f / a.steps),
        "user_s_per_step": round(user / a.steps, 4),
        "system_s_per_step": round(system / a.steps, 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),  # KiB on Linux: MiB
        "loadavg": round(os.getloadavg()[0], 3),
    }


def measure(a: argparse.Namespace, argv: list[str]) -> dict:
    """Rounds of one child process per setting, alternating; the record of them all."""
    blocks = []
    for r in range(a.rounds):
        for allocator in ("kept", "default") if r % 2 == 0 else ("default", "kept"):
            env = {**os.environ, "BERTLAB_CPU_ALLOCATOR": allocator}
            cmd = [sys.executable, __file__, *argv, "--one"]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"error: the {allocator} process failed:\n{out.stderr[-2000:]}")
            block = {"round": r, **json.loads(out.stdout.strip().splitlines()[-1])}
            if block["allocator"] != allocator:
                raise SystemExit("error: freed memory cannot be kept here (it needs Linux with glibc's malloc)")
            blocks.append(block)
            print(
                f"round {r}: {allocator:<8} {block['s_per_step']:.3f} s/step, "
                f"{block['faults_per_step']:,} page faults a step, CPU {block['user_s_per_step']:.2f} s user + "
                f"{block['system_s_per_step']:.2f} s system a step, peak {block['peak_rss_mb']:,} MiB",
                file=sys.stderr,
                flush=True,
            )

    def median(setting: str, key: str) -> float:
        return statistics.median(b[key] for b in blocks if b["allocator"] == setting)

    kept_s, default_s = round(median("kept", "s_per_step"), 4), round(median("default", "s_per_step"), 4)
    tokens = a.batch_size * a.seq_len
    L, H, A = PRESETS[a.preset]
    return {
        "what": "bertlab's pretraining step with freed memory kept on the heap and with malloc as it is, "
        "in alternating processes",
        "cpu": cpu_model() or "unknown",
        "cpu_family_model": cpu_family_model(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "preset": a.preset,
        "layers": L,
        "hidden": H,
        "heads": A,
        "vocab_size": a.vocab_size,
        "seq_len": a.seq_len,
        "batch_size": a.batch_size,
        "mlm_probability": a.mlm_probability,
        "mlm_slots": default_max_predictions(a.seq_len, a.mlm_probability),  # as random_batch
        "dropout": a.dropout,
        "precision": blocks[0]["precision"],
        "compiled": a.compile,
        "rounds": a.rounds,
        "steps_per_block": a.steps,
        "blocks": blocks,
        "kept_s_per_step": kept_s,
        "default_s_per_step": default_s,
        "kept_tokens_per_s": round(tokens / kept_s, 1),
        "default_tokens_per_s": round(tokens / default_s, 1),
        "speedup": round(default_s / kept_s, 4),
        "kept_faults_per_step": median("kept", "faults_per_step"),
        "default_faults_per_step": median("default", "faults_per_step"),
        "kept_system_s_per_step": median("kept", "system_s_per_step"),
        "default_system_s_per_step": median("default", "system_s_per_step"),
        "kept_user_s_per_step": median("kept", "user_s_per_step"),
        "default_user_s_per_step": median("default", "user_s_per_step"),
        "kept_peak_rss_mb": median("kept", "peak_rss_mb"),
        "default_peak_rss_mb": median("default", "peak_rss_mb"),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    throughput.add_step_arguments(p, dropout=0.0)  # the cpu recipe's
    p.add_argument("--precision", default="auto", help="auto (bf16 where native, else fp32), fp32, bf16")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True, help="torch.compile (default on)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of one process per setting (default 3)")
    p.add_argument("--steps", type=int, default=6, help="timed steps per process (default 6)")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one block, as JSON
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE", help="also write the JSON to FILE")
    argv = sys.argv[1:] if argv is None else list(argv)
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(one_process(a)))
        return 0
    if a.rounds < 1 or a.steps < 1:
        print("error: --rounds and --steps must be at least 1", file=sys.stderr)
        return 2
    child_args = [x for x in argv if not x.startswith("--json")]
    if a.json and a.json != "-" and a.json in child_args:
        child_args.remove(a.json)
    record = measure(a, child_args)
    print(
        f"{record['preset']}, {record['precision']}{', compiled' if record['compiled'] else ''}: kept "
        f"{record['kept_s_per_step']:.3f} s/step, default {record['default_s_per_step']:.3f} s/step "
        f"({record['speedup']:.2f}x); page faults a step {record['kept_faults_per_step']:,.0f} against "
        f"{record['default_faults_per_step']:,.0f}"
    )
    line = json.dumps(record)
    print(line)
    if a.json and a.json != "-":
        Path(a.json).write_text(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
