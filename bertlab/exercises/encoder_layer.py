"""The checks of assignment 05_encoder_layer: check_encoder_layer (chapter 6), check_param_count (chapter 7).

The student's layer is built inside `observe_student` with the weights of a seeded bertlab
EncoderLayer; its outputs and gradients are what the check records and compares.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import torch

from bertlab.model import BertConfig, BertModel, attention_mask_for
from bertlab.model import EncoderLayer as ReferenceEncoderLayer  # check_encoder_layer's argument is EncoderLayer

from .framework import (
    ExerciseFailure,
    Parts,
    call_student,
    expect_same,
    expect_tensor,
    gradients_of,
    observe_student,
    padding_mask,
)

LAYER_PARTS = ("q", "k", "v", "o", "norm1", "ffn1", "ffn2", "norm2")  # the attributes the notebook fixes


def _small_config(H: int, A: int, I: int) -> BertConfig:
    no_dropout = dict(hidden_dropout=0.0, attention_dropout=0.0)
    return BertConfig(vocab_size=100, num_layers=1, hidden_size=H, num_heads=A, intermediate_size=I, **no_dropout)


def _copy_into_student(student, ref) -> None:
    """Copy the weights of bertlab's EncoderLayer `ref` into the student's layer, whose
    attributes the notebook fixes: q, k, v, o, norm1, ffn1, ffn2, norm2."""
    H = ref.attention.out.weight.shape[0]
    qkv_w, qkv_b = ref.attention.qkv.weight, ref.attention.qkv.bias
    with torch.no_grad():
        for k, lin in enumerate((student.q, student.k, student.v)):
            lin.weight.copy_(qkv_w[k * H : (k + 1) * H])
            lin.bias.copy_(qkv_b[k * H : (k + 1) * H])
        for mine, theirs in (
            (student.o, ref.attention.out),
            (student.norm1, ref.attention_norm),
            (student.ffn1, ref.ffn.w1),
            (student.ffn2, ref.ffn.w2),
            (student.norm2, ref.ffn_norm),
        ):
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


def _student_layer(name: str, EncoderLayer: Callable, H: int, A: int, I: int):
    """The student's EncoderLayer(H, A, I), with the attributes the notebook fixes."""
    __tracebackhide__ = True
    mine = call_student(name, EncoderLayer, H, A, I)
    for attr in LAYER_PARTS:
        if not hasattr(mine, attr):
            raise ExerciseFailure(
                name,
                f"EncoderLayer({H}, {A}, {I}) has no attribute {attr!r}: keep the layers "
                "that __init__ creates, with their names, and use them in forward",
            )
    return mine


def _run_with_weights(
    name: str, EncoderLayer: Callable, sizes: tuple[int, int, int], ref, x: torch.Tensor, mask
) -> torch.Tensor:
    """(observe_student's drive) The student's EncoderLayer(*sizes) with the weights of bertlab's
    layer `ref`, in eval mode, on x and mask."""
    __tracebackhide__ = True
    mine = _student_layer(name, EncoderLayer, *sizes)
    _copy_into_student(mine, ref)
    mine.eval()
    with torch.no_grad():
        return call_student(name, mine, x.clone(), None if mask is None else mask.clone())


def _gradients_of_layer(
    name: str, EncoderLayer: Callable, sizes: tuple[int, int, int], x: torch.Tensor, r: torch.Tensor
) -> dict:
    """(observe_student's drive) The gradients, by parameter name, of (output * r).sum() for the
    student's layer (its own initial weights, seeded) on x, every token real. (A random r: the plain
    sum of a LayerNorm's output does not depend on what comes before it.)"""
    __tracebackhide__ = True
    torch.manual_seed(9)
    mine = _student_layer(name, EncoderLayer, *sizes)
    out = expect_tensor(
        name, call_student(name, mine, x.clone(), torch.ones(x.shape[:2], dtype=torch.bool)), "the output"
    )
    if out.requires_grad:
        (out * r if out.shape == r.shape else out).sum().backward()
    return gradients_of(mine)


def check_encoder_layer(EncoderLayer: Callable) -> None:
    """EncoderLayer(hidden_size, num_heads, intermediate_size) -> a module whose forward(x, mask)
    maps x (B, T, H) and mask (B, T) bool (True = real token) or None to (B, T, H):
    h = LayerNorm1(x + MultiHeadAttention(x)); out = LayerNorm2(h + W2 GELU(W1 h)) (post-LN)."""
    __tracebackhide__ = True
    name = "encoder_layer"
    parts = Parts(name)
    g = torch.Generator().manual_seed(9)
    cases = [
        ("padding in one row", 2, 7, 64, 4, 256, (0, 3)),
        ("a single token", 1, 1, 32, 2, 128, None),
        ("FFN size not 4H, no mask", 3, 5, 48, 3, 100, None),
        ("MiniLM's size, H=384, A=12, padding", 2, 9, 384, 12, 1536, (2, 0)),
    ]
    hints_for = {
        "pre_ln": "your output equals a PRE-LN layer (LayerNorm before each sub-layer, x + F(LN(x))); "
        "BERT is post-LN: LayerNorm AFTER the residual sum, LN(x + F(x))",
        "no_residual": "your output equals LN(F(x)) without the residual: add the sub-layer's input "
        "back before each LayerNorm, LN(x + F(x))",
        "relu": "your feed-forward uses ReLU; BERT uses GELU (torch.nn.functional.gelu)",
        "tanh_gelu": "your feed-forward uses the tanh approximation of GELU; BERT (and bertlab) use the "
        "exact GELU: F.gelu(x) without approximate='tanh'",
        "unscaled": "the attention scores were not divided by sqrt(d_k), the size of one HEAD (H / A)",
        "no_mask": "the padding mask was ignored: padded keys must get weight 0 (their scores -inf)",
    }
    for label, B, T, H, A, I, pads in cases:
        with parts(label):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            ref = ReferenceEncoderLayer(_small_config(H, A, I)).eval()
            with torch.no_grad():  # random LayerNorm parameters, so that swapping them shows
                for norm in (ref.attention_norm, ref.ffn_norm):
                    norm.weight.normal_(1.0, 0.2)
                    norm.bias.normal_(0.0, 0.2)
            x = torch.randn(B, T, H, generator=g)
            mask = padding_mask(T, pads)
            got = observe_student(
                name,
                EncoderLayer,
                {"case": label, "sizes": (H, A, I), "weights": ref.state_dict(), "x": x, "mask": mask},
                functools.partial(_run_with_weights, name, EncoderLayer, (H, A, I), ref, x, mask),
            )
            with torch.no_grad():
                expected, _ = ref(x, attention_mask_for(None if mask is None else mask.long(), T, False))
                hints = [
                    (_encoder_variant(ref, x, mask, v), why)
                    for v, why in hints_for.items()
                    if not (v == "no_mask" and mask is None)
                ]
            keep = torch.ones(B, T, 1) if mask is None else mask[..., None].float()
            got_t = expect_tensor(name, got, f"{label}: the output")
            if tuple(got_t.shape) != (B, T, H):
                expect_same(name, got_t, expected, f"{label}: the output")
            what = f"{label} (x {(B, T, H)}, {A} heads, FFN {I}): the output at the real tokens"
            expect_same(
                name, got_t * keep, expected * keep, what, atol=1e-4, hints=[(w * keep, why) for w, why in hints]
            )
    with parts("gradients reach every parameter"):
        x, r = torch.randn(2, 5, 32, generator=g), torch.randn(2, 5, 32, generator=g)
        grads = observe_student(
            name,
            EncoderLayer,
            {"case": "gradients", "sizes": (32, 4, 64), "seed": 9, "x": x, "r": r},
            functools.partial(_gradients_of_layer, name, EncoderLayer, (32, 4, 64), x, r),
        )
        if not isinstance(grads, dict):
            parts.fail("the gradients of the layer's parameters were not recorded")
        dead = [n for n, gr in grads.items() if not isinstance(gr, torch.Tensor) or not gr.abs().sum() > 0]
        if dead:
            parts.fail(
                f"no gradient reached {dead}: every parameter must take part in the output (no "
                ".detach(), no torch.no_grad() inside forward, no layer left unused)"
            )
    parts.done(
        f"{len(cases)} cases (padding, one token, an FFN that is not 4H, MiniLM's 12 heads) against "
        "bertlab.model.EncoderLayer with the same weights; gradients reach every parameter"
    )


PARAM_COUNT_MISTAKES = {  # what _count_parameters(..., mistake) counts -> the hint
    "biases": "you left out the biases (every nn.Linear has one per output)",
    "norms": "you left out the LayerNorms (a weight and a bias of size H each: one after the embeddings, two per "
    "layer)",
    "pooler": "the pooler (an H x H dense layer with a bias over [CLS]) is counted when pooler=True only",
    "positions": "you left out the position embeddings (max_positions x H)",
    "segments": "you left out the segment embeddings (type_vocab_size x H)",
    "4H": "the feed-forward size is intermediate_size when it is given (4H only when it is None)",
}


def _count_parameters(cfg: BertConfig, pooler: bool, mistake: str) -> int:
    """BertModel's parameter count, as `mistake` (a key of PARAM_COUNT_MISTAKES) makes it."""
    L, H, V, P, S = (cfg.num_layers, cfg.hidden_size, cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size)
    I = 4 * H if mistake == "4H" else cfg.intermediate_size
    b = 0 if mistake == "biases" else 1
    ln = 0 if mistake == "norms" else 2 * H
    emb = V * H + (0 if mistake == "positions" else P * H) + (0 if mistake == "segments" else S * H) + ln
    layer = 4 * (H * H + b * H) + (H * I + b * I) + (I * H + b * H) + 2 * ln
    return emb + L * layer + ((H * H + b * H) if pooler != (mistake == "pooler") else 0)


def check_param_count(bert_parameters: Callable) -> None:
    """bert_parameters(L, H, A, vocab_size=30522, max_positions=512, type_vocab_size=2,
    intermediate_size=None, pooler=True) -> int: the number of parameters of BertModel."""
    __tracebackhide__ = True
    name = "param_count"
    parts = Parts(name)
    configs = [
        ("BERT-base (the paper's 110M)", dict(L=12, H=768, A=12)),
        ("BERT-large (the paper's 340M)", dict(L=24, H=1024, A=16)),
        ("tiny, 2/128/2", dict(L=2, H=128, A=2)),
        ("the book's own model: tiny with a 16,384-piece vocabulary", dict(L=2, H=128, A=2, vocab_size=16384)),
        (
            "an FFN of 1,000, 128 positions, 3 segment types",
            dict(L=3, H=96, A=4, intermediate_size=1000, max_positions=128, type_vocab_size=3),
        ),
        ("BERT-base without the pooler (as under a token or span head)", dict(L=12, H=768, A=12, pooler=False)),
    ]
    for label, kw in configs:
        with parts(label):
            cfg = BertConfig(
                vocab_size=kw.get("vocab_size", 30522),
                num_layers=kw["L"],
                hidden_size=kw["H"],
                num_heads=kw["A"],
                intermediate_size=kw.get("intermediate_size"),
                max_position_embeddings=kw.get("max_positions", 512),
                type_vocab_size=kw.get("type_vocab_size", 2),
            )
            with torch.device("meta"):  # counts shapes only: no memory, no time
                expected = BertModel(cfg, add_pooler=kw.get("pooler", True)).num_parameters()
            args = {k: v for k, v in kw.items() if k not in ("L", "H", "A")}
            got = call_student(name, bert_parameters, kw["L"], kw["H"], kw["A"], **args)
            call = f"bert_parameters({', '.join(f'{k}={v}' for k, v in kw.items())})"
            if isinstance(got, float) and got.is_integer():
                got = int(got)
            if not isinstance(got, int) or isinstance(got, bool):
                parts.fail(f"{call}: return an int, got {type(got).__name__} {got!r}")
            if got == expected:
                continue
            pooler = kw.get("pooler", True)
            why = next((w for m, w in PARAM_COUNT_MISTAKES.items() if _count_parameters(cfg, pooler, m) == got), "")
            parts.fail(
                f"{call}: expected {expected:,}, got {got:,} ({got - expected:+,})" + (f": {why}" if why else "")
            )
    parts.done(
        f"{len(configs)} configurations against BertModel(config).num_parameters(), the paper's "
        "BERT-base (109,482,240) and BERT-large (335,141,888) included"
    )
