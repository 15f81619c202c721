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
one of bertlab.training.finetune.FinetuneConfig: the notebooks call the same functions. An option's help is the
comment at the end of its field's line.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import io
import json
import signal
import sys
import tokenize
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


def field_help(cls: type) -> dict[str, str]:
    """Each field of a config dataclass -> the comment that ends its line, its option's --help: one text
    for a code reader and a user, so they cannot drift (the .py files ship, so this works installed)."""
    source = inspect.getsource(cls)
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = {t.start[0]: t.string.lstrip("#").strip() for t in tokens if t.type == tokenize.COMMENT}
    fields = [n for n in ast.parse(source).body[0].body if isinstance(n, ast.AnnAssign)]
    return {n.target.id: comments[n.end_lineno] for n in fields if n.end_lineno in comments}


def _option_text(name: str, value: Any) -> str | None:
    """A default as the option would be written on the command line."""
    if value is None or value == ():
        return "none"
    if name == "lr":
        return rate(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)) and value and all(hasattr(v, "seq_len") for v in value):
        return ",".join(f"{v.fraction:g}:{v.seq_len}:{v.batch_size}" for v in value)  # --phases' format
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value):
        return " ".join(map(str, value))  # --seeds 0 1 2
    if isinstance(value, (bool, int, str)):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return None


def _default_text(name: str, default: Any, recipes: dict | None) -> str:
    """The default an option's help states: the field's, or each recipe's where the recipe decides."""
    if default not in (None, False, True):
        return f" (default: {_option_text(name, default) or default})"
    if default is None and recipes:
        values = {k: _option_text(name, getattr(r, name)) for k, r in recipes.items() if hasattr(r, name)}
        if values and any(v is not None for v in values.values()):
            shown = ", ".join(f"{k} {v}" for k, v in values.items())
            return f" (default: the recipe's: {shown})".replace("%", "%%")
    return ""


def _add_dataclass_args(parser: argparse.ArgumentParser, cls: type, recipes: dict | None = None) -> None:
    """One --option per field of a config dataclass, typed from its annotation, its help the field's comment."""
    helps = field_help(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        ann = str(f.type)
        default = f.default if f.default is not dataclasses.MISSING else None
        help_ = helps.get(f.name, "").replace("%", "%%") + _default_text(f.name, default, recipes)
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
    task_help = field_help(FinetuneConfig)["task"]
    e.add_argument("--task", required=True, help=f"{task_help}; or mlm: held-out MLM/NSP of a pretrained model")
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
