"""Token classification (CoNLL-2003 named entities): one label per word, from word pieces.

CoNLL-2003 gives sentences as words, each with an IOB2 tag (B-PER begins a person's name, I-PER
continues it, O is outside any entity). BERT reads word pieces, so a word can become several
tokens ("Leicestershire" -> "leicester", "##shire"). Following the paper (section 5.3, the
feature-based and fine-tuning NER setup) each word's label goes on its FIRST sub-token; the other
sub-tokens, [CLS], [SEP] and padding get IGNORE_INDEX (-100), so they carry no loss and are never
read at prediction time. Predicting a sentence is then: run the model, read the label at the
first sub-token of each word.

Two edge cases are handled explicitly and counted in `features.report`:
  * a sentence with more than max_len - 2 word pieces is split, between words, into several
    windows (each a model input of its own); a single word longer than a window keeps its first
    pieces only;
  * a word the tokenizer turns into no piece at all (a stray control or zero-width character)
    becomes [UNK], so every word still has exactly one labelled position.
"""

from __future__ import annotations

import collections
from typing import Any, Sequence

import numpy as np
import torch

from bertlab.model import IGNORE_INDEX
from bertlab.tasks.inputs import (
    Features,
    SpecialIds,
    detach_cpu,
    example_field,
    fast_tokenizer,
    predict_batches,
    stack_ragged,
)
from bertlab.tasks.metrics import entity_f1


def word_pieces(backend: Any, sentences: Sequence[Sequence[str]]) -> list[list[list[int]]]:
    """For each sentence, for each word, its piece ids (an empty list where the tokenizer gives
    none). One fast batch call over pre-split words (`is_pretokenized`); each piece knows its word
    through the encoding's word_ids."""
    nonempty = [i for i, s in enumerate(sentences) if len(s)]
    encodings = backend.encode_batch(
        [list(sentences[i]) for i in nonempty], is_pretokenized=True, add_special_tokens=False
    )
    out: list[list[list[int]]] = [[] for _ in sentences]
    for i, enc in zip(nonempty, encodings):
        pieces: list[list[int]] = [[] for _ in sentences[i]]
        for token_id, w in zip(enc.ids, enc.word_ids):
            pieces[w].append(token_id)
        out[i] = pieces
    return out


def split_into_windows(piece_counts: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Greedy split of a sentence into runs of whole words, each with at most `budget` pieces
    (a word longer than the budget is a run of its own). Returns [(first_word, end_word), ...]."""
    windows, start, used = [], 0, 0
    for w, n in enumerate(piece_counts):
        n = min(n, budget)
        if used + n > budget and w > start:
            windows.append((start, w))
            start, used = w, 0
        used += n
    windows.append((start, len(piece_counts)))
    return windows


def _tag_ids(tags: Sequence[Any], label_names: Sequence[str], where: str) -> list[int]:
    ids = []
    for t in tags:
        if isinstance(t, str):
            if t not in label_names:
                raise ValueError(f"{where}: unknown tag {t!r}; the tags are {list(label_names)}")
            ids.append(label_names.index(t))
        else:
            if not 0 <= int(t) < len(label_names):
                raise ValueError(f"{where}: tag id {t} outside [0, {len(label_names)})")
            ids.append(int(t))
    return ids


def featurize_ner(
    examples: Sequence[Any],
    tokenizer: Any,
    max_len: int = 128,
    label_names: Sequence[str] = (),
    has_labels: bool | None = None,
) -> Features:
    """CoNLL examples (`words`, `tags`) -> items with input_ids [CLS] pieces [SEP], token_type_ids
    (all 0) and labels: the word's tag id on its first piece, IGNORE_INDEX everywhere else.

    `features.meta`: sentence_index (N,) and word_start (N,), the sentence and first word of each
    window, and first_piece: per window, the position of every word's first piece. Use
    `word_predictions` to map per-token predictions back to one tag per word."""
    if not label_names:
        raise ValueError("featurize_ner needs label_names (the tag of each label id)")
    if max_len < 3:
        raise ValueError(f"max_len={max_len} leaves no room for words after [CLS] and [SEP]")
    backend = fast_tokenizer(tokenizer)
    special = SpecialIds.of(backend)
    sentences = [list(example_field(ex, "words")) for ex in examples]
    if has_labels is None:
        has_labels = all(_has_tags(ex) for ex in examples)
    pieces = word_pieces(backend, sentences)
    budget = max_len - 2

    report = collections.Counter()
    locations = collections.defaultdict(list)

    def note(key: str, where: Any, n: int = 1) -> None:
        report[key] += n
        if len(locations[key]) < 20:
            locations[key].append(where)

    items, sentence_index, word_start, first_piece = [], [], [], []
    for s, (words, word_ids) in enumerate(zip(sentences, pieces)):
        report["words"] += len(words)
        if not words:
            note("empty_sentences", s)
            continue
        tags = _tag_ids(example_field(examples[s], "tags"), label_names, f"sentence {s}") if has_labels else None
        if tags is not None and len(tags) != len(words):
            raise ValueError(f"sentence {s}: {len(words)} words but {len(tags)} tags")
        for w, p in enumerate(word_ids):
            if not p:
                note("words_without_pieces", (s, w, words[w]))
                word_ids[w] = [special.unk]
            elif len(p) > budget:
                note("words_truncated", (s, w))
                word_ids[w] = p[:budget]
        windows = split_into_windows([len(p) for p in word_ids], budget)
        if len(windows) > 1:
            note("sentences_split", s)
        for lo, hi in windows:
            input_ids, labels, firsts = [special.cls], [IGNORE_INDEX], []
            for w in range(lo, hi):
                firsts.append(len(input_ids))
                input_ids += word_ids[w]
                labels += [tags[w] if tags is not None else IGNORE_INDEX] + [IGNORE_INDEX] * (len(word_ids[w]) - 1)
            input_ids.append(special.sep)
            labels.append(IGNORE_INDEX)
            item = {
                "input_ids": np.array(input_ids, dtype=np.int64),
                "token_type_ids": np.zeros(len(input_ids), dtype=np.int64),
            }
            if tags is not None:
                item["labels"] = np.array(labels, dtype=np.int64)
            items.append(item)
            sentence_index.append(s)
            word_start.append(lo)
            first_piece.append(np.array(firsts, dtype=np.int64))
    full_report = {
        "sentences": len(examples),
        "words": 0,
        "windows": len(items),
        "max_len": max_len,
        "sentences_split": 0,
        "words_truncated": 0,
        "words_without_pieces": 0,
        "empty_sentences": 0,
    }
    full_report.update(report)
    full_report["windows"] = len(items)
    full_report["locations"] = dict(locations)
    meta = {
        "sentence_index": np.array(sentence_index, dtype=np.int64),
        "word_start": np.array(word_start, dtype=np.int64),
        "first_piece": first_piece,
        "label_names": tuple(label_names),
        "pad_id": special.pad,
    }
    return Features("conll2003", items, examples, full_report, meta)


def _has_tags(example: Any) -> bool:
    try:
        return example_field(example, "tags") is not None
    except (KeyError, AttributeError):
        return False


def word_predictions(token_predictions: Any, features: Features) -> list[list[str]]:
    """Per-token label ids (N, T) (or logits (N, T, K)) -> one tag per word of every sentence,
    read at each word's first piece. Windows of a split sentence are put back together."""
    preds = torch.as_tensor(token_predictions).detach().cpu()
    if preds.is_floating_point():
        preds = preds.argmax(-1)
    preds = preds.numpy()
    meta = features.meta
    names = np.array(meta["label_names"], dtype=object)
    N = len(meta["first_piece"])
    if preds.shape[0] != N:
        raise ValueError(f"{preds.shape[0]} rows of predictions for {N} windows; pass the whole split, in order")
    out = [[None] * len(example_field(ex, "words")) for ex in features.examples]
    for n in range(N):
        firsts = meta["first_piece"][n]
        if len(firsts) and firsts[-1] >= preds.shape[1]:
            raise ValueError(f"window {n} needs position {firsts[-1]} but predictions have {preds.shape[1]} positions")
        ids = preds[n, firsts]
        if (ids < 0).any() or (ids >= len(names)).any():
            raise ValueError(
                f"window {n}: a word's first piece has label id outside [0, {len(names)}) (was it IGNORE_INDEX?)"
            )
        lo = meta["word_start"][n]
        out[meta["sentence_index"][n]][lo : lo + len(firsts)] = names[ids].tolist()
    return out


def predict_words(model: Any, features: Features, batch_size: int = 64) -> list[list[str]]:
    """The tags a token-classification model (BertForTokenClassification) gives every word of
    featurized sentences: the argmax label at each word's first piece, windows put back together.
    Runs in eval mode (no dropout) on the model's device and restores its mode afterwards."""
    if not len(features):
        return [[] for _ in features.examples]
    logits = predict_batches(model, features, lambda output: detach_cpu(output.logits), batch_size)
    label_ids = [batch.argmax(-1) for batch in logits]  # (B, T_b)
    return word_predictions(stack_ragged(label_ids, IGNORE_INDEX), features)


def evaluate_ner(token_predictions: Any, features: Features) -> dict[str, float]:
    """Entity-level precision, recall, F1 (percentages) of the per-token predictions."""
    predicted = word_predictions(token_predictions, features)
    gold = [list(example_field(ex, "tags")) for ex in features.examples]
    names = features.meta["label_names"]
    gold = [[names[t] if not isinstance(t, str) else t for t in tags] for tags in gold]
    scores = entity_f1(gold, predicted)
    return {"f1": scores["f1"], "precision": scores["precision"], "recall": scores["recall"]}
