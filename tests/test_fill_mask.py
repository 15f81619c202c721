"""bertlab.analysis.fill_mask.continuation_score and continuation_pmi: a masked LM choosing between
endings, by their pseudo-log-likelihood after the context, and by how much the context raises it."""

import math
from types import SimpleNamespace

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab.analysis.fill_mask import continuation_pmi, continuation_score, zero_shot_reading


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


def masked_by_hand(model, tok, enc, positions):
    """The log-probability of the true piece at each position, masked alone, one forward each."""
    logs = []
    with torch.no_grad():
        for pos in positions:
            ids = enc.input_ids.clone()
            ids[0, pos] = tok.mask_id
            out = model(ids, enc.token_type_ids, enc.attention_mask)  # every position's logits
            logs.append(out.mlm_logits[0, pos].log_softmax(-1)[enc.input_ids[0, pos]].item())
    return logs


def test_pmi_is_the_summed_score_after_the_context_minus_the_ending_alone(bert_tokenizer):
    torch.manual_seed(1)
    tok = bert_tokenizer
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tok.vocab_size)).eval()
    context, ending = "she ties her shoes", "and runs down the street"
    paired = tok.encode(context, ending, return_tensors="pt")
    sep = (paired.input_ids[0] == tok.sep_id).nonzero().flatten().tolist()
    conditional = masked_by_hand(model, tok, paired, range(sep[0] + 1, sep[1]))
    alone = tok.encode(ending, return_tensors="pt")  # [CLS] ending [SEP], one segment
    assert (alone.token_type_ids == 0).all()
    unconditional = masked_by_hand(model, tok, alone, range(1, alone.input_ids.shape[1] - 1))
    assert len(conditional) == len(unconditional) == len(tok.tokenize(ending))
    assert continuation_score(model, tok, context, ending, reduce="sum") == pytest.approx(sum(conditional), abs=1e-4)
    pmi = continuation_pmi(model, tok, context, ending)
    assert pmi == pytest.approx(sum(conditional) - sum(unconditional), abs=1e-4)
    assert pmi != pytest.approx(0.0, abs=1e-3)  # the random model does read the context
    with pytest.raises(ValueError, match="reduce"):
        continuation_score(model, tok, context, ending, reduce="max")


def test_a_model_blind_to_the_context_gives_every_ending_zero_pmi(bert_tokenizer):
    """Fixed logits: each piece's probability is the same with and without the context, so its own
    frequency, which makes "cat" far likelier than "dog" by the summed score, cancels."""
    tok = bert_tokenizer
    logits = torch.zeros(tok.vocab_size)
    logits[tok.token_to_id("cat")] = 5.0
    model = Recorder(logits)
    cat, dog = (continuation_score(model, tok, "the pet is a", w, reduce="sum") for w in ("cat", "dog"))
    assert cat > dog + 5
    for ending in ("cat cat", "dog", "a very long ending about dogs"):
        assert continuation_pmi(model, tok, "the pet is a", ending) == pytest.approx(0.0, abs=1e-4)
    ids, segments, positions = model.calls[-1]  # the ending alone: [CLS] pieces [SEP]
    assert (segments == 0).all() and positions.flatten().tolist() == list(range(1, ids.shape[1] - 1))


def test_the_zero_shot_reading_counts_what_the_remedy_gains_loses_and_swaps():
    endings = [[f"real {i}.", f"wrong {i}a.", f"wrong {i}b.", f"wrong {i}c."] for i in range(6)]
    picks = {
        "per piece": [0, 0, 1, 2, 3, 1],  # two right
        "summed": [1, 1, 1, 1, 1, 0],  # one right
        "by PMI": [0, 2, 0, 3, 3, 2],  # keeps 0, loses 1, gains 2, swaps 3 and 5, leaves 4
    }
    text = zero_shot_reading(endings, picks, baseline="per piece", remedy="by PMI")
    assert text.startswith(
        "Without a single training question, the masked LM picks the real ending in two of the six questions "
        "per piece, one summed and two by PMI, where guessing gets 1.5 right on average."
    )
    assert "Scored by PMI, one of the wrong choices made per piece becomes the real ending and one of the right" in text
    assert "ones is lost; elsewhere one wrong ending gives way to another: *wrong 3b* gives way to *wrong 3c*; " in text
    assert "*wrong 5a* gives way to *wrong 5b*." in text and "wrong 4" not in text  # unchanged: not named
    # P(2 or more of 6 right at 1/4 each) = 1 - P(0) - P(1)
    luck = 1 - 0.75**6 - 6 * 0.25 * 0.75**5
    assert f"Getting two or more right by guessing has a probability of {luck:.2f}, so" in text
    assert "no scoring is shown to beat chance" in text
    every = {"per piece": [0] * 6, "by PMI": [0] * 6}
    text = zero_shot_reading(endings, every, baseline="per piece", remedy="by PMI")
    assert "six of the six questions per piece and six by PMI," in text and "gives way" not in text
    assert "the best scoring beats chance" in text
