#!/usr/bin/env python
"""How SQuAD v1.1 from the book's BERT grows with more epochs: fine-tune the committed record
(and, with --arms, the same architecture from scratch) on chapter 13's by-article split of dev with
reference-run's SQuAD recipe (reference_run.SQUAD_CPU) but E epochs (and, with --lr, --batch-size, --max-len
and --doc-stride, another rate or window), scoring the held-out questions
after every epoch. One row per arm is appended to data/pilots/squad_epochs.jsonl as soon as it
finishes (a first line holds what the file is); the F1 after the last epoch is the run's, the
earlier ones are read off the way (the learning rate still decaying towards E epochs).

    python scripts/record_squad_epochs.py --epochs 4                       # the record, seed 0
    python scripts/record_squad_epochs.py --epochs 4 --arms pretrained scratch
    python scripts/record_squad_epochs.py --epochs 2 --max-len 128 --out data/pilots/squad_lr.jsonl
    python scripts/record_squad_epochs.py --epochs 1 --max-train 16 --max-eval 8 --out /tmp/x.jsonl
    python scripts/record_squad_epochs.py --epochs 2 --max-len 128 --record data/pilots/record7-again
    OMP_NUM_THREADS=1 python scripts/record_squad_epochs.py --epochs 2 --seed 2 --batch-size 16

With --record another recorded run's weights fine-tune instead of the record's; each row names
the folder its pre-trained arm came from ("record").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from bertlab.data.records import records_dir
from bertlab.experiments import reference
from bertlab.runtime import git_commit, machine, make_runtime
from bertlab.tasks import get_task
from bertlab.tasks.squad import split_by_article
from bertlab.training.finetune import FinetuneConfig, finetune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's lab/ (not installed)
from lab import pilots  # noqa: E402
from lab.pilots import append_json_line  # noqa: E402
from lab.reference_run import SQUAD_CPU  # noqa: E402

ARMS = ("pretrained", "scratch")


def _shown(folder: Path) -> str:
    """`folder` as the checkout names it (data/pilots/record7-again) where it lies in the records
    folder, whatever the working directory; else its absolute path."""
    folder, checkout = Path(folder).resolve(), records_dir().resolve().parent
    try:
        return str(folder.relative_to(checkout))
    except ValueError:
        return str(folder)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=4, help="epochs of the one schedule (default 4)")
    p.add_argument("--arms", nargs="+", choices=ARMS, default=["pretrained"], help="in this order")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=SQUAD_CPU["lr"], help=f"default {SQUAD_CPU['lr']:g}, reference-run's")
    p.add_argument("--batch-size", type=int, default=SQUAD_CPU["batch_size"], help=f"default {SQUAD_CPU['batch_size']}")
    p.add_argument("--max-len", type=int, default=SQUAD_CPU["max_len"], help="window length in tokens")
    p.add_argument("--doc-stride", type=int, default=None, help="tokens between window starts (default max-len / 2)")
    p.add_argument("--max-train", type=int, default=None, help="the first N training questions (a quick check)")
    p.add_argument("--max-eval", type=int, default=None, help="the first N held-out questions")
    p.add_argument("--record", default=None, help="a recorded run's folder (default: the book's record)")
    p.add_argument("--out", default=str(pilots.PILOTS_DIR / "squad_epochs.jsonl"))
    a = p.parse_args(argv)
    if a.batch_size < 1:
        p.error(f"--batch-size must be at least 1, not {a.batch_size}")
    if a.epochs < 1:
        p.error(f"--epochs must be at least 1, not {a.epochs}")
    stride = a.doc_stride or a.max_len // 2
    if not 0 < stride < a.max_len or a.max_len > 512:
        p.error(f"--doc-stride {stride} must be between 1 and --max-len {a.max_len} (at most 512) less one")

    run = reference.find(a.record)
    if run is None or run.smoke:
        raise SystemExit(f"no recorded reference run in {a.record or 'data/reference_run/'}: nothing to fine-tune")
    folder = run.model_folder()
    s = SQUAD_CPU
    train, held = split_by_article(
        get_task("squad").load("dev"), eval_fraction=s["eval_fraction"], seed=s["split_seed"]
    )
    train, held = train[: a.max_train], held[: a.max_eval]
    rt = make_runtime("cpu", "auto", distributed=False)
    out = Path(a.out)
    if not out.exists() or not out.read_text().strip():
        meta = {
            "about": "SQuAD v1.1 on chapter 13's by-article split of dev (bertlab.tasks.squad.split_by_article), "
            "fine-tuned with reference_run.SQUAD_CPU's recipe for the epochs named in each row, the dev "
            "questions held out scored after every epoch; 'pretrained' starts from the recorded run each row names "
            "('record': data/reference_run unless --record), 'scratch' from random weights of its size and "
            "vocabulary (scripts/record_squad_epochs.py)",
            "record_git_commit": run.provenance.get("git_commit"),
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"meta": meta}) + "\n")
    for arm in a.arms:
        init = {"init": str(folder)} if arm == "pretrained" else {"init": "scratch", "like": str(folder)}
        cfg = FinetuneConfig(
            task="squad",
            **init,
            max_len=a.max_len,
            doc_stride=stride,
            epochs=a.epochs,
            lr=a.lr,
            batch_size=a.batch_size,
            seeds=(a.seed,),
            eval_every_epoch=True,
            progress=False,
        )
        t0 = time.perf_counter()
        result = finetune(cfg, rt, train_examples=train, eval_examples=held)
        (one,) = result.runs
        row = {
            "init": arm,
            "record": _shown(run.path),
            "epochs": a.epochs,
            "lr": a.lr,
            "batch_size": a.batch_size,
            "threads": torch.get_num_threads(),
            "max_len": a.max_len,
            "doc_stride": stride,
            "seed": a.seed,
            "train_questions": len(train),
            "eval_questions": len(held),
            "metrics": one.metrics,
            "history": one.history,
            "seconds": round(time.perf_counter() - t0, 1),
            "machine": machine(rt),
            "git_commit": git_commit(),
        }
        append_json_line(out, row)
        print(result.summary(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
