"""Fine-tuning tasks: from a dataset's examples to model batches, and from outputs to scores.

BERT is fine-tuned the same way for every task (Devlin et al., 2018, section 4 and Figure 4): the
input is packed as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` with segment ids 0 for A and 1 for
B, and one small output layer is added on top. Only the *features* (how text becomes ids and
labels) and the *metric* change from task to task. This module holds

    classification features   SST-2 (one sentence) and MRPC, RTE (a pair), truncated longest-first
    the task table            TASKS / get_task(name): how to read, featurize, collate and score
                              "sst2", "mrpc", "rte", "squad" and "conll2003"

The pieces every task shares (the tokenizer interface `fast_tokenizer`, `Features`: a dataset of
featurized examples plus a report of what was cut, skipped or repaired, `collate`: dynamic
padding, the forward loop `predict_batches`) are in bertlab.tasks.inputs. Span QA (SQuAD) lives in
bertlab.tasks.squad and token classification (CoNLL-2003 NER) in bertlab.tasks.ner; the scores are in
bertlab.tasks.metrics. The imports go one way: task_inputs <- squad, ner <- tasks.

A training loop uses a task like this:

    task = get_task("mrpc")
    train = task.featurize(task.load("train"), tokenizer, max_len=128)
    model = task.build_model(config)                         # BertForSequenceClassification
    loader = DataLoader(train, batch_size=32, shuffle=True, collate_fn=task.collate)
    for batch in loader:
        loss = model(**batch).loss                           # batch holds labels=...
    dev = task.featurize(task.load("dev"), tokenizer, max_len=128)
    outs = [task.gather(model(**b)) for b in DataLoader(dev, 64, collate_fn=task.collate)]
    task.evaluate(outs, dev)                                 # {"accuracy": ..., "f1": ...}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from bertlab import checkpoint as ckpt
from bertlab.data import task_data
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
    collate,
    detach_cpu,
    encode_texts,
    example_field,
    fast_tokenizer,
    predict_batches,
    stack_ragged,
)
from bertlab.tasks.ner import evaluate_ner, featurize_ner
from bertlab.tasks.squad import evaluate_squad, featurize_squad, gather_span_logits, stack_span_logits


# ------------------------------------------------------------------------------------------------
# Sequence classification: one sentence (SST-2) or a pair (MRPC, RTE)
# ------------------------------------------------------------------------------------------------
def truncate_longest_first(len_a: int, len_b: int, max_tokens: int) -> tuple[int, int]:
    """How many tokens of A and of B to keep so that len_a + len_b <= max_tokens: remove one token
    at a time from the end of the longer text (from B on a tie), as BERT's released code does. A
    short sentence is kept whole and the long one pays. (The `tokenizers` library's
    "longest_first" breaks ties the other way, so the two can differ by one token moved from A
    to B.)"""
    while len_a + len_b > max_tokens:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def pack(ids_a: Sequence[int], ids_b: Sequence[int] | None, special: SpecialIds) -> tuple[list, list]:
    """[CLS] A [SEP] (B [SEP]) and the segment ids: 0 for [CLS], A and its [SEP]; 1 for B and
    the final [SEP]."""
    input_ids = [special.cls, *ids_a, special.sep]
    token_type_ids = [0] * len(input_ids)
    if ids_b is not None:
        input_ids += [*ids_b, special.sep]
        token_type_ids += [1] * (len(ids_b) + 1)
    return input_ids, token_type_ids


def _label_id(label: Any, label_names: Sequence[str], where: str) -> int | None:
    if label is None or (isinstance(label, str) and label == ""):
        return None
    if isinstance(label, str) and not label.lstrip("-").isdigit():
        if label not in label_names:
            raise ValueError(f"{where}: unknown label {label!r}; the labels are {list(label_names)}")
        return label_names.index(label)
    value = int(label)
    if not 0 <= value < len(label_names):
        raise ValueError(f"{where}: label {value} is outside [0, {len(label_names)}) (labels {list(label_names)})")
    return value


def featurize_classification(
    examples: Sequence[Any],
    tokenizer: Any,
    max_len: int = 128,
    text_fields: Sequence[str] = ("sentence",),
    label_names: Sequence[str] = ("0", "1"),
    task: str = "classification",
) -> Features:
    """Features for single-text or pair classification.

    Each example gives its text(s) by `text_fields` (one field: single text, two: a pair) and an
    optional `label` (a label name or index; None for unlabelled test data). The texts are
    tokenized without special tokens, cut longest-first to max_len - 2 (one text) or max_len - 3
    (a pair), and packed as [CLS] A [SEP] (B [SEP]). Items: input_ids, token_type_ids, labels."""
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

    report = {
        "examples": len(examples),
        "truncated": 0,
        "tokens_cut": 0,
        "empty_texts": 0,
        "unlabelled": 0,
        "max_len": max_len,
    }
    locations: dict[str, list] = {"empty_texts": [], "truncated": []}  # the first 20 example ids
    items = []
    for i, ex in enumerate(examples):
        where = example_field(ex, "id") if _has(ex, "id") else i
        ids_a = encoded[0][i].ids
        ids_b = encoded[1][i].ids if pair else []
        if not ids_a or (pair and not ids_b):
            report["empty_texts"] += 1
            locations["empty_texts"].append(where)
        keep_a, keep_b = truncate_longest_first(len(ids_a), len(ids_b), max_len - n_special)
        cut = len(ids_a) + len(ids_b) - keep_a - keep_b
        if cut:
            report["truncated"] += 1
            report["tokens_cut"] += cut
            locations["truncated"].append(where)
        input_ids, token_type_ids = pack(ids_a[:keep_a], ids_b[:keep_b] if pair else None, special)
        label = _label_id(example_field(ex, "label") if _has(ex, "label") else None, label_names, f"{task} example {i}")
        if label is None:
            report["unlabelled"] += 1
        item = {
            "input_ids": np.array(input_ids, dtype=np.int64),
            "token_type_ids": np.array(token_type_ids, dtype=np.int64),
        }
        if label is not None:
            item["labels"] = label
        items.append(item)
    report["locations"] = {k: v[:20] for k, v in locations.items() if v}
    return Features(task, items, examples, report, meta={"pad_id": special.pad})


def _has(example: Any, name: str) -> bool:
    return name in example if isinstance(example, dict) else hasattr(example, name)


# ------------------------------------------------------------------------------------------------
# The task table
# ------------------------------------------------------------------------------------------------
@dataclass
class Task:
    """One fine-tuning task, with a uniform interface for training loops.

    name         "sst2", "mrpc", "rte", "squad" or "conll2003"
    kind         "classification" (one label per input), "span" (start/end of an answer) or
                 "token" (one label per word)
    label_names  the classes, index = label id (empty for span QA)
    metrics      names of the scores `evaluate` returns, the first being the one to select on
    max_len      the usual sequence length for this task
    splits       the splits `load` can read from the local mirror
    """

    name: str
    kind: str
    label_names: tuple[str, ...]
    metrics: tuple[str, ...]
    max_len: int
    splits: tuple[str, ...]
    description: str
    text_fields: tuple[str, ...] = ()
    reader: Callable[[str], tuple[list, Any]] | None = field(default=None, repr=False)

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
        """The task's model with its encoder from pretrained weights: a bertlab model folder (the
        book's record, `<run>/final`, a checkpoint) or Hugging Face-format weights (a folder, a
        state dict, a hub name; see bertlab.hf); the new output layer is freshly initialised.
        kwargs go to `from_hf` (config=..., strict=...) for Hugging Face weights."""
        folder = Path(source) if isinstance(source, (str, Path)) else None
        if folder is not None and (folder / "config.json").is_file() and not is_hf_folder(folder):
            if kwargs:
                raise TypeError(f"{sorted(kwargs)} apply to Hugging Face weights; {folder} is a bertlab folder")
            return ckpt.load_model(folder, self.model_class, **self.model_kwargs)
        return self.model_class.from_hf(source, **self.model_kwargs, **kwargs)

    # --- data ---------------------------------------------------------------------------------
    def load(self, split: str, with_report: bool = False) -> Any:
        """The examples of one split ("train", "dev", "test"), read by bertlab.data.task_data from the
        dataset mirror (or cache). with_report=True returns (examples, LoadReport): the rows the
        reader skipped, with file, line and reason."""
        split = _SPLIT_ALIASES.get(split, split)
        if split not in self.splits:
            raise ValueError(
                f"task {self.name!r} has no split {split!r} in the local mirror; available: {list(self.splits)}"
            )
        if self.reader is None:
            raise RuntimeError(f"task {self.name!r} has no reader")
        examples, report = self.reader(split)
        return (examples, report) if with_report else examples

    def featurize(self, examples: Sequence[Any], tokenizer: Any, max_len: int | None = None, **kwargs: Any) -> Features:
        """Examples -> Features (a torch Dataset of dicts; `.report` says what was cut or
        repaired). kwargs go to the task's featurizer (SQuAD: doc_stride, max_query_len)."""
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
        """Run `model` over `features` in order, in eval mode (its mode is given back afterwards),
        and return the `gather` of every batch: what `evaluate` takes. With `rt` (a bertlab
        Runtime) batches go to its device under its autocast; without, to the model's device."""
        return predict_batches(model, features, self.gather, batch_size, rt)

    def gather(self, output: Any) -> Any:
        """What evaluation needs from one batch's model output, detached on the CPU: the logits
        (classification, token), or (start_logits, end_logits) (span). Keep a list of these, in
        the dataset's order (no shuffling), and pass it to `evaluate`."""
        if self.kind == "span":
            return gather_span_logits(output)
        return detach_cpu(output.logits)

    def evaluate(self, outputs: Any, features: Features, **kwargs: Any) -> dict:
        """Scores (percentages, as the paper reports them) of the predictions for `features`.

        outputs: a list of `gather(...)` results (one per batch, in order), or the model outputs
        themselves, or already concatenated arrays: logits (N, K) or predicted label ids (N,) for
        classification; logits (N, T, K) or label ids (N, T) for tokens; a pair
        (start_logits (N, T), end_logits (N, T)) for spans. Returns a dict; the first metric in
        `self.metrics` is the one to select checkpoints on. Span QA takes max_answer_length."""
        if self.kind == "span":
            start, end = stack_span_logits(outputs)
            return evaluate_squad(start, end, features, **kwargs)
        values = self._stacked(outputs, fill=float("nan") if self.kind == "token" else 0.0)
        if self.kind == "token":
            return evaluate_ner(values, features)
        preds, gold = self._predicted_and_gold(values, features)
        scores = {"accuracy": metrics.accuracy(preds, gold)}
        if "f1" in self.metrics:
            scores["f1"] = metrics.binary_f1(preds, gold)["f1"]
        return {m: scores[m] for m in self.metrics}

    def confusion(self, outputs: Any, features: Features) -> list[list[int]]:
        """A classification task's confusion matrix for `features` (outputs as `evaluate` takes
        them): rows the gold label, columns the predicted one, in the order of `label_names`."""
        if self.kind != "classification":
            raise ValueError(f"{self.name} is a {self.kind} task; a confusion matrix is for classification")
        preds, gold = self._predicted_and_gold(self._stacked(outputs, fill=0.0), features)
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

    def _stacked(self, outputs: Any, fill: float) -> torch.Tensor:
        if isinstance(outputs, (torch.Tensor, np.ndarray)):
            return detach_cpu(torch.as_tensor(outputs))
        parts = [self.gather(o) if hasattr(o, "logits") else detach_cpu(torch.as_tensor(o)) for o in outputs]
        if parts and parts[0].dim() >= 2 and self.kind == "token":
            return stack_ragged(parts, fill=fill if parts[0].is_floating_point() else IGNORE_INDEX)
        return torch.cat(parts, dim=0)


# Split names as the files in the mirror call them (CoNLL's dev file is "valid.txt").
_SPLIT_ALIASES = {"validation": "dev", "valid": "dev", "eval": "dev"}
_FILE_SPLITS = {"conll2003": {"dev": "valid"}}


def _reader(name: str) -> Callable[[str], tuple[list, Any]]:
    """Read a split with bertlab.data.task_data (checksummed files from the local mirror, the cache or
    the network): returns (examples, LoadReport)."""

    def read(split: str) -> tuple[list, Any]:
        fn = {
            "sst2": task_data.read_sst2,
            "mrpc": task_data.read_mrpc,
            "rte": task_data.read_rte,
            "squad": task_data.read_squad,
            "conll2003": task_data.read_conll2003,
        }[name]
        return fn(_FILE_SPLITS.get(name, {}).get(split, split))

    return read


CONLL_LABELS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")

TASKS: dict[str, Task] = {
    "sst2": Task(
        "sst2",
        "classification",
        ("negative", "positive"),
        ("accuracy",),
        128,
        ("train", "dev", "test"),
        "Stanford Sentiment Treebank: is a movie-review sentence positive or negative? One sentence.",
        ("sentence",),
        _reader("sst2"),
    ),
    "mrpc": Task(
        "mrpc",
        "classification",
        ("not_equivalent", "equivalent"),
        ("f1", "accuracy"),
        128,
        ("train", "dev", "test"),
        "Microsoft Research Paraphrase Corpus: do two news sentences say the same thing? A pair.",
        ("text_a", "text_b"),
        _reader("mrpc"),
    ),
    "rte": Task(
        "rte",
        "classification",
        ("entailment", "not_entailment"),
        ("accuracy",),
        128,
        ("train", "dev", "test"),
        "Recognizing Textual Entailment: does the first text entail the second? A pair.",
        ("text_a", "text_b"),
        _reader("rte"),
    ),
    "squad": Task(
        "squad",
        "span",
        (),
        ("f1", "exact_match"),
        384,
        ("dev",),
        "SQuAD v1.1: find the answer to a question as a span of a Wikipedia paragraph. "
        "Only the dev split is in the local mirror.",
        (),
        _reader("squad"),
    ),
    "conll2003": Task(
        "conll2003",
        "token",
        CONLL_LABELS,
        ("f1", "precision", "recall"),
        128,
        ("train", "dev", "test"),
        "CoNLL-2003 English named entities (PER, ORG, LOC, MISC), IOB2 tags, scored by entity-level F1.",
        (),
        _reader("conll2003"),
    ),
}


def get_task(name: str) -> Task:
    """The task called `name` ("sst2", "mrpc", "rte", "squad", "conll2003"; "sst-2", "SST-2",
    "conll" work too)."""
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
    """What a model that ignores its input scores on the task's dev set, in points: the floor a
    fine-tuned model has to clear before its score says anything.

    Sentence (pair) classification: `accuracy` of always answering the most common label of the
    first `train_examples` training examples, and `f1` of always answering label 1 (for MRPC, every
    pair a paraphrase: F1 = 2p / (p + n), p positives among n). CoNLL-2003: `f1` 0 (no entity
    predicted finds none). SQuAD: {} (no input-free answer; its floor is the from-scratch model).
    `train` / `dev`: the examples to use instead of the task's splits."""
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
