"""Counting a pretraining step's model FLOPs, and MFU (model FLOPs utilisation).

Model FLOPs (the numerator of MFU, model FLOPs utilisation) for one training step of BertForPreTraining
with batch B, sequence length T, P predicted (masked) positions per sequence, L layers, hidden H,
feed-forward size I, vocabulary V -- counting a multiply-add as 2 FLOPs and the backward pass as
twice the forward (so training = 3 x forward = the familiar "6 x parameters x tokens"):

    encoder matmuls    6 * B*T * L * (4*H*H + 2*H*I)     Q,K,V,O projections + the two FFN matrices
    attention          6 * B*T * L * 2*T*H               Q K^T and (weights) V: 2*T*H per token
    MLM head           6 * B*P * (H*H + H*V)             transform + tied decoder, masked positions only
    pooler + NSP       6 * B * (H*H + 2*H)

Embedding lookups, LayerNorm, softmax, GELU and biases are left out (they are memory-bound and small).
MFU = model FLOPs per second / the GPU's dense bf16 peak (runtime.PEAK_FLOPS); None on a CPU.
"""

from __future__ import annotations

from bertlab.config import BertConfig


def pretraining_flops(config: BertConfig, batch_size: int, seq_len: int, predictions: float) -> float:
    """Model FLOPs of one training step (forward + backward); see the module docstring."""
    B, T, L, H, I, V = (
        batch_size,
        seq_len,
        config.num_layers,
        config.hidden_size,
        config.intermediate_size,
        config.vocab_size,
    )
    encoder = B * T * L * (4 * H * H + 2 * H * I)
    attention = B * T * L * 2 * T * H
    mlm = B * predictions * (H * H + H * V)
    pooler_nsp = B * (H * H + 2 * H)
    return 6.0 * (encoder + attention + mlm + pooler_nsp)


def mfu(flops_per_s: float, peak: float | None) -> float | None:
    return None if not peak else flops_per_s / peak


def step_matmuls(
    config: BertConfig, batch_size: int, seq_len: int, predictions: int
) -> list[tuple[str, int, int, int, int, int]]:
    """The matrix products of one training step, forward and backward, at their shapes: a list of
    (what, batch, m, k, n, times) for `times` products of a (batch, m, k) by a (batch, k, n)
    tensor. Their FLOPs (2 * batch * m * k * n * times, summed) are exactly `pretraining_flops`:
    timing each shape alone gives the fastest a step of this model could run its matmuls (the
    "model-shape ceiling"), a fairer yardstick than one large square matmul.

    Backward of y = x @ w: dx = dy @ w^T and dw = x^T @ dy, each as many FLOPs as the forward."""
    B, T, P, L, H, I, V, A = (
        batch_size,
        seq_len,
        predictions,
        config.num_layers,
        config.hidden_size,
        config.intermediate_size,
        config.vocab_size,
        config.num_heads,
    )
    M, d = B * T, H // A

    def linear(what: str, rows: int, k: int, n: int, times: int, batch: int = 1):
        return [
            (f"{what} forward", batch, rows, k, n, times),
            (f"{what} backward (input)", batch, rows, n, k, times),  # dy @ w^T
            (f"{what} backward (weight)", batch, k, rows, n, times),
        ]  # x^T @ dy

    out = []
    out += linear("Q, K, V projection", M, H, 3 * H, L)
    out += linear("attention scores Q K^T", T, d, T, L, B * A)
    out += linear("attention weights x V", T, T, d, L, B * A)
    out += linear("attention output projection", M, H, H, L)
    out += linear("feed-forward in", M, H, I, L)
    out += linear("feed-forward out", M, I, H, L)
    out += linear("MLM transform", B * P, H, H, 1)
    out += linear("MLM decoder (tied)", B * P, H, V, 1)
    out += linear("pooler", B, H, H, 1)
    out += linear("NSP classifier", B, H, 2, 1)
    return out
