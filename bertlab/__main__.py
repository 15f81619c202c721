"""The command line: `python -m bertlab <command> ...` (or `bertlab <command>` once installed).

Commands: pretrain, finetune, evaluate, plot, fill-mask, export-hf; each explains itself
with --help.

Examples:
    python -m bertlab pretrain --preset mini --steps 2000 --out runs/mini
    python -m bertlab pretrain --preset medium --minutes 9 --out runs/medium --resume
    torchrun --nproc_per_node 4 -m bertlab pretrain --preset base --recipe paper --steps 100000
    python -m bertlab finetune --task sst2 --init runs/mini/final --seeds 0 1 2
    python -m bertlab evaluate --task sst2 --model runs/ft/seed-0
    python -m bertlab fill-mask "the man went to the [MASK] ."          # the book's own BERT
    python -m bertlab export-hf --model runs/mini/final --out my-bert   # for transformers

Every option of `pretrain` is a field of bertlab.training.pretrain_config.PretrainConfig, every option of `finetune`
one of bertlab.training.finetune.FinetuneConfig: the notebooks call the same functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

from bertlab import checkpoint as ckpt
from bertlab.analysis.fill_mask import fill_mask
from bertlab.data.tokenizer import load_tokenizer_for
from bertlab.errors import ActionableError
from bertlab.experiments import reference
from bertlab.export import export_hf
from bertlab.model import BertForPreTraining
from bertlab.prose import rate
from bertlab.runtime import shutdown_distributed
from bertlab.training.finetune import FinetuneConfig, evaluate_folder, finetune
from bertlab.training.heldout import evaluate_checkpoint
from bertlab.training.logs import plot_metrics
from bertlab.training.pretrain import NonFiniteLossError, PretrainConfig, pretrain
from bertlab.training.recipes import RECIPES

# Commands that serve the book's maintainers from a checkout: they live in the lab, not the package.
MOVED = {"reference-run": "lab.reference_run", "publish-records": "lab.publish_records"}

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
    "seq_len": "tokens per sequence",
    "batch_size": "sequences per optimiser step over all processes",
    "grad_accum": "split each step into this many micro-batches (small GPUs)",
    "lr": "peak learning rate",
    "warmup": "warm-up: steps (>= 1) or a fraction of the run (< 1)",
    "schedule": "after warm-up: linear, cosine or constant",
    "weight_decay": "decoupled weight decay (not on biases and LayerNorm)",
    "dropout": "dropout on every layer",
    "nsp": "next-sentence prediction on/off",
    "segment_pairs": "without NSP, still two segments per sequence, so the masked LM trains both segment embeddings",
    "phases": "sequence-length phases, FRACTION:SEQ_LEN:BATCH,... (e.g. 0.9:64:128,0.1:128:64: 90%% of the "
    "steps, or of --minutes, at 64 tokens, then 128); --seq-len is then the held-out length",
    "objective": "mlm (BERT's masked LM) or ltr (a left-to-right LM, the paper's 'LTR & No NSP'; needs NSP off)",
    "whole_word": "mask whole words instead of single word pieces",
    "mlm_probability": "fraction of tokens chosen for the MLM",
    "norm_position": "post (BERT's LayerNorm after each residual sum) or pre (pre-LN, for high learning rates)",
    "mlm_bias": "the MLM output bias at step 0: zeros (BERT) or unigram (log frequencies of the training tokens)",
    "device": "auto, cpu, cuda or cuda:N",
    "precision": "auto (bf16 on recent GPUs and bf16-capable CPUs, fp16 on older GPUs, else fp32), fp32, bf16, fp16",
    "compile": "torch.compile the model and loss (faster after a minute of compiling, GPU or CPU)",
    "seed": "random seed (weights, data order, masks)",
    "resume": "continue from the newest checkpoint in the output folder (start fresh if none)",
    "log_every": "steps between metric lines (and GPU syncs)",
    "eval_every": "steps between held-out evaluations",
    "eval_batches": "held-out batches per evaluation",
    "checkpoint_every": "steps between checkpoints",
    "stop_after": "stop after N steps of this session, with a checkpoint and a held-out score (then --resume)",
    # finetune
    "task": "sst2, mrpc, rte, squad (dev only locally) or conll2003",
    "init": "a bertlab model folder (e.g. runs/x/final), 'scratch', or a hub name (online)",
    "like": "with --init scratch: copy size and vocabulary from this model folder",
    "seeds": "one fine-tuning run per seed; the median is reported",
    "max_len": "maximum tokens per example (default: the task's)",
    "max_train_examples": "train on the first N examples only",
    "max_eval_examples": "evaluate on the first N examples only",
    "group_by_length": "random batches of similar lengths, padded less (--no-group-by-length: plain random)",
    "balance_tokens": "with grouped batches, a token task weighs each token the same in short and long batches",
    "save_models": "write each seed's fine-tuned model under --out",
    "workers": "on a CPU, train this many seeds side by side, each process on cores/workers threads",
}


def _option_text(name: str, value: Any) -> str | None:
    """A recipe's value as the option would be written on the command line."""
    if value is None or value == ():
        return "none"
    if name == "lr":
        return rate(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)) and value and all(hasattr(v, "seq_len") for v in value):
        return ",".join(f"{v.fraction:g}:{v.seq_len}:{v.batch_size}" for v in value)  # --phases' format
    if isinstance(value, (bool, int, str)):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return None


def _default_text(name: str, default: Any, recipes: dict | None) -> str:
    """The default an option's help states: the field's, or each recipe's where the recipe decides."""
    if default not in (None, False, True):
        return f" (default: {default})"
    if default is None and recipes:
        values = {k: _option_text(name, getattr(r, name)) for k, r in recipes.items() if hasattr(r, name)}
        if values and any(v is not None for v in values.values()):
            shown = ", ".join(f"{k} {v}" for k, v in values.items())
            return f" (default: the recipe's: {shown})".replace("%", "%%")
    return ""


def _add_dataclass_args(parser: argparse.ArgumentParser, cls: type, recipes: dict | None = None) -> None:
    """One --option per field of a config dataclass, typed from its annotation."""
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        ann = str(f.type)
        default = f.default if f.default is not dataclasses.MISSING else None
        help_ = HELP.get(f.name, "") + _default_text(f.name, default, recipes)
        if ann.startswith("bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_)
        elif ann.startswith("Sequence[int]"):
            parser.add_argument(flag, type=int, nargs="+", default=None, help=help_)
        else:
            typ = int if ann.startswith("int") else float if ann.startswith("float") else str
            parser.add_argument(flag, type=typ, default=None, help=help_)


def _config_from(cls: type, args: argparse.Namespace):
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name, None) is not None}
    if "seeds" in values:
        values["seeds"] = tuple(values["seeds"])
    return cls(**values)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bertlab",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples:")[1].split("Every option")[0],
    )
    sub = parser.add_subparsers(dest="command", metavar="command", required=True)

    p = sub.add_parser("pretrain", help="pretrain a BERT")
    _add_dataclass_args(p, PretrainConfig, recipes=RECIPES)

    f = sub.add_parser("finetune", help="fine-tune on a task, several seeds")
    _add_dataclass_args(f, FinetuneConfig)

    e = sub.add_parser("evaluate", help="score a fine-tuned model on a task, or a pretrained one (--task mlm)")
    e.add_argument("--task", required=True, help=HELP["task"] + "; or mlm: held-out MLM/NSP of a pretrained model")
    e.add_argument("--model", required=True, help="a model folder; with --task mlm also a recorded reference run")
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

    x = sub.add_parser("export-hf", help="write a model as a folder transformers loads (from_pretrained, pipeline)")
    x.add_argument("--model", required=True, help="a model folder or a recorded reference run")
    x.add_argument("--out", required=True, help="the folder to write (replaced if it exists)")

    fm = sub.add_parser("fill-mask", help="a masked LM's top guesses for each [MASK] of a text")
    fm.add_argument("text", help='a text with one or more [MASK], e.g. "the man went to the [MASK] ."')
    fm.add_argument("--model", default=None, help="a model folder or recorded run (default: the book's record)")
    fm.add_argument("--top", type=int, default=5, help="guesses per [MASK]")

    for command, module in MOVED.items():
        sub.add_parser(command, help=f"moved: python -m {module} (a checkout's lab/)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in MOVED:
        command = " ".join([f"python -m {MOVED[argv[0]]}", *argv[1:]])
        print(
            f"error: {argv[0]} has moved to the lab (lab/ beside the package in a checkout of the bertlab "
            f"repository, not installed with bertlab): from the repository root run `{command}`",
            file=sys.stderr,
        )
        return 2
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except NonFiniteLossError as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    except (ValueError, FileNotFoundError, ActionableError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)  # any other error is a fault: its traceback stays
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.command == "pretrain":
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
        result = finetune(_config_from(FinetuneConfig, args))
        print(result.summary())
        return 0
    if args.command == "evaluate":
        if args.task == "mlm":
            model, kw = args.model, dict(corpus=args.corpus, seq_len=args.seq_len, max_documents=args.max_examples)
            if (Path(model) / "provenance.json").exists():  # a recorded reference run: its own settings
                run = reference.find(model)
                st = run.provenance.get("settings", {})
                model = str(run.model_folder())
                kw = dict(
                    corpus=st["corpus"],
                    seq_len=st["seq_len"],
                    nsp=RECIPES[st["recipe"]].nsp,
                    pairs=bool(st.get("segment_pairs")),
                    batches=st["eval_batches"],
                    batch_size=min(st["batch_size"], 64),
                    max_documents=st.get("max_documents"),
                )  # as pretrain's held-out batches
            scores = evaluate_checkpoint(model, device=args.device, precision=args.precision, **kw)
            print(json.dumps(scores))
            return 0
        scores = evaluate_folder(
            args.model, args.task, args.split, args.max_len, args.device, args.precision, max_examples=args.max_examples
        )
        print(json.dumps(scores))
        return 0
    if args.command == "plot":
        import matplotlib

        matplotlib.use("Agg")
        path = Path(args.metrics)
        if path.is_dir():
            path = path / "metrics.jsonl"
        out = Path(args.out) if args.out else path.with_suffix(".png")
        plot_metrics(path, title=str(path.parent.name)).savefig(out, dpi=120)
        print(out)
        return 0
    if args.command == "export-hf":
        out = export_hf(_model_folder(args.model), args.out)
        print(f"wrote {out}: transformers.AutoModelForMaskedLM.from_pretrained({str(out)!r}) loads it")
        return 0
    if args.command == "fill-mask":
        if args.top < 1:
            raise ValueError(f"--top must be at least 1, got {args.top}")
        folder = _model_folder(args.model)
        model = ckpt.load_model(folder, BertForPreTraining).eval()
        guesses = fill_mask(model, load_tokenizer_for(folder), args.text, k=args.top)
        for n, top in enumerate(guesses, 1):
            print(f"[MASK] {n}: " + "  ".join(f"{piece} {p:.3f}" for piece, p in top))
        return 0
    raise AssertionError(args.command)


def _model_folder(model: str | None) -> Path:
    """A model folder from --model: a folder, a recorded reference run's weights, or (None) the book's."""
    if model is not None and not (Path(model) / "provenance.json").exists():
        return Path(model)
    run = reference.find(model)
    if run is None:
        raise FileNotFoundError(
            "no recorded reference run here (data/reference_run); give --model FOLDER, a "
            "pretrained model folder such as runs/pretrain/final"
        )
    return run.model_folder()


if __name__ == "__main__":
    sys.exit(main())
