"""What every check shares: parts that pass or fail on their own (partial credit, `RESULTS`),
calling the student's code, comparing tensors with hints at known mistakes, and the real data.

The student's code is reached only through `call_student` (a call on plain data) or
`observe_student` (a piece of the check that drives the student's objects and returns what it
saw as data). Everything after that runs on data, so the grader can replay the check in a clean
process (bertlab.exercises.replay).
"""

from __future__ import annotations

import contextlib
import functools
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn, Sequence

import torch

from .replay import Recorder, Replayer, as_data, call_key

PASS_MARK = "\u2713 [{name}]"  # printed on success, for the student (the grader never reads it)


class ExerciseFailure(AssertionError):
    """A check failed: the message names the exercise, the input and what is wrong; `result` is
    the CheckResult when the whole check ran."""

    def __init__(self, name: str, message: str, result: "CheckResult | None" = None):
        self.exercise = name
        self.detail = message
        self.result = result
        super().__init__(f"[{name}] {message}")


@dataclass
class PartResult:
    """One part of a check; a hidden one is run by the grader only."""

    name: str
    passed: bool
    message: str = ""
    hidden: bool = False


@dataclass
class CheckResult:
    """The outcome of one check, part by part; `fraction` is the share of parts passed."""

    exercise: str
    parts: list[PartResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.parts) and all(p.passed for p in self.parts)

    @property
    def fraction(self) -> float:
        return sum(p.passed for p in self.parts) / len(self.parts) if self.parts else 0.0


RESULTS: dict[str, CheckResult] = {}  # the latest result of each check run in this process


GRADING = [False]  # True while the grader runs the checks: hidden cases run too


@contextlib.contextmanager
def grading(on: bool = True):
    """Run the checks as the grader does (hidden cases included) inside the block."""
    before, GRADING[0] = GRADING[0], on
    try:
        yield
    finally:
        GRADING[0] = before


class Parts:
    """`with parts("case 0"): ...` runs one part: an ExerciseFailure inside (`parts.fail(message)`)
    marks it failed and the check goes on. `parts.done(summary)` records the CheckResult, then
    prints the confirmation or raises the first failure. `with parts("case 5", hidden=True) as
    run: if run: ...` runs only when grading."""

    def __init__(self, name: str):
        self.name = name
        self.result = CheckResult(name)

    @contextlib.contextmanager
    def __call__(self, label: str, hidden: bool = False):
        __tracebackhide__ = True
        if hidden and not GRADING[0]:
            yield False  # the student's own check: the case is not run and not counted
            return
        try:
            yield True
        except ExerciseFailure as err:
            self.result.parts.append(PartResult(label, False, err.detail, hidden))
        except Exception as err:
            if all(p.passed for p in self.result.parts):
                raise
            # it needed what an earlier part lacked
            message = f"not checked: an earlier part failed ({type(err).__name__}: {err})"[:300]
            self.result.parts.append(PartResult(label, False, message, hidden))
        else:
            self.result.parts.append(PartResult(label, True, "", hidden))

    def fail(self, message: str) -> NoReturn:
        """Fail the current part with `message`."""
        raise ExerciseFailure(self.name, message)

    def done(self, summary: str) -> None:
        __tracebackhide__ = True
        RESULTS[self.name] = self.result
        failed = [p for p in self.result.parts if not p.passed]
        if failed:
            n_ok = len(self.result.parts) - len(failed)
            tally = f"\n({n_ok} of {len(self.result.parts)} parts of this check passed)" if n_ok else ""
            raise ExerciseFailure(self.name, failed[0].message + tally, self.result)
        text = textwrap.fill(summary, width=84, initial_indent="  ", subsequent_indent="  ")
        print(f"{PASS_MARK.format(name=self.name)} passed:\n{text}")


# The grader's two modes: in the student's kernel a Recorder writes down every call of the
# student's functions; in a clean process a Replayer answers them.
ACTIVE: dict[str, Any] = {"recorder": None, "replayer": None}


@contextlib.contextmanager
def recording(recorder: Recorder | None = None, replayer: Replayer | None = None):
    """Inside the block, call_student records its calls, or answers them from a record."""
    before = dict(ACTIVE)
    ACTIVE.update(recorder=recorder, replayer=replayer)
    try:
        yield
    finally:
        ACTIVE.update(before)


def call_student(name: str, fn: Callable, *args, **kwargs):
    """Call the student's function; a stub or a crash becomes an ExerciseFailure. While the grader
    records or replays, the call is written down, or answered from the record."""
    __tracebackhide__ = True

    def call():
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            fname = student_fn_name(fn)
            message = f"not implemented yet: replace the `raise NotImplementedError` in {fname} with your code"
            raise ExerciseFailure(name, message) from None
        except ExerciseFailure:
            raise
        except Exception as err:
            raise ExerciseFailure(name, f"{student_fn_name(fn)} raised {type(err).__name__}: {err}") from err

    return _answer(name, fn, args, kwargs, args, "this call", call)


OBSERVED = "observed by the check"  # what tells observe_student's records from call_student's


def observe_student(name: str, fn: Callable, inputs: Any, drive: Callable[[], Any]) -> Any:
    """What `drive()` observed of the student's code `fn`, as plain data (outputs, parameters,
    gradients, losses). `drive` works objects that are not data (the student's class, a model it
    trains); `inputs`, everything the run depends on as data, keys the record. In a replay `drive`
    does not run: the observation comes from the record. A failure inside it is an ExerciseFailure."""
    __tracebackhide__ = True

    def observe():
        try:
            with recording():  # the calls inside are the drive's own: recorded as its observation only
                return as_data(drive())
        except ExerciseFailure:
            raise
        except Exception as err:  # the check could not work with what the student's code made
            raise ExerciseFailure(name, f"using {student_fn_name(fn)}: {type(err).__name__}: {err}"[:500]) from err

    return _answer(name, fn, (OBSERVED, inputs), {}, (), "this run of the check", observe)


def _answer(name: str, fn: Callable, key_args: tuple, kwargs: dict, args: tuple, what: str, run: Callable) -> Any:
    """`run()`, the answer of the student's `fn`, keyed by `key_args` and `kwargs`: written down while the
    grader records (with `args` as the call left them); while it replays, read from the record instead."""
    __tracebackhide__ = True
    fname = student_fn_name(fn)
    replayer, recorder = ACTIVE["replayer"], ACTIVE["recorder"]
    if replayer is not None:
        entry = replayer.answer(call_key(fname, key_args, kwargs), args)
        if entry is None:  # the check's inputs differ from those the notebook's run was given
            raise ExerciseFailure(
                name,
                f"{fname}: the notebook's run holds no answer for {what} (the inputs it was given there "
                "differ from the check's)",
            )
        if "raised" in entry:
            raise ExerciseFailure(name, entry["raised"])
        return entry["result"]
    key = recorder.key(fn, key_args, kwargs) if recorder is not None else None  # before the call changes args
    try:
        result = run()
    except ExerciseFailure as err:
        if recorder is not None:
            recorder.add(key, args, raised=err.detail)
        raise
    if recorder is not None:
        recorder.add(key, args, result=result)
    return result


def attempt(name: str, fn: Callable, *args, **kwargs) -> dict[str, Any]:
    """call_student, its failure kept as data: {"result": value} or {"raised": message}, so that a
    drive can observe more after the call."""
    try:
        return {"result": call_student(name, fn, *args, **kwargs)}
    except ExerciseFailure as err:
        return {"raised": err.detail}


def outcome(name: str, attempted: dict[str, Any]) -> Any:
    """The result of an `attempt`, or its failure raised again."""
    __tracebackhide__ = True
    if "raised" in attempted:
        raise ExerciseFailure(name, str(attempted["raised"]))
    return attempted["result"]


def parameters_of(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A model's parameters, by name, as data (copies, detached)."""
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def gradients_of(model: torch.nn.Module) -> dict[str, torch.Tensor | None]:
    """A model's gradients, by parameter name (None where a parameter holds none), as data."""
    return {n: None if p.grad is None else p.grad.detach().clone() for n, p in model.named_parameters()}


def student_fn_name(fn: Any) -> str:
    """The name to show for what the student wrote: a function, a class, or a module's forward."""
    if hasattr(fn, "__name__"):
        return fn.__name__
    if isinstance(fn, torch.nn.Module):
        return f"{type(fn).__name__}.forward"
    return "your function"


def shape_hint(expected: tuple, got: tuple) -> str:
    if len(expected) == len(got) and sorted(expected) == sorted(got):
        diff = [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]
        return f": axes {diff} are in the wrong order (a transpose missing or applied to the wrong axes?)"
    return ""


def padding_mask(T: int, pads: Sequence[int] | None) -> torch.Tensor | None:
    """(len(pads), T) bool, True = real token, the last pads[b] positions of row b padding; None for None."""
    return None if pads is None else torch.arange(T)[None, :] < T - torch.tensor(pads)[:, None]


def expect_tensor(name: str, value: Any, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise ExerciseFailure(name, f"{what}: expected a torch.Tensor, got {type(value).__name__}")
    return value


def expect_same(
    name: str,
    got: torch.Tensor,
    expected: torch.Tensor,
    what: str,
    atol: float = 1e-5,
    hints: Sequence[tuple[torch.Tensor, str]] = (),
) -> None:
    """got == expected, shape then values; a mismatch names the first wrong entry and the known
    mistake it matches (hints: (that mistake's result, why))."""
    got = expect_tensor(name, got, what)
    if tuple(got.shape) != tuple(expected.shape):
        raise ExerciseFailure(
            name,
            f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
            f"{shape_hint(tuple(expected.shape), tuple(got.shape))}",
        )
    got_f, exp_f = got.detach().double(), expected.detach().double()
    if torch.allclose(got_f, exp_f, atol=atol, rtol=1e-4):
        return
    for wrong, why in hints:
        if wrong.shape == got.shape and torch.allclose(got_f, wrong.detach().double(), atol=atol, rtol=1e-4):
            raise ExerciseFailure(name, f"{what}: wrong values; {why}")
    bad = ((got_f - exp_f).abs() > atol + 1e-4 * exp_f.abs()).nonzero()
    idx = tuple(bad[0].tolist())
    raise ExerciseFailure(
        name,
        f"{what}: {len(bad)} of {got.numel()} values differ; first at index {idx}: "
        f"expected {exp_f[idx].item():.6g}, got {got_f[idx].item():.6g}",
    )


# Real data shared by the checks (loaded once, from the data mirror or downloaded on Colab)
@functools.lru_cache(maxsize=1)
def bert_tokenizer():
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.data.tokenizer import bert_uncased_tokenizer

    return bert_uncased_tokenizer()


@functools.lru_cache(maxsize=1)
def squad_dev_examples():
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks import get_task

    return get_task("squad").load("dev")


@functools.lru_cache(maxsize=1)
def sentence_documents() -> list[list[str]]:
    """Documents of real sentences: the SQuAD dev paragraphs of each Wikipedia article."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.data.corpus import split_sentences

    docs: dict[str, list[str]] = {}
    seen: set[str] = set()
    for ex in squad_dev_examples():
        if ex.context in seen:
            continue
        seen.add(ex.context)
        docs.setdefault(ex.title, []).extend(split_sentences(ex.context))
    return [d for d in docs.values() if len(d) >= 2]
