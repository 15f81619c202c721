"""Which fine-tuning learning rate suits the record, and which suits its twin from scratch?

    python scripts/record_finetune_lr.py              # -> data/pilots/finetune_lr_record.jsonl
    python scripts/record_finetune_lr.py --lrs 1e-4 2e-4 5e-4 1e-3 --seeds 0 1 2
    python scripts/record_finetune_lr.py --lrs 5e-4 --seeds 0 1 2 3 4 5 6 7 8 9 \
        --out data/pilots/sst2_2000_seeds.jsonl       # one rate, many seeds (finetune_seeds reads it)

The reference run's SST-2 fine-tuning on 2,000 labelled sentences (batch 32, its epochs, the
[CLS] vector through the pooler) from the record's weights and from scratch, at each learning rate
of a grid, every seed of the record. The paper chose its fine-tuning learning rate per task on the
dev set from a short list (section 4.1); doing the same for *each arm* asks whether pre-training's
small SST-2 gain is the recipe's doing: a rate that suits the pre-trained encoder may be too low or
too high for random weights, or the other way round.

One JSON line per (learning rate, arm), written as soon as it ends; a stopped run picks up where it
stopped (rows already in the file are skipped), on the same kind of machine only: the file's first
line names one machine for every row. The rows have the format of
`data/pilots/finetune_lr.jsonl`, so `lab.pilots.finetune_sweeps` reads them and
`lab.finetune_rates.rate_grid` reads the grid.
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

OUT = Path("data/pilots/finetune_lr_record.jsonl")
LRS = (5e-4, 2e-4, 1e-3, 1e-4)  # the recipe's rate first, then its neighbours


KIND = ("cpu", "cpu_family_model", "device", "precision")  # what must not change within one file


def kind(m: dict) -> str:
    return ", ".join(f"{k} {m.get(k)}" for k in KIND)


def same_kind(a: dict, b: dict) -> bool:
    """Whether two machine records (bertlab.runtime.machine) are the same kind of machine, precision included."""
    return all(a.get(k) == b.get(k) for k in KIND)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", default="data/reference_run", help="the recorded run whose weights fine-tune")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--lrs", type=float, nargs="+", default=list(LRS), help="in this order")
    ap.add_argument("--train-examples", type=int, default=2000, help="the first N SST-2 training sentences")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="default: the record's seeds")
    ap.add_argument("--max-eval", type=int, default=None, help="the first N dev sentences (a quick check)")
    ap.add_argument("--epochs", type=float, default=None, help="default: the record's rule for N sentences")
    args = ap.parse_args(argv)
    if any(lr <= 0 for lr in args.lrs):
        ap.error(f"every learning rate must be positive, not {args.lrs}")
    if args.train_examples < 1 or (args.epochs is not None and args.epochs <= 0):
        ap.error("--train-examples and --epochs must be positive")

    run = reference.find(args.record)
    if run is None or run.smoke:
        raise SystemExit(f"no recorded run at {args.record}: nothing to fine-tune")
    s = run.provenance["settings"]
    seeds = tuple(args.seeds or s["seeds"])
    n = args.train_examples
    epochs = args.epochs or finetune_epochs(s, n)
    out = Path(args.out)
    done = set()
    rt = make_runtime("auto", "auto", distributed=False)
    if out.exists() and out.read_text().strip():
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        done = {(r["train_examples"], tuple(r["seeds"]), r["lr"], r["init"]) for r in rows if "task" in r}
        recorded = next((r["meta"].get("machine") for r in rows if "meta" in r), None)
        if isinstance(recorded, dict) and not same_kind(recorded, machine(rt)):
            raise SystemExit(
                f"{out} was begun on {kind(recorded)}, and this machine is {kind(machine(rt))}: its file names "
                "one machine for every row, so finish it on the first kind, or start a new file with --out"
            )
    else:
        meta = {
            "about": f"The reference run's SST-2 fine-tuning on the first {n:,} training sentences (batch "
            f"{s['ft_batch']}, {epochs} epochs, [CLS] through the pooler) from the record's weights and from "
            f"scratch at the learning rates {', '.join(f'{lr:g}' for lr in args.lrs)}, seeds "
            f"{', '.join(map(str, seeds))}, scored on SST-2 dev (scripts/record_finetune_lr.py); seconds are "
            "each row's wall time over its seeds.",
            "record": args.record,
            "record_git_commit": run.provenance.get("git_commit"),
            "machine": machine(rt),
            "git_commit": git_commit(),
            "recipe_lr": s["ft_lr"],
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        append_json_line(out, {"meta": meta})
    folder = str(run.model_folder())
    for lr in args.lrs:
        for init in ("pretrained", "scratch"):
            if (n, seeds, lr, init) in done:
                continue
            arm = {"init": folder} if init == "pretrained" else {"init": "scratch", "like": folder}
            cfg = FinetuneConfig(
                task="sst2",
                lr=lr,
                batch_size=s["ft_batch"],
                epochs=epochs,
                seeds=seeds,
                max_train_examples=n,
                max_eval_examples=args.max_eval,
                eval_every_epoch=False,
                progress=False,
                **arm,
            )
            t0 = time.perf_counter()
            result = finetune(cfg)
            row = {
                "task": "sst2",
                "train_examples": n,
                "lr": lr,
                "pooling": "cls",
                "init": init,
                "epochs": epochs,
                "seeds": list(seeds),
                "scores": [round(x, 2) for x in result.scores],
                "median": round(result.median, 2),
                "seconds": round(time.perf_counter() - t0, 1),
                "source": "check",
            }
            append_json_line(out, row)
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
