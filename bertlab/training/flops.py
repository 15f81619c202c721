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

import math

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


# ------------------------------------------------------------------------------------------------
# How long a chapter's GPU branch takes on a free Colab T4
# ------------------------------------------------------------------------------------------------
# A training run's time is modelled as FLOPs / an achieved rate + optimizer steps x a fixed cost per
# step. Both numbers come from the runs measured on one H200 (data/gpu_runs/h200-2026-11-26/):
#
# * achieved rate: pretrain_run.json pretrained BERT-Medium (8/512/8, vocabulary 16,384, batch
#   256 x 128, 15% masked: about 20 predicted slots a sequence; bf16, compiled) for 3,334 steps in
#   90 s of training (log.txt): 3,334 x pretraining_flops(...) / 90 s = 20.3% of the H200's 989
#   TFLOP/s (tests/test_gpu_branch.py recomputes it from the record). The T4 is taken to reach
#   the same fraction of its own fp16 peak (65 TFLOP/s): 13.2 TFLOP/s. Its memory bandwidth is in
#   the same ratio to the H200's as its peak (320 GB/s against 4.8 TB/s, both about 1:15), so
#   the share of time spent waiting on memory is about the same on both.
# * cost per step: finetune_pretrained.json fine-tuned that BERT-Medium on CoNLL-2003 for one epoch
#   (14,041 sentences, batch 32: 439 steps) and scored the dev set once in 24.1 s, eager, bf16.
#   Its model FLOPs take well under a second at the rate above, so the run is bound by what
#   every step costs whatever its size (kernel launches, the host's Python, copies): 24.1 / 439 =
#   54.8 ms a step, evaluation included. The T4's host is taken to cost the same (Colab's two
#   vCPUs are slower than the H200 machine's: a lower bound there); scripts/gpu_chapters.sh
#   records each chapter's wall time so that these two numbers can be checked and refitted.
T4_PEAK_FLOPS = 65e12  # dense fp16 tensor-core peak (runtime.PEAK_FLOPS["T4"])
T4_FP32_FLOPS = 8.1e12  # fp32 peak, for work that autocast leaves in fp32 (the taggers' LSTMs)
H200_PRETRAIN_STEPS, H200_PRETRAIN_SECONDS, H200_PEAK = 3334, 90.0, 989e12
H200_FINETUNE_STEPS, H200_FINETUNE_SECONDS = 439, 24.06
ACHIEVED_FRACTION = 0.203  # of peak, from the H200 pretraining record (above)
STEP_OVERHEAD_S = H200_FINETUNE_SECONDS / H200_FINETUNE_STEPS  # 54.8 ms a step (above)


def training_flops(config: BertConfig, tokens: float, predictions_per_token: float = 0.0, passes: float = 3.0) -> float:
    """Model FLOPs of pushing `tokens` token positions through an encoder of `config`: forward
    (passes=1, evaluation) or forward and backward (passes=3, training). The encoder's matmuls and
    attention as in `pretraining_flops` (sequences of `tokens` counted at the mean length the
    attention term needs: pass the length through `finetune_flops`), plus a head of H x V on a
    share `predictions_per_token` of the positions (pretraining's MLM); a task layer of K outputs
    is too small to count."""
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
    `mean_len` tokens (dynamic padding: about their mean length), forward and backward, plus
    `evals` forward passes over `eval_examples` per seed. Attention (2 x T x H a token and layer)
    is counted at mean_len."""
    L, H = config.num_layers, config.hidden_size
    attention_per_token = L * 2 * mean_len * H

    def flops(tokens: float, passes: float) -> float:
        return training_flops(config, tokens, passes=passes) + 2.0 * passes * tokens * attention_per_token

    train = flops(seeds * epochs * examples * mean_len, 3.0)
    evaluate = flops(seeds * evals * eval_examples * mean_len, 1.0)
    return train + evaluate


def t4_seconds(flops: float, steps: int = 0, fp32_flops: float = 0.0) -> float:
    """Expected seconds on a T4: `flops` under fp16 autocast at ACHIEVED_FRACTION of its peak,
    `fp32_flops` (work autocast leaves in fp32) at that fraction of its fp32 peak, and `steps`
    optimizer steps at STEP_OVERHEAD_S each. See the comment above for where both numbers come from."""
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
    """Model FLOPs of training a bidirectional LSTM tagger (bertlab.tasks.feature_based.Tagger) on
    `words` words for `epochs` epochs and tagging `dev_words` after each: four gates of
    hidden x (input + hidden) per direction and layer, forward and backward (3x) when training."""
    per_word = 0.0
    width = in_dim
    for _ in range(num_layers):
        per_word += 2 * 2 * 4 * hidden * (width + hidden)  # 2 directions, 2 FLOPs a multiply-add
        width = 2 * hidden
    return epochs * per_word * (3 * words + dev_words)
