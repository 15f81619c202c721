"""The inputs every fine-tuning task shares: tokenizer, examples, features, batches, outputs.

Sentence classification (bertlab.tasks), span QA (bertlab.tasks.squad) and token classification
(bertlab.tasks.ner) all build on this module, which knows no task. Every featurizer works from the
fast batch encodings of a `tokenizers.Tokenizer` (ids, character offsets, word ids) and returns
`Features`: the model inputs plus a report of what was cut, skipped or repaired, so that nothing is
dropped silently. `collate` pads each batch to its own longest sequence.
"""

from __future__ import annotations

import collections
import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tokenizers import Tokenizer

from bertlab.model import IGNORE_INDEX


# --- The tokenizer interface ---
def fast_tokenizer(tokenizer: Any) -> Tokenizer:
    """The `tokenizers.Tokenizer` behind a WordPieceTokenizer, a transformers fast tokenizer or a
    tokenizer.json path, with no truncation and no padding (on a copy where it had them): the
    featurizers add [CLS]/[SEP] themselves and decide where to cut."""
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        backend = Tokenizer.from_file(str(tokenizer))
    elif isinstance(tokenizer, Tokenizer):
        backend = tokenizer
    elif isinstance(getattr(tokenizer, "backend", None), Tokenizer):
        backend = tokenizer.backend
    elif isinstance(getattr(tokenizer, "backend_tokenizer", None), Tokenizer):
        backend = tokenizer.backend_tokenizer
    else:
        raise TypeError(
            f"expected a WordPieceTokenizer, a tokenizers.Tokenizer or a path to a "
            f"tokenizer.json, got {type(tokenizer).__name__}"
        )
    if backend.truncation is not None or backend.padding is not None:
        backend = Tokenizer.from_str(backend.to_str())
        backend.no_truncation()
        backend.no_padding()
    for token in ("[CLS]", "[SEP]", "[PAD]", "[UNK]"):
        if backend.token_to_id(token) is None:
            raise ValueError(
                f"the tokenizer has no {token} token; BERT fine-tuning needs "
                f"[CLS], [SEP], [PAD] and [UNK] in the vocabulary"
            )
    return backend


@dataclass(frozen=True)
class SpecialIds:
    cls: int
    sep: int
    pad: int
    unk: int

    @classmethod
    def of(cls, backend: Tokenizer) -> "SpecialIds":
        return cls(*(backend.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]")))


def encode_texts(backend: Tokenizer, texts: Sequence[str]) -> list:
    """One `tokenizers.Encoding` per text (.ids, .offsets, .word_ids), no special tokens."""
    return backend.encode_batch(list(texts), add_special_tokens=False)


_MISSING = object()


def example_field(example: Any, name: str, default: Any = _MISSING) -> Any:
    """example.name or example[name] (dataclasses, named tuples or dicts); `default` if absent."""
    if isinstance(example, dict):
        return example[name] if default is _MISSING or name in example else default
    return getattr(example, name) if default is _MISSING else getattr(example, name, default)


def label_id(label: Any, names: Sequence[str], where: str, noun: str = "label") -> int | None:
    """The index of a label given by name or index; None for a missing one (None or "")."""
    if label is None or (isinstance(label, str) and label == ""):
        return None
    if isinstance(label, str) and not label.lstrip("-").isdigit():
        if label not in names:
            raise ValueError(f"{where}: unknown {noun} {label!r}; the {noun}s are {list(names)}")
        return names.index(label)
    value = int(label)
    if not 0 <= value < len(names):
        raise ValueError(f"{where}: {noun} {value} is outside [0, {len(names)}) ({noun}s {list(names)})")
    return value


# --- Features: a dataset with a report, and its batches ---
class Features(torch.utils.data.Dataset):
    """Featurized examples, one dict of numpy arrays / ints per model input (`items`), with the
    `report` of what the featurizer decided, the original `examples` and the arrays evaluation
    needs (`meta`; SQuAD: each token's character span)."""

    def __init__(self, task: str, items: list[dict], examples: Sequence[Any], report: dict, meta: dict | None = None):
        self.task = task
        self.items = items
        self.examples = list(examples)
        self.report = report
        self.meta = meta or {}

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        return self.items[i]

    def lengths(self) -> np.ndarray:
        """Sequence length of every item."""
        return np.array([len(it["input_ids"]) for it in self.items], dtype=np.int64)

    def __repr__(self) -> str:
        return (
            f"Features(task={self.task!r}, items={len(self.items)}, examples={len(self.examples)}, "
            f"report={json.dumps(self.report, default=str)[:300]})"
        )


class Tally(collections.Counter):
    """A featurizer's counts of what it cut, skipped or repaired, with the first 20 places of each."""

    def __init__(self):
        super().__init__()
        self.locations: dict[str, list] = collections.defaultdict(list)

    def note(self, key: str, where: Any) -> None:
        self[key] += 1
        if len(self.locations[key]) < 20:
            self.locations[key].append(where)

    def report(self, head: dict, counted: Sequence[str]) -> dict:
        """`head`, every `counted` key (0 if never noted), then the `locations`."""
        return {**head, **dict.fromkeys(counted, 0), **self, "locations": dict(self.locations)}


def collate(batch: Sequence[dict], pad_id: int = 0, pad_to_multiple_of: int | None = None) -> dict:
    """Dynamic padding: the batch's sequences padded to its longest (rounded up to a multiple of
    `pad_to_multiple_of`), as the keyword arguments of BertFor*(**batch): input_ids,
    token_type_ids, attention_mask (B, T) and the labels the items carry: labels (B,) or (B, T)
    (padded with IGNORE_INDEX), or start_positions / end_positions (B,)."""
    if len(batch) == 0:
        raise ValueError("cannot collate an empty batch")
    T = max(len(it["input_ids"]) for it in batch)
    if pad_to_multiple_of:
        T = -(-T // pad_to_multiple_of) * pad_to_multiple_of
    B = len(batch)
    input_ids = torch.full((B, T), pad_id, dtype=torch.long)
    token_type_ids = torch.zeros((B, T), dtype=torch.long)
    attention_mask = torch.zeros((B, T), dtype=torch.long)
    token_labels = "labels" in batch[0] and np.ndim(batch[0]["labels"]) == 1
    labels = torch.full((B, T), IGNORE_INDEX, dtype=torch.long) if token_labels else None
    for b, it in enumerate(batch):
        n = len(it["input_ids"])
        input_ids[b, :n] = torch.as_tensor(it["input_ids"])
        token_type_ids[b, :n] = torch.as_tensor(it["token_type_ids"])
        attention_mask[b, :n] = 1
        if token_labels:
            labels[b, :n] = torch.as_tensor(it["labels"])
    out = {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask}
    if token_labels:
        out["labels"] = labels
    else:
        for key in ("labels", "start_positions", "end_positions"):
            values = [it.get(key) for it in batch]
            if all(v is not None for v in values):
                out[key] = torch.tensor(values, dtype=torch.long)
            elif any(v is not None for v in values):
                raise ValueError(
                    f"some items of the batch have {key!r} and some do not; featurize "
                    f"labelled and unlabelled examples separately"
                )
    return out


def length_grouped_batches(
    lengths: Sequence[int] | np.ndarray | torch.Tensor,
    batch_size: int,
    generator: torch.Generator,
    pool_batches: int = 8,
) -> list[torch.Tensor]:
    """Indices in random batches of similar lengths: shuffle, sort each pool of `pool_batches`
    batches by length, cut it into batches, shuffle the batches (pool_batches=1: plain random
    batches). With dynamic padding a batch costs its longest sequence times its size, so this
    pads far less, and the batches still come in random order."""
    if batch_size < 1 or pool_batches < 1:
        raise ValueError(f"batch_size and pool_batches must be at least 1 (got {batch_size}, {pool_batches})")
    lengths = torch.as_tensor(np.asarray(lengths), dtype=torch.long)
    perm = torch.randperm(len(lengths), generator=generator)
    batches: list[torch.Tensor] = []
    for pool in perm.split(pool_batches * batch_size):
        pool = pool[torch.argsort(lengths[pool], descending=True, stable=True)]
        batches += list(pool.split(batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def labelled_tokens(features: Features) -> np.ndarray:
    """How many positions of every item carry a token label (not IGNORE_INDEX)."""
    if any(np.ndim(it.get("labels")) != 1 for it in features.items):
        raise ValueError(
            f"{features.task} features have no per-token labels; labelled_tokens is for token-level "
            f"tasks (CoNLL-2003), featurized with their labels"
        )
    return np.array([(np.asarray(it["labels"]) != IGNORE_INDEX).sum() for it in features.items], dtype=np.int64)


class LengthGroupedSampler(torch.utils.data.Sampler):
    """A DataLoader batch_sampler: new `length_grouped_batches` every epoch, from `generator`."""

    def __init__(self, lengths: Sequence[int] | np.ndarray, batch_size: int, generator: torch.Generator):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.generator = generator

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        for batch in length_grouped_batches(self.lengths, self.batch_size, self.generator):
            yield batch.tolist()


# --- Model outputs ---
@torch.no_grad()
def predict_batches(
    model: torch.nn.Module, features: Features, gather: Callable[[Any], Any], batch_size: int = 128, rt: Any = None
) -> list:
    """`gather(output)` of every batch, in order, in eval mode; with `rt` (a bertlab Runtime), on
    its device under its autocast."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    outputs = []
    try:
        for lo in range(0, len(features), batch_size):
            batch = collate([features[i] for i in range(lo, min(lo + batch_size, len(features)))])
            inputs = {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
            if rt is None:
                out = model(**{k: v.to(device) for k, v in inputs.items()})
            else:
                with rt.autocast():
                    out = model(**rt.to_device(inputs))
            outputs.append(gather(out))
    finally:
        model.train(was)
    return outputs


def detach_cpu(x: Any) -> Any:
    """A tensor detached on the CPU, floating point as float32; anything else as it is."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu() if x.is_floating_point() else x.detach().cpu()
    return x


def stack_ragged(parts: Sequence[torch.Tensor], fill: float) -> torch.Tensor:
    """Batches (B_k, T_k, ...) -> (sum B_k, max T, ...), padded with `fill`."""
    parts = [torch.as_tensor(p) for p in parts]
    if len(parts) == 1:
        return parts[0]
    T = max(p.shape[1] for p in parts)
    padded = []
    for p in parts:
        if p.shape[1] < T:
            pad_shape = (p.shape[0], T - p.shape[1], *p.shape[2:])
            p = torch.cat([p, torch.full(pad_shape, fill, dtype=p.dtype)], dim=1)
        padded.append(p)
    return torch.cat(padded, dim=0)
