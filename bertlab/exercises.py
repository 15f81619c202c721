"""Checks for the exercises: a student runs them in the notebook, no grading server needed.

    from bertlab.exercises import check
    check("attention", attention)             # or check_attention(attention)

Each check calls the student's function on several inputs (real text and real weights where it
matters, edge cases: padding, a single token, odd shapes), compares with bertlab's own
implementation or with values computed from the definition, and either prints a one-line
confirmation of what was checked or raises `ExerciseFailure` (an AssertionError, so an
auto-grader counts it as a failed test) whose message says which input went wrong, where, and
what the usual cause is. A function that still raises NotImplementedError gets "not implemented
yet".

The exercises (book/exercises/, instructor edition with solutions) and the chapter each follows:
    wordpiece       greedy longest-match-first WordPiece of one word      (chapter 2)
    sinusoids       sinusoidal position encodings                          (chapter 3)
    attention       scaled dot-product attention with a padding mask       (chapter 4)
    heads           split_heads / merge_heads, (B,T,H) <-> (B,A,T,d)       (chapter 5)
    masking         MLM 15% selection, 80/10/10 corruption                 (chapter 8)
    nsp             IsNext / NotNext sentence pairs from documents         (chapter 9)
    span            SQuAD best-span decoding                               (chapter 7, sec. 4.2 of the paper)
    features        the paper's feature-based layer combinations           (chapter 7, sec. 5.3 of the paper)

Each check is made of parts that pass or fail on their own; `RESULTS[name]` holds the latest
CheckResult of each check, which is what the grader scores (partial credit).

`python -m bertlab.exercises grade <folder>` grades every submitted notebook in <folder>: it runs
the notebook's code in a fresh kernel, then the checks on the functions it defined, with a time
limit per exercise, and writes grades.csv and grades.json (bertlab.grading; book/instructor.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from bertlab.course import EXERCISES, Exercise  # noqa: F401  (the course table, re-exported)

IGNORE_INDEX = -100
PASS_MARK = "\u2713 [{name}]"  # printed on success, for the student (the grader never reads it)


class ExerciseFailure(AssertionError):
    """A check failed. The message names the exercise, the input and what is wrong; `result`
    (when the whole check ran) is its CheckResult, part by part."""

    def __init__(self, name: str, message: str, result: "CheckResult | None" = None):
        self.exercise = name
        self.detail = message
        self.result = result
        super().__init__(f"[{name}] {message}")


# ------------------------------------------------------------------------------------------------
# Parts: each check is made of parts that pass or fail on their own (partial credit)
# ------------------------------------------------------------------------------------------------
@dataclass
class PartResult:
    """One part of a check: what it tested, whether it passed, and the failure message."""
    name: str
    passed: bool
    message: str = ""


@dataclass
class CheckResult:
    """The outcome of one check, part by part; `fraction` is the share of parts passed."""
    exercise: str
    parts: list[PartResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.parts) and all(p.passed for p in self.parts)

    @property
    def fraction(self) -> float:
        return sum(p.passed for p in self.parts) / len(self.parts) if self.parts else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"exercise": self.exercise, "fraction": self.fraction,
                "parts": [dataclasses.asdict(p) for p in self.parts]}


RESULTS: dict[str, CheckResult] = {}  # the latest result of each check run in this process


class _Parts:
    """with parts("case 0"): ... runs one part; an ExerciseFailure inside it marks the part failed
    and the check goes on with the next part. parts.done(summary) records the CheckResult in
    RESULTS, then prints the confirmation or raises the first failure (with the tally)."""

    def __init__(self, name: str):
        self.name = name
        self.result = CheckResult(name)

    @contextlib.contextmanager
    def __call__(self, label: str):
        __tracebackhide__ = True
        try:
            yield
        except ExerciseFailure as err:
            self.result.parts.append(PartResult(label, False, err.detail))
        except Exception as err:
            if any(not p.passed for p in self.result.parts):  # it needed what an earlier part lacked
                self.result.parts.append(PartResult(label, False, "not checked: an earlier part failed "
                                                    f"({type(err).__name__}: {err})"[:300]))
            else:
                raise
        else:
            self.result.parts.append(PartResult(label, True))

    def done(self, summary: str) -> None:
        __tracebackhide__ = True
        RESULTS[self.name] = self.result
        failed = [p for p in self.result.parts if not p.passed]
        if failed:
            n_ok = len(self.result.parts) - len(failed)
            tally = f"\n({n_ok} of {len(self.result.parts)} parts of this check passed)" if n_ok else ""
            raise ExerciseFailure(self.name, failed[0].message + tally, self.result)
        _passed(self.name, summary)


def _fail(name: str, message: str):
    raise ExerciseFailure(name, message)


def _call(name: str, fn: Callable, *args, **kwargs):
    """Call the student's function; a stub or a crash becomes an ExerciseFailure."""
    __tracebackhide__ = True
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        fname = getattr(fn, "__name__", "your function")
        raise ExerciseFailure(name, f"not implemented yet: replace the `raise NotImplementedError` in "
                                    f"{fname} with your code") from None
    except ExerciseFailure:
        raise
    except Exception as err:
        fname = getattr(fn, "__name__", "your function")
        raise ExerciseFailure(name, f"{fname} raised {type(err).__name__}: {err}") from err


def _passed(name: str, what: str) -> None:
    import textwrap
    print(f"{PASS_MARK.format(name=name)} passed:\n" + textwrap.fill(what, width=84, initial_indent="  ",
                                                                  subsequent_indent="  "))


def _shape_hint(expected: tuple, got: tuple) -> str:
    if len(expected) == len(got) and sorted(expected) == sorted(got):
        diff = [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]
        return f": axes {diff} are in the wrong order (a transpose missing or applied to the wrong axes?)"
    return ""


def _tensor(name: str, value: Any, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        _fail(name, f"{what}: expected a torch.Tensor, got {type(value).__name__}")
    return value


def _same(name: str, got: torch.Tensor, expected: torch.Tensor, what: str, atol: float = 1e-5,
          hints: Sequence[tuple[torch.Tensor, str]] = ()) -> None:
    """got == expected (shape, then values); on a value mismatch, name the first wrong entry and
    say which known mistake (hints: (the result that mistake gives, its explanation)) it matches."""
    got = _tensor(name, got, what)
    if tuple(got.shape) != tuple(expected.shape):
        _fail(name, f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
                    f"{_shape_hint(tuple(expected.shape), tuple(got.shape))}")
    got_f, exp_f = got.detach().double(), expected.detach().double()
    if torch.allclose(got_f, exp_f, atol=atol, rtol=1e-4):
        return
    for wrong, why in hints:
        if wrong.shape == got.shape and torch.allclose(got_f, wrong.detach().double(), atol=atol, rtol=1e-4):
            _fail(name, f"{what}: wrong values; {why}")
    bad = ((got_f - exp_f).abs() > atol + 1e-4 * exp_f.abs()).nonzero()
    idx = tuple(bad[0].tolist())
    _fail(name, f"{what}: {len(bad)} of {got.numel()} values differ; first at index {idx}: "
                f"expected {exp_f[idx].item():.6g}, got {got_f[idx].item():.6g}")


# ------------------------------------------------------------------------------------------------
# Real data shared by the checks (loaded once, from the data mirror or downloaded on Colab)
# ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _tokenizer():
    from bertlab.tokenizer import bert_uncased_tokenizer
    return bert_uncased_tokenizer()


@functools.lru_cache(maxsize=1)
def _squad_dev():
    from bertlab.tasks import get_task
    return get_task("squad").load("dev")


@functools.lru_cache(maxsize=1)
def _documents() -> list[list[str]]:
    """Documents of real sentences: the SQuAD dev paragraphs of each Wikipedia article."""
    from bertlab.corpus import split_sentences
    docs: dict[str, list[str]] = {}
    seen: set[str] = set()
    for ex in _squad_dev():
        if ex.context in seen:
            continue
        seen.add(ex.context)
        docs.setdefault(ex.title, []).extend(split_sentences(ex.context))
    return [d for d in docs.values() if len(d) >= 2]


# ------------------------------------------------------------------------------------------------
# 1. Scaled dot-product attention with a padding mask (chapter 4)
# ------------------------------------------------------------------------------------------------
def _reference_attention(q, k, v, mask=None, scale=True, mask_queries=False):
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(d)
    if mask is not None:
        m = mask[..., :, None] if mask_queries else mask[..., None, :]
        scores = scores.masked_fill(~m.bool(), float("-inf"))
    w = scores.softmax(-1)
    return w @ v, w


def check_attention(attention: Callable) -> None:
    """attention(q, k, v, mask=None) -> (output, weights); q (B, Tq, d), k (B, Tk, d), v (B, Tk, dv),
    mask (B, Tk) bool (True = real token) or None; output (B, Tq, dv), weights (B, Tq, Tk)."""
    __tracebackhide__ = True
    name = "attention"
    parts = _Parts(name)
    g = torch.Generator().manual_seed(0)
    cases = []
    for B, Tq, Tk, d, dv, pads in [(2, 6, 6, 16, 16, (0, 2)), (1, 1, 1, 8, 8, (0,)), (3, 5, 7, 4, 3, (0, 3, 6)),
                                   (2, 4, 4, 64, 64, None)]:
        q, k, v = (torch.randn(B, Tq, d, generator=g), torch.randn(B, Tk, d, generator=g),
                   torch.randn(B, Tk, dv, generator=g))
        mask = None
        if pads is not None:
            mask = torch.ones(B, Tk, dtype=torch.bool)
            for b, p in enumerate(pads):
                if p:
                    mask[b, Tk - p:] = False
        cases.append((q, k, v, mask))
    for n, (q, k, v, mask) in enumerate(cases):
        with parts(f"case {n}"):
            B, Tq, d = q.shape
            Tk = k.shape[1]
            what = f"case {n} (q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, " + \
                   ("no mask)" if mask is None else f"padding per row {(~mask).sum(1).tolist()})")
            result = _call(name, attention, q.clone(), k.clone(), v.clone(), None if mask is None else mask.clone())
            if not (isinstance(result, tuple) and len(result) == 2):
                _fail(name, f"{what}: return a pair (output, weights), got {type(result).__name__}")
            out, w = result
            exp_out, exp_w = _reference_attention(q, k, v, mask)
            w = _tensor(name, w, f"{what}, weights")
            if tuple(w.shape) != (B, Tq, Tk):
                _same(name, w, exp_w, f"{what}, weights")
            sums = w.double().sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                b, i = (sums - 1).abs().argmax().item() // Tq, (sums - 1).abs().argmax().item() % Tq
                _fail(name, f"{what}: the weights of batch row {b}, query {i} sum to {sums[b, i].item():.4f} "
                            f"over the keys, not 1: take the softmax over the last axis (the keys)")
            if mask is not None:
                leak = w.detach().double() * (~mask)[:, None, :]
                if leak.max() > 1e-6:
                    b, i, j = (leak == leak.max()).nonzero()[0].tolist()
                    _fail(name, f"{what}: batch row {b}, query {i} attends to padding position {j} "
                                f"(weight {leak[b, i, j].item():.2f}); padded KEYS must get weight 0: set "
                                f"their scores to -inf before the softmax (mask the last axis)")
            hints = [(_reference_attention(q, k, v, mask, scale=False)[1],
                      "the weights match attention WITHOUT the 1/sqrt(d_k) scaling: divide the scores "
                      f"q k^T by sqrt(d_k) = sqrt({d})"),
                     (_reference_attention(q, k * math.sqrt(d) / d, v, mask)[1],
                      f"the scores were divided by d_k = {d}, not by sqrt(d_k)")]
            _same(name, w, exp_w, f"{what}, weights", hints=hints)
            _same(name, out, exp_out, f"{what}, output (weights were right: multiply them by v)")
    parts.done(f"{len(cases)} cases against softmax(q k^T / sqrt(d_k)) v: weights and output, "
                      "padding in some rows, a single token, T_q != T_k, no mask")


# ------------------------------------------------------------------------------------------------
# 2. Splitting and merging heads (chapter 5)
# ------------------------------------------------------------------------------------------------
def check_heads(split_heads: Callable, merge_heads: Callable) -> None:
    """split_heads(x (B, T, H), num_heads A) -> (B, A, T, d = H / A), head a holding dims
    a*d..(a+1)*d of every token; merge_heads(z (B, A, T, d)) -> (B, T, A*d), its inverse."""
    __tracebackhide__ = True
    name = "heads"
    parts = _Parts(name)
    g = torch.Generator().manual_seed(1)
    shapes = [(2, 7, 64, 4), (1, 1, 12, 3), (3, 5, 24, 1), (2, 4, 384, 12)]
    inputs = [(torch.randn(B, T, H, generator=g), torch.randn(B, A, T, H // A, generator=g), A)
              for B, T, H, A in shapes]
    with parts("split_heads"):
        for x, _, A in inputs:
            B, T, H = x.shape
            d = H // A
            what = f"split_heads(x of shape {(B, T, H)}, num_heads={A})"
            expected = x.view(B, T, A, d).transpose(1, 2)
            got = _call(name, split_heads, x.clone(), A)
            hints = [(x.reshape(B, A, T, d), "you reshaped (B, T, H) straight to (B, A, T, d), which mixes "
                      "tokens into heads; view it as (B, T, A, d) first, then swap the A and T axes"),
                     (x.view(B, T, d, A).permute(0, 3, 1, 2), "head a got every A-th dimension (a, a+A, ...); "
                      "head a must get the contiguous block a*d..(a+1)*d: view as (B, T, A, d), not (B, T, d, A)")]
            got_t = _tensor(name, got, what)
            if tuple(got_t.shape) == (B, T, A, d) and (B, T, A, d) != (B, A, T, d):
                _fail(name, f"{what}: expected shape {(B, A, T, d)}, got {(B, T, A, d)}: did you forget to "
                            "transpose the head and time axes?")
            _same(name, got_t, expected, what, atol=0, hints=hints)
    with parts("merge_heads"):
        for _, z, A in inputs:
            B, A, T, d = z.shape
            H = A * d
            what = f"merge_heads(z of shape {(B, A, T, d)})"
            expected = z.transpose(1, 2).reshape(B, T, H)
            got = _call(name, merge_heads, z.clone())
            hints = [(z.reshape(B, T, H), "you reshaped (B, A, T, d) straight to (B, T, H), which mixes heads "
                      "and tokens; move the head axis next to d first (transpose(1, 2)), then reshape"),
                     (z.permute(0, 2, 3, 1).reshape(B, T, H), "the heads were interleaved dimension by "
                      "dimension; concatenate them instead: (B, A, T, d) -> (B, T, A, d) -> (B, T, A*d)")]
            _same(name, got, expected, what, atol=0, hints=hints)
    with parts("merge_heads(split_heads(x)) == x"):
        for x, _, A in inputs:
            back = _call(name, merge_heads, _call(name, split_heads, x.clone(), A))
            _same(name, back, x, f"merge_heads(split_heads(x, {A})) should give x back", atol=0)
    parts.done(f"{len(shapes)} shapes (incl. T=1, one head, MiniLM's H=384, A=12) against "
                      "bertlab.model.SelfAttention's view/transpose; merge_heads(split_heads(x)) == x")


# ------------------------------------------------------------------------------------------------
# 3. Sinusoidal position encodings (chapter 3)
# ------------------------------------------------------------------------------------------------
def _sinusoids(max_len: int, d: int, swap=False, interleave=True, exponent_step=2) -> torch.Tensor:
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)  # 2i
    freq = 10000.0 ** (-(i if exponent_step == 2 else i / 2) / d)
    ang = pos * freq  # (max_len, ceil(d/2))
    a, b = (torch.cos(ang), torch.sin(ang)) if swap else (torch.sin(ang), torch.cos(ang))
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    if interleave:
        pe[:, 0::2] = a
        pe[:, 1::2] = b[:, : d // 2]
    else:
        pe[:, : (d + 1) // 2] = a
        pe[:, (d + 1) // 2:] = b[:, : d // 2]
    return pe


def check_sinusoids(sinusoidal_positions: Callable) -> None:
    """sinusoidal_positions(max_len, d_model) -> (max_len, d_model) with
    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))."""
    __tracebackhide__ = True
    name = "sinusoids"
    sizes = [(50, 16), (1, 4), (128, 768), (10, 7)]
    parts = _Parts(name)
    for L, d in sizes:
        what = f"sinusoidal_positions({L}, {d})"
        with parts(what):
            got = _call(name, sinusoidal_positions, L, d)
            hints = [(_sinusoids(L, d, swap=True), "sin and cos are swapped: even columns 2i hold sin, odd "
                      "columns 2i+1 hold cos"),
                     (_sinusoids(L, d, interleave=False), "all sines came first and all cosines after; they "
                      "alternate: column 2i is a sine, column 2i+1 the cosine of the same frequency"),
                     (_sinusoids(L, d, exponent_step=1), "the exponent is off by a factor of 2: column pair "
                      "(2i, 2i+1) uses 10000^(2i/d_model), where 2i is the even column index")]
            _same(name, got, _sinusoids(L, d), what, atol=1e-4, hints=hints)
    parts.done(f"{len(sizes)} sizes (incl. one position, odd d_model=7, BERT-base's 768) against "
                      "the formula of Vaswani et al. (2017), section 3.5")


# ------------------------------------------------------------------------------------------------
# 4. WordPiece: greedy longest-match-first (chapter 2)
# ------------------------------------------------------------------------------------------------
def check_wordpiece(wordpiece: Callable) -> None:
    """wordpiece(word, vocab) -> list of pieces: the longest prefix in vocab, then the longest
    "##"-prefixed piece of the rest, and so on; ["[UNK]"] when some part matches nothing or the
    word is longer than 100 characters."""
    __tracebackhide__ = True
    name = "wordpiece"
    tok = _tokenizer()
    vocab = set(tok.get_vocab())
    model = tok.backend.model
    pre = tok.backend.pre_tokenizer
    normalizer = tok.backend.normalizer
    words = ["unaffable", "playing", "tokenization", "the", "a", "bertlab", "x\u2603y", "\u2603",
             "supercalifragilisticexpialidocious", "a" * 101]
    for ex in _squad_dev()[:40:4]:
        words += [w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(ex.context))][:25]
    words = list(dict.fromkeys(words))
    expected_of = {w: [t.value for t in model.tokenize(w)] for w in words}
    parts = _Parts(name)
    for label, group in (("words of real text, BERT's vocabulary", [w for w in words if expected_of[w] != ["[UNK]"]]),
                         ("words that become [UNK]", [w for w in words if expected_of[w] == ["[UNK]"]])):
        with parts(label):
            for w in group:
                expected = expected_of[w]
                got = _call(name, wordpiece, w, vocab)
                if not isinstance(got, list):
                    _fail(name, f"word {w!r}: return a list of strings, got {type(got).__name__}")
                if got == expected:
                    continue
                hint = ""
                if len(expected) > 1 and [p.removeprefix("##") for p in expected] == got:
                    hint = (": every piece after the first must carry the '##' continuation prefix (look it up "
                            "as '##' + piece)")
                elif "[UNK]" in got and len(got) > 1:
                    hint = ": a single unmatched part makes the WHOLE word ['[UNK]'], not just that part"
                elif expected == ["[UNK]"]:
                    hint = (": when some part of the word matches no piece (or it has over 100 characters), the "
                            "whole word becomes ['[UNK]']")
                elif len(got) > len(expected) or (got and expected and len(got[0]) < len(expected[0])):
                    hint = ": take the LONGEST piece in the vocabulary at each step (try the longest substring first)"
                _fail(name, f"token {w!r}: expected {expected}, got {got}{hint}")
    # A toy vocabulary, where the greedy answer differs from the shortest segmentation.
    toy = {"un", "##aff", "##able", "una", "##ffa", "##ble", "[UNK]", "a", "##a"}
    with parts("a toy vocabulary"):
        for w, expected in [("unaffable", ["una", "##ffa", "##ble"]), ("aaa", ["a", "##a", "##a"]),
                            ("una", ["una"]), ("unx", ["[UNK]"])]:
            got = _call(name, wordpiece, w, toy)
            if got != expected:
                _fail(name, f"token {w!r} with the vocabulary {sorted(toy)}: expected {expected}, got {got}")
    parts.done(f"{len(words)} words (SQuAD text, an out-of-vocabulary character, a very long word) "
                      "against the `tokenizers` WordPiece model with BERT's 30,522-piece vocabulary, and 4 "
                      "words with a toy vocabulary")


# ------------------------------------------------------------------------------------------------
# 5. MLM masking, 15% and 80/10/10 (chapter 8)
# ------------------------------------------------------------------------------------------------
def _real_batch(n_rows: int = 8, max_len: int = 64) -> torch.Tensor:
    tok = _tokenizer()
    texts = [s for d in _documents()[:4] for s in d][:n_rows]
    return tok.encode_batch(texts, max_length=max_len, truncation=True, padding="longest",
                            return_tensors="pt").input_ids


def check_masking(mask_batch: Callable) -> None:
    """mask_batch(input_ids (B, T), special_ids, mask_id, vocab_size, generator) -> (corrupted, labels),
    both (B, T): in each row select n = max(1, round(0.15 * n_candidates)) of the non-special tokens;
    each selected one becomes [MASK] (80%), a random non-special id (10%) or stays (10%);
    labels = the original id at selected positions, -100 elsewhere."""
    __tracebackhide__ = True
    name = "masking"
    tok = _tokenizer()
    ids = _real_batch()
    special = sorted(set(tok.special_ids))
    mask_id, V = tok.mask_id, tok.vocab_size
    is_special = torch.isin(ids, torch.tensor(special))
    n_cand = (~is_special).sum(1)
    allowed = [{max(1, round(0.15 * n)), max(1, math.floor(0.15 * n + 0.5))} for n in n_cand.tolist()]
    draws = 150
    parts = _Parts(name)
    results: list[tuple[torch.Tensor, torch.Tensor]] = []
    with parts("returns (corrupted_ids, labels), each of input_ids' shape"):
        g = torch.Generator().manual_seed(0)
        for t in range(draws):
            result = _call(name, mask_batch, ids.clone(), special, mask_id, V, g)
            if not (isinstance(result, tuple) and len(result) == 2):
                _fail(name, f"return a pair (corrupted_ids, labels), got {type(result).__name__}")
            out, labels = (_tensor(name, r, w) for r, w in zip(result, ("corrupted_ids", "labels")))
            for r, w in ((out, "corrupted_ids"), (labels, "labels")):
                if r.shape != ids.shape:
                    _fail(name, f"{w}: expected shape {tuple(ids.shape)} (the shape of input_ids), got "
                                f"{tuple(r.shape)}")
            results.append((out.detach().clone(), labels.detach().clone()))

    def each_draw():
        if len(results) != draws:
            _fail(name, "not checked: mask_batch did not return (corrupted_ids, labels) of the right shape")
        for t, (out, labels) in enumerate(results):
            yield t, out, labels, labels != IGNORE_INDEX, out != ids

    with parts("no special token selected"):
        for t, out, labels, sel, changed in each_draw():
            if (sel & is_special).any():
                b, j = (sel & is_special).nonzero()[0].tolist()
                _fail(name, f"draw {t}, row {b}: position {j} holds the special token "
                            f"{tok.id_to_token(int(ids[b, j]))!r} and was selected; never select [CLS], [SEP] "
                            "or [PAD]")
    with parts("labels: the original id at the selected positions, only those change"):
        for t, out, labels, sel, changed in each_draw():
            if (labels[sel] != ids[sel]).any():
                b, j = ((labels != ids) & sel).nonzero()[0].tolist()
                _fail(name, f"draw {t}, row {b}, position {j}: the label is {int(labels[b, j])} but the original "
                            f"token is {int(ids[b, j])}; the label is the ORIGINAL id (before corruption)")
            if (changed & ~sel).any():
                b, j = (changed & ~sel).nonzero()[0].tolist()
                _fail(name, f"draw {t}, row {b}, position {j}: the token changed ({int(ids[b, j])} -> "
                            f"{int(out[b, j])}) but its label is -100; every changed position must be a selected "
                            "one, with its label")
    with parts("exactly 15% of the non-special tokens per row"):
        for t, out, labels, sel, changed in each_draw():
            for b, n in enumerate(sel.sum(1).tolist()):
                if n not in allowed[b]:
                    _fail(name, f"draw {t}, row {b}: {n} tokens selected out of {int(n_cand[b])} non-special "
                                f"ones; expected exactly {min(allowed[b])} = max(1, round(0.15 * {int(n_cand[b])}))"
                                " (count the non-special tokens only, padding excluded)")
    with parts("random replacements are non-special ids of the vocabulary"):
        for t, out, labels, sel, changed in each_draw():
            rnd = sel & changed & (out != mask_id)
            if torch.isin(out[rnd], torch.tensor(special)).any():
                _fail(name, f"draw {t}: a 'random' replacement is a special token; draw from the non-special ids")
            if ((out[rnd] < 0) | (out[rnd] >= V)).any():
                _fail(name, f"draw {t}: a random replacement lies outside [0, {V})")
    counts = {"mask": 0, "random": 0, "same": 0}
    with parts("80% [MASK], 10% random, 10% unchanged (within 3 points)"):
        for t, out, labels, sel, changed in each_draw():
            counts["mask"] += int((sel & (out == mask_id)).sum())
            counts["random"] += int((sel & changed & (out != mask_id)).sum())
            counts["same"] += int((sel & ~changed).sum())
        total = sum(counts.values())
        if not total:
            _fail(name, f"over {draws} draws no token was selected (every label is -100)")
        shares = {k: v / total for k, v in counts.items()}
        for k, target in (("mask", 0.8), ("random", 0.1), ("same", 0.1)):
            if abs(shares[k] - target) > 0.03:
                _fail(name, f"over {draws} draws ({total} selected tokens): {shares['mask']:.1%} became [MASK], "
                            f"{shares['random']:.1%} a random token, {shares['same']:.1%} stayed the same; "
                            f"expected about 80% / 10% / 10% (the '{k}' share is {shares[k]:.1%}, more than 3 "
                            "points off)")
    with parts("every non-special position can be selected"):
        ever = torch.zeros_like(ids, dtype=torch.bool)
        for t, out, labels, sel, changed in each_draw():
            ever |= sel
        never = (~is_special) & ~ever
        if never.any():
            b, j = never.nonzero()[0].tolist()
            _fail(name, f"over {draws} draws, row {b} position {j} was never selected; choose the positions at "
                        "random among ALL non-special tokens")
    with parts("reproducible: every random number from `generator`"):
        again = _call(name, mask_batch, ids.clone(), special, mask_id, V, torch.Generator().manual_seed(0))
        first = next(each_draw())
        if not (isinstance(again, tuple) and len(again) == 2 and torch.equal(again[0], first[1])
                and torch.equal(again[1], first[2])):
            _fail(name, "two calls with generators seeded alike gave different results: draw every random "
                        "number from `generator` (torch.rand(..., generator=generator))")
    total = max(1, sum(counts.values()))
    shares = {k: v / total for k, v in counts.items()}
    parts.done(f"{draws} draws on {ids.shape[0]} real SQuAD sentences (with padding): no special token "
                      f"selected, exactly 15% per row, labels only at selected positions; shares "
                      f"{shares['mask']:.1%} / {shares['random']:.1%} / {shares['same']:.1%}; every position "
                      "reachable; reproducible")


# ------------------------------------------------------------------------------------------------
# 6. NSP pairs (chapter 9)
# ------------------------------------------------------------------------------------------------
def check_nsp(make_nsp_pairs: Callable) -> None:
    """make_nsp_pairs(documents: list[list[str]], rng: random.Random) -> list[(a, b, label)]:
    one pair for each sentence a that has a next sentence in its document; with probability 1/2
    b is that next sentence (label 0, IsNext), else a random sentence of another document (1, NotNext)."""
    __tracebackhide__ = True
    name = "nsp"
    docs = _documents()
    where: dict[str, set[tuple[int, int]]] = {}
    for d, doc in enumerate(docs):
        for s, sent in enumerate(doc):
            where.setdefault(sent, set()).add((d, s))
    expected_n = sum(len(d) - 1 for d in docs)
    parts = _Parts(name)
    pairs: list = []
    with parts("one (a, b, label) pair per sentence that has a successor"):
        got = _call(name, make_nsp_pairs, [list(d) for d in docs], random.Random(0))
        if not isinstance(got, list):
            _fail(name, f"return a list of (a, b, label) tuples, got {type(got).__name__}")
        for n, p in enumerate(got):
            if not (isinstance(p, tuple) and len(p) == 3 and p[2] in (0, 1)):
                _fail(name, f"pair {n}: expected a tuple (sentence_a, sentence_b, label) with label 0 or 1, "
                            f"got {p!r}"[:300])
            a, b, label = p
            if a not in where or b not in where:
                _fail(name, f"pair {n}: {'a' if a not in where else 'b'} is not a sentence of the documents; "
                            "use the sentences as given")
        pairs = got
        if len(pairs) != expected_n:
            _fail(name, f"{len(docs)} documents with {sum(map(len, docs))} sentences should give {expected_n} "
                        f"pairs (one per sentence that has a next sentence in its document), got {len(pairs)}")

    def valid_pairs():
        if not pairs:
            _fail(name, "not checked: make_nsp_pairs did not return a list of (a, b, label) tuples")
        return enumerate(pairs)

    with parts("IsNext pairs: b follows a in its document"):
        for n, (a, b, label) in valid_pairs():
            if label == 0 and not any((d, s + 1) in where[b] for d, s in where[a]):
                _fail(name, f"pair {n} is labelled IsNext (0) but b does not follow a in any document:\n"
                            f"  a = {a[:80]!r}\n  b = {b[:80]!r}")
    with parts("NotNext pairs: b from another document"):
        for n, (a, b, label) in valid_pairs():
            docs_a = {d for d, _ in where[a]}
            if label == 1 and all(d in docs_a for d, _ in where[b]):
                _fail(name, f"pair {n} is labelled NotNext (1) but b comes from the same document as a; "
                            f"draw b from ANOTHER document:\n  a = {a[:80]!r}\n  b = {b[:80]!r}")
    share = float("nan")
    with parts("about half the pairs NotNext"):
        share = sum(p[2] for _, p in valid_pairs()) / len(pairs)
        if abs(share - 0.5) > 0.04:
            _fail(name, f"{share:.1%} of {len(pairs)} pairs are NotNext; expected about 50% (IsNext and NotNext "
                        "each with probability 1/2)")
    with parts("every sentence with a successor is an `a` once"):
        firsts = [p[0] for _, p in valid_pairs()]
        if sorted(firsts) != sorted(d[s] for d in docs for s in range(len(d) - 1)):
            _fail(name, "sentence a should run over every sentence that has a successor, once each")
    with parts("reproducible: every random choice from `rng`"):
        valid_pairs()
        again = _call(name, make_nsp_pairs, [list(d) for d in docs], random.Random(0))
        if again != pairs:
            _fail(name, "two calls with rng = random.Random(0) gave different pairs: draw every random choice "
                        "from `rng`")
    parts.done(f"{len(pairs)} pairs from {len(docs)} real documents (SQuAD dev articles): IsNext pairs "
                      f"contiguous, NotNext from another document, {share:.1%} NotNext, reproducible")


# ------------------------------------------------------------------------------------------------
# 7. SQuAD span decoding (chapter 7; paper section 4.2)
# ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _squad_features():
    from bertlab.squad import featurize_squad
    return featurize_squad(_squad_dev()[:40], _tokenizer(), max_len=128, doc_stride=64, max_query_len=32)


def check_span(best_span: Callable) -> None:
    """best_span(start_logits (T,), end_logits (T,), context_mask (T,) bool, max_answer_length)
    -> (i, j): the pair maximising start_logits[i] + end_logits[j] with i <= j,
    j - i + 1 <= max_answer_length and context_mask[i] and context_mask[j]."""
    __tracebackhide__ = True
    name = "span"
    from bertlab.squad import best_spans, oracle_logits
    f = _squad_features()
    in_context = torch.as_tensor(f.meta["token_to_char"][..., 0] >= 0)
    N, T = in_context.shape
    g = torch.Generator().manual_seed(0)
    trials = [("random logits", torch.randn(N, T, generator=g), torch.randn(N, T, generator=g), 30),
              ("random logits, max_answer_length=3", torch.randn(N, T, generator=g), torch.randn(N, T, generator=g), 3)]
    so, eo = oracle_logits(f)
    trials.append(("oracle logits (1 at the gold start / end)", so, eo, 30))
    n_checked = 0
    parts = _Parts(name)
    for label, s, e, L in trials:
        scores, starts, ends = best_spans(s, e, in_context, in_context, max_answer_length=L)
        with parts(label):
            for w in range(N):
                if not in_context[w].any():
                    continue
                got = _call(name, best_span, s[w].clone(), e[w].clone(), in_context[w].clone(), L)
                try:
                    i, j = (int(x) for x in got)
                except Exception:
                    _fail(name, f"return a pair of ints (i, j), got {got!r}")
                what = f"window {w} ({label}, max_answer_length={L})"
                if not (0 <= i < T and 0 <= j < T):
                    _fail(name, f"{what}: ({i}, {j}) is outside the window of {T} tokens")
                if j < i:
                    _fail(name, f"{what}: your span ({i}, {j}) ends before it starts; allow only j >= i")
                if j - i + 1 > L:
                    _fail(name, f"{what}: your span ({i}, {j}) is {j - i + 1} tokens long, more than max_answer_length={L}")
                for pos, which in ((i, "start"), (j, "end")):
                    if not in_context[w, pos]:
                        _fail(name, f"{what}: the {which} token {pos} is not a context token (it is the question, "
                                    "[CLS], [SEP] or padding); allow only positions where context_mask is True")
                score = (s[w, i] + e[w, j]).item()
                best = scores[w, 0].item()
                if score < best - 1e-5:
                    _fail(name, f"{what}: your span ({i}, {j}) scores {score:.4f}, but ({int(starts[w, 0])}, "
                                f"{int(ends[w, 0])}) scores {best:.4f}; search every allowed (i, j) pair")
                n_checked += 1
    parts.done(f"{n_checked} windows of {len(f.examples)} real SQuAD dev questions (random and oracle "
                      "logits, two max_answer_length) against bertlab.squad.best_spans")


# ------------------------------------------------------------------------------------------------
# 8. Feature-based combinations of layers (chapter 7; paper section 5.3, table 7)
# ------------------------------------------------------------------------------------------------
STRATEGIES = ("first_layer", "last_hidden", "sum_all", "second_to_last", "sum_last_four", "concat_last_four")


@functools.lru_cache(maxsize=1)
def _hidden_states():
    from bertlab import BertModel
    from bertlab.notebook import minilm_path
    model = BertModel.from_hf(minilm_path()).eval()
    sents = [s for d in _documents()[:2] for s in d][:3]
    enc = _tokenizer().encode_batch(sents, max_length=32, truncation=True, padding="longest", return_tensors="pt")
    with torch.no_grad():
        out = model(enc.input_ids, attention_mask=enc.attention_mask, output_hidden_states=True)
    return out.hidden_states


def _combine(hs, strategy):
    return {"first_layer": lambda: hs[0], "last_hidden": lambda: hs[-1],
            "sum_all": lambda: torch.stack(hs[1:]).sum(0), "second_to_last": lambda: hs[-2],
            "sum_last_four": lambda: torch.stack(hs[-4:]).sum(0),
            "concat_last_four": lambda: torch.cat(hs[-4:], dim=-1)}[strategy]()


def check_features(combine_layers: Callable) -> None:
    """combine_layers(hidden_states, strategy) -> (B, T, H) or (B, T, 4H); hidden_states is the
    tuple of L+1 tensors (B, T, H) from output_hidden_states (embeddings first)."""
    __tracebackhide__ = True
    name = "features"
    hs = _hidden_states()
    n = len(hs) - 1
    # Results of the usual mistakes, named by what they actually compute.
    wrong = {f"hidden_states[{k}]": hs[k] for k in range(len(hs))}
    wrong.update({"the sum of ALL L+1 entries (embedding output included)": torch.stack(hs).sum(0),
                  "the sum of hidden_states[-5:-1] (off by one)": torch.stack(hs[-5:-1]).sum(0),
                  "the sum of the FIRST four entries": torch.stack(hs[:4]).sum(0),
                  "the sum of hidden_states[-3:] (three layers)": torch.stack(hs[-3:]).sum(0),
                  "the MEAN of the last four": torch.stack(hs[-4:]).mean(0),
                  "the concatenation of the last four in reverse order": torch.cat(hs[-4:][::-1], dim=-1),
                  "the concatenation of hidden_states[-5:-1]": torch.cat(hs[-5:-1], dim=-1)})
    parts = _Parts(name)
    for strategy in STRATEGIES:
        what = f"strategy {strategy!r} on a real all-MiniLM-L6-v2 forward pass ({n} layers + embeddings)"
        with parts(strategy):
            got = _call(name, combine_layers, tuple(h.clone() for h in hs), strategy)
            hints = [(v, f"your result equals {k}") for k, v in wrong.items()]
            _same(name, got, _combine(hs, strategy), what, atol=1e-4, hints=hints)
    parts.done(f"all {len(STRATEGIES)} strategies of the paper's table 7 on real MiniLM hidden states "
                      f"({n} layers, H={hs[0].shape[-1]})")


# ------------------------------------------------------------------------------------------------
# One entry point
# ------------------------------------------------------------------------------------------------
CHECKS: dict[str, Callable] = {"attention": check_attention, "heads": check_heads, "sinusoids": check_sinusoids,
                               "wordpiece": check_wordpiece, "masking": check_masking, "nsp": check_nsp,
                               "span": check_span, "features": check_features}


def check(name: str, *functions: Callable) -> None:
    """check("attention", attention); check("heads", split_heads, merge_heads); ..."""
    __tracebackhide__ = True
    if name not in CHECKS:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(CHECKS)}")
    CHECKS[name](*functions)


# ------------------------------------------------------------------------------------------------
# Grading: what the grader runs inside the kernel of a submitted notebook (see bertlab.grading)
# ------------------------------------------------------------------------------------------------
def grade_in_kernel(name: str, functions: Sequence[str], namespace: dict[str, Any], out: str) -> None:
    """Run check `name` on the functions called `functions` in `namespace` (the notebook's
    globals) and write its result, part by part, as JSON to `out`. Prints nothing the grader
    reads; a crash of the check is recorded as its error."""
    import json
    import os
    RESULTS.pop(name, None)
    data: dict[str, Any] = {"exercise": name, "error": "", "parts": []}
    missing = [f for f in functions if not callable(namespace.get(f))]
    if missing:
        data["error"] = (f"[{name}] not defined: {', '.join(missing)} (was its cell deleted, renamed, or did it "
                         "fail to run?)")
        data["parts"] = [{"name": "functions defined", "passed": False, "message": data["error"]}]
    else:
        try:
            CHECKS[name](*[namespace[f] for f in functions])
        except ExerciseFailure:
            pass
        except Exception as err:  # the check stopped before it finished its parts
            data["error"] = f"[{name}] the check stopped: {type(err).__name__}: {err}"[:500]
        result = RESULTS.get(name)
        if result is not None:
            data["parts"] = [dataclasses.asdict(p) for p in result.parts]
        elif not data["error"]:
            data["error"] = f"[{name}] the check recorded no result"
    tmp = f"{out}.tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, out)


def grade(folder: str, out: str | None = None, timeout: int | None = None) -> list:
    """Grade every notebook in `folder` in fresh kernels: see bertlab.grading.grade_folder."""
    from bertlab.grading import grade_folder
    return grade_folder(folder, out, timeout)


def main(argv: Sequence[str] | None = None) -> None:
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "grade":
        print("usage: python -m bertlab.exercises grade <folder> [--timeout S] [--assignment NAME] [--out CSV]",
              file=sys.stderr)
        raise SystemExit(2)
    from bertlab.grading import main as grading_main
    grading_main(argv[1:])


if __name__ == "__main__":
    main()
