"""bertlab.analysis.training_signal: an objective's positions with a loss, [MASK]s and changed
tokens as shares of the real tokens, by hand and on batches masked by bertlab's collator."""

import pytest
import torch

from bertlab import IGNORE_INDEX
from bertlab.analysis.training_signal import signal, signal_table
from bertlab.data.masking import MaskedLMCollator


def test_signal_by_hand():
    n_real = torch.tensor([10.0, 30.0])
    s = signal("x", n_real, torch.tensor([2.0, 4.0]), torch.tensor([1.0, 3.0]), torch.tensor([2.0, 2.0]))
    assert (s.per_sequence, s.positions) == (3.0, 6.0)
    assert (s.loss_share, s.mask_share, s.changed_share) == pytest.approx((0.15, 0.1, 0.1))  # of 40 real tokens
    every = signal("y", n_real, n_real, torch.zeros(2), torch.tensor([1.0, 3.0]))  # a decision at every token
    assert (
        every.loss_share == 1.0 and every.mask_share == 0.0 and every.positions / s.positions == pytest.approx(40 / 6)
    )
    lines = signal_table([s, every]).splitlines()
    assert lines[2] == "| x | 3.0 | 15.0% | 10.0% | 10.0% |" and lines[3] == "| y | 20.0 | 100.0% | 0.0% | 10.0% |"
    with pytest.raises(ValueError, match="no real token"):
        signal("z", torch.zeros(2), torch.zeros(2), torch.zeros(2), torch.zeros(2))


def counts(tok, text, out):
    """As chapter 18 counts them: real tokens, positions with a loss, [MASK]s, changed tokens."""
    ids = text["input_ids"]
    real = text["attention_mask"].bool() & ~torch.isin(ids, torch.tensor(tok.special_ids))
    loss_at = (out["mlm_labels"] != IGNORE_INDEX).sum(1).float()
    masks = ((out["input_ids"] == tok.mask_id) & real).sum(1).float()
    changed = ((out["input_ids"] != ids) & real).sum(1).float()
    return real.sum(1).float(), loss_at, masks, changed


def test_on_batches_masked_by_the_collator(bert_tokenizer):
    tok = bert_tokenizer
    sentences = ["the quick brown fox jumps over the lazy dog near the river bank"] * 64
    enc = tok.encode_batch(sentences, return_tensors="pt")
    text = {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask}
    bert = signal("BERT", *counts(tok, text, MaskedLMCollator(tok, seed=0)(text)))
    assert bert.loss_share == pytest.approx(0.15, abs=0.03)  # 15% of the real tokens chosen
    assert bert.mask_share < bert.loss_share and bert.changed_share < bert.loss_share  # 80/10/10
    only_mask = MaskedLMCollator(tok, seed=0, mask_prob=1.0, random_prob=0.0)(text)  # ELECTRA's generator input
    gen = signal("generator", *counts(tok, text, only_mask))
    assert gen.mask_share == gen.changed_share == gen.loss_share  # every chosen token is [MASK]
