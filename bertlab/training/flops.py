"""Model FLOPs and MFU (model FLOPs utilisation), and the chapters' T4 time estimates.

One training step of BertForPreTraining with batch B, length T, P predicted positions per
sequence, L layers, hidden H, feed-forward size I, vocabulary V; a multiply-add is 2 FLOPs and
the backward pass twice the forward (so training = the familiar "6 x parameters x tokens"):

    encoder matmuls    6 * B*T * L * (4*H*H + 2*H*I)     Q,K,V,O projections + the two FFN matrices
    attention          6 * B*T * L * 2*T*H               Q K^T and (weights) V: 2*T*H per token
    MLM head           6 * B*P * (H*H + H*V)             transform + tied decoder, masked positions only
    pooler + NSP       6 * B * (H*H + 2*H)

Embeddings, LayerNorm, softmax, GELU and biases are left out (memory-bound and small). MFU = model
FLOPs per second / the GPU's dense bf16 peak (runtime.PEAK_FLOPS); None on a CPU.
"""

from __future__ import annotations

import math

from bertlab.config import BertConfig


def pretraining_flops(config: BertConfig, batch_size: int, seq_len: int, predictions: float) -> float:
    """Model FLOPs of one training step (forward + backward); see the module docstring."""
    B, T = batch_size, seq_len
    L, H, I, V = config.num_layers, config.hidden_size, config.intermediate_size, config.vocab_size
    encoder = B * T * L * (4 * H * H + 2 * H * I)
    attention = B * T * L * 2 * T * H
    mlm = B * predictions * (H * H + H * V)
    pooler_nsp = B * (H * H + 2 * H)
    return 6.0 * (encoder + attention + mlm + pooler_nsp)


def mfu(flops_per_s: float, peak: float | None) -> float | None:
    return None if not peak else flops_per_s / peak


# How long a chapter's GPU branch takes on a free Colab T4: FLOPs / an achieved rate + optimizer
# steps x a fixed cost per step, both fitted to GPU runs (lab/README.md, "The T4 estimate").
T4_PEAK_FLOPS = 65e12  # dense fp16 tensor-core peak (runtime.PEAK_FLOPS["T4"])
T4_FP32_FLOPS = 8.1e12  # fp32 peak, for work that autocast leaves in fp32 (the taggers' LSTMs)
ACHIEVED_FRACTION = 0.203  # of peak, by a compiled bf16 BERT-Medium pretraining step
STEP_OVERHEAD_S = 24.06 / 439  # 54.8 ms: what every step costs whatever its size (launches, host)


def training_flops(config: BertConfig, tokens: float, predictions_per_token: float = 0.0, passes: float = 3.0) -> float:
    """Model FLOPs of `tokens` token positions through an encoder of `config`, forward (passes=1)
    or forward and backward (passes=3): the encoder's matmuls (attention needs the length: see
    `finetune_flops`), plus an H x V head on a share `predictions_per_token` of the positions."""
    L, H, I, V = config.num_layers, config.hidden_size, config.intermediate_size, config.vocab_size
    return 2.0 * passes * tokens * (L * (4 * H * H + 2 * H * I) + predictions_per_token * (H * H + H * V))


def finetune_flops(
    config: BertConfig,
    examples: int,
    epochs: float,
    mean_len: float,
    seeds: int = 1,
    eval_examples: int = 0,
    evals: int = 1,
) -> float:
    """Model FLOPs of a fine-tuning run: `seeds` x `epochs` passes over `examples` sequences of
    `mean_len` tokens (dynamic padding), plus `evals` forward passes over `eval_examples` per seed."""
    attention_per_token = config.num_layers * 2 * mean_len * config.hidden_size
    train_tokens, eval_tokens = seeds * epochs * examples * mean_len, seeds * evals * eval_examples * mean_len
    total = 0.0
    for tokens, passes in ((train_tokens, 3.0), (eval_tokens, 1.0)):
        total += training_flops(config, tokens, passes=passes) + 2.0 * passes * tokens * attention_per_token
    return total


def t4_seconds(flops: float, steps: int = 0, fp32_flops: float = 0.0) -> float:
    """Expected seconds on a T4: `flops` (fp16 autocast) and `fp32_flops` at ACHIEVED_FRACTION of
    the matching peak, plus `steps` optimizer steps at STEP_OVERHEAD_S each."""
    return (
        flops / (ACHIEVED_FRACTION * T4_PEAK_FLOPS)
        + fp32_flops / (ACHIEVED_FRACTION * T4_FP32_FLOPS)
        + steps * STEP_OVERHEAD_S
    )


def finetune_steps(examples: int, epochs: float, batch_size: int, seeds: int = 1) -> int:
    """Optimizer steps of a fine-tuning run (finetune's own count: ceil(epochs x batches), per seed)."""
    return seeds * math.ceil(epochs * math.ceil(examples / batch_size))


def t4_finetune_seconds(
    config: BertConfig,
    examples: int,
    epochs: float,
    batch_size: int,
    mean_len: float,
    seeds: int = 1,
    eval_examples: int = 0,
    evals: int = 1,
) -> float:
    """Expected seconds on a T4 of `finetune` with these settings (`finetune_flops`, `t4_seconds`)."""
    flops = finetune_flops(config, examples, epochs, mean_len, seeds, eval_examples, evals)
    return t4_seconds(flops, finetune_steps(examples, epochs, batch_size, seeds))


def t4_line(what: str, seconds: float, limit_s: float = 15 * 60) -> str:
    """One printed line: `what` and its expected time on a T4, with the 15-minute budget a chapter has."""
    minutes = seconds / 60
    flag = "" if seconds <= limit_s else f" (over the {limit_s / 60:.0f}-minute budget)"
    return f"expected on a T4: about {minutes:.1f} min for {what}{flag}"


def tagger_flops(words: int, in_dim: int, hidden: int, num_layers: int, epochs: int, dev_words: int = 0) -> float:
    """Model FLOPs of training a bidirectional LSTM tagger (feature_based.Tagger) on `words` words
    for `epochs` epochs, tagging `dev_words` after each: four gates of hidden x (input + hidden) per
    direction and layer."""
    per_word = 0.0
    width = in_dim
    for _ in range(num_layers):
        per_word += 2 * 2 * 4 * hidden * (width + hidden)  # 2 directions, 2 FLOPs a multiply-add
        width = 2 * hidden
    return epochs * per_word * (3 * words + dev_words)
