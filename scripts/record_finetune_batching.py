"""Record what batches of similar lengths do to fine-tuning: its time and its scores.

    python scripts/record_finetune_batching.py                  # -> data/pilots/finetune_batching.jsonl
    python scripts/record_finetune_batching.py --only sst2      # one task's arms

The reference run's fine-tuning recipe (lr 5e-4, batch 32, its epochs, seeds 0-2) from the record's
weights and from scratch, once with plain random batches and once with random batches of similar
lengths (`FinetuneConfig.group_by_length`; CoNLL-2003 also with each grouped batch weighed by its
labelled tokens, `balance_tokens`). One JSON line per arm, written as soon as it ends (a
stopped run picks up where it stopped: arms already in the file are skipped). The first line holds
the machine and the code. `lab.pilots.finetune_batching` reads the file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bertlab.experiments import reference
from bertlab.runtime import git_commit, machine, make_runtime
from bertlab.training.finetune import FinetuneConfig, finetune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's lab/ (not installed)
from lab.pilots import append_json_line  # noqa: E402
from lab.reference_run import finetune_epochs  # noqa: E402

OUT = Path("data/pilots/finetune_batching.jsonl")

# (task, labelled examples or None for all, init, group_by_length, balance_tokens): the plan,
# cheapest first. CoNLL-2003 is a token-level task: grouped batches either as plain means of their
# tokens' losses (balance_tokens False, the first check) or weighed by their token counts.
PLAN = [
    ("sst2", 2000, "pretrained", False, False),
    ("sst2", 2000, "pretrained", True, False),
    ("sst2", 2000, "scratch", False, False),
    ("sst2", 2000, "scratch", True, False),
    ("conll2003", None, "pretrained", True, False),
    ("conll2003", None, "pretrained", False, False),
    ("conll2003", None, "pretrained", True, True),
    ("conll2003", None, "scratch", False, False),
    ("conll2003", None, "scratch", True, True),
    ("conll2003", None, "scratch", True, False),
]


def key(row: dict) -> tuple:
    """An arm's identity; rows written before balance_tokens existed are unbalanced."""
    return (row["task"], row["train_examples"], row["init"], row["group_by_length"], row.get("balance_tokens", False))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", default="data/reference_run", help="the recorded run whose weights fine-tune")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--only", default=None, help="one task of the plan (sst2, conll2003)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="default: the record's seeds")
    args = ap.parse_args(argv)

    run = reference.find(args.record)
    if run is None:
        raise SystemExit(f"no recorded run at {args.record}")
    s = run.provenance["settings"]
    seeds = tuple(args.seeds or s["seeds"])
    out = Path(args.out)
    done = set()
    if out.exists():
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        done = {key(r) for r in rows if "task" in r}
    else:
        rt = make_runtime("auto", "auto", distributed=False)
        meta = {
            "about": "The reference run's fine-tuning recipe with plain random batches and with random "
            "batches of similar lengths (pools of 8 batches sorted by length, group_by_length), from the "
            "record's weights and from scratch; seconds are each arm's wall time over its seeds, not a "
            "speed measurement (other work may share the machine: lab/benchmarks/finetune_step.py times it).",
            "record": args.record,
            "machine": machine(rt),
            "git_commit": git_commit(),
            "seeds": list(seeds),
            "lr": s["ft_lr"],
            "batch_size": s["ft_batch"],
        }
        out.write_text(json.dumps({"meta": meta}) + "\n")
    folder = str(run.model_folder())
    for task, n, init, grouped, balanced in PLAN:
        if (args.only and task != args.only) or (task, n, init, grouped, balanced) in done:
            continue
        epochs = finetune_epochs(s, n)
        arm = {"init": folder} if init == "pretrained" else {"init": "scratch", "like": folder}
        cfg = FinetuneConfig(
            task=task,
            lr=s["ft_lr"],
            batch_size=s["ft_batch"],
            epochs=epochs,
            seeds=seeds,
            max_train_examples=n,
            eval_every_epoch=False,
            group_by_length=grouped,
            balance_tokens=balanced,
            progress=False,
            **arm,
        )
        t0 = time.perf_counter()
        result = finetune(cfg)
        row = {
            "task": task,
            "train_examples": n,
            "init": init,
            "group_by_length": grouped,
            "balance_tokens": balanced,
            "epochs": epochs,
            "median": round(result.median, 2),
            "scores": [round(x, 2) for x in result.scores],
            "seconds": round(time.perf_counter() - t0, 1),
            "seconds_by_seed": [round(r.seconds, 1) for r in result.runs],
        }
        append_json_line(out, row)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
