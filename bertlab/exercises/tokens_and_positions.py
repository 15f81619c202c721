"""The checks of assignment 01_tokens_and_positions: check_sinusoids (chapter 3), check_wordpiece
(chapter 2)."""

from __future__ import annotations

from typing import Callable

import torch

from .framework import Parts, bert_tokenizer, call_student, expect_same, squad_dev_examples

SINUSOID_MISTAKES = {  # what _sinusoids(..., mistake) computes -> the hint
    "swap": "sin and cos are swapped: even columns 2i hold sin, odd columns 2i+1 hold cos",
    "concat": "all sines came first and all cosines after; they alternate: column 2i is a sine, column 2i+1 the "
    "cosine of the same frequency",
    "exponent": "the exponent is off by a factor of 2: column pair (2i, 2i+1) uses 10000^(2i/d_model), where 2i is "
    "the even column index",
}


def _sinusoids(max_len: int, d: int, mistake: str = "") -> torch.Tensor:
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)  # 2i
    freq = 10000.0 ** (-(i / 2 if mistake == "exponent" else i) / d)
    ang = pos * freq  # (max_len, ceil(d/2))
    a, b = (torch.cos(ang), torch.sin(ang)) if mistake == "swap" else (torch.sin(ang), torch.cos(ang))
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    if mistake == "concat":
        pe[:, : (d + 1) // 2] = a
        pe[:, (d + 1) // 2 :] = b[:, : d // 2]
    else:
        pe[:, 0::2] = a
        pe[:, 1::2] = b[:, : d // 2]
    return pe


def check_sinusoids(sinusoidal_positions: Callable) -> None:
    """sinusoidal_positions(max_len, d_model) -> (max_len, d_model) with
    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))."""
    __tracebackhide__ = True
    name = "sinusoids"
    sizes = [(50, 16), (1, 4), (128, 768), (10, 7)]
    parts = Parts(name)
    for L, d in sizes:
        what = f"sinusoidal_positions({L}, {d})"
        with parts(what):
            got = call_student(name, sinusoidal_positions, L, d)
            hints = [(_sinusoids(L, d, mistake), why) for mistake, why in SINUSOID_MISTAKES.items()]
            expect_same(name, got, _sinusoids(L, d), what, atol=1e-4, hints=hints)
    parts.done(
        f"{len(sizes)} sizes (incl. one position, odd d_model=7, BERT-base's 768) against "
        "the formula of Vaswani et al. (2017), section 3.5"
    )


def check_wordpiece(wordpiece: Callable) -> None:
    """wordpiece(word, vocab) -> list of pieces: the longest prefix in vocab, then the longest
    "##"-prefixed piece of the rest, and so on; ["[UNK]"] when some part matches nothing or the
    word is longer than 100 characters."""
    __tracebackhide__ = True
    name = "wordpiece"
    tok = bert_tokenizer()
    vocab = set(tok.get_vocab())
    model, pre, normalizer = tok.backend.model, tok.backend.pre_tokenizer, tok.backend.normalizer
    words = ["unaffable", "playing", "tokenization", "the", "a", "bertlab", "x\u2603y", "\u2603"]
    words += ["supercalifragilisticexpialidocious", "a" * 101]
    for ex in squad_dev_examples()[:40:4]:
        words += [w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(ex.context))][:25]
    words = list(dict.fromkeys(words))
    expected_of = {w: [t.value for t in model.tokenize(w)] for w in words}
    parts = Parts(name)
    for label, group in (
        ("words of real text, BERT's vocabulary", [w for w in words if expected_of[w] != ["[UNK]"]]),
        ("words that become [UNK]", [w for w in words if expected_of[w] == ["[UNK]"]]),
    ):
        with parts(label):
            for w in group:
                expected = expected_of[w]
                got = call_student(name, wordpiece, w, vocab)
                if not isinstance(got, list):
                    parts.fail(f"word {w!r}: return a list of strings, got {type(got).__name__}")
                if got == expected:
                    continue
                hint = ""
                if len(expected) > 1 and [p.removeprefix("##") for p in expected] == got:
                    hint = (
                        ": every piece after the first must carry the '##' continuation prefix (look it up "
                        "as '##' + piece)"
                    )
                elif "[UNK]" in got and len(got) > 1:
                    hint = ": a single unmatched part makes the WHOLE word ['[UNK]'], not just that part"
                elif expected == ["[UNK]"]:
                    hint = (
                        ": when some part of the word matches no piece (or it has over 100 characters), the "
                        "whole word becomes ['[UNK]']"
                    )
                elif len(got) > len(expected) or (got and expected and len(got[0]) < len(expected[0])):
                    hint = ": take the LONGEST piece in the vocabulary at each step (try the longest substring first)"
                parts.fail(f"token {w!r}: expected {expected}, got {got}{hint}")
    # A toy vocabulary, where the greedy answer differs from the shortest segmentation.
    toy = {"un", "##aff", "##able", "una", "##ffa", "##ble", "[UNK]", "a", "##a"}
    with parts("a toy vocabulary"):
        for w, expected in [
            ("unaffable", ["una", "##ffa", "##ble"]),
            ("aaa", ["a", "##a", "##a"]),
            ("una", ["una"]),
            ("unx", ["[UNK]"]),
        ]:
            got = call_student(name, wordpiece, w, toy)
            if got != expected:
                parts.fail(f"token {w!r} with the vocabulary {sorted(toy)}: expected {expected}, got {got}")
    parts.done(
        f"{len(words)} words (SQuAD text, an out-of-vocabulary character, a very long word) against the `tokenizers` "
        "WordPiece model with BERT's 30,522-piece vocabulary, and 4 words with a toy vocabulary"
    )
