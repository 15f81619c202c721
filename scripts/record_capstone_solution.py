#!/usr/bin/env python
"""Record what the capstone's model solution scores, measured by the capstone's own grader, into
data/capstone/model_solution.json: its pretraining (the solution's configuration from
book/exercises/09_capstone.ipynb: the `cpu` recipe on the tiny size, 8,192 pieces, 12 minutes) and
its grades on the graded task (CoNLL-2003) and on SST-2, the task the capstone measured first.

    python scripts/record_capstone_solution.py                      # pretrain 12 min, then grade
    python scripts/record_capstone_solution.py --run capstone_run   # grade an existing run's final/

About 30 minutes on 2 CPU cores. The grader runs with torch's default threads.
"""

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from bertlab.course.capstone import GRADING, SOLUTION_RECORD, grade_capstone, summary
from bertlab.files import write_json
from bertlab.runtime import git_commit, machine
from bertlab.training.pretrain import PretrainConfig, pretrain

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--run", default=None, help="an existing pretraining folder (with final/): grade it")
parser.add_argument("--out", default=str(SOLUTION_RECORD), help="the record (default %(default)s)")
parser.add_argument("--tasks", nargs="+", default=[GRADING.task, "sst2"], help="tasks to grade on")
args = parser.parse_args()

if args.run is None:  # the solution cell of the capstone notebook, run as written there
    cfg = PretrainConfig(
        preset="tiny",
        recipe="cpu",
        corpus="books+wiki",
        vocab_size=8192,
        minutes=12,
        eval_every=200,
        eval_batches=20,
        log_every=50,
        out="runs/capstone_solution",
        device="cpu",
    )
    torch.manual_seed(0)
    pretrain(cfg)
    run = Path(cfg.out)
else:
    run = Path(args.run)
info = json.loads((run / "run.json").read_text())
evals = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if '"eval"' in line]
record = {
    "about": "The capstone's model solution, pretrained as book/exercises/09_capstone.ipynb's solution "
    "cell does, then graded by bertlab.course.capstone (the weights measured again; nothing printed is "
    "read) on each task with the grader's recipe, seeds and thresholds.",
    "command": " ".join(["python", *sys.argv]),
    "pretraining": {
        "config": info["config"],
        "runtime": info["runtime"],
        "torch": info["torch"],
        "git_commit": info["git_commit"],
        "parameters": info.get("parameters"),
        "steps": evals[-1]["step"],
        "minutes": round(evals[-1]["elapsed_s"] / 60, 1),
        "heldout": [{k: r[k] for k in ("step", "mlm_acc", "mlm_loss", "elapsed_s")} for r in evals],
    },
    "machine": machine(),
    "grading_git_commit": git_commit(),
    "grades": {},
}
for task in args.tasks:
    t = time.perf_counter()
    grade = grade_capstone(run / "final", dataclasses.replace(GRADING, task=task))
    grade["submission"] = "model solution"
    record["grades"][task] = grade
    print(summary(grade), f"\n  [{time.perf_counter() - t:.0f} s]", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, record)  # after every task: what finished is kept
print(f"wrote {args.out}")
