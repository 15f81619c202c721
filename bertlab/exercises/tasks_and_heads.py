"""The checks of assignment 07_tasks_and_heads: check_ner_labels (chapter 14), check_head_probe (chapter 16)."""

from __future__ import annotations

import functools
from typing import Callable

import torch

from bertlab.model import IGNORE_INDEX, BertModel
from bertlab.notebook import minilm_path

from .framework import Parts, bert_tokenizer, call_student, expect_same, sentence_documents


@functools.lru_cache(maxsize=1)
def _conll_cases() -> tuple[list[tuple[list[str], list[int | None], list[int], list[int]]], tuple[str, ...]]:
    """Real CoNLL-2003 dev sentences: (words, word_ids of [CLS] pieces [SEP], tag ids, the labels
    bertlab.tasks.ner.featurize_ner gives each piece)."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks import get_task
    from bertlab.tasks.inputs import fast_tokenizer
    from bertlab.tasks.ner import featurize_ner

    task = get_task("conll2003")
    sentences = [s for s in task.load("dev")[:400] if len(s.words) > 1][:120]
    tok = bert_tokenizer()
    backend = fast_tokenizer(tok)
    feats = featurize_ner(sentences, tok, max_len=512, label_names=task.label_names)
    cases = []
    for s, item in zip(sentences, feats.items):
        enc = backend.encode(list(s.words), is_pretokenized=True, add_special_tokens=False)
        ids = [tok.cls_id, *enc.ids, tok.sep_id]
        if ids != item["input_ids"].tolist():  # a word with no piece: featurize_ner puts [UNK] there
            continue
        word_ids = [None, *enc.word_ids, None]
        tags = [task.label_names.index(t) for t in s.tags]
        cases.append((list(s.words), word_ids, tags, item["labels"].tolist()))
    return cases, task.label_names


def check_ner_labels(align_labels: Callable, word_predictions: Callable) -> None:
    """align_labels(word_ids, word_labels) -> one label per token: the word's label on its FIRST
    piece, -100 on its other pieces and on [CLS] / [SEP] (word_id None).
    word_predictions(token_predictions, word_ids) -> one prediction per word: the one at the
    word's first piece."""
    __tracebackhide__ = True
    name = "ner_labels"
    cases, label_names = _conll_cases()
    parts = Parts(name)
    n_split = sum(any(a == b for a, b in zip(w[1:], w[2:]) if a is not None) for _, w, _, _ in cases)

    def hint_for(word_ids, tags, got):
        every = [IGNORE_INDEX if w is None else tags[w] for w in word_ids]
        last = [
            IGNORE_INDEX if w is None or (k + 1 < len(word_ids) and word_ids[k + 1] == w) else tags[w]
            for k, w in enumerate(word_ids)
        ]
        specials = [0 if w is None else x for w, x in zip(word_ids, got)]
        if got == every:
            return ": every piece got its word's label; only the FIRST piece of a word does, the others get -100"
        if got == last:
            return ": the label went on the LAST piece of each word; put it on the first"
        if got == specials and got != every:
            return ": [CLS] and [SEP] (word id None) must get -100, not a label"
        return ""

    with parts(f"{len(cases)} real CoNLL-2003 dev sentences against bertlab.tasks.ner.featurize_ner"):
        for n, (words, word_ids, tags, expected) in enumerate(cases):
            got = call_student(name, align_labels, list(word_ids), list(tags))
            got = [int(x) for x in got] if isinstance(got, (list, tuple, torch.Tensor)) else got
            if not isinstance(got, list) or len(got) != len(word_ids):
                parts.fail(
                    f"sentence {n}: return a list with one label per token ({len(word_ids)}), got "
                    f"{type(got).__name__}" + (f" of length {len(got)}" if hasattr(got, "__len__") else "")
                )
            if got != expected:
                k = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
                w = word_ids[k]
                where = "[CLS]/[SEP]" if w is None else f"a piece of the word {words[w]!r}"
                parts.fail(
                    f"sentence {n} ({' '.join(words)[:60]!r}): token {k} ({where}) got label {got[k]}, "
                    f"expected {expected[k]}{hint_for(word_ids, tags, got)}"
                )
    with parts("edge cases: one word, one word of many pieces, the label 0 ('O')"):
        for word_ids, tags in (
            ([None, 0, None], [3]),
            ([None, 0, 0, 0, 0, None], [0]),
            ([None, 0, 1, 1, 2, None], [0, 5, 0]),
            ([None, 0, 0, 1, 2, 2, 2, None], [1, 2, 0]),
        ):
            expected = [
                IGNORE_INDEX if w is None or (k and word_ids[k - 1] == w) else tags[w] for k, w in enumerate(word_ids)
            ]
            got = call_student(name, align_labels, list(word_ids), list(tags))
            got = [int(x) for x in got] if isinstance(got, (list, tuple, torch.Tensor)) else got
            if got != expected:
                parts.fail(
                    f"align_labels({word_ids}, {tags}): expected {expected}, got {got}"
                    + (hint_for(word_ids, tags, got) if isinstance(got, list) else "")
                )
    g = torch.Generator().manual_seed(13)
    with parts("word_predictions reads each word's first piece"):
        for n, (words, word_ids, tags, expected) in enumerate(cases):
            preds = torch.randint(0, len(label_names), (len(word_ids),), generator=g)
            want = [int(preds[k]) for k, w in enumerate(word_ids) if w is not None and (k == 0 or word_ids[k - 1] != w)]
            got = call_student(name, word_predictions, preds.clone(), list(word_ids))
            got = [int(x) for x in got] if isinstance(got, (list, tuple, torch.Tensor)) else got
            if got != want:
                if isinstance(got, list) and len(got) == len(word_ids):
                    parts.fail(f"sentence {n}: return one prediction per WORD ({len(words)}), not per token")
                parts.fail(
                    f"sentence {n} ({' '.join(words)[:60]!r}): expected {want}, got {got}: read the "
                    "prediction at the first piece of every word, in word order"
                )
    with parts("word_predictions(align_labels(word_ids, tags), word_ids) gives the tags back"):
        for n, (words, word_ids, tags, expected) in enumerate(cases[:40]):
            back = call_student(
                name,
                word_predictions,
                torch.tensor(call_student(name, align_labels, list(word_ids), list(tags))),
                list(word_ids),
            )
            back = [int(x) for x in back] if isinstance(back, (list, tuple, torch.Tensor)) else back
            if back != tags:
                parts.fail(f"sentence {n}: word_predictions(align_labels(...)) gave {back}, not the tags {tags}")
    parts.done(
        f"{len(cases)} real CoNLL-2003 sentences ({n_split} with words of several pieces) against "
        "bertlab.tasks.ner.featurize_ner, edge cases, and the way back to one prediction per word"
    )


@functools.lru_cache(maxsize=1)
def _minilm_attention():
    """all-MiniLM-L6-v2's attention maps on 16 real sentence pairs (padded): (attentions,
    attention_mask, input_ids)."""
    model = BertModel.from_hf(minilm_path()).eval()
    sents = [s for d in sentence_documents()[6:14] for s in d]
    enc = bert_tokenizer().encode_batch(
        sents[0:32:2], sents[1:33:2], max_length=64, truncation=True, padding="longest", return_tensors="pt"
    )
    with torch.no_grad():
        out = model(enc.input_ids, enc.token_type_ids, enc.attention_mask, output_attentions=True)
    return out.attentions, enc.attention_mask, enc.input_ids


def _targets(input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """(B, T, T) bool: which keys count, for each query, for the probes of chapter 16."""
    B, T = input_ids.shape
    tok = bert_tokenizer()
    i = torch.arange(T)
    key = lambda keys: keys[:, None, :].expand(B, T, T)  # noqa: E731
    return {
        "[SEP]": key(input_ids == tok.sep_id),
        "[CLS]": key(input_ids == tok.cls_id),
        "the previous token": (i[None, :] == i[:, None] - 1).expand(B, T, T),
        "the next token": (i[None, :] == i[:, None] + 1).expand(B, T, T),
        "itself": torch.eye(T, dtype=torch.bool).expand(B, T, T),
    }


def _head_scores(attentions, attention_mask, target) -> torch.Tensor:
    att = torch.stack(tuple(attentions)).double()  # (L, B, A, T, T)
    mass = (att * target[None, :, None].double()).sum(-1)  # (L, B, A, T)
    real = attention_mask.bool()[None, :, None, :].double()
    return (mass * real).sum((1, 3)) / attention_mask.bool().sum()  # (L, A)


def check_head_probe(head_scores: Callable, best_head: Callable) -> None:
    """head_scores(attentions, attention_mask, target) -> (L, A): for every head, the attention it
    puts on the keys `target` (B, T, T) marks, averaged over the real (non-padding) query tokens
    of the batch. best_head(scores (L, A)) -> (layer, head) of the highest score."""
    __tracebackhide__ = True
    name = "head_probe"
    attentions, mask, ids = _minilm_attention()
    targets = _targets(ids)
    L, (B, A, T, _) = len(attentions), attentions[0].shape
    parts = Parts(name)
    for label in ("[SEP]", "the previous token", "itself"):
        with parts(f"scores for attention to {label}"):
            expected = _head_scores(attentions, mask, targets[label])
            got = call_student(
                name, head_scores, tuple(a.clone() for a in attentions), mask.clone(), targets[label].clone()
            )
            mass = (torch.stack(attentions).double() * targets[label][None, :, None]).sum(-1)  # (L, B, A, T)
            summed = (mass * mask.bool()[None, :, None, :]).sum((1, 3))  # (L, A)
            hints = [
                (
                    mass.mean((1, 3)),
                    "the mean ran over every position, padding included: average over the REAL query tokens only "
                    "(attention_mask == 1)",
                ),
                (summed, "this is the sum over the query tokens: divide by how many real query tokens there are"),
                (summed / (B * T), "divide by the number of REAL query tokens, not B * T"),
            ]
            what = f"head_scores for attention to {label} (MiniLM, {L} layers x {A} heads, {B} padded sentence pairs)"
            expect_same(name, got, expected, what, hints=hints)
    with parts("best_head returns (layer, head) of the highest score"):
        g = torch.Generator().manual_seed(14)
        for scores in [
            torch.rand(L, A, generator=g),
            torch.rand(3, 5, generator=g),
            torch.rand(1, 1, generator=g),
            _head_scores(attentions, mask, targets["[CLS]"]),
        ]:
            got = call_student(name, best_head, scores.clone())
            want = divmod(int(scores.argmax()), scores.shape[1])
            try:
                got_t = tuple(int(x) for x in got)
            except Exception:
                parts.fail(f"best_head: return a pair of ints (layer, head), got {got!r}")
            if got_t != want:
                hint = " (that is (head, layer): the layer comes first)" if got_t == want[::-1] else ""
                parts.fail(f"best_head on scores of shape {tuple(scores.shape)}: expected {want}, got {got_t}{hint}")
    measured = {}
    with parts("the heads your functions find have the measured property"):
        for label in ("[SEP]", "the previous token", "the next token"):
            scores = _head_scores(attentions, mask, targets[label])
            got = call_student(
                name, best_head, call_student(name, head_scores, tuple(attentions), mask, targets[label])
            )
            layer, head = (int(x) for x in got)
            if not (0 <= layer < L and 0 <= head < A):
                parts.fail(f"the head found for {label}, ({layer}, {head}), is not a head of this {L} x {A} model")
            share, best = scores[layer, head].item(), scores.max().item()
            if share < best - 1e-6:
                parts.fail(
                    f"the head found for attention to {label}, layer {layer} head {head}, puts {share:.1%} "
                    f"of its attention there, but another head puts {best:.1%}"
                )
            measured[label] = (layer, head, share)
    parts.done(
        f"head scores on all-MiniLM-L6-v2's {L} x {A} heads over {B} real sentence pairs with padding "
        "(attention to [SEP], the previous token, the token itself); best_head; "
        + "; ".join(f"{k}: layer {v[0]} head {v[1]} ({v[2]:.0%})" for k, v in measured.items())
    )
