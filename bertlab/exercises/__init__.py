"""Checks for the exercises: a student runs them in the notebook, no grading server needed.

    from bertlab.exercises import check
    check("attention", attention)             # or check_attention(attention)

Each check calls the student's function on several inputs (real text and weights, edge cases) and
compares with bertlab's own implementation, part by part (partial credit: `RESULTS[name]`). It
prints what was checked, or raises `ExerciseFailure` (an AssertionError, so an auto-grader counts
it) saying which input went wrong and the usual cause. The checks of each assignment are a module
here; framework.py holds what they share, and replay.py lets the grader judge a check outside the
student's process. The course table (points, time, hardware) is the grader's, grader.course.

The grader of submitted notebooks (`python -m grader <folder>`, grader/ at the root of a checkout,
not installed; book/instructor.md) runs `grade_in_kernel` in each notebook's kernel and judges the
record in a clean process, `python -m bertlab.exercises replay ...` (`replay_check`).
"""

from __future__ import annotations

# The package's own modules are imported relatively: the grader loads a private copy of the whole
# package under another name (grader.grading), and relative imports keep that copy whole.
import contextlib
import dataclasses
from typing import Any, Callable, Sequence

from bertlab.files import write_text

from .ablation import CPU_HOURS, METRICS, PLAN_FIELDS, check_ablation_plan  # noqa: F401
from .attention import check_attention, check_heads
from .encoder_layer import check_encoder_layer, check_param_count
from .framework import RESULTS, CheckResult, ExerciseFailure, grading, recording
from .pretraining_data import check_masking, check_nsp
from .replay import NotReplayable, Placeholder, Recorder, Replayer
from .tasks_and_heads import check_head_probe, check_ner_labels
from .tokens_and_positions import check_sinusoids, check_wordpiece
from .training import check_finetune_loop, check_pretraining_step
from .using_bert import STRATEGIES, check_features, check_span  # noqa: F401

CHECKS: dict[str, Callable] = {  # each exercise's check, and the chapter it follows
    "attention": check_attention,  # 4: scaled dot-product attention with a padding mask
    "heads": check_heads,  # 5: split_heads / merge_heads, (B, T, H) <-> (B, A, T, d)
    "sinusoids": check_sinusoids,  # 3: sinusoidal position encodings
    "wordpiece": check_wordpiece,  # 2: greedy longest-match-first WordPiece of one word
    "masking": check_masking,  # 8: MLM 15% selection, 80/10/10 corruption
    "nsp": check_nsp,  # 9: IsNext / NotNext sentence pairs from documents
    "span": check_span,  # 13: SQuAD best-span decoding (section 4.2 of the paper)
    "features": check_features,  # 15: the feature-based layer combinations (section 5.3)
    "encoder_layer": check_encoder_layer,  # 6: a post-LN encoder layer
    "param_count": check_param_count,  # 7: BERT's parameter count in closed form
    "pretraining_step": check_pretraining_step,  # 10: MLM + NSP loss, clipping, the AdamW step
    "finetune_loop": check_finetune_loop,  # 11: a fine-tuning loop with warm-up, and its accuracy
    "ner_labels": check_ner_labels,  # 14: word labels onto first pieces, predictions back
    "head_probe": check_head_probe,  # 16: find heads by where they attend
    "ablation_plan": check_ablation_plan,  # 17: the form of an ablation's plan
}


def check(name: str, *functions: Callable) -> None:
    """check("attention", attention); check("heads", split_heads, merge_heads); ..."""
    __tracebackhide__ = True
    if name not in CHECKS:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(CHECKS)}")
    CHECKS[name](*functions)


# Grading: what the grader runs in a submitted notebook's kernel, and in a clean process after it
ALLOCATION_FAILED = ("can't allocate memory", "out of memory", "cannot allocate memory", "std::bad_alloc")


@contextlib.contextmanager
def memory_limit(megabytes: int | None):
    """Let this process allocate at most `megabytes` more address space inside the block (RLIMIT_AS,
    on Linux; elsewhere, or with None, no limit)."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError):  # not Linux: no reliable measure of what is in use
        used = None
    if megabytes is None or used is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
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
    globals) and write its parts as JSON to `out`. Past `memory_mb` the exercise scores 0. With
    `record` (a path without suffix), the student's answers are written there for `replay_check`:
    the grader takes points only from the replay."""
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
        _run_check(name, [namespace[f] for f in functions], data, memory_mb, recorder=recorder)
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
    """Judge check `name` in this process from a kernel's record: the inputs and comparisons run
    here, the student's answers come from the record. Returns {"parts": [...], "error": ...}, or
    {"unreplayable": why}."""
    RESULTS.pop(name, None)
    data: dict[str, Any] = {"exercise": name, "error": "", "parts": []}
    try:
        replayer = Replayer(record)
    except (OSError, ValueError, KeyError) as err:
        data["error"] = f"[{name}] the notebook's record is unreadable ({type(err).__name__}: {err})"[:500]
        return data
    try:
        _run_check(name, [Placeholder(f) for f in functions], data, replayer=replayer)
    except NotReplayable as err:
        return {"exercise": name, "unreplayable": str(err)}
    return data


def _run_check(name: str, functions: list, data: dict[str, Any], memory_mb: int | None = None, **record) -> None:
    """Run check `name` as the grader does (hidden cases too), its parts, or why it stopped, into `data`."""
    try:
        with memory_limit(memory_mb), grading(True), recording(**record):
            CHECKS[name](*functions)
    except ExerciseFailure:
        pass
    except Exception as err:  # the check stopped before it finished its parts (MemoryError too)
        data["error"] = f"[{name}] the check stopped: {type(err).__name__}: {err}"[:500]
    result = RESULTS.get(name)
    if result is not None:
        data["parts"] = [dataclasses.asdict(p) for p in result.parts]
    elif not data["error"]:
        data["error"] = f"[{name}] the check recorded no result"


_PART_CACHE: dict[tuple, CheckResult] = {}


def require_part(name: str, index: int, *functions: Callable) -> None:
    """Raise an AssertionError unless part `index` of check `name` passes for `functions` (the
    check runs once per set of functions). One test case per part gives per-test-case autograders
    (otter-grader, nbgrader) bertlab's partial credit."""
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


def main(argv: Sequence[str] | None = None) -> None:
    import json
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["replay"] and len(argv) >= 4:
        # python -m bertlab.exercises replay NAME RECORD OUT FUNCTION... : the grader's clean process
        name, record, out, functions = argv[1], argv[2], argv[3], argv[4:]
        write_text(out, json.dumps(replay_check(name, functions, record)), fsync=False)
        return
    if argv[:1] == ["grade"]:  # the grader left the package: say where it is, with the same arguments
        import shlex

        command = shlex.join(["python", "-m", "grader", *argv[1:]]) if argv[1:] else "python -m grader <folder>"
        print(
            "the grader is an instructors' tool beside the book now: from the root of a checkout of the bertlab "
            f"repository run `{command}` (book/instructor.md)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    print(
        "usage: python -m bertlab.exercises replay NAME RECORD OUT FUNCTION... (the grader's clean process)",
        file=sys.stderr,
    )
    raise SystemExit(2)
