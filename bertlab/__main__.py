"""The command line: `python -m bertlab <command> ...` (or `bertlab <command>` once installed).

    pretrain       pretrain a BERT (one GPU, a CPU, or several GPUs under torchrun)
    finetune       fine-tune on sst2 / mrpc / rte / squad / conll2003, several seeds
    evaluate       score a fine-tuned model on a task, or a pretrained one on held-out text
    plot           draw a run's metrics.jsonl (loss, MLM / NSP accuracy, tokens/s) into a PNG
    reference-run  the book's reference run, end to end (WordPiece, pretraining, SST-2 x 6);
                   the function `reference_run` below

Examples:
    python -m bertlab pretrain --preset mini --steps 2000 --out runs/mini
    python -m bertlab pretrain --preset medium --minutes 9 --out runs/medium --resume
    python -m bertlab pretrain --preset mini --steps 2000 --objective ltr --out runs/ltr
    torchrun --nproc_per_node 4 -m bertlab pretrain --preset base --recipe paper --steps 100000
    python -m bertlab finetune --task sst2 --init runs/mini/final --seeds 0 1 2
    python -m bertlab finetune --task rte --init scratch --like runs/mini/final
    python -m bertlab finetune --task mrpc --init bert-base-uncased      # online only
    python -m bertlab evaluate --task sst2 --model runs/ft/seed-0
    python -m bertlab evaluate --task mlm --model runs/mini/final --corpus books+wiki
    python -m bertlab reference-run --out data/reference_run             # one H100, ~15 min
    python -m bertlab reference-run --smoke --out /tmp/ref               # CPU, a few minutes

Every option of `pretrain` is a field of bertlab.pretrain.PretrainConfig, every option of `finetune`
one of bertlab.finetune.FinetuneConfig: the notebooks call the same functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

HELP = {
    "preset": "model size: tiny, mini, small, medium, base, large",
    "layers": "L, the number of layers (overrides the preset's)",
    "hidden": "H, the hidden size (overrides the preset's; the FFN is 4H)",
    "heads": "A, the number of attention heads (overrides the preset's; must divide H)",
    "corpus": "pretraining corpus: books, wiki, books+wiki",
    "tokenizer": "a tokenizer.json or folder to use instead of training a WordPiece vocabulary",
    "vocab_size": "size of the WordPiece vocabulary trained on the corpus",
    "max_documents": "use only the first N training documents (quick runs)",
    "steps": "number of optimiser steps (or give --minutes)",
    "minutes": "time budget in minutes; the schedule adapts to the measured speed",
    "recipe": "training recipe: cpu (an hour on a CPU), budget (minutes on a GPU) or paper (Devlin et al.)",
    "seq_len": "tokens per sequence (default: the recipe's, 128)",
    "batch_size": "sequences per optimiser step over all processes (default: the recipe's, 256)",
    "grad_accum": "split each step into this many micro-batches (small GPUs)",
    "lr": "peak learning rate (default: the recipe's)",
    "warmup": "warm-up: steps (>= 1) or a fraction of the run (< 1)",
    "schedule": "after warm-up: linear, cosine or constant",
    "weight_decay": "decoupled weight decay (not on biases and LayerNorm)",
    "dropout": "dropout on every layer (default 0.1)",
    "nsp": "next-sentence prediction on/off (default: the recipe's)",
    "objective": "mlm (BERT's masked LM) or ltr (a left-to-right LM with causal attention, the paper's "
                 "'LTR & No NSP' ablation; needs NSP off)",
    "whole_word": "mask whole words instead of single word pieces",
    "mlm_probability": "fraction of tokens chosen for the MLM (0.15)",
    "norm_position": "post (BERT's LayerNorm after each residual sum) or pre (pre-LN, for high learning rates)",
    "mlm_bias": "the MLM output bias at step 0: zeros (BERT) or unigram (log frequencies of the training tokens)",
    "device": "auto, cpu, cuda or cuda:N",
    "precision": "auto (bf16 on recent GPUs and bf16-capable CPUs, fp16 on older GPUs, else fp32), fp32, bf16, fp16",
    "compile": "torch.compile the model and loss (faster after a minute of compiling, GPU or CPU)",
    "compile_backend": "torch.compile backend",
    "seed": "random seed (weights, data order, masks)",
    "out": "output folder",
    "resume": "continue from the newest checkpoint in the output folder (start fresh if none)",
    "keep_last": "checkpoints to keep",
    "log_every": "steps between metric lines (and GPU syncs)",
    "eval_every": "steps between held-out evaluations",
    "eval_batches": "held-out batches per evaluation",
    "checkpoint_every": "steps between checkpoints",
    "stop_after": "stop with a checkpoint after N steps of this session (continue with --resume)",
    "progress": "show a progress bar",
    # finetune
    "task": "sst2, mrpc, rte, squad (dev only locally) or conll2003",
    "init": "a bertlab model folder (e.g. runs/x/final), 'scratch', or a hub name (online)",
    "like": "with --init scratch: copy size and vocabulary from this model folder",
    "epochs": "training epochs",
    "seeds": "one fine-tuning run per seed; the median is reported",
    "max_len": "maximum tokens per example (default: the task's)",
    "train_split": "split to train on",
    "eval_split": "split to evaluate on",
    "max_train_examples": "train on the first N examples only",
    "max_eval_examples": "evaluate on the first N examples only",
    "eval_batch_size": "batch size for evaluation",
    "save_models": "write each seed's fine-tuned model under --out",
}


def _add_dataclass_args(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = ()) -> None:
    """One --option per field of a config dataclass, typed from its annotation."""
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        ann = str(f.type)
        default = f.default if f.default is not dataclasses.MISSING else None
        help_ = HELP.get(f.name, "") + (f" (default: {default})" if default not in (None, False, True) else "")
        if ann.startswith("bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_)
        elif ann.startswith("Sequence[int]"):
            parser.add_argument(flag, type=int, nargs="+", default=None, help=help_)
        else:
            typ = int if ann.startswith("int") else float if ann.startswith("float") else str
            parser.add_argument(flag, type=typ, default=None, help=help_)


def _config_from(cls: type, args: argparse.Namespace, **extra: Any):
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
              if getattr(args, f.name, None) is not None}
    values.update(extra)
    if "seeds" in values:
        values["seeds"] = tuple(values["seeds"])
    return cls(**values)


def build_parser() -> argparse.ArgumentParser:
    from bertlab.finetune import FinetuneConfig
    from bertlab.pretrain import PretrainConfig

    parser = argparse.ArgumentParser(prog="python -m bertlab", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("Examples:")[1].split("Every option")[0])
    sub = parser.add_subparsers(dest="command", metavar="command")
    sub.required = True

    p = sub.add_parser("pretrain", help="pretrain a BERT")
    _add_dataclass_args(p, PretrainConfig)

    f = sub.add_parser("finetune", help="fine-tune on a task, several seeds")
    _add_dataclass_args(f, FinetuneConfig)

    e = sub.add_parser("evaluate", help="score a model folder: a fine-tuned one on a task, or a pretrained "
                                        "one on held-out text (--task mlm)")
    e.add_argument("--task", required=True, help=HELP["task"] + "; or mlm: held-out MLM/NSP of a pretrained model")
    e.add_argument("--model", required=True, help="a model folder (finetune --save-models, or <run>/final); with "
                   "--task mlm also a recorded reference run (data/reference_run), scored as it was recorded")
    e.add_argument("--corpus", default="books+wiki", help="with --task mlm: whose held-out documents")
    e.add_argument("--seq-len", type=int, default=128, help="with --task mlm")
    e.add_argument("--split", default="dev")
    e.add_argument("--max-len", type=int, default=None)
    e.add_argument("--max-examples", type=int, default=None)
    e.add_argument("--device", default="auto")
    e.add_argument("--precision", default="auto")

    pl = sub.add_parser("plot", help="draw a metrics.jsonl into a PNG")
    pl.add_argument("metrics", help="path of a metrics.jsonl (or a run folder)")
    pl.add_argument("--out", default=None, help="PNG path (default: next to the metrics)")

    r = sub.add_parser("reference-run", help="the book's reference run, end to end")
    r.add_argument("--out", default="data/reference_run")
    r.add_argument("--smoke", action="store_true", help="a CPU-sized version that runs in minutes")
    r.add_argument("--minutes", type=float, default=None, help="pretraining time budget in minutes (default: 60 on a CPU, 9 on a GPU; smoke: 40 steps)")
    r.add_argument("--preset", default=None)
    r.add_argument("--seeds", type=int, nargs="+", default=None)
    r.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None)
    r.add_argument("--resume", action="store_true", help="resume an interrupted pretraining")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except (ValueError, FileNotFoundError, RuntimeError, KeyError) as err:
        from bertlab.pretrain import NonFiniteLossError
        if isinstance(err, NonFiniteLossError):
            print(f"error: {err}", file=sys.stderr)
            return 3
        if type(err) is RuntimeError and "CUDA" not in str(err) and "--init" not in str(err):
            raise  # an unexpected failure: keep the traceback
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.command == "pretrain":
        from bertlab.pretrain import PretrainConfig, pretrain
        from bertlab.runtime import shutdown_distributed
        cfg = _config_from(PretrainConfig, args)
        try:
            result = pretrain(cfg)
        finally:
            shutdown_distributed()
        if result.final_eval:
            print("held-out:", json.dumps({k: round(v, 4) for k, v in result.final_eval.items()}))
        if result.stopped_by in ("SIGTERM", "SIGINT"):
            return 128 + getattr(signal, result.stopped_by)
        return 0
    if args.command == "finetune":
        from bertlab.finetune import FinetuneConfig, finetune
        result = finetune(_config_from(FinetuneConfig, args))
        print(result.summary())
        return 0
    if args.command == "evaluate":
        if args.task == "mlm":
            from bertlab.pretrain import evaluate_checkpoint
            model, kw = args.model, dict(corpus=args.corpus, seq_len=args.seq_len, max_documents=args.max_examples)
            if (Path(model) / "provenance.json").exists():  # a recorded reference run: its own settings
                from bertlab import reference
                from bertlab.recipes import RECIPES
                run = reference.find(model)
                st = run.provenance.get("settings", {})
                model = str(run.model_folder())
                kw = dict(corpus=st["corpus"], seq_len=st["seq_len"], nsp=RECIPES[st["recipe"]].nsp,
                          batches=st["eval_batches"], batch_size=min(st["batch_size"], 64),
                          max_documents=st.get("max_documents"))  # as pretrain's held-out batches
            scores = evaluate_checkpoint(model, device=args.device, precision=args.precision, **kw)
            print(json.dumps(scores))
            return 0
        from bertlab.finetune import evaluate_folder
        scores = evaluate_folder(args.model, args.task, args.split, args.max_len, args.device, args.precision,
                                 max_examples=args.max_examples)
        print(json.dumps(scores))
        return 0
    if args.command == "plot":
        import matplotlib
        matplotlib.use("Agg")
        from bertlab.logs import plot_metrics
        path = Path(args.metrics)
        if path.is_dir():
            path = path / "metrics.jsonl"
        out = Path(args.out) if args.out else path.with_suffix(".png")
        plot_metrics(path, title=str(path.parent.name)).savefig(out, dpi=120)
        print(out)
        return 0
    if args.command == "reference-run":
        reference_run(out=args.out, smoke=args.smoke, minutes=args.minutes, preset=args.preset,
                      seeds=args.seeds, compile=args.compile, resume=args.resume)
        return 0
    raise AssertionError(args.command)


# ------------------------------------------------------------------------------------------------
# The reference run
# ------------------------------------------------------------------------------------------------
REFERENCE = {
    # One H100, about 15 minutes end to end. Never run: no GPU was available to this project.
    "gpu": dict(preset="medium", recipe="budget", corpus="books+wiki", vocab_size=16384, seq_len=128,
                batch_size=256, minutes=9.0, steps=None, max_documents=None, log_every=50, eval_every=500,
                eval_batches=20, checkpoint_every=2000, compile=True, ft_epochs=3, ft_lr=5e-5, ft_batch=64,
                ft_sizes=(None,), ft_min_steps=0, ft_max_eval=None, seeds=(0, 1, 2),
                ft_tasks=("mrpc", "conll2003"), ft_tasks_max_train=None),
    # Two CPU cores: 50 minutes of pretraining with the CPU recipe (pre-LN, unigram MLM bias, no
    # dropout, lr 2e-3, batch 64) on BERT-Mini (4/256/4, Turc et al.) with an 8,192-piece WordPiece
    # (the size the small-data literature uses), bf16 autocast where the CPU has it, compiled;
    # then SST-2 as a learning curve over the number of labelled sentences, MRPC and CoNLL-2003.
    # Fine-tuning lr 5e-4: small models fine-tune far better well above the paper's 2e-5 to
    # 5e-5, from the record and from scratch alike (data/pilots/finetune_lr.jsonl).
    "cpu": dict(preset="mini", recipe="cpu", corpus="books+wiki", vocab_size=8192, seq_len=128,
                batch_size=64, minutes=50.0, steps=None, max_documents=None, log_every=50, eval_every=250,
                eval_batches=20, checkpoint_every=500, compile=True, ft_epochs=3, ft_lr=5e-4, ft_batch=32,
                ft_sizes=(500, 2000, 8000), ft_min_steps=300, ft_max_eval=None, seeds=(0, 1, 2),
                ft_tasks=("mrpc", "conll2003"), ft_tasks_max_train=None),
    # the CPU pipeline in a few minutes (how the command is tested)
    "smoke": dict(preset="tiny", recipe="cpu", corpus="books+wiki", vocab_size=2000, seq_len=64, batch_size=16,
                  minutes=None, steps=40, max_documents=6, log_every=10, eval_every=20, eval_batches=2,
                  checkpoint_every=20, compile=False, ft_epochs=1, ft_lr=1e-4, ft_batch=32,
                  ft_sizes=(128, 256), ft_min_steps=0, ft_max_eval=128, seeds=(0, 1, 2),
                  ft_tasks=("mrpc",), ft_tasks_max_train=128),
}
WEIGHTS_BUDGET_MB = 20


def reference_run(out: str = "data/reference_run", smoke: bool = False, minutes: float | None = None,
                  preset: str | None = None, seeds: Sequence[int] | None = None, compile: bool | None = None,
                  resume: bool = False) -> dict[str, Any]:
    """WordPiece on the training corpus, pre-tokenizing, pretraining on books + Wikipedia (held-out
    books and articles for evaluation), then SST-2 fine-tuning with each seed from the pretrained
    weights and from scratch (same architecture, vocabulary and fine-tuning recipe). Writes into
    `out`: metrics.jsonl, config.json, tokenizer.json + vocab.txt, model.fp16.safetensors,
    finetune_results.json, provenance.json (command, git commit, device, wall times, corpus
    checksums, versions), and the full pretraining run folder under pretrain/."""
    import shutil
    import time

    import torch

    from bertlab import checkpoint as ckpt
    from bertlab import files
    from bertlab.finetune import FinetuneConfig, finetune
    from bertlab.runtime import cpu_model, device_name, make_runtime
    from bertlab.pretrain import PretrainConfig, git_commit, pretrain

    rt = make_runtime("auto", "auto", distributed=False)
    kind = "smoke" if smoke else rt.device.type if rt.device.type in REFERENCE else "gpu"
    if kind == "gpu":
        print("note: the GPU settings of the reference run have never been run (no GPU was available); "
              "report what you see", flush=True)
    s = dict(REFERENCE[kind])
    if minutes is not None:
        s.update(minutes=minutes, steps=None)
    if preset is not None:
        s["preset"] = preset
    if seeds is not None:
        s["seeds"] = tuple(seeds)
    if compile is not None:
        s["compile"] = compile
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    times: dict[str, float] = {}

    cfg = PretrainConfig(preset=s["preset"], corpus=s["corpus"], vocab_size=s["vocab_size"], recipe=s["recipe"],
                         seq_len=s["seq_len"], batch_size=s["batch_size"], minutes=s["minutes"], steps=s["steps"],
                         max_documents=s["max_documents"], compile=s["compile"], log_every=s["log_every"],
                         eval_every=s["eval_every"], eval_batches=s["eval_batches"],
                         checkpoint_every=s["checkpoint_every"], out=str(out_dir / "pretrain"), resume=resume,
                         keep_last=1000)  # every checkpoint: fill-mask is asked of each below
    # Training time of earlier sessions of a resumed run (interrupted, or run by `pretrain` itself):
    # part of the run's wall time although not of this call's.
    earlier = ckpt.latest_checkpoint(Path(cfg.out) / "checkpoints") if resume else None
    earlier_s = float(ckpt.load_checkpoint(earlier).state["trainer"]["elapsed_s"]) if earlier else 0.0
    t = time.perf_counter()
    result = pretrain(cfg, runtime=make_runtime("auto", "auto", compile=s["compile"], distributed=False))
    times["pretrain_with_data_s"] = time.perf_counter() - t + earlier_s
    if result.stopped_by:
        raise RuntimeError(f"pretraining was stopped ({result.stopped_by}); run again with --resume")
    run = Path(cfg.out)
    final_eval = result.final_eval
    if final_eval is None:  # resumed after the last step: the log holds the final evaluation
        evals = [r for r in result.history if r.get("split") == "eval"]
        final_eval = {k: v for k, v in evals[-1].items() if k not in ("step", "split", "elapsed_s")} if evals else None
    final = run / "final"

    # The artefacts, small and self-describing.
    shutil.copyfile(run / "metrics.jsonl", out_dir / "metrics.jsonl")
    shutil.copyfile(final / "config.json", out_dir / "config.json")
    shutil.copyfile(run / "tokenizer" / "tokenizer.json", out_dir / "tokenizer.json")
    shutil.copyfile(run / "tokenizer" / "vocab.txt", out_dir / "vocab.txt")
    fp16_dir = ckpt.save_model(out_dir / "model_fp16", result.model, dtype=torch.float16)
    shutil.move(str(fp16_dir / "model.safetensors"), out_dir / "model.fp16.safetensors")
    shutil.rmtree(fp16_dir)
    size_mb = (out_dir / "model.fp16.safetensors").stat().st_size / 1e6

    # Fill-mask along the run: the paper's examples and held-out sentences, at every checkpoint.
    t = time.perf_counter()
    from bertlab.corpus import load_corpus
    from bertlab.fill_mask import PAPER_PROBES, fill_mask_along, probe_sentences
    from bertlab.tokenizer import WordPieceTokenizer
    tok = WordPieceTokenizer.load(run / "tokenizer" / "tokenizer.json")
    probes = probe_sentences(load_corpus(cfg.corpus, "heldout")[:cfg.max_documents], tok, n=8)
    texts = PAPER_PROBES + [p["text"] for p in probes]
    folders = ckpt.list_checkpoints(run / "checkpoints")
    folders = [f for f in folders if int(f.name.split("-")[1]) < result.step] + [final]
    files.write_json(out_dir / "fill_mask.json", {
        "texts": texts, "answers": [None] * len(PAPER_PROBES) + [p["answer"] for p in probes],
        "steps": [int(f.name.split("-")[1]) if f.name.startswith("step-") else result.step for f in folders],
        "along": fill_mask_along(folders, tok, texts)})
    times["fill_mask_s"] = time.perf_counter() - t
    if size_mb > WEIGHTS_BUDGET_MB:
        print(f"note: model.fp16.safetensors is {size_mb:.1f} MB, over the {WEIGHTS_BUDGET_MB} MB budget for "
              f"committing it; --preset mini fits", flush=True)

    # SST-2: pretrained vs scratch, same recipe, same seeds, for each number of labelled sentences.
    curve, results = [], {}
    for n in s["ft_sizes"]:
        epochs = s["ft_epochs"]
        if n is not None and s["ft_min_steps"]:  # small sets: enough epochs for ft_min_steps updates
            epochs = max(epochs, math.ceil(s["ft_min_steps"] * s["ft_batch"] / n))
        ft = dict(task="sst2", epochs=epochs, lr=s["ft_lr"], batch_size=s["ft_batch"], seeds=s["seeds"],
                  max_train_examples=n, max_eval_examples=s["ft_max_eval"], eval_every_epoch=False)
        point = {"train_examples": n, "epochs": epochs}
        for name, kwargs in (("pretrained", {"init": str(final)}),
                             ("scratch", {"init": "scratch", "like": str(final)})):
            t = time.perf_counter()
            r = finetune(FinetuneConfig(**ft, **kwargs, out=str(out_dir / f"sst2_{n or 'all'}_{name}")))
            times[f"sst2_{n or 'all'}_{name}_s"] = time.perf_counter() - t
            point[name] = r.to_dict()
            print(f"{n or 'all'} sentences: {r.summary()}", flush=True)
        curve.append(point)
    results = {"pretrained": curve[-1]["pretrained"], "scratch": curve[-1]["scratch"]}  # the most data
    # Other tasks, every labelled example, same recipe: "<task>_pretrained" / "<task>_scratch"
    # (and, for CoNLL-2003, the pair under "conll2003" as chapter 14 reads it).
    for task in s["ft_tasks"]:
        ft = dict(task=task, epochs=s["ft_epochs"], lr=s["ft_lr"], batch_size=s["ft_batch"], seeds=s["seeds"],
                  max_train_examples=s["ft_tasks_max_train"], max_eval_examples=s["ft_max_eval"],
                  eval_every_epoch=False)
        for name, kwargs in (("pretrained", {"init": str(final)}),
                             ("scratch", {"init": "scratch", "like": str(final)})):
            t = time.perf_counter()
            r = finetune(FinetuneConfig(**ft, **kwargs, out=str(out_dir / f"{task}_{name}")))
            times[f"{task}_{name}_s"] = time.perf_counter() - t
            results[f"{task}_{name}"] = r.to_dict()
            print(r.summary(), flush=True)
    if "conll2003_pretrained" in results:
        results["conll2003"] = {"pretrained": results.pop("conll2003_pretrained"),
                                "scratch": results.pop("conll2003_scratch")}
    files.write_json(out_dir / "finetune_results.json", results)
    files.write_json(out_dir / "sst2_curve.json", curve)

    def corpus_meta(split):
        return json.loads((run / "data" / split / "tokens" / "meta.json").read_text())["corpus"]

    train_meta, held_meta = corpus_meta("train"), corpus_meta("heldout")
    provenance = {
        "command": " ".join([Path(sys.executable).name, "-m", "bertlab"] + sys.argv[1:]) if sys.argv else None,
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in s.items()},
        "smoke": smoke,
        "kind": kind,
        "git_commit": git_commit(),
        # a resumed run may fine-tune with newer code than it pretrained with: both are recorded
        "pretraining_git_commit": json.loads((run / "run.json").read_text()).get("git_commit"),
        "device": device_name(rt.device),
        "cpu_model": cpu_model(),
        "precision": rt.precision,
        "torch": torch.__version__,
        "wall_time_s": round(time.perf_counter() - t_start + earlier_s, 1),
        "resumed": {"earlier_sessions_train_s": round(earlier_s, 1)} if earlier is not None else None,
        "stage_times_s": {k: round(v, 1) for k, v in times.items()},
        "pretraining": {"steps": result.step, "tokens": result.tokens, "train_seconds": round(result.elapsed_s, 1),
                        "final_heldout": final_eval},
        "corpus": {"name": cfg.corpus, "train_checksum": train_meta["checksum"], "train_tokens": train_meta["n_tokens"],
                   "train_documents": train_meta["n_documents"], "heldout_checksum": held_meta["checksum"],
                   "heldout_tokens": held_meta["n_tokens"], "heldout_documents": held_meta["n_documents"]},
        "weights": {"file": "model.fp16.safetensors", "megabytes": round(size_mb, 2),
                    "sha256": files.sha256_file(out_dir / "model.fp16.safetensors")},
        "sst2_dev_accuracy_median": {k: results[k]["median"] for k in ("pretrained", "scratch")},
        "other_tasks_median": {f"{task} from {name}": (results[task][name] if task == "conll2003" else
                                                       results[f"{task}_{name}"])["median"]
                               for task in s["ft_tasks"] for name in ("pretrained", "scratch")},
        "sst2_curve_median": [{"train_examples": p["train_examples"], "pretrained": p["pretrained"]["median"],
                               "scratch": p["scratch"]["median"]} for p in curve],
    }
    files.write_json(out_dir / "provenance.json", provenance)
    print(json.dumps({"heldout": final_eval, "sst2": provenance["sst2_dev_accuracy_median"],
                      "wall_time_s": provenance["wall_time_s"]}, indent=1))
    return provenance


if __name__ == "__main__":
    sys.exit(main())
