"""The checks of assignment 03_pretraining_data: check_masking (chapter 8), check_nsp (chapter 9)."""

from __future__ import annotations

import math
import random
from typing import Callable

import torch

from bertlab.model import IGNORE_INDEX

from .framework import Parts, bert_tokenizer, call_student, expect_tensor, sentence_documents


def check_masking(mask_batch: Callable) -> None:
    """mask_batch(input_ids (B, T), special_ids, mask_id, vocab_size, generator) -> (corrupted, labels),
    both (B, T): in each row select n = max(1, round(0.15 * n_candidates)) of the non-special tokens;
    each selected one becomes [MASK] (80%), a random non-special id (10%) or stays (10%);
    labels = the original id at selected positions, -100 elsewhere."""
    __tracebackhide__ = True
    name = "masking"
    tok = bert_tokenizer()
    texts = [s for d in sentence_documents()[:4] for s in d][:8]  # real sentences, padded
    ids = tok.encode_batch(texts, max_length=64, truncation=True, padding="longest", return_tensors="pt").input_ids
    special = sorted(set(tok.special_ids))
    mask_id, V = tok.mask_id, tok.vocab_size
    is_special = torch.isin(ids, torch.tensor(special))
    n_cand = (~is_special).sum(1)
    allowed = [{max(1, round(0.15 * n)), max(1, math.floor(0.15 * n + 0.5))} for n in n_cand.tolist()]
    draws = 150
    parts = Parts(name)
    results: list[tuple[torch.Tensor, torch.Tensor]] = []
    with parts("returns (corrupted_ids, labels), each of input_ids' shape"):
        g = torch.Generator().manual_seed(0)
        for t in range(draws):
            result = call_student(name, mask_batch, ids.clone(), special, mask_id, V, g)
            if not (isinstance(result, tuple) and len(result) == 2):
                parts.fail(f"return a pair (corrupted_ids, labels), got {type(result).__name__}")
            out, labels = (expect_tensor(name, r, w) for r, w in zip(result, ("corrupted_ids", "labels")))
            for r, w in ((out, "corrupted_ids"), (labels, "labels")):
                if r.shape != ids.shape:
                    parts.fail(f"{w}: expected shape {tuple(ids.shape)} (the shape of input_ids), got {tuple(r.shape)}")
            results.append((out.detach().clone(), labels.detach().clone()))

    def each_draw():
        if len(results) != draws:
            parts.fail("not checked: mask_batch did not return (corrupted_ids, labels) of the right shape")
        for t, (out, labels) in enumerate(results):
            yield t, out, labels, labels != IGNORE_INDEX, out != ids

    with parts("no special token selected"):
        for t, out, labels, sel, changed in each_draw():
            if (sel & is_special).any():
                b, j = (sel & is_special).nonzero()[0].tolist()
                parts.fail(
                    f"draw {t}, row {b}: position {j} holds the special token {tok.id_to_token(int(ids[b, j]))!r} and "
                    "was selected; never select [CLS], [SEP] or [PAD]"
                )
    with parts("labels: the original id at the selected positions, only those change"):
        for t, out, labels, sel, changed in each_draw():
            if (labels[sel] != ids[sel]).any():
                b, j = ((labels != ids) & sel).nonzero()[0].tolist()
                parts.fail(
                    f"draw {t}, row {b}, position {j}: the label is {int(labels[b, j])} but the original "
                    f"token is {int(ids[b, j])}; the label is the ORIGINAL id (before corruption)"
                )
            if (changed & ~sel).any():
                b, j = (changed & ~sel).nonzero()[0].tolist()
                parts.fail(
                    f"draw {t}, row {b}, position {j}: the token changed ({int(ids[b, j])} -> "
                    f"{int(out[b, j])}) but its label is -100; every changed position must be a selected "
                    "one, with its label"
                )
    with parts("exactly 15% of the non-special tokens per row"):
        for t, out, labels, sel, changed in each_draw():
            for b, n in enumerate(sel.sum(1).tolist()):
                if n not in allowed[b]:
                    parts.fail(
                        f"draw {t}, row {b}: {n} tokens selected out of {int(n_cand[b])} non-special "
                        f"ones; expected exactly {min(allowed[b])} = max(1, round(0.15 * {int(n_cand[b])}))"
                        " (count the non-special tokens only, padding excluded)"
                    )
    with parts("random replacements are non-special ids of the vocabulary"):
        for t, out, labels, sel, changed in each_draw():
            rnd = sel & changed & (out != mask_id)
            if torch.isin(out[rnd], torch.tensor(special)).any():
                parts.fail(f"draw {t}: a 'random' replacement is a special token; draw from the non-special ids")
            if ((out[rnd] < 0) | (out[rnd] >= V)).any():
                parts.fail(f"draw {t}: a random replacement lies outside [0, {V})")
    counts = {"mask": 0, "random": 0, "same": 0}
    with parts("80% [MASK], 10% random, 10% unchanged (within 3 points)"):
        for t, out, labels, sel, changed in each_draw():
            counts["mask"] += int((sel & (out == mask_id)).sum())
            counts["random"] += int((sel & changed & (out != mask_id)).sum())
            counts["same"] += int((sel & ~changed).sum())
        total = sum(counts.values())
        if not total:
            parts.fail(f"over {draws} draws no token was selected (every label is -100)")
        shares = {k: v / total for k, v in counts.items()}
        for k, target in (("mask", 0.8), ("random", 0.1), ("same", 0.1)):
            if abs(shares[k] - target) > 0.03:
                parts.fail(
                    f"over {draws} draws ({total} selected tokens): {shares['mask']:.1%} became [MASK], "
                    f"{shares['random']:.1%} a random token, {shares['same']:.1%} stayed the same; "
                    f"expected about 80% / 10% / 10% (the '{k}' share is {shares[k]:.1%}, more than 3 "
                    "points off)"
                )
    with parts("every non-special position can be selected"):
        ever = torch.zeros_like(ids, dtype=torch.bool)
        for t, out, labels, sel, changed in each_draw():
            ever |= sel
        never = (~is_special) & ~ever
        if never.any():
            b, j = never.nonzero()[0].tolist()
            parts.fail(
                f"over {draws} draws, row {b} position {j} was never selected; choose the positions at "
                "random among ALL non-special tokens"
            )
    with parts("reproducible: every random number from `generator`"):
        again = call_student(name, mask_batch, ids.clone(), special, mask_id, V, torch.Generator().manual_seed(0))
        first = next(each_draw())
        same = isinstance(again, tuple) and len(again) == 2 and all(map(torch.equal, again, first[1:3]))
        if not same:
            parts.fail(
                "two calls with generators seeded alike gave different results: draw every random "
                "number from `generator` (torch.rand(..., generator=generator))"
            )
    total = max(1, sum(counts.values()))
    shares = {k: v / total for k, v in counts.items()}
    parts.done(
        f"{draws} draws on {ids.shape[0]} real SQuAD sentences (with padding): no special token selected, exactly 15% "
        f"per row, labels only at selected positions; shares {shares['mask']:.1%} / {shares['random']:.1%} / "
        f"{shares['same']:.1%}; every position reachable; reproducible"
    )


def check_nsp(make_nsp_pairs: Callable) -> None:
    """make_nsp_pairs(documents: list[list[str]], rng: random.Random) -> list[(a, b, label)]:
    one pair for each sentence a that has a next sentence in its document; with probability 1/2
    b is that next sentence (label 0, IsNext), else a random sentence of another document (1, NotNext)."""
    __tracebackhide__ = True
    name = "nsp"
    docs = sentence_documents()
    where: dict[str, set[tuple[int, int]]] = {}
    for d, doc in enumerate(docs):
        for s, sent in enumerate(doc):
            where.setdefault(sent, set()).add((d, s))
    expected_n = sum(len(d) - 1 for d in docs)
    parts = Parts(name)
    pairs: list = []
    with parts("one (a, b, label) pair per sentence that has a successor"):
        got = call_student(name, make_nsp_pairs, [list(d) for d in docs], random.Random(0))
        if not isinstance(got, list):
            parts.fail(f"return a list of (a, b, label) tuples, got {type(got).__name__}")
        for n, p in enumerate(got):
            if not (isinstance(p, tuple) and len(p) == 3 and p[2] in (0, 1)):
                parts.fail(
                    f"pair {n}: expected a tuple (sentence_a, sentence_b, label) with label 0 or 1, got {p!r}"[:300]
                )
            a, b, label = p
            if a not in where or b not in where:
                parts.fail(
                    f"pair {n}: {'a' if a not in where else 'b'} is not a sentence of the documents; "
                    "use the sentences as given"
                )
        pairs = got
        if len(pairs) != expected_n:
            parts.fail(
                f"{len(docs)} documents with {sum(map(len, docs))} sentences should give {expected_n} "
                f"pairs (one per sentence that has a next sentence in its document), got {len(pairs)}"
            )

    def valid_pairs():
        if not pairs:
            parts.fail("not checked: make_nsp_pairs did not return a list of (a, b, label) tuples")
        return enumerate(pairs)

    with parts("IsNext pairs: b follows a in its document"):
        for n, (a, b, label) in valid_pairs():
            if label == 0 and not any((d, s + 1) in where[b] for d, s in where[a]):
                parts.fail(
                    f"pair {n} is labelled IsNext (0) but b does not follow a in any document:\n"
                    f"  a = {a[:80]!r}\n  b = {b[:80]!r}"
                )
    with parts("NotNext pairs: b from another document"):
        for n, (a, b, label) in valid_pairs():
            docs_a = {d for d, _ in where[a]}
            if label == 1 and all(d in docs_a for d, _ in where[b]):
                parts.fail(
                    f"pair {n} is labelled NotNext (1) but b comes from the same document as a; "
                    f"draw b from ANOTHER document:\n  a = {a[:80]!r}\n  b = {b[:80]!r}"
                )
    share = float("nan")
    with parts("about half the pairs NotNext"):
        share = sum(p[2] for _, p in valid_pairs()) / len(pairs)
        if abs(share - 0.5) > 0.04:
            parts.fail(
                f"{share:.1%} of {len(pairs)} pairs are NotNext; expected about 50% (IsNext and NotNext "
                "each with probability 1/2)"
            )
    with parts("every sentence with a successor is an `a` once"):
        firsts = [p[0] for _, p in valid_pairs()]
        if sorted(firsts) != sorted(d[s] for d in docs for s in range(len(d) - 1)):
            parts.fail("sentence a should run over every sentence that has a successor, once each")
    with parts("reproducible: every random choice from `rng`"):
        valid_pairs()
        again = call_student(name, make_nsp_pairs, [list(d) for d in docs], random.Random(0))
        if again != pairs:
            parts.fail(
                "two calls with rng = random.Random(0) gave different pairs: draw every random choice from `rng`"
            )
    parts.done(
        f"{len(pairs)} pairs from {len(docs)} real documents (SQuAD dev articles): IsNext pairs "
        f"contiguous, NotNext from another document, {share:.1%} NotNext, reproducible"
    )
