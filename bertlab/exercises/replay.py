"""Verdicts outside the student's process: a check recorded in the student's kernel, replayed in
a clean one.

The grader cannot trust anything computed in the kernel that ran the student's notebook: the
notebook may have patched torch, numpy or bertlab there. So the kernel only *records*: each time
a check calls one of the student's functions (`framework.call_student`), the call's inputs are
fingerprinted (`call_key`: the function's name and a sha256 of the arguments' values) and what it
returned, or the failure it raised, is written down, tensors with safetensors and everything else
as JSON (`Recorder.save`). Then a fresh Python process, which never ran the student's code,
*replays* the same check (`python -m bertlab.exercises replay`): it builds every input itself,
and where the check would call the student's function it looks the call up by its fingerprint
and takes the recorded answer; every comparison runs there, with untouched libraries. Patching
torch inside the notebook can then only change the student's own answers (or the inputs the
kernel fingerprinted, after which no recorded answer matches the honest inputs and that part
fails).

Where the student's code works on objects that are not data (the student's nn.Module class, a
model and an optimizer that a training step updates), the check drives it inside
`framework.observe_student`: keyed by the plain inputs that the run depends on (sizes, seeds, the
state_dict the check loads, the batches), it records what the check observed as data (outputs,
parameters before and after, gradients, losses, learning rates), and the replay takes that
observation from the record instead of running anything. A value the student's code returns
that is not plain data is recorded as the name of its type (`Opaque`), so that it fails the
replayed comparison like any wrong answer.

What a record holds is data only: nothing is unpickled, and a record that does not parse is a
failed exercise. A check whose own arguments cannot be fingerprinted cannot be recorded
(`NotReplayable`); the grader then gives no points for it (the kernel's verdict is never trusted)
and says why in the report.

Arguments that the student's function changes in place (a random generator it draws from, a
tensor it edits) are recorded as they were after the call and put back in that state in the
replay, so that later calls see the same inputs in both runs.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMAT = "bertlab-exercise-record/1"


class NotReplayable(BaseException):
    """A value a check passes to the student's function, or records, that is not plain data. A
    BaseException, so that no part of a check mistakes it for the student's failure."""


class Opaque:
    """What the replay sees of a value that was not plain data (an object of the student's own
    class, a module): only the name of its type. `opaque(name)` makes one whose type has that
    name, so that a check's message ("expected a torch.Tensor, got Foo") reads the same in the
    kernel and in the replay."""


def opaque(type_name: str) -> Opaque:
    return type(str(type_name)[:100], (Opaque,), {})()


# ------------------------------------------------------------------------------------------------
# Fingerprints of arguments
# ------------------------------------------------------------------------------------------------
def _feed(h, obj: Any) -> None:
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        t = t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)
        h.update(t.contiguous().numpy().tobytes())
    elif isinstance(obj, np.ndarray):
        _feed(h, torch.from_numpy(np.ascontiguousarray(obj)))
    elif isinstance(obj, torch.Generator):
        h.update(b"G")
        _feed(h, obj.get_state())
    elif isinstance(obj, random.Random):
        h.update(b"R" + repr(obj.getstate()).encode())
    elif obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}".encode())
        for x in obj:
            _feed(h, x)
        h.update(b"]")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k)
            _feed(h, obj[k])
        h.update(b"]")
    elif isinstance(obj, (set, frozenset)):
        h.update(f"set[{len(obj)}".encode())
        for x in sorted(obj, key=repr):
            _feed(h, x)
        h.update(b"]")
    else:
        raise NotReplayable(f"cannot fingerprint an argument of type {type(obj).__name__}")


def call_key(fn_name: str, args: tuple, kwargs: dict) -> str:
    """The fingerprint of one call: the function's name and the values of its arguments."""
    h = hashlib.sha256(fn_name.encode())
    _feed(h, list(args))
    _feed(h, dict(kwargs))
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------
# Values as data: JSON for the structure, safetensors for the tensors
# ------------------------------------------------------------------------------------------------
def encode(obj: Any, tensors: dict[str, torch.Tensor], lenient: bool = False) -> Any:
    """`obj` as JSON-able data, its tensors moved into `tensors` (referenced by key). A value that
    is not plain data raises NotReplayable, or with `lenient` (what the student's code returned)
    is kept as the name of its type (`Opaque`)."""
    if isinstance(obj, Opaque):
        return {"__opaque__": type(obj).__name__}
    if isinstance(obj, torch.Tensor):
        key = f"t{len(tensors)}"  # unique in `tensors`, which only grows
        tensors[key] = obj.detach().cpu().contiguous().clone()
        return {"__tensor__": key}
    if isinstance(obj, np.ndarray):
        return encode(torch.from_numpy(np.ascontiguousarray(obj)), tensors, lenient)
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return {"__float__": repr(obj)}  # nan and inf survive
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(x, tensors, lenient) for x in obj]}
    if isinstance(obj, list):
        return [encode(x, tensors, lenient) for x in obj]
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        return {"__dict__": {k: encode(v, tensors, lenient) for k, v in obj.items()}}
    if lenient:
        return {"__opaque__": type(obj).__name__}
    raise NotReplayable(f"cannot record a value of type {type(obj).__name__}")


def decode(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(obj, list):
        return [decode(x, tensors) for x in obj]
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]].clone()
        if "__float__" in obj:
            return float(obj["__float__"])
        if "__tuple__" in obj:
            return tuple(decode(x, tensors) for x in obj["__tuple__"])
        if "__dict__" in obj:
            return {k: decode(v, tensors) for k, v in obj["__dict__"].items()}
        if "__opaque__" in obj:
            return opaque(obj["__opaque__"])
        raise ValueError(f"unknown record entry {sorted(obj)}")
    return obj


def as_data(obj: Any) -> Any:
    """`obj` as the replay will see it: tensors detached and copied, what is not plain data
    replaced by an `Opaque` of its type (encode, then decode)."""
    tensors: dict[str, torch.Tensor] = {}
    return decode(encode(obj, tensors, lenient=True), tensors)


def _state_of(arg: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """What can change in place about an argument (None: nothing that the replay must restore)."""
    if isinstance(arg, torch.Generator):
        return {"generator": encode(arg.get_state(), tensors)}
    if isinstance(arg, random.Random):
        version, internal, gauss = arg.getstate()
        return {"random": list(internal), "version": version, "gauss": encode(gauss, tensors)}
    if isinstance(arg, torch.Tensor):
        return {"tensor": encode(arg, tensors)}
    return None


def _restore(arg: Any, state: dict, tensors: dict[str, torch.Tensor]) -> None:
    if "generator" in state and isinstance(arg, torch.Generator):
        arg.set_state(decode(state["generator"], tensors))
    elif "random" in state and isinstance(arg, random.Random):
        arg.setstate((state["version"], tuple(state["random"]), decode(state["gauss"], tensors)))
    elif "tensor" in state and isinstance(arg, torch.Tensor):
        value = decode(state["tensor"], tensors)
        if value.shape == arg.shape:
            with torch.no_grad():
                arg.copy_(value)


# ------------------------------------------------------------------------------------------------
# Recording in the kernel, replaying in a clean process
# ------------------------------------------------------------------------------------------------
class Recorder:
    """The calls of one check, as the student's kernel saw them. `roles` maps each of the
    student's functions (by id) to its name in the exercise, which is what a call is keyed by
    (the replay knows the functions only by those names). `unreplayable` says why the check
    cannot be replayed, once something could not be recorded."""

    def __init__(self, roles: dict[int, str] | None = None) -> None:
        self.roles = roles or {}
        self.calls: dict[str, dict[str, Any]] = {}
        self.tensors: dict[str, torch.Tensor] = {}
        self.unreplayable: str | None = None

    def key(self, fn: Any, args: tuple, kwargs: dict) -> str | None:
        """The call's fingerprint, or None (and the check marked unreplayable) if it has none."""
        if self.unreplayable:
            return None
        role = self.roles.get(id(fn))
        if role is None:
            self.unreplayable = (
                f"a call of {getattr(fn, '__name__', type(fn).__name__)}, not one of the exercise's functions"
            )
            return None
        try:
            return call_key(role, args, kwargs)
        except NotReplayable as err:
            self.unreplayable = str(err)
            return None

    def add(self, key: str | None, args: tuple, result: Any = None, raised: str | None = None) -> None:
        if key is None or self.unreplayable or key in self.calls:  # the same call again: the first answer stands
            return
        try:
            entry: dict[str, Any] = (
                {"raised": raised} if raised is not None else {"result": encode(result, self.tensors, lenient=True)}
            )
            states = {str(i): s for i, a in enumerate(args) if (s := _state_of(a, self.tensors)) is not None}
        except NotReplayable as err:
            self.unreplayable = str(err)
            return
        if states:
            entry["after"] = states
        self.calls[key] = entry

    def save(self, path: str | Path) -> None:
        """<path>.json (the calls) and <path>.safetensors (their tensors)."""
        from safetensors.torch import save_file

        path = Path(path)
        save_file(self.tensors, str(path.with_suffix(".safetensors")))
        path.with_suffix(".json").write_text(json.dumps({"format": FORMAT, "calls": self.calls}))


class Replayer:
    """A saved record, read back as data: answers looked up by their call's fingerprint."""

    def __init__(self, path: str | Path):
        from safetensors.torch import load_file

        path = Path(path)
        data = json.loads(path.with_suffix(".json").read_text())
        if data.get("format") != FORMAT or not isinstance(data.get("calls"), dict):
            raise ValueError(f"{path}: not an exercise record ({FORMAT})")
        self.calls = data["calls"]
        self.tensors = load_file(str(path.with_suffix(".safetensors")))

    def answer(self, key: str, args: tuple) -> dict[str, Any] | None:
        """The recorded entry of this call ({"result": value} or {"raised": message}), with the
        arguments put back in their state after the call; None if the kernel made no such call."""
        entry = self.calls.get(key)
        if entry is None:
            return None
        for i, state in entry.get("after", {}).items():
            if int(i) < len(args):
                _restore(args[int(i)], state, self.tensors)
        if "raised" in entry:
            return {"raised": str(entry["raised"])}
        return {"result": decode(entry["result"], self.tensors)}


class Placeholder:
    """What a replayed check gets instead of the student's function: only its name. Calling it
    directly (not through call_student or observe_student) means the check cannot be replayed."""

    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotReplayable(f"{self.__name__} was called outside call_student")
