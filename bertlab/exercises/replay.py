"""Verdicts outside the student's process: a check recorded in the student's kernel, replayed in
a clean one.

The kernel that ran the student's notebook may have patched torch, numpy or bertlab, so it only
records: each call of a student's function is fingerprinted by its inputs (`call_key`) and its
answer written down as data (`Recorder`: JSON, tensors in safetensors, nothing pickled). A fresh
process then replays the check: it builds every input itself, takes each answer from the record
by its fingerprint, and runs every comparison with untouched libraries. Patched inputs find no
recorded answer, and fail. A returned value that is not plain data is kept as the name of its
type (`Opaque`); a check whose arguments cannot be fingerprinted is `NotReplayable` and scores
nothing. Arguments the student changes in place (a generator, a tensor) are put back in their
state after the call, so later calls see the same inputs in both runs.
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
    """A value a check passes or records that is not plain data. A BaseException, so that no part
    of a check mistakes it for the student's failure."""


class Opaque:
    """What the replay sees of a value that was not plain data: an object whose type has the same
    name, so that a message ("expected a torch.Tensor, got Foo") reads the same in both runs."""


def opaque(type_name: str) -> Opaque:
    return type(str(type_name)[:100], (Opaque,), {})()


# Fingerprints of arguments
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


# Values as data: JSON for the structure, safetensors for the tensors
def encode(obj: Any, tensors: dict[str, torch.Tensor], lenient: bool = False) -> Any:
    """`obj` as JSON-able data, its tensors moved into `tensors`. What is not plain data raises
    NotReplayable, or with `lenient` (the student's answers) becomes an `Opaque`."""
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
    """`obj` as the replay will see it (encoded, then decoded)."""
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


# Recording in the kernel, replaying in a clean process
class Recorder:
    """The calls of one check in the student's kernel. `roles` maps each student function's id to
    its name in the exercise, the name calls are keyed by; `unreplayable` says why the check
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
        """This call's entry ({"result": value} or {"raised": message}), the arguments put back in
        their state after it; None if the kernel made no such call."""
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
    """What a replayed check gets instead of the student's function: only its name. Called
    directly (not through call_student), it makes the check unreplayable."""

    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotReplayable(f"{self.__name__} was called outside call_student")
