"""Fine-tuning's seeds one after another in one process, or side by side in worker processes
(FinetuneConfig.workers), task by task, on this machine.

    python lab/benchmarks/finetune_workers.py --json data/benchmarks/finetune_workers_cpu.json
    python lab/benchmarks/finetune_workers.py --tasks conll2003 --rounds 1       # a quick look

For every task of the reference run's pipeline, from the record's weights with its recipe (batch
32, lr 5e-4, scored once at the end): `compare_with_scratch` on the task's first examples
(EXAMPLES), one epoch, seeds 0 and 1 in each arm, timed whole (start-up of the workers, the data
and the evaluation included) with `workers=1` (every seed in this process on all its threads) and
with `--workers` processes of threads / workers threads each. The two settings take turns for
`--rounds` rounds and the least disturbed round counts. Both settings train the same seeds, so
their scores are written beside their seconds: they agree up to the rounding of another number
of threads. Prints one line per task and setting; with --json writes every number and the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

from bertlab.experiments import reference
from bertlab.files import write_json
from bertlab.runtime import machine, make_runtime
from bertlab.tasks import get_task
from bertlab.training.finetune import FinetuneConfig, compare_with_scratch

# lab/ is not installed with bertlab: import it from the checkout this script is in
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from lab.finetune_speed import WORKERS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's lab/ (not installed)
from lab.reference_run import SQUAD_CPU  # noqa: E402

# the first examples of each task: each seed a few seconds to a few tens of seconds on 2 cores
EXAMPLES = {"sst2": 3000, "mrpc": 1000, "rte": 800, "conll2003": 3000, "squad": 400}
EVAL_EXAMPLES = 400


def task_examples(name: str) -> tuple[list | None, list | None]:
    """The examples given to the run (SQuAD: chapter 13's by-article split of dev, as the record
    uses it), or None for the task's own train and dev splits."""
    if name != "squad":
        return None, None
    from bertlab.tasks.squad import split_by_article

    return split_by_article(
        get_task("squad").load("dev"), eval_fraction=SQUAD_CPU["eval_fraction"], seed=SQUAD_CPU["split_seed"]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", default="data/reference_run", help="the recorded run whose weights fine-tune")
    ap.add_argument("--tasks", nargs="+", default=list(EXAMPLES), choices=list(EXAMPLES))
    ap.add_argument("--workers", type=int, default=2, help="processes side by side in the second setting")
    ap.add_argument("--rounds", type=int, default=1, help="turns each setting takes")
    ap.add_argument("--examples", type=int, default=None, help="train on this many examples of every task")
    ap.add_argument("--eval-examples", type=int, default=EVAL_EXAMPLES, help="score this many")
    ap.add_argument("--json", default=None, help="write the numbers here")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.workers < 2:
        ap.error("--rounds must be at least 1 and --workers at least 2")
    run = reference.find(args.record)
    if run is None:
        ap.error(f"no recorded run at {args.record}")
    folder = run.model_folder()
    threads = torch.get_num_threads()
    out = {
        "what": (
            "wall seconds of compare_with_scratch (one epoch, seeds 0 and 1 per arm) with every seed in one "
            f"process on {threads} threads, or {args.workers} worker processes side by side"
        ),
        **machine(make_runtime("cpu", "auto", distributed=False)),
        "threads": threads,
        "workers": args.workers,
        "loadavg": round(os.getloadavg()[0], 2),
        "rounds": args.rounds,
        "seeds": [0, 1],
        "tasks": {},
    }
    settings = dict(zip(WORKERS, (1, args.workers)))
    for name in args.tasks:
        train, held = task_examples(name)
        recipe = FinetuneConfig(
            task=name,
            epochs=1,
            lr=5e-4,
            batch_size=32,
            seeds=(0, 1),
            max_train_examples=args.examples or EXAMPLES[name],
            max_eval_examples=args.eval_examples,
            eval_every_epoch=False,
            progress=False,
            **({"max_len": SQUAD_CPU["max_len"], "doc_stride": SQUAD_CPU["doc_stride"]} if name == "squad" else {}),
        )
        row: dict = {"examples": args.examples or EXAMPLES[name]}
        seconds: dict[str, list[float]] = {s: [] for s in settings}
        for _ in range(args.rounds):
            for setting, workers in settings.items():
                t0 = time.perf_counter()
                pre, scr = compare_with_scratch(
                    folder, recipe, train_examples=train, eval_examples=held, workers=workers
                )
                seconds[setting].append(time.perf_counter() - t0)
                row[setting] = {
                    "scores": {"pretrained": pre.scores, "scratch": scr.scores},
                    "seed_seconds": [r.seconds for r in pre.runs + scr.runs],
                }
        for setting in settings:
            row[setting].update(s=min(seconds[setting]), s_rounds=seconds[setting])
            print(
                f"{name:9s} {setting:14s} {row[setting]['s']:6.1f} s "
                f"({row[WORKERS[0]]['s'] / row[setting]['s']:.2f}x), seeds "
                + ", ".join(f"{x:.1f}" for x in row[setting]["seed_seconds"])
                + " s each",
                flush=True,
            )
        out["tasks"][name] = row
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
