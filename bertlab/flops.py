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
    B, T, L, H, I, V = (batch_size, seq_len, config.num_layers, config.hidden_size,
                        config.intermediate_size, config.vocab_size)
    encoder = B * T * L * (4 * H * H + 2 * H * I)
    attention = B * T * L * 2 * T * H
    mlm = B * predictions * (H * H + H * V)
    pooler_nsp = B * (H * H + 2 * H)
    return 6.0 * (encoder + attention + mlm + pooler_nsp)


def mfu(flops_per_s: float, peak: float | None) -> float | None:
    return None if not peak else flops_per_s / peak
