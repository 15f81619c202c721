"""Token classification (CoNLL-2003 named entities): one label per word, from word pieces.

CoNLL-2003 tags every word in IOB2 (B-PER begins a person's name, I-PER continues it, O is
outside). BERT reads word pieces ("Leicestershire" -> "leicester", "##shire"), so, as in the paper
(section 5.3), each word's label goes on its FIRST piece; other pieces, [CLS], [SEP] and padding
get IGNORE_INDEX (-100): no loss, never read. A sentence longer than max_len - 2 pieces is split
between words into windows; a word with no piece at all becomes [UNK] (both counted in the report).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from bertlab.model import IGNORE_INDEX
from bertlab.tasks.inputs import (
    Features,
    SpecialIds,
    Tally,
    detach_cpu,
    example_field,
    fast_tokenizer,
    label_id,
    predict_batches,
    stack_ragged,
)
from bertlab.tasks.metrics import entity_f1


def word_pieces(backend: Any, sentences: Sequence[Sequence[str]]) -> list[list[list[int]]]:
    """For each sentence, for each word, its piece ids (empty where the tokenizer gives none)."""
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
    """Greedy runs of whole words of at most `budget` pieces each: [(first_word, end_word), ...]."""
    windows, start, used = [], 0, 0
    for w, n in enumerate(piece_counts):
        n = min(n, budget)
        if used + n > budget and w > start:
            windows.append((start, w))
            start, used = w, 0
        used += n
    windows.append((start, len(piece_counts)))
    return windows


def featurize_ner(
    examples: Sequence[Any], tokenizer: Any, max_len: int = 128, label_names: Sequence[str] = ()
) -> Features:
    """CoNLL examples (`words`, `tags`) -> items input_ids [CLS] pieces [SEP], token_type_ids and
    labels (the tag id on each word's first piece, IGNORE_INDEX elsewhere). `features.meta` holds
    each window's sentence_index, word_start and first_piece (each word's first position)."""
    if not label_names:
        raise ValueError("featurize_ner needs label_names (the tag of each label id)")
    if max_len < 3:
        raise ValueError(f"max_len={max_len} leaves no room for words after [CLS] and [SEP]")
    backend = fast_tokenizer(tokenizer)
    special = SpecialIds.of(backend)
    sentences = [list(example_field(ex, "words")) for ex in examples]
    has_labels = all(example_field(ex, "tags", None) is not None for ex in examples)
    pieces = word_pieces(backend, sentences)
    budget = max_len - 2

    tally = Tally()
    items, sentence_index, word_start, first_piece = [], [], [], []
    for s, (words, word_ids) in enumerate(zip(sentences, pieces)):
        tally["words"] += len(words)
        if not words:
            tally.note("empty_sentences", s)
            continue
        tags = None
        if has_labels:
            tags = [label_id(t, label_names, f"sentence {s}", "tag") for t in example_field(examples[s], "tags")]
        if tags is not None and len(tags) != len(words):
            raise ValueError(f"sentence {s}: {len(words)} words but {len(tags)} tags")
        for w, p in enumerate(word_ids):
            if not p:
                tally.note("words_without_pieces", (s, w, words[w]))
                word_ids[w] = [special.unk]
            elif len(p) > budget:
                tally.note("words_truncated", (s, w))
                word_ids[w] = p[:budget]
        windows = split_into_windows([len(p) for p in word_ids], budget)
        if len(windows) > 1:
            tally.note("sentences_split", s)
        for lo, hi in windows:
            input_ids, labels, firsts = [special.cls], [IGNORE_INDEX], []
            for w in range(lo, hi):
                firsts.append(len(input_ids))
                input_ids += word_ids[w]
                labels += [tags[w] if tags is not None else IGNORE_INDEX] + [IGNORE_INDEX] * (len(word_ids[w]) - 1)
            input_ids.append(special.sep)
            labels.append(IGNORE_INDEX)
            item = {"input_ids": np.array(input_ids, np.int64), "token_type_ids": np.zeros(len(input_ids), np.int64)}
            if tags is not None:
                item["labels"] = np.array(labels, dtype=np.int64)
            items.append(item)
            sentence_index.append(s)
            word_start.append(lo)
            first_piece.append(np.array(firsts, dtype=np.int64))
    counted = ("sentences_split", "words_truncated", "words_without_pieces", "empty_sentences")
    head = {"sentences": len(examples), "words": 0, "windows": len(items), "max_len": max_len}
    meta = {
        "sentence_index": np.array(sentence_index, dtype=np.int64),
        "word_start": np.array(word_start, dtype=np.int64),
        "first_piece": first_piece,
        "label_names": tuple(label_names),
        "pad_id": special.pad,
    }
    return Features("conll2003", items, examples, tally.report(head, counted), meta)


def word_predictions(token_predictions: Any, features: Features) -> list[list[str]]:
    """Label ids (N, T) or logits (N, T, K) -> one tag per word of every sentence, read at each
    word's first piece, windows put back together."""
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


def predict_words(model: Any, features: Features, batch_size: int = 64, rt: Any = None) -> list[list[str]]:
    """The tags a BertForTokenClassification gives every word (eval mode, mode restored; rt: as in predict_batches)."""
    if not len(features):
        return [[] for _ in features.examples]
    logits = predict_batches(model, features, lambda output: detach_cpu(output.logits), batch_size, rt)
    label_ids = [batch.argmax(-1) for batch in logits]  # (B, T_b)
    return word_predictions(stack_ragged(label_ids, IGNORE_INDEX), features)


def evaluate_ner(token_predictions: Any, features: Features) -> dict[str, float]:
    """Entity-level precision, recall, F1 (percentages) of the per-token predictions."""
    predicted = word_predictions(token_predictions, features)
    names = features.meta["label_names"]
    tags = [example_field(ex, "tags") for ex in features.examples]
    gold = [[t if isinstance(t, str) else names[t] for t in sentence] for sentence in tags]
    scores = entity_f1(gold, predicted)
    return {"f1": scores["f1"], "precision": scores["precision"], "recall": scores["recall"]}
