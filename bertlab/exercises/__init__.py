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
    span            SQuAD best-span decoding                               (chapter 13, sec. 4.2 of the paper)
    features        the paper's feature-based layer combinations           (chapter 15, sec. 5.3 of the paper)
    encoder_layer   a post-LN encoder layer, against bertlab's EncoderLayer   (chapter 6)
    param_count     BERT's parameter count in closed form                  (chapter 7)
    pretraining_step  MLM + NSP loss, backward, clipping, the AdamW step   (chapter 10)
    finetune_loop   a fine-tuning loop with warm-up, and its accuracy      (chapter 11)
    ner_labels      word labels onto first pieces, predictions back        (chapter 14)
    head_probe      find heads by measuring where they attend              (chapter 16)
    ablation_plan   the form of an ablation's plan                         (chapter 17)
The course table (points, difficulty, time, hardware of each) is bertlab.course.

Each check is made of parts that pass or fail on their own; `RESULTS[name]` holds the latest
CheckResult of each check, which is what the grader scores (partial credit).

`python -m bertlab.exercises grade <folder>` grades every submitted notebook in <folder>: it runs
the notebook's code in a fresh kernel, then the checks on the functions it defined, with a time
limit per exercise, and writes grades.csv and grades.json (bertlab.course.grading; book/instructor.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from bertlab.config import PRESETS
from bertlab.course import EXERCISES, Exercise  # noqa: F401  (the course table, re-exported)
from bertlab.data.masking import mask_tokens
from bertlab.files import write_text
from bertlab.model import (
    IGNORE_INDEX,
    BertConfig,
    BertForPreTraining,
    BertForSequenceClassification,
    BertModel,
    attention_mask_for,
)
from bertlab.model import EncoderLayer as ReferenceEncoderLayer  # check_encoder_layer's argument is EncoderLayer
from bertlab.notebook import minilm_path
from bertlab.prose import count
from bertlab.training.optim import adamw, optimizer_step
from bertlab.training.recipes import RECIPES, Recipe, get_recipe

_NOT_RUN = object()  # what a check holds before the student's function has returned
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
        fname = _fn_name(fn)
        raise ExerciseFailure(name, f"not implemented yet: replace the `raise NotImplementedError` in "
                                    f"{fname} with your code") from None
    except ExerciseFailure:
        raise
    except Exception as err:
        raise ExerciseFailure(name, f"{_fn_name(fn)} raised {type(err).__name__}: {err}") from err


def _fn_name(fn: Any) -> str:
    """The name to show for what the student wrote: a function, a class, or a module's forward."""
    if hasattr(fn, "__name__"):
        return fn.__name__
    if isinstance(fn, torch.nn.Module):
        return f"{type(fn).__name__}.forward"
    return "your function"


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
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.data.tokenizer import bert_uncased_tokenizer
    return bert_uncased_tokenizer()


@functools.lru_cache(maxsize=1)
def _squad_dev():
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks import get_task
    return get_task("squad").load("dev")


@functools.lru_cache(maxsize=1)
def _documents() -> list[list[str]]:
    """Documents of real sentences: the SQuAD dev paragraphs of each Wikipedia article."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.data.corpus import split_sentences
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
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks.squad import featurize_squad
    return featurize_squad(_squad_dev()[:40], _tokenizer(), max_len=128, doc_stride=64, max_query_len=32)


def check_span(best_span: Callable) -> None:
    """best_span(start_logits (T,), end_logits (T,), context_mask (T,) bool, max_answer_length)
    -> (i, j): the pair maximising start_logits[i] + end_logits[j] with i <= j,
    j - i + 1 <= max_answer_length and context_mask[i] and context_mask[j]."""
    __tracebackhide__ = True
    name = "span"
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks.squad import best_spans, oracle_logits
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
                    _fail(name, f"{what}: your span ({i}, {j}) is {j - i + 1} tokens long, "
                                f"more than max_answer_length={L}")
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
                      "logits, two max_answer_length) against bertlab.tasks.squad.best_spans")


# ------------------------------------------------------------------------------------------------
# 8. Feature-based combinations of layers (chapter 7; paper section 5.3, table 7)
# ------------------------------------------------------------------------------------------------
STRATEGIES = ("first_layer", "last_hidden", "sum_all", "second_to_last", "sum_last_four", "concat_last_four")


@functools.lru_cache(maxsize=1)
def _hidden_states():
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
# 9. A post-LN encoder layer (chapter 6)
# ------------------------------------------------------------------------------------------------
def _small_config(H: int, A: int, I: int, **kw):
    return BertConfig(vocab_size=100, num_layers=1, hidden_size=H, num_heads=A, intermediate_size=I,
                      hidden_dropout=0.0, attention_dropout=0.0, **kw)


def _copy_into_student(student, ref) -> None:
    """Copy the weights of bertlab's EncoderLayer `ref` into the student's layer, whose
    attributes the notebook fixes: q, k, v, o, norm1, ffn1, ffn2, norm2."""
    H = ref.attention.out.weight.shape[0]
    qkv_w, qkv_b = ref.attention.qkv.weight, ref.attention.qkv.bias
    with torch.no_grad():
        for k, lin in enumerate((student.q, student.k, student.v)):
            lin.weight.copy_(qkv_w[k * H:(k + 1) * H])
            lin.bias.copy_(qkv_b[k * H:(k + 1) * H])
        for mine, theirs in ((student.o, ref.attention.out), (student.norm1, ref.attention_norm),
                             (student.ffn1, ref.ffn.w1), (student.ffn2, ref.ffn.w2), (student.norm2, ref.ffn_norm)):
            mine.weight.copy_(theirs.weight)
            mine.bias.copy_(theirs.bias)


def _encoder_variant(ref, x, mask, variant: str) -> torch.Tensor:
    """What bertlab's layer `ref` computes with a known mistake (the check's hints)."""
    import torch.nn.functional as F
    att, ffn = ref.attention, ref.ffn
    B, T, H = x.shape
    A = att.num_heads
    d = H // A

    def attend(h):
        q, k, v = att.qkv(h).split(H, dim=-1)
        q, k, v = (t.view(B, T, A, d).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (1.0 if variant == "unscaled" else math.sqrt(d))
        if mask is not None and variant != "no_mask":
            scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        z = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H)
        return att.out(z)

    def feed(h):
        act = {"relu": F.relu, "tanh_gelu": lambda t: F.gelu(t, approximate="tanh")}.get(variant, F.gelu)
        return ffn.w2(act(ffn.w1(h)))

    n1, n2 = ref.attention_norm, ref.ffn_norm
    if variant == "pre_ln":
        h = x + attend(n1(x))
        return h + feed(n2(h))
    if variant == "no_residual":
        h = n1(attend(x))
        return n2(feed(h))
    h = n1(x + attend(x))
    return n2(h + feed(h))


def check_encoder_layer(EncoderLayer: Callable) -> None:
    """EncoderLayer(hidden_size, num_heads, intermediate_size) -> a module whose forward(x, mask)
    maps x (B, T, H) and mask (B, T) bool (True = real token) or None to (B, T, H):
    h = LayerNorm1(x + MultiHeadAttention(x)); out = LayerNorm2(h + W2 GELU(W1 h)) (post-LN)."""
    __tracebackhide__ = True
    name = "encoder_layer"
    parts = _Parts(name)
    g = torch.Generator().manual_seed(9)
    cases = [("padding in one row", 2, 7, 64, 4, 256, (0, 3)), ("a single token", 1, 1, 32, 2, 128, None),
             ("FFN size not 4H, no mask", 3, 5, 48, 3, 100, None),
             ("MiniLM's size, H=384, A=12, padding", 2, 9, 384, 12, 1536, (2, 0))]
    hints_for = {"pre_ln": "your output equals a PRE-LN layer (LayerNorm before each sub-layer, x + F(LN(x))); "
                           "BERT is post-LN: LayerNorm AFTER the residual sum, LN(x + F(x))",
                 "no_residual": "your output equals LN(F(x)) without the residual: add the sub-layer's input "
                                "back before each LayerNorm, LN(x + F(x))",
                 "relu": "your feed-forward uses ReLU; BERT uses GELU (torch.nn.functional.gelu)",
                 "tanh_gelu": "your feed-forward uses the tanh approximation of GELU; BERT (and bertlab) use the "
                              "exact GELU: F.gelu(x) without approximate='tanh'",
                 "unscaled": "the attention scores were not divided by sqrt(d_k), the size of one HEAD (H / A)",
                 "no_mask": "the padding mask was ignored: padded keys must get weight 0 (their scores -inf)"}
    for label, B, T, H, A, I, pads in cases:
        with parts(label):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            ref = ReferenceEncoderLayer(_small_config(H, A, I)).eval()
            with torch.no_grad():  # random LayerNorm parameters, so that swapping them shows
                for norm in (ref.attention_norm, ref.ffn_norm):
                    norm.weight.normal_(1.0, 0.2)
                    norm.bias.normal_(0.0, 0.2)
            mine = _call(name, EncoderLayer, H, A, I)
            for attr in ("q", "k", "v", "o", "norm1", "ffn1", "ffn2", "norm2"):
                if not hasattr(mine, attr):
                    _fail(name, f"EncoderLayer({H}, {A}, {I}) has no attribute {attr!r}: keep the layers "
                                "that __init__ creates, with their names, and use them in forward")
            _copy_into_student(mine, ref)
            mine.eval()
            x = torch.randn(B, T, H, generator=g)
            mask = None
            if pads is not None:
                mask = torch.ones(B, T, dtype=torch.bool)
                for b, p in enumerate(pads):
                    if p:
                        mask[b, T - p:] = False
            with torch.no_grad():
                expected, _ = ref(x, attention_mask_for(None if mask is None else mask.long(), T, False))
                got = _call(name, mine, x.clone(), None if mask is None else mask.clone())
                hints = [(_encoder_variant(ref, x, mask, v), why) for v, why in hints_for.items()
                         if not (v == "no_mask" and mask is None)]
            keep = torch.ones(B, T, 1) if mask is None else mask[..., None].float()
            got_t = _tensor(name, got, f"{label}: the output")
            if tuple(got_t.shape) != (B, T, H):
                _same(name, got_t, expected, f"{label}: the output")
            what = f"{label} (x {(B, T, H)}, {A} heads, FFN {I}): the output at the real tokens"
            _same(name, got_t * keep, expected * keep, what, atol=1e-4,
                  hints=[(w * keep, why) for w, why in hints])
    with parts("gradients reach every parameter"):
        mine = _call(name, EncoderLayer, 32, 4, 64)
        x = torch.randn(2, 5, 32, generator=g)
        out = _call(name, mine, x, torch.ones(2, 5, dtype=torch.bool))
        _tensor(name, out, "the output").sum().backward()
        dead = [n for n, p in mine.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
        if dead:
            _fail(name, f"no gradient reached {dead}: every parameter must take part in the output (no "
                        ".detach(), no torch.no_grad() inside forward, no layer left unused)")
    parts.done(f"{len(cases)} cases (padding, one token, an FFN that is not 4H, MiniLM's 12 heads) against "
               "bertlab.model.EncoderLayer with the same weights; gradients reach every parameter")


# ------------------------------------------------------------------------------------------------
# 10. The parameter count in closed form (chapter 7)
# ------------------------------------------------------------------------------------------------
def _count_parameters(L, H, V=30522, P=512, S=2, I=None, pooler=True, biases=True, norms=True,
                      positions=True, segments=True) -> int:
    I = 4 * H if I is None else I
    b = 1 if biases else 0
    ln = 2 * H if norms else 0
    emb = V * H + (P * H if positions else 0) + (S * H if segments else 0) + ln
    layer = 4 * (H * H + b * H) + (H * I + b * I) + (I * H + b * H) + 2 * ln
    return emb + L * layer + ((H * H + b * H) if pooler else 0)


def check_param_count(bert_parameters: Callable) -> None:
    """bert_parameters(L, H, A, vocab_size=30522, max_positions=512, type_vocab_size=2,
    intermediate_size=None, pooler=True) -> int: the number of parameters of BertModel."""
    __tracebackhide__ = True
    name = "param_count"
    parts = _Parts(name)
    configs = [("BERT-base (the paper's 110M)", dict(L=12, H=768, A=12)),
               ("BERT-large (the paper's 340M)", dict(L=24, H=1024, A=16)),
               ("tiny, 2/128/2", dict(L=2, H=128, A=2)),
               ("the book's own model: tiny with a 16,384-piece vocabulary", dict(L=2, H=128, A=2, vocab_size=16384)),
               ("an FFN of 1,000, 128 positions, 3 segment types", dict(L=3, H=96, A=4, intermediate_size=1000,
                                                                         max_positions=128, type_vocab_size=3)),
               ("BERT-base without the pooler (as under a token or span head)", dict(L=12, H=768, A=12, pooler=False))]
    for label, kw in configs:
        with parts(label):
            cfg = BertConfig(vocab_size=kw.get("vocab_size", 30522), num_layers=kw["L"], hidden_size=kw["H"],
                             num_heads=kw["A"], intermediate_size=kw.get("intermediate_size"),
                             max_position_embeddings=kw.get("max_positions", 512),
                             type_vocab_size=kw.get("type_vocab_size", 2))
            with torch.device("meta"):  # counts shapes only: no memory, no time
                expected = BertModel(cfg, add_pooler=kw.get("pooler", True)).num_parameters()
            args = {k: v for k, v in kw.items() if k not in ("L", "H", "A")}
            got = _call(name, bert_parameters, kw["L"], kw["H"], kw["A"], **args)
            call = f"bert_parameters({', '.join(f'{k}={v}' for k, v in kw.items())})"
            if isinstance(got, float) and got.is_integer():
                got = int(got)
            if not isinstance(got, int) or isinstance(got, bool):
                _fail(name, f"{call}: return an int, got {type(got).__name__} {got!r}")
            if got == expected:
                continue
            L, H = kw["L"], kw["H"]
            common = dict(V=cfg.vocab_size, P=cfg.max_position_embeddings, S=cfg.type_vocab_size,
                          I=cfg.intermediate_size, pooler=kw.get("pooler", True))
            known = [(dict(biases=False), "you left out the biases (every nn.Linear has one per output)"),
                     (dict(norms=False), "you left out the LayerNorms (a weight and a bias of size H each: one "
                                         "after the embeddings, two per layer)"),
                     (dict(pooler=not common["pooler"]), "the pooler (an H x H dense layer with a bias over "
                                                         "[CLS]) is counted when pooler=True only"),
                     (dict(positions=False), "you left out the position embeddings (max_positions x H)"),
                     (dict(segments=False), "you left out the segment embeddings (type_vocab_size x H)"),
                     (dict(I=4 * H), "the feed-forward size is intermediate_size when it is given (4H only "
                                     "when it is None)")]
            why = next((w for k, w in known if _count_parameters(L, H, **{**common, **k}) == got), "")
            _fail(name, f"{call}: expected {expected:,}, got {got:,} ({got - expected:+,})"
                        + (f": {why}" if why else ""))
    parts.done(f"{len(configs)} configurations against BertModel(config).num_parameters(), the paper's "
               "BERT-base (109,482,240) and BERT-large (335,141,888) included")


# ------------------------------------------------------------------------------------------------
# 11. One pretraining step (chapter 10)
# ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _pretraining_batches() -> tuple[dict[str, torch.Tensor], ...]:
    """Two batches of 8 real sentence pairs (consecutive SQuAD sentences), masked as in BERT."""
    tok = _tokenizer()
    sents = [s for d in _documents()[:6] for s in d]
    g = torch.Generator().manual_seed(11)
    special = sorted(set(tok.special_ids))
    random_ids = torch.tensor(sorted(set(range(1000, tok.vocab_size)) - set(special)))
    batches = []
    for b in range(2):
        a_s = sents[16 * b:16 * b + 16:2]
        b_s = sents[16 * b + 1:16 * b + 17:2]
        enc = tok.encode_batch(a_s, b_s, max_length=48, truncation=True, padding="longest", return_tensors="pt")
        m = mask_tokens(enc.input_ids, mask_id=tok.mask_id, special_ids=special, random_ids=random_ids,
                        max_predictions=enc.input_ids.shape[1], generator=g)
        batches.append({"input_ids": m.input_ids, "token_type_ids": enc.token_type_ids,
                        "attention_mask": enc.attention_mask,
                        "mlm_labels": torch.where(m.selected, enc.input_ids, IGNORE_INDEX),
                        "nsp_labels": torch.randint(0, 2, (len(a_s),), generator=g)})
    return tuple(batches)


def _tiny_pretraining_model(seed: int):
    torch.manual_seed(seed)
    return BertForPreTraining(BertConfig(num_layers=2, hidden_size=64, num_heads=2, hidden_dropout=0.0,
                                         attention_dropout=0.0))


def _reference_pretraining_step(model, batch, optimizer, max_grad_norm, variant: str = "") -> float:
    out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                mlm_labels=batch["mlm_labels"], nsp_labels=batch["nsp_labels"])
    loss = {"mlm_only": out.mlm_loss, "nsp_only": out.nsp_loss}.get(variant, out.loss)
    loss.backward()
    if variant == "clip_value":
        torch.nn.utils.clip_grad_value_(model.parameters(), max_grad_norm)
    optimizer_step(optimizer, torch.amp.GradScaler("cpu", enabled=False), lr=optimizer.param_groups[0]["lr"],
                   grad_clip=None if variant in ("no_clip", "clip_value") else max_grad_norm)
    return float(loss.detach())


def _params_differ(name: str, mine, ref, what: str, hints: Sequence[tuple[Callable[[], Any], str]] = (),
                   atol: float = 1e-5):
    """Fail when a parameter of `mine` differs from `ref`'s; hints: (a function that makes the
    model a known mistake gives, why), called only when the parameters differ."""
    ref_params = dict(ref.named_parameters())
    for pname, p in mine.named_parameters():
        q = ref_params[pname]
        if not torch.allclose(p.detach(), q.detach(), atol=atol, rtol=1e-4):
            for make, why in hints:
                other = make()
                if all(torch.allclose(a.detach(), b.detach(), atol=atol, rtol=1e-4)
                       for a, b in zip(mine.parameters(), other.parameters())):
                    _fail(name, f"{what}: {why}")
            diff = (p.detach() - q.detach()).abs().max().item()
            _fail(name, f"{what}: parameter {pname} differs from bertlab's by up to {diff:.3g}")


def check_pretraining_step(pretraining_step: Callable) -> None:
    """pretraining_step(model, batch, optimizer, max_grad_norm=1.0) -> float: one update of a
    BertForPreTraining on batch (input_ids, token_type_ids, attention_mask, mlm_labels (B, T) with
    -100 where nothing is predicted, nsp_labels (B,)): loss = MLM cross-entropy + NSP
    cross-entropy, backward, clip the global gradient norm, optimizer step, clear the gradients;
    returns the loss before the update."""
    __tracebackhide__ = True
    name = "pretraining_step"
    import copy

    parts = _Parts(name)
    b1, b2 = _pretraining_batches()
    base = _tiny_pretraining_model(11)
    lr = 1e-3
    ref, mine = copy.deepcopy(base), copy.deepcopy(base)
    ref_opt, my_opt = adamw(ref, lr=lr), adamw(mine, lr=lr)
    ref_loss = _reference_pretraining_step(ref, b1, ref_opt, 1.0)
    got: Any = _NOT_RUN
    with parts("returns the loss: MLM cross-entropy over the selected tokens + NSP cross-entropy"):
        got = _call(name, pretraining_step, mine, {k: v.clone() for k, v in b1.items()}, my_opt, 1.0)
        try:
            got_f = float(got)
        except (TypeError, ValueError):
            _fail(name, f"return the loss as a float (loss.item()), got {type(got).__name__}")
        if abs(got_f - ref_loss) > 1e-4 * max(1.0, abs(ref_loss)):
            why = ""
            for variant, text in (("mlm_only", "it equals the MLM loss alone: add the NSP loss"),
                                  ("nsp_only", "it equals the NSP loss alone: add the MLM loss")):
                m = copy.deepcopy(base)
                if abs(_reference_pretraining_step(m, b1, adamw(m, lr=lr), 1.0, variant) - got_f) < 1e-4:
                    why = f": {text}"
            _fail(name, f"the loss on the first batch: expected {ref_loss:.5f}, got {got_f:.5f}{why} (the MLM loss "
                        "is the mean cross-entropy over positions whose label is not -100)")
    with parts("the parameters after one AdamW step equal bertlab's training step"):
        if got is _NOT_RUN:
            _fail(name, "not checked: pretraining_step did not run")
        def adam_no_clip():
            m = copy.deepcopy(base)
            _reference_pretraining_step(m, b1, adamw(m, lr=lr), 1.0, "no_clip")
            return m
        _params_differ(name, mine, ref, "after one step on the first batch",
                       [(adam_no_clip, "the gradients were not clipped: call torch.nn.utils.clip_grad_norm_("
                                       "model.parameters(), max_grad_norm) between backward() and step()")])
    with parts("the gradients are cleared after the step"):
        if got is _NOT_RUN:
            _fail(name, "not checked: pretraining_step did not run")
        left = [n for n, p in mine.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0]
        if left:
            _fail(name, f"after the step, {len(left)} parameters still hold gradients (e.g. {left[0]}): call "
                        "optimizer.zero_grad() after optimizer.step(), or the next step adds to them")
    with parts("a second step, on another batch, equals bertlab's too"):
        if got is _NOT_RUN:
            _fail(name, "not checked: pretraining_step did not run")
        _reference_pretraining_step(ref, b2, ref_opt, 1.0)
        _call(name, pretraining_step, mine, {k: v.clone() for k, v in b2.items()}, my_opt, 1.0)
        _params_differ(name, mine, ref, "after a second step")
    with parts("the global gradient norm is clipped to max_grad_norm (seen with SGD)"):
        max_norm = 0.05
        sgd_ref, sgd_mine = copy.deepcopy(base), copy.deepcopy(base)
        _reference_pretraining_step(sgd_ref, b1, torch.optim.SGD(sgd_ref.parameters(), lr=0.5), max_norm)
        _call(name, pretraining_step, sgd_mine, {k: v.clone() for k, v in b1.items()},
              torch.optim.SGD(sgd_mine.parameters(), lr=0.5), max_norm)
        def sgd_variant(variant):
            def make():
                m = copy.deepcopy(base)
                _reference_pretraining_step(m, b1, torch.optim.SGD(m.parameters(), lr=0.5), max_norm, variant)
                return m
            return make
        hints = [(sgd_variant("no_clip"), "the gradients were not clipped: call torch.nn.utils.clip_grad_norm_("
                                          "model.parameters(), max_grad_norm) between backward() and step()"),
                 (sgd_variant("clip_value"), "each gradient entry was clipped to +-max_grad_norm (clip_grad_value_); "
                                             "BERT clips the global NORM of all gradients (clip_grad_norm_)")]
        _params_differ(name, sgd_mine, sgd_ref, f"one SGD step with max_grad_norm={max_norm}", hints)
    parts.done("the loss, the parameters after one and two AdamW steps (bertlab.training.optim.optimizer_step) and "
               "after an SGD step with clipping, on real masked sentence pairs; gradients cleared")


# ------------------------------------------------------------------------------------------------
# 12. A fine-tuning loop and its evaluation (chapter 11)
# ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _sst2_batches() -> tuple[tuple[dict[str, torch.Tensor], ...], tuple[dict[str, torch.Tensor], ...]]:
    """Six training batches of 8 real SST-2 sentences, and four dev batches of 16."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks import get_task
    task = get_task("sst2")
    tok = _tokenizer()

    def batches(examples, size):
        out = []
        for i in range(0, len(examples), size):
            chunk = examples[i:i + size]
            enc = tok.encode_batch([e.sentence for e in chunk], max_length=40, truncation=True,
                                   padding="longest", return_tensors="pt")
            out.append({"input_ids": enc.input_ids, "token_type_ids": enc.token_type_ids,
                        "attention_mask": enc.attention_mask,
                        "labels": torch.tensor([e.label for e in chunk])})
        return tuple(out)
    return batches(task.load("train")[:48], 8), batches(task.load("dev")[:64], 16)


def _tiny_classifier(seed: int, dropout: float = 0.0):
    torch.manual_seed(seed)
    return BertForSequenceClassification(BertConfig(num_layers=2, hidden_size=64, num_heads=2,
                                                    hidden_dropout=dropout, attention_dropout=dropout))


def _lr_schedule(peak: float, total: int, warmup: int) -> Callable[[int], float]:
    def lr_at(step: int) -> float:
        if step < warmup:
            return peak * (step + 1) / warmup
        return peak * max(0.0, (total - step) / max(1, total - warmup))
    return lr_at


def _reference_finetune(model, batches, optimizer, epochs, lr_at, max_grad_norm=1.0, variant=""):
    model.train()
    losses, step = [], 0
    for _ in range(epochs):
        for batch in batches:
            out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], labels=batch["labels"])
            out.loss.backward()
            lr = {"constant": optimizer.defaults["lr"], "off_by_one": lr_at(step + 1)}.get(variant, lr_at(step))
            optimizer_step(optimizer, torch.amp.GradScaler("cpu", enabled=False), lr=lr,
                           grad_clip=None if variant == "no_clip" else max_grad_norm)
            losses.append(out.loss.item())
            step += 1
    return losses


def _reference_accuracy(model, batches) -> float:
    model.eval()
    right = total = 0
    with torch.no_grad():
        for b in batches:
            logits = model(b["input_ids"], b["token_type_ids"], b["attention_mask"]).logits
            right += int((logits.argmax(-1) == b["labels"]).sum())
            total += len(b["labels"])
    return right / total


def check_finetune_loop(finetune: Callable, accuracy: Callable) -> None:
    """finetune(model, batches, optimizer, epochs, lr_at, max_grad_norm=1.0) -> list of the losses
    of every step: the model in train mode; for each epoch, each batch: loss, backward, clip, set
    every param group's lr to lr_at(step) (step = 0, 1, ... over all epochs), step, zero_grad.
    accuracy(model, batches) -> float in [0, 1]: eval mode, no gradients, argmax of the logits."""
    __tracebackhide__ = True
    name = "finetune_loop"
    import copy

    parts = _Parts(name)
    train, dev = _sst2_batches()
    epochs, peak = 2, 2e-3
    total = epochs * len(train)
    lr_at = _lr_schedule(peak, total, warmup=2)
    base = _tiny_classifier(12)
    ref, mine = copy.deepcopy(base), copy.deepcopy(base)
    ref_losses = _reference_finetune(ref, train, adamw(ref, lr=peak), epochs, lr_at)
    my_opt = adamw(mine, lr=peak)
    seen_lrs: list[float] = []
    step_fn = my_opt.step

    def recording_step(*args, **kwargs):
        seen_lrs.append(my_opt.param_groups[0]["lr"])
        return step_fn(*args, **kwargs)
    my_opt.step = recording_step
    got: Any = _NOT_RUN
    with parts("the learning rate of step s is lr_at(s)"):
        got = _call(name, finetune, mine, [dict(b) for b in train], my_opt, epochs, lr_at, 1.0)
        want = [lr_at(s) for s in range(total)]
        if len(seen_lrs) != total:
            _fail(name, f"optimizer.step() was called {len(seen_lrs)} times for {total} batches; once per batch")
        for s, (a, b) in enumerate(zip(seen_lrs, want)):
            if abs(a - b) > 1e-12:
                off = " (that is lr_at(s + 1): count steps from 0)" if s + 1 < total and abs(a - lr_at(s + 1)) < 1e-12 \
                    else ""
                _fail(name, f"step {s} ran with lr {a:.3g}, expected lr_at({s}) = {b:.3g}{off}: set "
                            "g['lr'] = lr_at(step) for every g in optimizer.param_groups before optimizer.step()")
    with parts("returns one loss per step, equal to bertlab's loop"):
        if got is _NOT_RUN:
            _fail(name, "not checked: finetune did not run")
        if not isinstance(got, (list, tuple)) or len(got) != total:
            _fail(name, f"{epochs} epochs of {len(train)} batches: return a list of {total} losses (one per step), "
                        f"got {type(got).__name__}" + (f" of length {len(got)}" if hasattr(got, "__len__") else ""))
        got_f = [float(x) for x in got]
        for s, (a, b) in enumerate(zip(got_f, ref_losses)):
            if abs(a - b) > 1e-4 * max(1.0, abs(b)):
                _fail(name, f"step {s}: loss {a:.5f}, expected {b:.5f} "
                            "(the loss of the batch BEFORE that step's update)")
    with parts("the weights after training equal bertlab's loop (clipping included)"):
        if got is _NOT_RUN:
            _fail(name, "not checked: finetune did not run")
        def ft_variant(variant):
            def make():
                m = copy.deepcopy(base)
                _reference_finetune(m, train, adamw(m, lr=peak), epochs, lr_at, variant=variant)
                return m
            return make
        hints = [(ft_variant("no_clip"), "the gradients were not clipped to max_grad_norm"),
                 (ft_variant("constant"), "the learning rate stayed at the optimizer's initial value")]
        _params_differ(name, mine, ref, f"after {epochs} epochs", hints, atol=1e-4)
    with parts("the model trains in train mode (dropout on)"):
        m = _tiny_classifier(12, dropout=0.1).eval()
        modes: list[bool] = []
        handle = m.register_forward_pre_hook(lambda mod, args: modes.append(mod.training))
        _call(name, finetune, m, [dict(b) for b in train[:2]], adamw(m, lr=peak), 1, lr_at, 1.0)
        handle.remove()
        if not modes or not all(modes):
            _fail(name, "the model was in eval mode while training: call model.train() at the start of finetune")
    with parts("accuracy: eval mode, no gradients, the share of correct argmax predictions"):
        m = _tiny_classifier(13, dropout=0.3).train()
        expected = _reference_accuracy(copy.deepcopy(m), dev)
        state: list[tuple[bool, bool]] = []
        handle = m.register_forward_pre_hook(lambda mod, args: state.append((mod.training, torch.is_grad_enabled())))
        acc = _call(name, accuracy, m, [dict(b) for b in dev])
        handle.remove()
        if any(t for t, _ in state):
            _fail(name, "accuracy ran the model in train mode (dropout on): call model.eval() first")
        if any(g for _, g in state):
            _fail(name, "accuracy computed gradients: wrap the forward passes in torch.no_grad()")
        try:
            acc_f = float(acc)
        except (TypeError, ValueError):
            _fail(name, f"accuracy: return a float, got {type(acc).__name__}")
        if acc_f > 1.0 and abs(acc_f / 100 - expected) < 1e-6:
            _fail(name, f"accuracy returned {acc_f:g}, a percentage: return a share in [0, 1]")
        if abs(acc_f - expected) > 1e-6:
            _fail(name, f"accuracy on {sum(len(b['labels']) for b in dev)} SST-2 dev sentences: expected "
                        f"{expected:.4f}, got {acc_f:.4f}")
    parts.done(f"{epochs} epochs of {len(train)} real SST-2 batches against bertlab's update step (losses, "
               "learning rates, final weights), train mode while training; accuracy in eval mode without "
               "gradients")


# ------------------------------------------------------------------------------------------------
# 13. NER: word labels onto word pieces and back (chapter 14)
# ------------------------------------------------------------------------------------------------
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
    tok = _tokenizer()
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
    parts = _Parts(name)
    n_split = sum(any(a == b for a, b in zip(w[1:], w[2:]) if a is not None) for _, w, _, _ in cases)

    def hint_for(word_ids, tags, got):
        every = [IGNORE_INDEX if w is None else tags[w] for w in word_ids]
        last = [IGNORE_INDEX if w is None or (k + 1 < len(word_ids) and word_ids[k + 1] == w) else tags[w]
                for k, w in enumerate(word_ids)]
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
            got = _call(name, align_labels, list(word_ids), list(tags))
            got = [int(x) for x in got] if isinstance(got, (list, tuple, torch.Tensor)) else got
            if not isinstance(got, list) or len(got) != len(word_ids):
                _fail(name, f"sentence {n}: return a list with one label per token ({len(word_ids)}), got "
                            f"{type(got).__name__}" + (f" of length {len(got)}" if hasattr(got, '__len__') else ""))
            if got != expected:
                k = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
                w = word_ids[k]
                where = "[CLS]/[SEP]" if w is None else f"a piece of the word {words[w]!r}"
                _fail(name, f"sentence {n} ({' '.join(words)[:60]!r}): token {k} ({where}) got label {got[k]}, "
                            f"expected {expected[k]}{hint_for(word_ids, tags, got)}")
    with parts("edge cases: one word, one word of many pieces, the label 0 ('O')"):
        for word_ids, tags in (([None, 0, None], [3]), ([None, 0, 0, 0, 0, None], [0]),
                               ([None, 0, 1, 1, 2, None], [0, 5, 0]), ([None, 0, 0, 1, 2, 2, 2, None], [1, 2, 0])):
            expected = [IGNORE_INDEX if w is None or (k and word_ids[k - 1] == w) else tags[w]
                        for k, w in enumerate(word_ids)]
            got = _call(name, align_labels, list(word_ids), list(tags))
            got = [int(x) for x in got] if isinstance(got, (list, tuple, torch.Tensor)) else got
            if got != expected:
                _fail(name, f"align_labels({word_ids}, {tags}): expected {expected}, got {got}"
                            + (hint_for(word_ids, tags, got) if isinstance(got, list) else ""))
    g = torch.Generator().manual_seed(13)
    with parts("word_predictions reads each word's first piece"):
        for n, (words, word_ids, tags, expected) in enumerate(cases):
            preds = torch.randint(0, len(label_names), (len(word_ids),), generator=g)
            want = [int(preds[k]) for k, w in enumerate(word_ids) if w is not None and (k == 0 or word_ids[k - 1] != w)]
            got = _call(name, word_predictions, preds.clone(), list(word_ids))
            got = [int(x) for x in got] if isinstance(got, (list, tuple, torch.Tensor)) else got
            if got != want:
                if isinstance(got, list) and len(got) == len(word_ids):
                    _fail(name, f"sentence {n}: return one prediction per WORD ({len(words)}), not per token")
                _fail(name, f"sentence {n} ({' '.join(words)[:60]!r}): expected {want}, got {got}: read the "
                            "prediction at the first piece of every word, in word order")
    with parts("word_predictions(align_labels(word_ids, tags), word_ids) gives the tags back"):
        for n, (words, word_ids, tags, expected) in enumerate(cases[:40]):
            back = _call(name, word_predictions, torch.tensor(_call(name, align_labels, list(word_ids), list(tags))),
                         list(word_ids))
            back = [int(x) for x in back] if isinstance(back, (list, tuple, torch.Tensor)) else back
            if back != tags:
                _fail(name, f"sentence {n}: word_predictions(align_labels(...)) gave {back}, not the tags {tags}")
    parts.done(f"{len(cases)} real CoNLL-2003 sentences ({n_split} with words of several pieces) against "
               "bertlab.tasks.ner.featurize_ner, edge cases, and the way back to one prediction per word")


# ------------------------------------------------------------------------------------------------
# 14. A head probe: find heads by measurement (chapter 16)
# ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _minilm_attention():
    """all-MiniLM-L6-v2's attention maps on 16 real sentence pairs (padded): (attentions,
    attention_mask, input_ids)."""
    model = BertModel.from_hf(minilm_path()).eval()
    sents = [s for d in _documents()[6:14] for s in d]
    enc = _tokenizer().encode_batch(sents[0:32:2], sents[1:33:2], max_length=64, truncation=True,
                                    padding="longest", return_tensors="pt")
    with torch.no_grad():
        out = model(enc.input_ids, enc.token_type_ids, enc.attention_mask, output_attentions=True)
    return out.attentions, enc.attention_mask, enc.input_ids


def _targets(input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """(B, T, T) bool: which keys count, for each query, for the probes of chapter 16."""
    B, T = input_ids.shape
    tok = _tokenizer()
    i = torch.arange(T)
    key = lambda keys: keys[:, None, :].expand(B, T, T)  # noqa: E731
    return {"[SEP]": key(input_ids == tok.sep_id), "[CLS]": key(input_ids == tok.cls_id),
            "the previous token": (i[None, :] == i[:, None] - 1).expand(B, T, T),
            "the next token": (i[None, :] == i[:, None] + 1).expand(B, T, T),
            "itself": torch.eye(T, dtype=torch.bool).expand(B, T, T)}


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
    parts = _Parts(name)
    for label in ("[SEP]", "the previous token", "itself"):
        with parts(f"scores for attention to {label}"):
            expected = _head_scores(attentions, mask, targets[label])
            got = _call(name, head_scores, tuple(a.clone() for a in attentions), mask.clone(),
                        targets[label].clone())
            real = mask.bool()[None, :, None, :].double()
            mass = (torch.stack(attentions).double() * targets[label][None, :, None]).sum(-1)
            hints = [(mass.mean((1, 3)), "the mean ran over every position, padding included: average over the "
                                         "REAL query tokens only (attention_mask == 1)"),
                     ((mass * real).sum((1, 3)), "this is the sum over the query tokens: divide by how many real "
                                                 "query tokens there are"),
                     ((mass * real).sum((1, 3)) / (B * T), "divide by the number of REAL query tokens, not B * T")]
            _same(name, got, expected, f"head_scores for attention to {label} (MiniLM, {L} layers x {A} heads, "
                                       f"{B} padded sentence pairs)", atol=1e-5, hints=hints)
    with parts("best_head returns (layer, head) of the highest score"):
        g = torch.Generator().manual_seed(14)
        for scores in [torch.rand(L, A, generator=g), torch.rand(3, 5, generator=g), torch.rand(1, 1, generator=g),
                       _head_scores(attentions, mask, targets["[CLS]"])]:
            got = _call(name, best_head, scores.clone())
            flat = int(scores.argmax())
            want = (flat // scores.shape[1], flat % scores.shape[1])
            try:
                got_t = tuple(int(x) for x in got)
            except Exception:
                _fail(name, f"best_head: return a pair of ints (layer, head), got {got!r}")
            if got_t != want:
                hint = " (that is (head, layer): the layer comes first)" if got_t == want[::-1] else ""
                _fail(name, f"best_head on scores of shape {tuple(scores.shape)}: expected {want}, got {got_t}{hint}")
    measured = {}
    with parts("the heads your functions find have the measured property"):
        for label in ("[SEP]", "the previous token", "the next token"):
            scores = _head_scores(attentions, mask, targets[label])
            got = _call(name, best_head, _call(name, head_scores, tuple(attentions), mask, targets[label]))
            layer, head = (int(x) for x in got)
            if not (0 <= layer < L and 0 <= head < A):
                _fail(name, f"the head found for {label}, ({layer}, {head}), is not a head of this {L} x {A} model")
            share, best = scores[layer, head].item(), scores.max().item()
            if share < best - 1e-6:
                _fail(name, f"the head found for attention to {label}, layer {layer} head {head}, puts {share:.1%} "
                            f"of its attention there, but another head puts {best:.1%}")
            measured[label] = (layer, head, share)
    parts.done(f"head scores on all-MiniLM-L6-v2's {L} x {A} heads over {B} real sentence pairs with padding "
               "(attention to [SEP], the previous token, the token itself); best_head; "
               + "; ".join(f"{k}: layer {v[0]} head {v[1]} ({v[2]:.0%})" for k, v in measured.items()))


# ------------------------------------------------------------------------------------------------
# 15. Designing an ablation (chapter 17)
# ------------------------------------------------------------------------------------------------
PLAN_FIELDS = {"question": str, "hypothesis": str, "control": dict, "change": dict, "metric": str,
               "seeds": (list, tuple), "minutes_per_run": (int, float), "decision": str}
METRICS = ("held-out MLM accuracy", "held-out MLM loss", "SST-2 dev accuracy", "MRPC dev F1",
           "CoNLL-2003 dev F1", "SQuAD dev F1")
CPU_HOURS = 4  # the budget an ablation plan may spend, both arms and every seed together
DIRECTION_WORDS = ("higher", "lower", "better", "worse", "faster", "slower", "more", "less", "increase",
                   "decrease", "improve", "hurt", "raise", "reduce", "same", "no difference", "unchanged")


def check_ablation_plan(ablation_plan: Callable) -> None:
    """ablation_plan() -> dict with: question, hypothesis (what you expect and why), control
    ({"recipe": name, "preset": name, and any recipe fields it overrides}), change ({knob: value},
    one knob), metric (one of METRICS), seeds (>= 3), minutes_per_run, decision (the rule, with
    its threshold, that says which result supports the hypothesis)."""
    __tracebackhide__ = True
    name = "ablation_plan"
    import dataclasses as dc

    knobs = {f.name for f in dc.fields(Recipe)} - {"name", "notes", "steps"} | {"preset"}
    parts = _Parts(name)
    plan: dict = {}

    def need_plan():
        if not plan:
            _fail(name, "not checked: ablation_plan() did not return a dict with every field")

    def resolve(cfg: dict, what: str):
        cfg = dict(cfg)
        recipe, preset = cfg.pop("recipe", None), cfg.pop("preset", None)
        if recipe not in RECIPES:
            _fail(name, f"{what}: 'recipe' must be one of {sorted(RECIPES)}, got {recipe!r}")
        if preset not in PRESETS:
            _fail(name, f"{what}: 'preset' must be one of {sorted(PRESETS)}, got {preset!r}")
        unknown = sorted(set(cfg) - knobs)
        if unknown:
            _fail(name, f"{what}: {unknown} are not settings of a pretraining run; the settings are "
                        f"{sorted(knobs)}")
        try:
            r = get_recipe(recipe, **cfg)
        except (ValueError, TypeError) as err:
            _fail(name, f"{what}: not a valid run: {err}")
        return {**dc.asdict(r), "preset": preset}

    with parts("the plan has every field, with the right types"):
        got = _call(name, ablation_plan)
        if not isinstance(got, dict):
            _fail(name, f"return a dict, got {type(got).__name__}")
        for key, typ in PLAN_FIELDS.items():
            if key not in got:
                _fail(name, f"the plan has no {key!r}; it needs {', '.join(PLAN_FIELDS)}")
            if not isinstance(got[key], typ) or isinstance(got[key], bool):
                _fail(name, f"plan[{key!r}] should be a {getattr(typ, '__name__', 'list or number')}, got "
                            f"{type(got[key]).__name__}")
            if isinstance(got[key], str) and not got[key].strip():
                _fail(name, f"plan[{key!r}] is empty")
        plan = got
    with parts("the control is a run bertlab can make"):
        need_plan()
        resolve(plan["control"], "the control")
    with parts("exactly one change, to a real setting, to a new value"):
        need_plan()
        change = plan["change"]
        if len(change) != 1:
            _fail(name, f"change {sorted(change)} settings; an ablation changes exactly ONE thing, so that any "
                        "difference can be put down to it")
        knob, value = next(iter(change.items()))
        if knob not in knobs:
            _fail(name, f"{knob!r} is not a setting of a pretraining run; the settings are {sorted(knobs)}")
        control = resolve(plan["control"], "the control")
        treatment = resolve({**plan["control"], knob: value}, "the control with the change")
        if control[knob] == treatment[knob]:
            _fail(name, f"the change sets {knob} to {value!r}, which is already the control's value: the two arms "
                        "would be the same run")
    with parts("at least 3 seeds, each used by both arms"):
        need_plan()
        seeds = list(plan["seeds"])
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds) or len(set(seeds)) != len(seeds):
            _fail(name, f"seeds should be distinct ints, got {seeds}")
        if len(seeds) < 3:
            _fail(name, f"{count(len(seeds), 'seed')}: with fewer than three per arm there is no way to tell a "
                        "difference from seed-to-seed noise")
    with parts(f"the budget fits in {CPU_HOURS} CPU-hours (2 arms x seeds x minutes per run)"):
        need_plan()
        minutes = float(plan["minutes_per_run"])
        total = 2 * len(plan["seeds"]) * minutes
        if minutes <= 0:
            _fail(name, f"minutes_per_run must be positive, got {minutes:g}")
        if total > CPU_HOURS * 60:
            _fail(name, f"2 arms x {len(plan['seeds'])} seeds x {minutes:g} minutes = {total:g} minutes, more than "
                        f"the {CPU_HOURS * 60} minutes available: fewer minutes per run (or a smaller model)")
    with parts("a metric measured on held-out data"):
        need_plan()
        if plan["metric"] not in METRICS:
            _fail(name, f"metric {plan['metric']!r}: choose one of {list(METRICS)} (measured on data the runs "
                        "did not train on)")
    with parts("a hypothesis that names the setting and predicts a direction"):
        need_plan()
        text = plan["hypothesis"].lower()
        knob = next(iter(plan["change"]), "")
        names = {knob.lower(), knob.lower().replace("_", " "), knob.lower().replace("_", "-")}
        if not any(n and n in text for n in names):
            _fail(name, f"the hypothesis does not name the setting it is about ({knob!r})")
        if not any(w in text for w in DIRECTION_WORDS):
            _fail(name, "the hypothesis predicts no direction: say what you expect the change to do to the metric "
                        "(higher, lower, no difference, ...)")
        if len(text.split()) < 12:
            _fail(name, "the hypothesis is under 12 words: say what you expect AND why")
    with parts("a decision rule with a threshold, fixed before the runs"):
        need_plan()
        rule = plan["decision"]
        if not re.search(r"\d", rule):
            _fail(name, "the decision rule has no number: state the threshold (e.g. a difference of medians of at "
                        "least 1 point, larger than the spread between seeds)")
        if len(rule.split()) < 8:
            _fail(name, "the decision rule is under 8 words: say which result supports the hypothesis and which "
                        "does not")
    parts.done("every field; a runnable control; one change to a real setting; >= 3 seeds; the budget within "
               f"{CPU_HOURS} CPU-hours; a held-out metric; a directional hypothesis; a decision rule with a threshold")


# ------------------------------------------------------------------------------------------------
# One entry point
# ------------------------------------------------------------------------------------------------
CHECKS: dict[str, Callable] = {"attention": check_attention, "heads": check_heads, "sinusoids": check_sinusoids,
                               "wordpiece": check_wordpiece, "masking": check_masking, "nsp": check_nsp,
                               "span": check_span, "features": check_features,
                               "encoder_layer": check_encoder_layer, "param_count": check_param_count,
                               "pretraining_step": check_pretraining_step, "finetune_loop": check_finetune_loop,
                               "ner_labels": check_ner_labels, "head_probe": check_head_probe,
                               "ablation_plan": check_ablation_plan}


def check(name: str, *functions: Callable) -> None:
    """check("attention", attention); check("heads", split_heads, merge_heads); ..."""
    __tracebackhide__ = True
    if name not in CHECKS:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(CHECKS)}")
    CHECKS[name](*functions)


# ------------------------------------------------------------------------------------------------
# Grading: what the grader runs inside the kernel of a submitted notebook (see bertlab.course.grading)
# ------------------------------------------------------------------------------------------------
def grade_in_kernel(name: str, functions: Sequence[str], namespace: dict[str, Any], out: str) -> None:
    """Run check `name` on the functions called `functions` in `namespace` (the notebook's
    globals) and write its result, part by part, as JSON to `out`. Prints nothing the grader
    reads; a crash of the check is recorded as its error."""
    import json
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
    write_text(out, json.dumps(data), fsync=False)


_PART_CACHE: dict[tuple, CheckResult] = {}


def require_part(name: str, index: int, *functions: Callable) -> None:
    """Raise an AssertionError unless part `index` of check `name` passes for `functions`. The
    check runs once per set of functions; the other parts reuse its result. This is the bridge to
    autograders that give points per test case (otter-grader's exception-based tests, nbgrader's
    test cells): one test case per part gives bertlab's partial credit there too."""
    key = (name, *map(id, functions))
    if key not in _PART_CACHE:
        if name not in CHECKS:
            raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(CHECKS)}")
        RESULTS.pop(name, None)
        try:
            CHECKS[name](*functions)
        except ExerciseFailure:
            pass
        _PART_CACHE[key] = RESULTS.get(name, CheckResult(name))
    parts = _PART_CACHE[key].parts
    if not 0 <= index < len(parts):
        raise AssertionError(f"[{name}] the check has {len(parts)} parts, not {index + 1}")
    if not parts[index].passed:
        raise AssertionError(f"[{name}] {parts[index].name}: {parts[index].message}")


def grade(folder: str, out: str | None = None, timeout: int | None = None) -> list:
    """Grade every notebook in `folder` in fresh kernels: see bertlab.course.grading.grade_folder."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.course.grading import grade_folder
    return grade_folder(folder, out, timeout)


def main(argv: Sequence[str] | None = None) -> None:
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "grade":
        print("usage: python -m bertlab.exercises grade <folder> [--timeout S] [--assignment NAME] [--out CSV]",
              file=sys.stderr)
        raise SystemExit(2)
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.course.grading import main as grading_main
    grading_main(argv[1:])


if __name__ == "__main__":
    main()
