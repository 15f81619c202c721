"""bertlab.analysis.fill_mask.continuation_score: a masked LM choosing between endings."""

import math
from types import SimpleNamespace

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab.analysis.fill_mask import continuation_score


class Recorder(torch.nn.Module):
    """A 'masked LM' that puts fixed logits at every asked position and keeps what it was given."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.as_tensor(logits, dtype=torch.float)
        self.weight = torch.nn.Parameter(torch.zeros(1))  # a parameter, for the device
        self.calls = []

    def forward(self, input_ids, token_type_ids, attention_mask, mlm_positions):
        self.calls.append((input_ids.clone(), token_type_ids.clone(), mlm_positions.clone()))
        return SimpleNamespace(mlm_logits=self.logits.expand(*mlm_positions.shape, -1))


def test_each_piece_of_the_continuation_is_masked_once_and_scored(bert_tokenizer):
    tok = bert_tokenizer
    cat = tok.token_to_id("cat")
    logits = torch.zeros(tok.vocab_size)
    logits[cat] = 5.0
    model = Recorder(logits)
    score = continuation_score(model, tok, "the pet is a", "cat cat")
    ids, segments, positions = model.calls[0]
    plain = tok.encode("the pet is a", "cat cat").input_ids
    assert ids.shape == (2, len(plain)) and positions.tolist() == [[len(plain) - 3], [len(plain) - 2]]
    for row, (pos,) in enumerate(positions.tolist()):  # row k hides piece k, nothing else
        assert ids[row, pos] == tok.mask_id and (ids[row] != tok.mask_id).sum() == len(plain) - 1
    assert (segments[:, -3:] == 1).all() and (segments[:, :2] == 0).all()
    log_p_cat = 5.0 - math.log(math.exp(5.0) + tok.vocab_size - 1)
    assert score == pytest.approx(log_p_cat, abs=1e-4)  # the mean over the two pieces (fp32)
    assert continuation_score(model, tok, "the pet is a", "dog") < score  # "dog" gets the rest
    with pytest.raises(ValueError, match="no pieces"):
        continuation_score(model, tok, "the pet is a", "")


def test_it_agrees_with_the_model_masked_by_hand(bert_tokenizer):
    torch.manual_seed(0)
    tok = bert_tokenizer
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tok.vocab_size)).train()
    score = continuation_score(model, tok, "she opened the door", "and walked in")
    assert model.training  # left as it was
    enc = tok.encode("she opened the door", "and walked in", return_tensors="pt")
    sep = (enc.input_ids[0] == tok.sep_id).nonzero().flatten().tolist()
    logs = []
    model.eval()
    with torch.no_grad():
        for pos in range(sep[0] + 1, sep[1]):
            ids = enc.input_ids.clone()
            ids[0, pos] = tok.mask_id
            out = model(ids, enc.token_type_ids, enc.attention_mask)  # every position's logits
            logs.append(out.mlm_logits[0, pos].log_softmax(-1)[enc.input_ids[0, pos]].item())
    assert score == pytest.approx(sum(logs) / len(logs), abs=1e-5)
