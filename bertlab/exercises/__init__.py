"""Checks for the exercises: a student runs them in the notebook, no grading server needed.

    from bertlab.exercises import check
    check("attention", attention)             # or check_attention(attention)

Each check calls the student's function on several inputs (real text and real weights where it
matters, edge cases: padding, a single token, odd shapes), compares with bertlab's own
implementation or with values computed from the definition, and either prints a one-line
confirmation of what was checked or raises `ExerciseFailure` (an AssertionError, so an
auto-grader counts it as a failed test) whose message says which input went wrong, where, and
what the usual cause is. A function that still raises NotImplementedError gets "not implemented
yet".

The exercises (book/exercises/, instructor edition with solutions) and the chapter each follows:
    wordpiece       greedy longest-match-first WordPiece of one word      (chapter 2)
    sinusoids       sinusoidal position encodings                          (chapter 3)
    attention       scaled dot-product attention with a padding mask       (chapter 4)
    heads           split_heads / merge_heads, (B,T,H) <-> (B,A,T,d)       (chapter 5)
    masking         MLM 15% selection, 80/10/10 corruption                 (chapter 8)
    nsp             IsNext / NotNext sentence pairs from documents         (chapter 9)
    span            SQuAD best-span decoding                               (chapter 13, sec. 4.2 of the paper)
    features        the paper's feature-based layer combinations           (chapter 15, sec. 5.3 of the paper)
    encoder_layer   a post-LN encoder layer, against bertlab's EncoderLayer   (chapter 6)
    param_count     BERT's parameter count in closed form                  (chapter 7)
    pretraining_step  MLM + NSP loss, backward, clipping, the AdamW step   (chapter 10)
    finetune_loop   a fine-tuning loop with warm-up, and its accuracy      (chapter 11)
    ner_labels      word labels onto first pieces, predictions back        (chapter 14)
    head_probe      find heads by measuring where they attend              (chapter 16)
    ablation_plan   the form of an ablation's plan                         (chapter 17)
The course table (points, difficulty, time, hardware of each) is bertlab.course. The checks of
each assignment are a module of this package (attention.py holds check_attention and check_heads,
...); framework.py holds what they share.

Each check is made of parts that pass or fail on their own; `RESULTS[name]` holds the latest
CheckResult of each check, which is what the grader scores (partial credit). Every check can be
judged outside the student's process (bertlab.exercises.replay): the student's code is reached
only through `call_student` (calls on plain data) and `observe_student` (a model or a class the
check drives, observed as data: outputs, gradients, parameters, losses, learning rates).

`python -m bertlab.exercises grade <folder>` grades every submitted notebook in <folder>: it runs
the notebook's code in a fresh kernel, then the checks on the functions it defined, with a time
limit per exercise, and writes grades.csv and grades.json (bertlab.course.grading; book/instructor.md).
"""

from __future__ import annotations

# The package's own modules are imported relatively: the grader loads a private copy of the whole
# package under another name (bertlab.course.grading), and relative imports keep that copy whole.
import contextlib
import dataclasses
from typing import Any, Callable, Sequence

from bertlab.course import EXERCISES, Exercise  # noqa: F401  (the course table, re-exported)
from bertlab.files import write_text

from .ablation import CPU_HOURS, METRICS, PLAN_FIELDS, check_ablation_plan  # noqa: F401
from .attention import check_attention, check_heads
from .encoder_layer import check_encoder_layer, check_param_count
from .framework import (  # noqa: F401  (the framework's public names, re-exported)
    NOT_RUN,
    PASS_MARK,
    RESULTS,
    CheckResult,
    ExerciseFailure,
    PartResult,
    Parts,
    attempt,
    bert_tokenizer,
    call_student,
    expect_same,
    expect_tensor,
    fail_check,
    gradients_of,
    grading,
    observe_student,
    outcome,
    parameters_of,
    recording,
    report_pass,
    sentence_documents,
    shape_hint,
    squad_dev_examples,
    student_fn_name,
)
from .pretraining_data import check_masking, check_nsp
from .replay import NotReplayable, Placeholder, Recorder, Replayer
from .tasks_and_heads import check_head_probe, check_ner_labels
from .tokens_and_positions import check_sinusoids, check_wordpiece
from .training import check_finetune_loop, check_pretraining_step
from .using_bert import (
    STRATEGIES,  # noqa: F401
    check_features,
    check_span,
)

# ------------------------------------------------------------------------------------------------
# One entry point
# ------------------------------------------------------------------------------------------------
CHECKS: dict[str, Callable] = {
    "attention": check_attention,
    "heads": check_heads,
    "sinusoids": check_sinusoids,
    "wordpiece": check_wordpiece,
    "masking": check_masking,
    "nsp": check_nsp,
    "span": check_span,
    "features": check_features,
    "encoder_layer": check_encoder_layer,
    "param_count": check_param_count,
    "pretraining_step": check_pretraining_step,
    "finetune_loop": check_finetune_loop,
    "ner_labels": check_ner_labels,
    "head_probe": check_head_probe,
    "ablation_plan": check_ablation_plan,
}


def check(name: str, *functions: Callable) -> None:
    """check("attention", attention); check("heads", split_heads, merge_heads); ..."""
    __tracebackhide__ = True
    if name not in CHECKS:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(CHECKS)}")
    CHECKS[name](*functions)


# ------------------------------------------------------------------------------------------------
# Grading: what the grader runs inside the kernel of a submitted notebook (see bertlab.course.grading)
# ------------------------------------------------------------------------------------------------
ALLOCATION_FAILED = ("can't allocate memory", "out of memory", "cannot allocate memory", "std::bad_alloc")


@contextlib.contextmanager
def memory_limit(megabytes: int | None):
    """Let this process allocate at most `megabytes` more address space while the block runs
    (RLIMIT_AS, on Linux; elsewhere, or with None, no limit). An allocation past it fails inside
    the block (MemoryError, or torch's "can't allocate memory"); the old limit is back after it."""
    try:
        import resource
    except ImportError:  # not POSIX: no limit
        yield
        return
    if megabytes is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
    except OSError:  # not Linux: no reliable measure of what is in use
        yield
        return
    limit = used + megabytes * 2**20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def grade_in_kernel(
    name: str,
    functions: Sequence[str],
    namespace: dict[str, Any],
    out: str,
    memory_mb: int | None = None,
    record: str | None = None,
) -> None:
    """Run check `name` on the functions called `functions` in `namespace` (the notebook's
    globals) and write its result, part by part, as JSON to `out`. Prints nothing the grader
    reads; a crash of the check is recorded as its error. With `memory_mb`, the check may
    allocate at most that much (`memory_limit`): an exercise that allocates past it scores 0,
    with a message that says so. With `record` (a path without suffix), every call of the
    student's functions, and every observation a check makes of the student's objects
    (`observe_student`), is written down there (bertlab.exercises.replay) for `replay_check` to
    judge in a clean process; the kernel's own parts are written as well, but the grader takes
    points only from the replay (bertlab.course.grading)."""
    import json

    RESULTS.pop(name, None)
    data: dict[str, Any] = {"exercise": name, "error": "", "parts": []}
    missing = [f for f in functions if not callable(namespace.get(f))]
    if missing:
        data["error"] = (
            f"[{name}] not defined: {', '.join(missing)} (was its cell deleted, renamed, or did it fail to run?)"
        )
        data["parts"] = [{"name": "functions defined", "passed": False, "message": data["error"]}]
    else:
        recorder = Recorder({id(namespace[f]): f for f in functions}) if record else None
        try:
            with memory_limit(memory_mb), grading(True), recording(recorder):  # hidden cases run too
                CHECKS[name](*[namespace[f] for f in functions])
        except ExerciseFailure:
            pass
        except Exception as err:  # the check stopped before it finished its parts (MemoryError too)
            data["error"] = f"[{name}] the check stopped: {type(err).__name__}: {err}"[:500]
        result = RESULTS.get(name)
        if result is not None:
            data["parts"] = [dataclasses.asdict(p) for p in result.parts]
        elif not data["error"]:
            data["error"] = f"[{name}] the check recorded no result"
        said = " ".join([data["error"], *(p["message"] for p in data["parts"])]).lower()
        if memory_mb is not None and ("memoryerror" in said or any(s in said for s in ALLOCATION_FAILED)):
            data["error"] = (
                f"[{name}] used more memory than the exercise allows ({memory_mb:,} MB): it scores 0. Look "
                "for a tensor far larger than the inputs (an outer product of the whole batch, say)."
            )
            data["parts"] = []
        if recorder is not None:
            if recorder.unreplayable is None:
                recorder.save(record)
                data["record"] = record
            else:
                data["unreplayable"] = recorder.unreplayable
    write_text(out, json.dumps(data), fsync=False)


def replay_check(name: str, functions: Sequence[str], record: str) -> dict[str, Any]:
    """Judge check `name` in this process from a kernel's record (bertlab.exercises.replay): every
    input is built here, every answer of the student's functions is read from the record, every
    comparison runs here. Returns {"parts": [...], "error": ...}, or {"unreplayable": why} when the
    check calls something the record cannot answer."""
    RESULTS.pop(name, None)
    data: dict[str, Any] = {"exercise": name, "error": "", "parts": []}
    try:
        replayer = Replayer(record)
    except (OSError, ValueError, KeyError) as err:
        data["error"] = f"[{name}] the notebook's record is unreadable ({type(err).__name__}: {err})"[:500]
        return data
    try:
        with grading(True), recording(replayer=replayer):
            CHECKS[name](*[Placeholder(f) for f in functions])
    except ExerciseFailure:
        pass
    except NotReplayable as err:
        return {"exercise": name, "unreplayable": str(err)}
    except Exception as err:
        data["error"] = f"[{name}] the check stopped: {type(err).__name__}: {err}"[:500]
    result = RESULTS.get(name)
    if result is not None:
        data["parts"] = [dataclasses.asdict(p) for p in result.parts]
    elif not data["error"]:
        data["error"] = f"[{name}] the check recorded no result"
    return data


_PART_CACHE: dict[tuple, CheckResult] = {}


def require_part(name: str, index: int, *functions: Callable) -> None:
    """Raise an AssertionError unless part `index` of check `name` passes for `functions`. The
    check runs once per set of functions; the other parts reuse its result. This is the bridge to
    autograders that give points per test case (otter-grader's exception-based tests, nbgrader's
    test cells): one test case per part gives bertlab's partial credit there too."""
    key = (name, *map(id, functions))
    if key not in _PART_CACHE:
        if name not in CHECKS:
            raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(CHECKS)}")
        RESULTS.pop(name, None)
        try:
            with grading(True):  # an autograder's test counts hidden cases too
                CHECKS[name](*functions)
        except ExerciseFailure:
            pass
        _PART_CACHE[key] = RESULTS.get(name, CheckResult(name))
    parts = _PART_CACHE[key].parts
    if not 0 <= index < len(parts):
        raise AssertionError(f"[{name}] the check has {len(parts)} parts, not {index + 1}")
    if not parts[index].passed:
        raise AssertionError(f"[{name}] {parts[index].name}: {parts[index].message}")


def grade(folder: str, out: str | None = None, timeout: int | None = None) -> list:
    """Grade every notebook in `folder` in fresh kernels: see bertlab.course.grading.grade_folder."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.course.grading import grade_folder

    return grade_folder(folder, out, timeout)


def main(argv: Sequence[str] | None = None) -> None:
    import json
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["replay"] and len(argv) >= 4:
        # python -m bertlab.exercises replay NAME RECORD OUT FUNCTION... : the grader's clean process
        name, record, out, functions = argv[1], argv[2], argv[3], argv[4:]
        write_text(out, json.dumps(replay_check(name, functions, record)), fsync=False)
        return
    if not argv or argv[0] != "grade":
        print(
            "usage: python -m bertlab.exercises grade <folder> [--timeout S] [--assignment NAME] [--out CSV]",
            file=sys.stderr,
        )
        raise SystemExit(2)
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.course.grading import main as grading_main

    grading_main(argv[1:])
