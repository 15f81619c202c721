"""The capstone's grader: it measures the submitted mini-BERT again, from its weights.

    python -m bertlab.course.capstone submissions/*/ --out capstone_grades   # .csv and .json

A submission folder holds config.json, model.safetensors (a BertForPreTraining) and tokenizer.json
as `pretrain` writes them in <out>/final, and the student's notebook. The grader never reads a
number the student reports: it checks the folder (safetensors only, never a pickle), measures the
held-out masked-LM accuracy, fine-tunes CoNLL-2003 NER from the weights and from scratch, seed by
seed, and gives points by thresholds (`Grading`). NER, not SST-2: naming entities needs a word's
context, which a small masked LM learns first. The measurements run in a child process with a
time limit; what it finished before counts.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertlab.config import BertConfig
from bertlab.data.records import records_dir
from bertlab.data.tokenizer import WordPieceTokenizer
from bertlab.model import BertForPreTraining
from bertlab.training.heldout import PLATEAU_EXIT_ACC

MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
SOLUTION_RECORD = records_dir("capstone", "model_solution.json")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
FIX = (
    "copy config.json, model.safetensors and tokenizer.json from your run's final folder (<out>/final, "
    "written by pretrain) into the submission folder"
)


class SubmissionError(ValueError):
    """A submission folder that cannot be graded; the message names the file and the fix."""


@dataclass(frozen=True)
class Grading:
    """How the grader measures and scores a submission (the defaults are the capstone's)."""

    # held-out masked LM (bertlab.training.heldout.evaluate_checkpoint)
    corpus: str = "books+wiki"
    seq_len: int = 128
    eval_batches: int = 20
    eval_batch_size: int = 64
    max_documents: int | None = None  # the first N held-out documents (None: all of them)
    # fine-tuning (bertlab.training.finetune), the same recipe for both arms
    task: str = "conll2003"  # any task of bertlab.tasks; its main metric is the one graded
    train_examples: int = 2000  # the first N training sentences
    eval_examples: int | None = None  # the first N evaluation sentences (None: all of them)
    seeds: tuple[int, ...] = (0, 1, 2)
    lr: float = 5e-4
    epochs: float = 5
    batch_size: int = 32
    # limits
    max_parameters: int = 8_000_000  # BertForPreTraining's parameters: BERT-Mini with 16,384 pieces fits
    timeout: float = 1800.0  # seconds for the measurements
    threads: int | None = None  # torch threads in the child (None: torch's default)
    # (threshold, points): reached when the MLM accuracy is >= it, or the gain over scratch (in
    # points of the task's metric) > it; the top gain level asks more than the model solution's
    valid_points: int = 10
    mlm_levels: tuple[tuple[float, int], ...] = ((0.15, 5), (PLATEAU_EXIT_ACC, 5), (0.25, 5), (0.30, 5))
    gain_levels: tuple[tuple[float, int], ...] = ((0.0, 10), (5.0, 5), (12.0, 5))

    @property
    def points(self) -> int:
        return self.valid_points + sum(p for _, p in self.mlm_levels) + sum(p for _, p in self.gain_levels)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Grading:
        d = dict(d)
        for key in ("seeds", "mlm_levels", "gain_levels"):
            if key in d:
                d[key] = tuple(tuple(x) if isinstance(x, list) else x for x in d[key])
        return cls(**d)


GRADING = Grading()


# --- The folder ---
def validate_submission(folder: str | Path, max_parameters: int | None = GRADING.max_parameters) -> dict[str, Any]:
    """Check a submission folder without running the model (nothing is unpickled or executed);
    SubmissionError names the problem and its fix. Returns the model's size and notes."""
    from safetensors.torch import load_file

    folder = Path(folder)
    if not folder.is_dir():
        raise SubmissionError(f"{folder}: no such folder; a submission is a folder holding {', '.join(MODEL_FILES)}")
    notes: list[str] = []
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
    if "model.safetensors" in missing and pickles:
        raise SubmissionError(
            f"{folder}: the weights are in {', '.join(pickles)}, a pickle, which the grader refuses to open "
            f"(unpickling can run arbitrary code). Save them as model.safetensors: pretrain writes it in "
            f"<out>/final, and bertlab.checkpoint.save_model(folder, model) writes any model that way"
        )
    if missing:
        raise SubmissionError(f"{folder}: {', '.join(missing)} missing; {FIX}")
    if pickles:
        notes.append(f"ignored {', '.join(pickles)} (pickles are never opened; model.safetensors was graded)")
    try:
        config = BertConfig.from_dict(json.loads((folder / "config.json").read_text()))
    except Exception as err:  # bad JSON, unknown fields, impossible sizes
        raise SubmissionError(
            f"{folder / 'config.json'} is not a bertlab model config ({type(err).__name__}: {err}); {FIX}"
        ) from err
    try:
        tokenizer = WordPieceTokenizer.load(folder / "tokenizer.json")
    except Exception as err:
        raise SubmissionError(
            f"{folder / 'tokenizer.json'} is not a WordPiece tokenizer bertlab can read "
            f"({type(err).__name__}: {err}); {FIX}"
        ) from err
    if tokenizer.vocab_size != config.vocab_size:
        raise SubmissionError(
            f"{folder}: tokenizer.json has {tokenizer.vocab_size:,} pieces but config.json says "
            f"vocab_size {config.vocab_size:,}: the two come from different runs; {FIX}"
        )
    if config.causal:
        raise SubmissionError(
            f"{folder / 'config.json'}: a left-to-right (causal) model; the capstone pretrains "
            f"BERT's bidirectional masked LM (objective 'mlm')"
        )
    try:
        weights = load_file(str(folder / "model.safetensors"))
    except Exception as err:  # truncated, overwritten, not safetensors at all
        raise SubmissionError(
            f"{folder / 'model.safetensors'} is corrupt or truncated: safetensors cannot read it "
            f"({type(err).__name__}: {str(err)[:120]}); copy it again from <out>/final "
            f"(compare the sizes of the two files)"
        ) from err
    import torch

    with torch.device("meta"):
        expected = BertForPreTraining(config).state_dict()
    absent = [k for k in expected if k not in weights]
    if absent:
        head = [k for k in absent if k.startswith(("mlm.", "nsp."))]
        why = (
            "it has no masked-LM head: submit the pretraining model (<out>/final), not a fine-tuned one"
            if head and len(head) == len(absent)
            else "it was not written for this config.json"
        )
        raise SubmissionError(
            f"{folder / 'model.safetensors'} lacks {len(absent)} weights ({', '.join(absent[:3])}"
            f"{', ...' if len(absent) > 3 else ''}): {why}; {FIX}"
        )
    wrong = [
        f"{k} {tuple(weights[k].shape)} (config.json: {tuple(v.shape)})"
        for k, v in expected.items()
        if tuple(weights[k].shape) != tuple(v.shape)
    ]
    if wrong:
        raise SubmissionError(f"{folder / 'model.safetensors'} does not fit config.json: {'; '.join(wrong[:3])}; {FIX}")
    bad = [k for k, v in weights.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise SubmissionError(
            f"{folder / 'model.safetensors'} holds NaN or infinite weights ({', '.join(bad[:3])}): "
            f"the run diverged; submit an earlier checkpoint or train again with a lower lr"
        )
    # parameters as the model counts them (the MLM decoder shares the word embeddings)
    parameters = sum(v.numel() for k, v in expected.items() if k != "mlm.decoder.weight")
    if max_parameters is not None and parameters > max_parameters:
        raise SubmissionError(
            f"{folder}: the model has {parameters:,} parameters, over the capstone's limit of {max_parameters:,} "
            "(BERT-Mini, 4 layers of H=256, with 16,384 pieces fits); pretrain a smaller one"
        )
    notebooks = sorted(p.name for p in folder.glob("*.ipynb"))
    if not notebooks:
        notes.append("no notebook (.ipynb) in the folder: the write-up, graded by hand, is missing")
    return {
        "layers": config.num_layers,
        "hidden": config.hidden_size,
        "heads": config.num_heads,
        "vocab_size": config.vocab_size,
        "norm_position": config.norm_position,
        "parameters": parameters,
        "notebooks": notebooks,
        "notes": notes,
    }


# --- The measurements (in a child process) ---
def measure(folder: str | Path, settings: Grading = GRADING, out: str | Path | None = None) -> dict[str, Any]:
    """Held-out MLM scores, then fine-tuning from the weights and from scratch, seed by seed;
    written to `out` (JSON) after every stage."""
    import torch

    # local: only the child process that measures imports the training stack
    from bertlab.training.finetune import FinetuneConfig, finetune
    from bertlab.training.heldout import evaluate_checkpoint

    if settings.threads:
        torch.set_num_threads(settings.threads)
    folder = str(Path(folder).resolve())
    ft = {"seeds": [], "pretrained": [], "scratch": []}
    result: dict[str, Any] = {"mlm": None, "finetune": ft, "stage": "mlm", "seconds": {}}

    def save() -> None:
        if out is not None:
            tmp = Path(f"{out}.tmp")
            tmp.write_text(json.dumps(result))
            tmp.replace(out)

    save()
    t0 = time.perf_counter()
    result["mlm"] = evaluate_checkpoint(
        folder,
        corpus=settings.corpus,
        seq_len=settings.seq_len,
        nsp=False,
        batches=settings.eval_batches,
        batch_size=settings.eval_batch_size,
        device="cpu",
        precision="fp32",
        max_documents=settings.max_documents,
    )
    result["seconds"]["mlm"] = round(time.perf_counter() - t0, 1)
    base = FinetuneConfig(
        task=settings.task,
        lr=settings.lr,
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        max_train_examples=settings.train_examples,
        max_eval_examples=settings.eval_examples,
        eval_every_epoch=False,
        device="cpu",
        precision="fp32",
        progress=False,
    )
    for seed in settings.seeds:
        scores = {}
        for arm, init in (("pretrained", {"init": folder}), ("scratch", {"init": "scratch", "like": folder})):
            result["stage"] = f"fine-tuning seed {seed}, {arm}"
            save()
            t0 = time.perf_counter()
            run = finetune(dataclasses.replace(base, seeds=(seed,), **init))
            scores[arm] = run.scores[0]
            result["seconds"][f"{arm}_{seed}"] = round(time.perf_counter() - t0, 1)
        ft["seeds"].append(seed)
        ft["pretrained"].append(scores["pretrained"])
        ft["scratch"].append(scores["scratch"])
        ft["metric"] = run.main_metric
    result["stage"] = "done"
    save()
    return result


def _child_main(argv: Sequence[str]) -> None:
    folder, settings_file, out = argv
    measure(folder, Grading.from_dict(json.loads(Path(settings_file).read_text())), out)


def _measure_with_limit(folder: Path, settings: Grading) -> tuple[dict[str, Any], str]:
    """measure() in a child process, stopped after settings.timeout seconds: (results, error)."""
    with tempfile.TemporaryDirectory(prefix="bertlab-capstone-") as tmp:
        spec, out, log = Path(tmp) / "settings.json", Path(tmp) / "measured.json", Path(tmp) / "log.txt"
        spec.write_text(json.dumps(dataclasses.asdict(settings)))
        code = "import sys; from bertlab.course.capstone import _child_main; _child_main(sys.argv[1:])"
        error = ""
        with open(log, "w") as fh:
            # the child runs in tmp: a folder given relative to this process's directory is resolved first
            proc = subprocess.Popen(
                [sys.executable, "-c", code, str(Path(folder).resolve()), str(spec), str(out)],
                stdout=fh,
                stderr=subprocess.STDOUT,
                cwd=tmp,
            )
            try:
                proc.wait(timeout=settings.timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                error = f"timeout: the measurements were stopped after {settings.timeout:g} s"
        measured = json.loads(out.read_text()) if out.exists() else {}
        if not error and proc.returncode != 0:
            tail = log.read_text()[-600:].strip()
            error = f"the measurements failed (exit code {proc.returncode}): {tail}"
        if error and measured.get("stage"):
            error += f", during {measured['stage']}"
        return measured, error


# --- Points ---
def _part(name: str, of: int, passed: bool) -> dict[str, Any]:
    return {"name": name, "of": of, "passed": passed, "points": of if passed else 0}


def score(measured: dict[str, Any], settings: Grading = GRADING, valid: bool = True) -> dict[str, Any]:
    """Points from `measure`'s results by the thresholds of `settings`, one part per level."""
    parts = [_part("a valid submission folder", settings.valid_points, valid)]
    mlm = (measured.get("mlm") or {}).get("mlm_acc") if valid else None
    for threshold, points in settings.mlm_levels:
        passed = mlm is not None and mlm >= threshold
        parts.append(_part(f"held-out MLM accuracy >= {threshold:.0%}", points, passed))
    ft = measured.get("finetune") or {}
    pre, scr = ft.get("pretrained") or [], ft.get("scratch") or []
    n = min(len(pre), len(scr))
    gain = statistics.median(pre[:n]) - statistics.median(scr[:n]) if valid and n else None
    for threshold, points in settings.gain_levels:
        passed = gain is not None and gain > threshold
        parts.append(_part(f"gain over scratch > {threshold:g} points", points, passed))
    return {
        "points": sum(p["points"] for p in parts),
        "of": sum(p["of"] for p in parts),
        "parts": parts,
        "mlm_acc": mlm,
        "gain": gain,
        "pretrained_median": statistics.median(pre[:n]) if n else None,
        "scratch_median": statistics.median(scr[:n]) if n else None,
    }


def grade_capstone(
    submission_dir: str | Path, settings: Grading | None = None, *, isolate: bool = True, **overrides: Any
) -> dict[str, Any]:
    """Grade one submission folder: a dict of points, of, parts, the measurements, the model's
    size, error and notes. Keyword arguments override fields of `settings`; isolate=False
    measures in this process, without the time limit."""
    settings = dataclasses.replace(settings or GRADING, **overrides)
    folder = Path(submission_dir)
    t0 = time.monotonic()
    grade: dict[str, Any] = {
        "submission": str(folder),
        "valid": False,
        "error": "",
        "notes": [],
        "model": None,
        "measured": {},
        "settings": dataclasses.asdict(settings),
    }
    try:
        model = validate_submission(folder, settings.max_parameters)
    except SubmissionError as err:
        grade["error"] = str(err)
    else:
        grade["valid"], grade["notes"], grade["model"] = True, model.pop("notes"), model
        if isolate:
            grade["measured"], grade["error"] = _measure_with_limit(folder, settings)
        else:
            grade["measured"] = measure(folder, settings)
    grade.update(score(grade["measured"], settings, valid=grade["valid"]))
    grade["seconds"] = round(time.monotonic() - t0, 1)
    return grade


def model_solution(path: str | Path = SOLUTION_RECORD) -> dict[str, Any] | None:
    """The recorded grades of the capstone's model solution, or None where the file is absent."""
    path = Path(path)
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    if not isinstance(record.get("grades"), dict) or "pretraining" not in record:
        raise ValueError(
            f"{path} is not a model-solution record (no 'grades' or 'pretraining'); "
            f"write it again with scripts/record_capstone_solution.py"
        )
    return record


def summary(grade: dict[str, Any]) -> str:
    """A few lines for the grader's terminal (and feedback to the student)."""
    lines = [f"{grade['submission']}: {grade['points']:g}/{grade['of']} in {grade.get('seconds', 0):.0f} s"]
    if grade.get("model"):
        m = grade["model"]
        lines.append(
            f"  model: L={m['layers']}, H={m['hidden']}, A={m['heads']}, vocabulary {m['vocab_size']:,}, "
            f"{m['parameters']:,} parameters"
        )
    if grade.get("mlm_acc") is not None:
        lines.append(f"  held-out MLM accuracy {grade['mlm_acc']:.1%}")
    ft = (grade.get("measured") or {}).get("finetune") or {}
    if grade.get("gain") is not None:
        pre, scr = grade["pretrained_median"], grade["scratch_median"]
        task = (grade.get("settings") or {}).get("task", GRADING.task)
        lines.append(
            f"  {task} {ft.get('metric', 'score')}, median over seeds {ft['seeds']}: pretrained {pre:.2f} "
            f"{_fmt(ft['pretrained'])}, scratch {scr:.2f} {_fmt(ft['scratch'])}, gain {grade['gain']:+.2f}"
        )
    for p in grade["parts"]:
        lines.append(f"  [{'x' if p['passed'] else ' '}] {p['name']}: {p['points']}/{p['of']}")
    if grade.get("error"):
        lines.append(f"  error: {grade['error']}")
    lines += [f"  note: {n}" for n in grade.get("notes", [])]
    return "\n".join(lines)


def _fmt(xs: list[float]) -> str:
    return "(" + ", ".join(f"{x:.2f}" for x in xs) + ")"


def write_grades(grades: list[dict[str, Any]], out: str | Path) -> Path:
    """out.csv (one row per submission) and out.json (everything)."""
    out = Path(out).with_suffix(".csv")
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["submission", "points", "of", "mlm_acc", "pretrained_median", "scratch_median", "gain", "error"])
        for g in grades:
            row = [g["submission"], g["points"], g["of"], _round(g.get("mlm_acc"), 4)]
            row += [_round(g.get(k), 2) for k in ("pretrained_median", "scratch_median", "gain")]
            w.writerow([*row, g.get("error", "")[:500]])
    out.with_suffix(".json").write_text(json.dumps(grades, indent=1) + "\n")
    return out


def _round(x: float | None, digits: int) -> float | str:
    return "" if x is None or not math.isfinite(x) else round(x, digits)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m bertlab.course.capstone",
        description="grade capstone submissions: the model is measured again from its weights",
    )
    p.add_argument("submissions", nargs="+", help="submission folders (config.json, model.safetensors, ...)")
    p.add_argument("--out", help="write OUT.csv and OUT.json (one row / record per submission)")
    p.add_argument(
        "--timeout", type=float, default=GRADING.timeout, help="seconds per submission (default %(default)g)"
    )
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(GRADING.seeds))
    args = p.parse_args(argv)
    grades = []
    for folder in args.submissions:
        g = grade_capstone(folder, timeout=args.timeout, threads=args.threads, seeds=tuple(args.seeds))
        grades.append(g)
        print(summary(g), flush=True)
    if args.out:
        print(f"wrote {write_grades(grades, args.out)} and its .json")
    return 0 if all(g["valid"] for g in grades) else 1


if __name__ == "__main__":
    sys.exit(main())
