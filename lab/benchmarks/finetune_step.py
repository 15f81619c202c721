"""Fine-tuning's time per epoch on this machine, task by task, with and without its two levers:
batches of similar lengths (FinetuneConfig.group_by_length) and PyTorch's fused AdamW.

    python lab/benchmarks/finetune_step.py --json data/benchmarks/finetune_cpu.json
    python lab/benchmarks/finetune_step.py --tasks sst2 --steps 10 --rounds 1     # a quick look
    python lab/benchmarks/finetune_step.py --last-layer --json data/benchmarks/finetune_cls_cpu.json

With --last-layer it times a third lever instead, on the tasks a classifier reads from [CLS]
(SST-2, MRPC, RTE): the last encoder layer run at every position or at [CLS] alone
(BertForSequenceClassification.last_layer_at_cls), both with batches of similar lengths and the
fused AdamW, the defaults.

For every task of the reference run's pipeline (SST-2's first 8,000 sentences, MRPC, RTE,
CoNLL-2003, and SQuAD on chapter 13's by-article split, windows of 256), from the record's weights
with its recipe (batch 32, its precision): four settings, (plain random | similar lengths) x
(foreach | fused AdamW), all with the last layer at every position (--last-layer times that),
each timed over the first `--steps` batches of an epoch, the settings taking turns for `--rounds`
rounds so that a change of the machine's load falls on all of them.
The batches of an epoch are shuffled, so its first batches are a fair sample of all of them: the
time per epoch is the time per step times the batches per epoch. Prints one line per task and
setting; with --json writes every number and the machine.
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
from bertlab.runtime import machine, make_runtime, seed_everything
from bertlab.tasks import get_task
from bertlab.tasks.inputs import length_grouped_batches
from bertlab.training.finetune import FinetuneConfig, build_task_model, task_tokenizer
from bertlab.training.optim import adamw, optimizer_step

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's lab/ (not installed)
from lab.reference_run import SQUAD_CPU  # noqa: E402

TASKS = ("sst2", "mrpc", "rte", "conll2003", "squad")
CLS_TASKS = ("sst2", "mrpc", "rte")  # a classifier on the pooled [CLS] vector
SETTINGS = {  # name: (group_by_length, fused AdamW, last layer at [CLS] alone)
    "random, foreach": (False, False, False),
    "similar lengths, foreach": (True, False, False),
    "random, fused": (False, True, False),
    "similar lengths, fused": (True, True, False),
}
LAST_LAYER_SETTINGS = {
    "last layer everywhere": (True, True, False),
    "last layer at [CLS]": (True, True, True),
}


def task_features(name: str, cfg: FinetuneConfig):
    """The training features the reference run fine-tunes `name` on."""
    task = get_task(name)
    tok = task_tokenizer(task, cfg)
    if name == "squad":
        from bertlab.tasks.squad import split_by_article

        train, _ = split_by_article(
            task.load("dev"), eval_fraction=SQUAD_CPU["eval_fraction"], seed=SQUAD_CPU["split_seed"]
        )
        return task, task.featurize(train, tok, max_len=SQUAD_CPU["max_len"], doc_stride=SQUAD_CPU["doc_stride"])
    examples = task.load("train")
    if name == "sst2":
        examples = examples[:8000]  # the largest point of the record's SST-2 curve
    return task, task.featurize(examples, tok, max_len=task.max_len)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", default="data/reference_run", help="the recorded run whose weights fine-tune")
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    ap.add_argument("--steps", type=int, default=30, help="timed steps per setting and round")
    ap.add_argument("--rounds", type=int, default=2, help="turns each setting takes")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--json", default=None, help="write the numbers here")
    ap.add_argument(
        "--last-layer",
        action="store_true",
        help="time the last layer everywhere against at [CLS] alone (SST-2, MRPC, RTE) instead",
    )
    args = ap.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        ap.error("--steps and --rounds must be at least 1")
    settings = LAST_LAYER_SETTINGS if args.last_layer else SETTINGS
    if args.last_layer:
        wrong = [t for t in args.tasks if t not in CLS_TASKS]
        if wrong and args.tasks != list(TASKS):
            ap.error(f"--last-layer times classifiers on [CLS]: {wrong} read every position; choose from {CLS_TASKS}")
        args.tasks = [t for t in args.tasks if t in CLS_TASKS]
    run = reference.find(args.record)
    if run is None:
        ap.error(f"no recorded run at {args.record}")
    rt = make_runtime("cpu", args.precision, distributed=False)
    folder = str(run.model_folder())
    out = {
        "what": (
            "fine-tuning seconds per step with the last encoder layer run at every position or at [CLS] "
            "alone, batches of similar lengths and fused AdamW, from the record's weights"
            if args.last_layer
            else "fine-tuning seconds per step with random batches or batches of similar lengths, "
            "foreach or fused AdamW, from the record's weights"
        ),
        **machine(rt),
        "threads": torch.get_num_threads(),
        "loadavg": round(os.getloadavg()[0], 2),
        "batch_size": args.batch_size,
        "steps": args.steps,
        "rounds": args.rounds,
        "tasks": {},
    }
    for name in args.tasks:
        cfg = FinetuneConfig(task=name, init=folder, batch_size=args.batch_size)
        task, feats = task_features(name, cfg)
        lengths = torch.as_tensor(feats.lengths())
        seed_everything(0)
        model, _ = build_task_model(task, cfg)
        model.train()
        optimizers = {fused: adamw(model, 5e-4, fused=fused) for fused in (False, True)}
        scaler = rt.grad_scaler()
        times: dict[str, list[float]] = {s: [] for s in settings}
        padded: dict[str, float] = {}  # padded tokens per real token, over the timed batches
        for r in range(args.rounds):
            for setting, (grouped, fused, at_cls) in settings.items():
                if hasattr(model, "last_layer_at_cls"):
                    model.last_layer_at_cls = at_cls
                g = torch.Generator().manual_seed(r)
                if grouped:
                    batches = length_grouped_batches(lengths, args.batch_size, g)[: args.steps]
                else:
                    batches = list(torch.randperm(len(lengths), generator=g).split(args.batch_size))[: args.steps]
                padded[setting] = sum(len(b) * int(lengths[b].max()) for b in batches) / sum(
                    int(lengths[b].sum()) for b in batches
                )
                collated = [rt.to_device(task.collate([feats[int(i)] for i in b])) for b in batches]
                t0 = time.perf_counter()
                for batch in collated:
                    with rt.autocast():
                        loss = model(**batch).loss
                    scaler.scale(loss).backward()
                    optimizer_step(optimizers[fused], scaler, 1e-9, grad_clip=1.0)  # the weights barely move
                times[setting].append((time.perf_counter() - t0) / len(collated))
        per_epoch = -(-len(lengths) // args.batch_size)
        row = {"examples": len(lengths), "batches_per_epoch": per_epoch, "mean_length": float(lengths.float().mean())}
        for setting in settings:
            s = min(times[setting])  # the least disturbed round
            row[setting] = {
                "s_per_step": s,
                "s_per_step_rounds": times[setting],
                "s_per_epoch": s * per_epoch,
                "padded_per_real_token": padded[setting],
            }
        out["tasks"][name] = row
        base = row[next(iter(settings))]["s_per_step"]
        for setting in settings:
            print(
                f"{name:9s} {setting:26s} {row[setting]['s_per_step']:.3f} s/step "
                f"({base / row[setting]['s_per_step']:.2f}x), {row[setting]['s_per_epoch']:.0f} s per epoch, "
                f"{row[setting]['padded_per_real_token']:.2f} tokens computed per real one",
                flush=True,
            )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
