"""The checks of assignment 02_attention: check_attention (chapter 4), check_heads (chapter 5)."""

from __future__ import annotations

import math
from typing import Callable

import torch

from .framework import Parts, call_student, expect_same, expect_tensor, padding_mask


def _reference_attention(q, k, v, mask=None, scale=True):
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
    w = scores.softmax(-1)
    return w @ v, w


def check_attention(attention: Callable) -> None:
    """attention(q, k, v, mask=None) -> (output, weights); q (B, Tq, d), k (B, Tk, d), v (B, Tk, dv),
    mask (B, Tk) bool (True = real token) or None; output (B, Tq, dv), weights (B, Tq, Tk)."""
    __tracebackhide__ = True
    name = "attention"
    parts = Parts(name)
    g = torch.Generator().manual_seed(0)
    cases = []
    # the last two are hidden cases: the grader runs them, the notebook's own check does not
    HIDDEN_FROM = 4
    for B, Tq, Tk, d, dv, pads in [
        (2, 6, 6, 16, 16, (0, 2)),
        (1, 1, 1, 8, 8, (0,)),
        (3, 5, 7, 4, 3, (0, 3, 6)),
        (2, 4, 4, 64, 64, None),
        (4, 3, 9, 32, 5, (8, 0, 1, 4)),
        (1, 8, 2, 128, 16, None),
    ]:
        q, k, v = (torch.randn(*shape, generator=g) for shape in ((B, Tq, d), (B, Tk, d), (B, Tk, dv)))
        cases.append((q, k, v, padding_mask(Tk, pads)))
    for n, (q, k, v, mask) in enumerate(cases):
        with parts(f"case {n}", hidden=n >= HIDDEN_FROM) as run:
            if not run:
                continue
            B, Tq, d = q.shape
            Tk = k.shape[1]
            what = f"case {n} (q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, " + (
                "no mask)" if mask is None else f"padding per row {(~mask).sum(1).tolist()})"
            )
            result = call_student(
                name, attention, q.clone(), k.clone(), v.clone(), None if mask is None else mask.clone()
            )
            if not (isinstance(result, tuple) and len(result) == 2):
                parts.fail(f"{what}: return a pair (output, weights), got {type(result).__name__}")
            out, w = result
            exp_out, exp_w = _reference_attention(q, k, v, mask)
            w = expect_tensor(name, w, f"{what}, weights")
            if tuple(w.shape) != (B, Tq, Tk):
                expect_same(name, w, exp_w, f"{what}, weights")
            sums = w.double().sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                b, i = divmod((sums - 1).abs().argmax().item(), Tq)
                parts.fail(
                    f"{what}: the weights of batch row {b}, query {i} sum to {sums[b, i].item():.4f} "
                    f"over the keys, not 1: take the softmax over the last axis (the keys)"
                )
            if mask is not None:
                leak = w.detach().double() * (~mask)[:, None, :]
                if leak.max() > 1e-6:
                    b, i, j = (leak == leak.max()).nonzero()[0].tolist()
                    parts.fail(
                        f"{what}: batch row {b}, query {i} attends to padding position {j} "
                        f"(weight {leak[b, i, j].item():.2f}); padded KEYS must get weight 0: set "
                        f"their scores to -inf before the softmax (mask the last axis)"
                    )
            hints = [
                (
                    _reference_attention(q, k, v, mask, scale=False)[1],
                    "the weights match attention WITHOUT the 1/sqrt(d_k) scaling: divide the scores "
                    f"q k^T by sqrt(d_k) = sqrt({d})",
                ),
                (
                    _reference_attention(q, k * math.sqrt(d) / d, v, mask)[1],
                    f"the scores were divided by d_k = {d}, not by sqrt(d_k)",
                ),
            ]
            expect_same(name, w, exp_w, f"{what}, weights", hints=hints)
            expect_same(name, out, exp_out, f"{what}, output (weights were right: multiply them by v)")
    parts.done(
        f"{len(parts.result.parts)} cases against softmax(q k^T / sqrt(d_k)) v: weights and output, "
        "padding in some rows, a single token, T_q != T_k, no mask"
    )


def check_heads(split_heads: Callable, merge_heads: Callable) -> None:
    """split_heads(x (B, T, H), num_heads A) -> (B, A, T, d = H / A), head a holding dims
    a*d..(a+1)*d of every token; merge_heads(z (B, A, T, d)) -> (B, T, A*d), its inverse."""
    __tracebackhide__ = True
    name = "heads"
    parts = Parts(name)
    g = torch.Generator().manual_seed(1)
    shapes = [(2, 7, 64, 4), (1, 1, 12, 3), (3, 5, 24, 1), (2, 4, 384, 12)]
    inputs = [
        (torch.randn(B, T, H, generator=g), torch.randn(B, A, T, H // A, generator=g), A) for B, T, H, A in shapes
    ]
    with parts("split_heads"):
        for x, _, A in inputs:
            B, T, H = x.shape
            d = H // A
            what = f"split_heads(x of shape {(B, T, H)}, num_heads={A})"
            expected = x.view(B, T, A, d).transpose(1, 2)
            got = call_student(name, split_heads, x.clone(), A)
            hints = [
                (
                    x.reshape(B, A, T, d),
                    "you reshaped (B, T, H) straight to (B, A, T, d), which mixes "
                    "tokens into heads; view it as (B, T, A, d) first, then swap the A and T axes",
                ),
                (
                    x.view(B, T, d, A).permute(0, 3, 1, 2),
                    "head a got every A-th dimension (a, a+A, ...); "
                    "head a must get the contiguous block a*d..(a+1)*d: view as (B, T, A, d), not (B, T, d, A)",
                ),
            ]
            got_t = expect_tensor(name, got, what)
            if tuple(got_t.shape) == (B, T, A, d) and (B, T, A, d) != (B, A, T, d):
                parts.fail(
                    f"{what}: expected shape {(B, A, T, d)}, got {(B, T, A, d)}: did you forget to "
                    "transpose the head and time axes?"
                )
            expect_same(name, got_t, expected, what, atol=0, hints=hints)
    with parts("merge_heads"):
        for _, z, A in inputs:
            B, A, T, d = z.shape
            H = A * d
            what = f"merge_heads(z of shape {(B, A, T, d)})"
            expected = z.transpose(1, 2).reshape(B, T, H)
            got = call_student(name, merge_heads, z.clone())
            hints = [
                (
                    z.reshape(B, T, H),
                    "you reshaped (B, A, T, d) straight to (B, T, H), which mixes heads "
                    "and tokens; move the head axis next to d first (transpose(1, 2)), then reshape",
                ),
                (
                    z.permute(0, 2, 3, 1).reshape(B, T, H),
                    "the heads were interleaved dimension by "
                    "dimension; concatenate them instead: (B, A, T, d) -> (B, T, A, d) -> (B, T, A*d)",
                ),
            ]
            expect_same(name, got, expected, what, atol=0, hints=hints)
    with parts("merge_heads(split_heads(x)) == x"):
        for x, _, A in inputs:
            back = call_student(name, merge_heads, call_student(name, split_heads, x.clone(), A))
            expect_same(name, back, x, f"merge_heads(split_heads(x, {A})) should give x back", atol=0)
    parts.done(
        f"{len(shapes)} shapes (incl. T=1, one head, MiniLM's H=384, A=12) against "
        "bertlab.model.SelfAttention's view/transpose; merge_heads(split_heads(x)) == x"
    )
