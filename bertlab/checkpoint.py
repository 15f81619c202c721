"""Checkpoints: everything needed to continue a run exactly, and nothing that runs code on load.

A checkpoint is a folder, `<run>/checkpoints/step-0001234/`:

    model.safetensors    the weights (bertlab names), loadable on their own
    config.json          the BertConfig, so the folder is a model (`load_model(folder)`)
    tokenizer.json       the WordPiece vocabulary the model was trained with (when known)
    state.safetensors    every other tensor: AdamW moments, torch RNG states, ...
    state.json           every other value: step, elapsed time, learning-rate schedule position,
                         Python / NumPy RNG states, the data position, the run's settings

Nothing is pickled (`encode_state` turns Python objects into JSON plus a flat dict of tensors),
so loading a checkpoint can never execute code, unlike `torch.load` of a pickle.

Writes are atomic (bertlab.files): a crash leaves an ignored `.tmp-*` folder, never a half-written
`step-*` one. Pruning renames an old checkpoint out of the listing (`.del-*`) before deleting it.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from bertlab import model as models
from bertlab.config import BertConfig
from bertlab.files import fsync_dir, fsync_file, remove_debris, remove_dir, replace_dir

STEP_DIR = re.compile(r"^step-(\d+)$")


# --- Python objects <-> (JSON, tensors), without pickle -------------------------------------------
def encode_state(obj: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """Split a nested structure of dicts / lists / tuples / tensors / arrays / scalars into a JSON
    value and a flat {name: tensor} dict. Tensors are replaced by {"__tensor__": name}."""
    tensors: dict[str, torch.Tensor] = {}

    def encode(obj: Any, path: str) -> Any:
        if isinstance(obj, torch.Tensor):
            tensors[path] = obj.detach().to("cpu", copy=True).contiguous()
            return {"__tensor__": path}
        if isinstance(obj, np.ndarray):
            return {"__ndarray__": obj.tolist(), "dtype": str(obj.dtype)}
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, dict):
            if obj and all(isinstance(k, int) for k in obj):  # optimizer state is keyed by int
                return {"__intkeys__": {str(k): encode(v, f"{path}.{k}") for k, v in obj.items()}}
            if bad := [k for k in obj if not isinstance(k, str)]:
                raise TypeError(f"cannot store a dict key of type {type(bad[0]).__name__} at {path}")
            return {k: encode(v, f"{path}.{k}") for k, v in obj.items()}
        if isinstance(obj, tuple):
            return {"__tuple__": [encode(v, f"{path}.{i}") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [encode(v, f"{path}.{i}") for i, v in enumerate(obj)]
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        raise TypeError(
            f"cannot store a {type(obj).__name__} in a checkpoint (at {path}); "
            f"only tensors, arrays, numbers, strings, lists, tuples and dicts"
        )

    return encode(obj, "s"), tensors


def decode_state(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """The inverse of encode_state."""
    if isinstance(value, dict):
        if "__tensor__" in value:
            return tensors[value["__tensor__"]]
        if "__ndarray__" in value:
            return np.asarray(value["__ndarray__"], dtype=value["dtype"])
        if "__intkeys__" in value:
            return {int(k): decode_state(v, tensors) for k, v in value["__intkeys__"].items()}
        if "__tuple__" in value:
            return tuple(decode_state(v, tensors) for v in value["__tuple__"])
        return {k: decode_state(v, tensors) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_state(v, tensors) for v in value]
    return value


# --- Random number generators ---------------------------------------------------------------------
def rng_state() -> dict[str, Any]:
    """The state of every random generator a training step touches."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# --- Models as folders (weights + config) ---------------------------------------------------------
def unwrap(model: nn.Module) -> nn.Module:
    """The bare bertlab model inside DistributedDataParallel and/or torch.compile wrappers."""
    while True:
        if hasattr(model, "_orig_mod"):  # torch.compile
            model = model._orig_mod
        elif hasattr(model, "module") and isinstance(model, nn.parallel.DistributedDataParallel):
            model = model.module
        else:
            return model


def _write_model_files(folder: Path, model: nn.Module, dtype: torch.dtype | None, tokenizer_file: str | Path | None):
    """A fresh `folder` holding the model's weights, config.json and (when given) tokenizer.json."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    model = unwrap(model)
    sd = {
        k: v.detach().to("cpu", dtype=dtype if (dtype and v.is_floating_point()) else v.dtype).contiguous()
        for k, v in model.state_dict().items()
    }
    save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt", "bertlab_class": type(model).__name__})
    (folder / "config.json").write_text(json.dumps(model.config.to_dict(), indent=2) + "\n")
    if tokenizer_file is not None:
        shutil.copyfile(tokenizer_file, folder / "tokenizer.json")
    for path in folder.iterdir():
        fsync_file(path)


def save_model(
    folder: str | Path, model: nn.Module, dtype: torch.dtype | None = None, tokenizer_file: str | Path | None = None
) -> Path:
    """Save weights (safetensors; `dtype`, e.g. fp16, for a small download) and config.json, atomically."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".tmp-{folder.name}-{os.getpid()}")
    _write_model_files(tmp, model, dtype, tokenizer_file)
    replace_dir(tmp, folder)
    remove_debris(folder.parent, re.escape(folder.name))
    return folder


# Keys a checkpoint of one model class may lack or add relative to another (token heads have no pooler).
_HEADS = ("mlm.", "nsp.", "bert.pooler.", "classifier.", "qa.")


def load_model(folder: str | Path, model_cls: type[nn.Module] | None = None, **head_kwargs: Any) -> nn.Module:
    """Build `model_cls` (default: the class that saved it) from a model folder or checkpoint. A
    pretraining checkpoint loaded into a fine-tuning class drops the MLM/NSP heads and leaves the
    new task head at its initialisation; any other missing or unexpected weight is an error."""
    folder = Path(folder)
    if not (folder / "model.safetensors").exists() or not (folder / "config.json").exists():
        raise FileNotFoundError(
            f"{folder} is not a bertlab model folder (it needs model.safetensors and config.json); "
            f"pass a checkpoint folder such as <run>/checkpoints/step-N or <run>/final"
        )
    config = BertConfig.load(folder / "config.json")
    if model_cls is None:
        from safetensors import safe_open

        with safe_open(str(folder / "model.safetensors"), "pt") as f:
            name = (f.metadata() or {}).get("bertlab_class", "BertForPreTraining")
        model_cls = getattr(models, name)
    model = model_cls(config, **head_kwargs)
    sd = load_file(str(folder / "model.safetensors"))
    own = model.state_dict()
    sd = {k: v.to(own[k].dtype) if k in own else v for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    bad_missing = [k for k in missing if not k.startswith(_HEADS)]
    bad_unexpected = [k for k in unexpected if not k.startswith(_HEADS)]
    if bad_missing or bad_unexpected:
        raise ValueError(
            f"the weights in {folder} do not fit {model_cls.__name__}: missing "
            f"{bad_missing[:5]}, unexpected {bad_unexpected[:5]}"
        )
    return model


# --- Training checkpoints -------------------------------------------------------------------------
@dataclass
class Checkpoint:
    """What load_checkpoint returns: the folder, the model weights and every piece of state."""

    path: Path
    step: int
    model_state: dict[str, torch.Tensor]
    config: BertConfig
    state: dict[str, Any] = field(default_factory=dict)  # optimizer, rng, data, scaler, trainer, run


def save_checkpoint(
    ckpt_root: str | Path,
    step: int,
    model: nn.Module,
    state: dict[str, Any],
    tokenizer_file: str | Path | None = None,
    keep_last: int | None = None,
) -> Path:
    """Write `<ckpt_root>/step-<step>/` atomically and prune to the newest `keep_last`. `state` is
    any nested structure of tensors, arrays and scalars (optimizer, RNGs, data position, settings)."""
    root = Path(ckpt_root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:07d}"
    tmp = root / f".tmp-step-{step:07d}-{os.getpid()}"
    _write_model_files(tmp, model, None, tokenizer_file)
    value, tensors = encode_state(state)
    save_file(tensors, str(tmp / "state.safetensors"))
    fsync_file(tmp / "state.safetensors")
    (tmp / "state.json").write_text(json.dumps({"step": step, "state": value}, indent=1) + "\n")
    fsync_file(tmp / "state.json")
    fsync_dir(tmp)
    replace_dir(tmp, final)
    if keep_last is not None:
        prune_checkpoints(root, keep_last)
    return final


def list_checkpoints(ckpt_root: str | Path) -> list[Path]:
    """Complete checkpoints under ckpt_root, oldest first (temporary folders are ignored)."""
    root = Path(ckpt_root)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := STEP_DIR.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(ckpt_root: str | Path) -> Path | None:
    found = list_checkpoints(ckpt_root)
    return found[-1] if found else None


def prune_checkpoints(ckpt_root: str | Path, keep_last: int) -> None:
    if keep_last < 1:
        raise ValueError(f"keep_last must be at least 1, got {keep_last}")
    for p in list_checkpoints(ckpt_root)[:-keep_last]:
        remove_dir(p)  # out of the listing first: never a half-deleted step-* folder
    remove_debris(Path(ckpt_root), r"step-\d+")  # leftovers of interrupted writes and deletes


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Read a checkpoint folder (safetensors + JSON only)."""
    path = Path(path)
    for name in ("model.safetensors", "config.json", "state.safetensors", "state.json"):
        if not (path / name).exists():
            raise FileNotFoundError(f"{path} is not a complete training checkpoint: {name} is missing")
    meta = json.loads((path / "state.json").read_text())
    state = decode_state(meta["state"], load_file(str(path / "state.safetensors")))
    weights = load_file(str(path / "model.safetensors"))
    return Checkpoint(path, int(meta["step"]), weights, BertConfig.load(path / "config.json"), state)


def check_compatible(saved: dict[str, Any], current: dict[str, Any], where: str | Path) -> None:
    """Raise a clear error if a checkpoint was written by a run with other settings than this one."""
    diffs = [
        f"  {k}: checkpoint has {saved.get(k)!r}, this run has {current.get(k)!r}"
        for k in sorted(set(saved) | set(current))
        if saved.get(k) != current.get(k)
    ]
    if diffs:
        raise ValueError(
            f"cannot resume from {where}: it was written by a run with different settings:\n"
            + "\n".join(diffs)
            + "\nResume with the same settings, or start a new run in another --out folder."
        )
