"""Chapter 8's stand-in when no reference run is recorded: a tiny BERT trained with the masked LM
alone for a few steps on the CPU, as a plain loop (`training.pretrain` adds checkpoints and
time budgets).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from bertlab.config import BertConfig
from bertlab.data.corpus import load_corpus
from bertlab.data.masking import MaskedLMCollator
from bertlab.data.pretraining_data import PretrainingBatches, PretrainingDataset, prepare_pretraining_data
from bertlab.data.tokenizer import WordPieceTokenizer, train_wordpiece
from bertlab.model import BertForPreTraining


@dataclass
class TinyMaskedLM:
    """A tiny BERT pre-trained with the masked LM alone, with what it was trained and judged on."""

    model: BertForPreTraining
    tokenizer: WordPieceTokenizer
    train_set: PretrainingDataset
    held_batches: list[dict[str, torch.Tensor]]  # masked held-out batches to score it on
    steps: int
    seconds: float  # data preparation and training


def tiny_masked_lm(
    heldout_docs: Sequence, workdir: str | Path, steps: int = 150, lr: float = 2e-3, words: int = 200_000
) -> TinyMaskedLM:
    """A tiny BERT (L=2, H=128, A=2) trained for `steps` steps of 32 sequences of 64 tokens from the
    first `words` words of the books, with five masked held-out batches to score it. Seeded."""
    start = time.perf_counter()
    workdir = Path(workdir)
    train_docs, n_words = [], 0
    for doc in load_corpus("books", "train"):
        train_docs.append(doc)
        n_words += doc.num_words
        if n_words >= words:
            break
    tok = train_wordpiece((s for d in train_docs for s in d.sentences), vocab_size=2_000)
    train_set = prepare_pretraining_data(train_docs, tok, workdir / "train", max_len=64, nsp=False)
    held_set = prepare_pretraining_data(heldout_docs[:2], tok, workdir / "held", max_len=64, nsp=False, seed=1)
    stream = PretrainingBatches(train_set, 32, MaskedLMCollator(tok, seed=0), seed=0)
    held_stream = PretrainingBatches(held_set, 64, MaskedLMCollator(tok, seed=1234), seed=1234)
    held_batches = [next(held_stream) for _ in range(5)]

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small run faster on one thread than on several
    try:
        torch.manual_seed(0)
        config = BertConfig.preset("tiny", vocab_size=tok.vocab_size, hidden_dropout=0.0, attention_dropout=0.0)
        model = BertForPreTraining(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
        for step in range(steps):
            scale = min((step + 1) / (0.1 * steps), (steps - step) / (0.9 * steps))  # warm-up, then decay
            for group in optimizer.param_groups:
                group["lr"] = lr * scale
            model(**next(stream)).mlm_loss.backward()  # the loss at the chosen positions
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return TinyMaskedLM(model, tok, train_set, held_batches, steps, time.perf_counter() - start)
