"""Fine-tuning tasks: from a dataset's examples to model batches, and from outputs to scores.

BERT is fine-tuned the same way for every task (Devlin et al., 2018, section 4 and Figure 4): the
input is packed as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, segment ids 0 for A and 1 for B,
and one small output layer is added on top. Only the features and the metric change. This module
holds sentence (pair) classification and the task table, `get_task(name)`:

    task = get_task("mrpc")
    train = task.featurize(task.load("train"), tokenizer, max_len=128)
    model = task.build_model(config)                         # BertForSequenceClassification
    for batch in DataLoader(train, batch_size=32, shuffle=True, collate_fn=task.collate):
        loss = model(**batch).loss                           # batch holds labels=...
    dev = task.featurize(task.load("dev"), tokenizer, max_len=128)
    task.evaluate(task.predict(model, dev), dev)             # {"f1": ..., "accuracy": ...}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from bertlab import checkpoint as ckpt
from bertlab.data import task_data
from bertlab.data.pretraining_data import truncate_longest_first  # the rule pre-training cuts pairs by
from bertlab.hf import is_hf_folder
from bertlab.model import (
    IGNORE_INDEX,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from bertlab.tasks import metrics
from bertlab.tasks.inputs import (
    Features,
    SpecialIds,
    Tally,
    collate,
    detach_cpu,
    encode_texts,
    example_field,
    fast_tokenizer,
    label_id,
    predict_batches,
    stack_ragged,
)
from bertlab.tasks.ner import evaluate_ner, featurize_ner
from bertlab.tasks.squad import evaluate_squad, featurize_squad, gather_span_logits, stack_span_logits


# --- Sequence classification: one sentence (SST-2) or a pair (MRPC, RTE) ---
def pack(ids_a: Sequence[int], ids_b: Sequence[int] | None, special: SpecialIds) -> tuple[list, list]:
    """[CLS] A [SEP] (B [SEP]) and the segment ids: 0 up to the first [SEP], 1 after it."""
    input_ids = [special.cls, *ids_a, special.sep]
    token_type_ids = [0] * len(input_ids)
    if ids_b is not None:
        input_ids += [*ids_b, special.sep]
        token_type_ids += [1] * (len(ids_b) + 1)
    return input_ids, token_type_ids


def featurize_classification(
    examples: Sequence[Any],
    tokenizer: Any,
    max_len: int = 128,
    text_fields: Sequence[str] = ("sentence",),
    label_names: Sequence[str] = ("0", "1"),
    task: str = "classification",
) -> Features:
    """Features for single-text or pair classification: items input_ids, token_type_ids and
    labels. `text_fields` names one text or a pair; `label` is a name or an index, absent or None
    for unlabelled data. The texts are cut longest-first to fit max_len with the special tokens."""
    if len(text_fields) not in (1, 2):
        raise ValueError(f"text_fields names one text or a pair, got {list(text_fields)}")
    pair = len(text_fields) == 2
    n_special = 3 if pair else 2
    if max_len <= n_special:
        raise ValueError(f"max_len={max_len} leaves no room for text after {n_special} special tokens")
    backend = fast_tokenizer(tokenizer)
    special = SpecialIds.of(backend)
    texts = [[example_field(ex, f) for ex in examples] for f in text_fields]
    for f, column in zip(text_fields, texts):
        for i, t in enumerate(column):
            if not isinstance(t, str):
                raise TypeError(f"{task} example {i}: field {f!r} is {type(t).__name__}, expected str")
    encoded = [encode_texts(backend, column) for column in texts]

    tally = Tally()
    items = []
    for i, ex in enumerate(examples):
        where = example_field(ex, "id", i)
        ids_a = encoded[0][i].ids
        ids_b = encoded[1][i].ids if pair else []
        if not ids_a or (pair and not ids_b):
            tally.note("empty_texts", where)
        keep_a, keep_b = truncate_longest_first(len(ids_a), len(ids_b), max_len - n_special)
        cut = len(ids_a) + len(ids_b) - keep_a - keep_b
        if cut:
            tally.note("truncated", where)
            tally["tokens_cut"] += cut
        input_ids, token_type_ids = pack(ids_a[:keep_a], ids_b[:keep_b] if pair else None, special)
        label = label_id(example_field(ex, "label", None), label_names, f"{task} example {i}")
        if label is None:
            tally["unlabelled"] += 1
        item = {"input_ids": np.array(input_ids, np.int64), "token_type_ids": np.array(token_type_ids, np.int64)}
        if label is not None:
            item["labels"] = label
        items.append(item)
    counted = ("truncated", "tokens_cut", "empty_texts", "unlabelled")
    report = tally.report({"examples": len(examples), "max_len": max_len}, counted)
    return Features(task, items, examples, report, meta={"pad_id": special.pad})


# --- The task table ---
@dataclass
class Task:
    """One fine-tuning task, with a uniform interface for training loops."""

    name: str
    kind: str  # "classification" (a label per input), "span" (an answer's start/end), "token"
    label_names: tuple[str, ...]  # index = label id (empty for span QA)
    metrics: tuple[str, ...]  # what `evaluate` returns, the first the one to select on
    max_len: int
    splits: tuple[str, ...]  # what `load` can read from the local mirror
    description: str
    text_fields: tuple[str, ...] = ()

    @property
    def num_labels(self) -> int:
        """Size of the output layer: number of classes, or 2 (start, end) for span QA."""
        return len(self.label_names) if self.kind != "span" else 2

    @property
    def model_class(self) -> type:
        return {
            "classification": BertForSequenceClassification,
            "token": BertForTokenClassification,
            "span": BertForQuestionAnswering,
        }[self.kind]

    @property
    def model_kwargs(self) -> dict:
        """Extra arguments of `model_class(config, **model_kwargs)`."""
        return {} if self.kind == "span" else {"num_labels": self.num_labels}

    @property
    def main_metric(self) -> str:
        return self.metrics[0]

    def build_model(self, config: Any) -> torch.nn.Module:
        return self.model_class(config, **self.model_kwargs)

    def from_pretrained(self, source: Any, **kwargs: Any) -> torch.nn.Module:
        """The task's model, its encoder from a bertlab model folder or Hugging Face-format weights
        (a folder, a state dict, a hub name; kwargs go to `from_hf`), a fresh output layer."""
        folder = Path(source) if isinstance(source, (str, Path)) else None
        if folder is not None and (folder / "config.json").is_file() and not is_hf_folder(folder):
            if kwargs:
                raise TypeError(f"{sorted(kwargs)} apply to Hugging Face weights; {folder} is a bertlab folder")
            return ckpt.load_model(folder, self.model_class, **self.model_kwargs)
        return self.model_class.from_hf(source, **self.model_kwargs, **kwargs)

    # --- data ---------------------------------------------------------------------------------
    def load(self, split: str, with_report: bool = False) -> Any:
        """The examples of one split, read by bertlab.data.task_data; with_report=True returns
        (examples, LoadReport), the rows the reader skipped and why."""
        split = _SPLIT_ALIASES.get(split, split)
        if split not in self.splits:
            raise ValueError(
                f"task {self.name!r} has no split {split!r} in the local mirror; available: {list(self.splits)}"
            )
        read = getattr(task_data, f"read_{self.name}")
        examples, report = read(_FILE_SPLITS.get(self.name, {}).get(split, split))
        return (examples, report) if with_report else examples

    def featurize(self, examples: Sequence[Any], tokenizer: Any, max_len: int | None = None, **kwargs: Any) -> Features:
        """Examples -> Features; kwargs go to the task's featurizer (SQuAD: doc_stride, ...)."""
        max_len = max_len or self.max_len
        if self.kind == "classification":
            return featurize_classification(
                examples, tokenizer, max_len, self.text_fields, self.label_names, task=self.name
            )
        if self.kind == "span":
            return featurize_squad(examples, tokenizer, max_len=max_len, **kwargs)
        return featurize_ner(examples, tokenizer, max_len=max_len, label_names=self.label_names, **kwargs)

    def collate(self, batch: Sequence[dict], pad_to_multiple_of: int | None = None) -> dict:
        """A list of Features items -> a dict of (B, T) tensors for `model(**batch)`."""
        return collate(batch, pad_to_multiple_of=pad_to_multiple_of)

    # --- evaluation ---------------------------------------------------------------------------
    def predict(self, model: torch.nn.Module, features: Features, batch_size: int = 128, rt: Any = None) -> list:
        """The `gather` of every batch, in order, in eval mode: what `evaluate` takes."""
        return predict_batches(model, features, self.gather, batch_size, rt)

    def gather(self, output: Any) -> Any:
        """One batch's logits (spans: start and end logits) on the CPU, for `evaluate`."""
        if self.kind == "span":
            return gather_span_logits(output)
        return detach_cpu(output.logits)

    def evaluate(self, outputs: Any, features: Features, **kwargs: Any) -> dict:
        """Scores (percentages) of the predictions for `features`, keyed by `self.metrics`.

        outputs: the `gather` of every batch in order (or the model outputs), or concatenated
        logits / label ids: (N, K) or (N,) for classification, (N, T, K) or (N, T) for tokens,
        (start_logits, end_logits) (N, T) each for spans (which take max_answer_length)."""
        if self.kind == "span":
            start, end = stack_span_logits(outputs)
            return evaluate_squad(start, end, features, **kwargs)
        values = self._stacked(outputs)
        if self.kind == "token":
            return evaluate_ner(values, features)
        preds, gold = self._predicted_and_gold(values, features)
        scores = {"accuracy": metrics.accuracy(preds, gold)}
        if "f1" in self.metrics:
            scores["f1"] = metrics.binary_f1(preds, gold)["f1"]
        return {m: scores[m] for m in self.metrics}

    def confusion(self, outputs: Any, features: Features) -> list[list[int]]:
        """Confusion matrix (rows gold, columns predicted) of a classification task's outputs."""
        if self.kind != "classification":
            raise ValueError(f"{self.name} is a {self.kind} task; a confusion matrix is for classification")
        preds, gold = self._predicted_and_gold(self._stacked(outputs), features)
        return metrics.confusion_matrix(preds, gold, self.num_labels)

    def _predicted_and_gold(self, values: torch.Tensor, features: Features) -> tuple[torch.Tensor, torch.Tensor]:
        preds = values.argmax(-1) if values.dim() == 2 else values
        gold = torch.tensor([it.get("labels", -1) for it in features.items])
        if (gold < 0).any():
            raise ValueError(f"{self.name}: some features have no label (test data?); cannot score them")
        if len(preds) != len(gold):
            raise ValueError(
                f"{self.name}: {len(preds)} predictions for {len(gold)} features; pass the "
                f"outputs of the whole split, in order"
            )
        return preds, gold

    def _stacked(self, outputs: Any) -> torch.Tensor:
        if isinstance(outputs, (torch.Tensor, np.ndarray)):
            return detach_cpu(torch.as_tensor(outputs))
        parts = [self.gather(o) if hasattr(o, "logits") else detach_cpu(torch.as_tensor(o)) for o in outputs]
        if parts and parts[0].dim() >= 2 and self.kind == "token":  # logits padded with NaN, label ids ignored
            return stack_ragged(parts, fill=float("nan") if parts[0].is_floating_point() else IGNORE_INDEX)
        return torch.cat(parts, dim=0)


_SPLIT_ALIASES = {"validation": "dev", "valid": "dev", "eval": "dev"}
_FILE_SPLITS = {"conll2003": {"dev": "valid"}}  # CoNLL's dev file is valid.txt


CONLL_LABELS = task_data.CONLL_TAGS  # label id = index in the reader's IOB2 tag list

_SPLITS = ("train", "dev", "test")
# Per task: name, kind, label names, metrics, max_len, splits in the mirror, description, text fields.
# fmt: off
TASKS: dict[str, Task] = {t.name: t for t in [
    Task("sst2", "classification", ("negative", "positive"), ("accuracy",), 128, _SPLITS,
         "Stanford Sentiment Treebank: is a movie-review sentence positive or negative? One sentence.",
         ("sentence",)),
    Task("mrpc", "classification", ("not_equivalent", "equivalent"), ("f1", "accuracy"), 128, _SPLITS,
         "Microsoft Research Paraphrase Corpus: do two news sentences say the same thing? A pair.",
         ("text_a", "text_b")),
    Task("rte", "classification", ("entailment", "not_entailment"), ("accuracy",), 128, _SPLITS,
         "Recognizing Textual Entailment: does the first text entail the second? A pair.",
         ("text_a", "text_b")),
    Task("squad", "span", (), ("f1", "exact_match"), 384, ("dev",),
         "SQuAD v1.1: find the answer to a question as a span of a Wikipedia paragraph. "
         "Only the dev split is in the local mirror."),
    Task("conll2003", "token", CONLL_LABELS, ("f1", "precision", "recall"), 128, _SPLITS,
         "CoNLL-2003 English named entities (PER, ORG, LOC, MISC), IOB2 tags, scored by entity-level F1."),
]}
# fmt: on


def get_task(name: str) -> Task:
    """The task called `name` ("sst2", "mrpc", "rte", "squad", "conll2003"; "SST-2", "conll"...)."""
    key = name.lower().replace("-", "").replace("_", "")
    key = {"conll": "conll2003", "squadv1": "squad", "squad11": "squad", "squadv11": "squad"}.get(key, key)
    if key not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    return TASKS[key]


def trivial_baseline(
    task_name: str,
    train_examples: int | None = None,
    train: Sequence[Any] | None = None,
    dev: Sequence[Any] | None = None,
) -> dict[str, float]:
    """What a model that ignores its input scores on dev, in points: the floor to clear. For
    classification, `accuracy` of always answering the most common training label (of the first
    `train_examples`) and `f1` of always answering 1; CoNLL-2003 `f1` 0; SQuAD {}."""
    task = get_task(task_name)
    if task.kind == "token":
        return {"f1": 0.0}
    if task.kind != "classification":
        return {}
    train = list(task.load("train") if train is None else train)[:train_examples]
    dev = list(task.load("dev") if dev is None else dev)
    if not train or not dev:
        raise ValueError(f"{task.name}: the trivial baseline needs training and dev examples")
    top = Counter(ex.label for ex in train).most_common(1)[0][0]
    out = {"accuracy": 100 * sum(ex.label == top for ex in dev) / len(dev)}
    if "f1" in task.metrics:
        positives = sum(ex.label == 1 for ex in dev)
        out["f1"] = 100 * 2 * positives / (positives + len(dev))
    return out
