"""The task layers for the rest of GLUE and for SWAG, against transformers (the oracle).

- STS-B's regression head: BertForSequenceClassification(config, num_labels=1), one output and a
  mean squared error loss, equals transformers' BertForSequenceClassification with num_labels=1
  (problem_type "regression") on the same weights, logits and loss, to 1e-5.
- SWAG's multiple-choice head: BertForMultipleChoice, one vector V scoring the pooled [CLS] vector
  of each (context, ending) pair and a softmax over the N choices, equals transformers'
  BertForMultipleChoice both ways (from_hf / to_hf), logits and loss, to 1e-5; its loss is the
  cross-entropy over the choices; each choice is encoded on its own; it adds H + 1 parameters.
Random small configs, no download.
"""

import math

import pytest
import torch
import torch.nn.functional as F

transformers = pytest.importorskip("transformers")

from bertlab import (  # noqa: E402
    BertConfig,
    BertForMultipleChoice,
    BertForPreTraining,
    BertForSequenceClassification,
    BertModel,
)
from bertlab.hf import to_hf_config  # noqa: E402

ATOL = 1e-5
CONFIG = dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=211)


def choice_inputs(cfg, B=3, N=4, T=13, seed=0):
    """(B, N, T) ids, segments and masks: every choice a packed pair with its own length."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, cfg.vocab_size, (B, N, T), generator=g)
    seg = torch.zeros(B, N, T, dtype=torch.long)
    seg[..., 6:] = 1
    lengths = torch.randint(8, T + 1, (B, N), generator=g)
    lengths[0, 0] = T
    mask = (torch.arange(T) < lengths[..., None]).long()
    return ids.masked_fill(mask == 0, 0), seg * mask, mask


# --- STS-B: the regression head -------------------------------------------------------------
def test_regression_head_matches_transformers():
    cfg = BertConfig(**CONFIG)
    torch.manual_seed(11)
    hf_cfg = to_hf_config(cfg, attn_implementation="eager", num_labels=1, problem_type="regression")
    theirs = transformers.BertForSequenceClassification(hf_cfg).eval()
    ours = BertForSequenceClassification.from_hf(theirs, num_labels=1).eval()
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    ids, seg, mask = (x[:, 0] for x in choice_inputs(cfg, B=6, N=1))
    scores = torch.tensor([0.0, 1.2, 2.5, 3.8, 4.4, 5.0])  # STS-B similarities, 0 to 5
    o = ours(ids, seg, mask, labels=scores)
    t = theirs(input_ids=ids, token_type_ids=seg, attention_mask=mask, labels=scores)
    assert o.logits.shape == (6, 1)
    torch.testing.assert_close(o.logits, t.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(o.loss, t.loss, atol=ATOL, rtol=0)
    torch.testing.assert_close(o.loss, ((o.logits.squeeze(-1) - scores) ** 2).mean())  # MSE
    back = transformers.BertForSequenceClassification(hf_cfg)
    result = back.load_state_dict(ours.to_hf(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys


def test_regression_head_adds_h_plus_one_parameters():
    cfg = BertConfig(**CONFIG)
    encoder = BertModel(cfg).num_parameters()
    H = cfg.hidden_size
    assert BertForSequenceClassification(cfg, num_labels=1).num_parameters() - encoder == H + 1
    assert BertForSequenceClassification(cfg, num_labels=3).num_parameters() - encoder == 3 * H + 3


# --- SWAG: the multiple-choice head ---------------------------------------------------------
def hf_multiple_choice(cfg, seed):
    torch.manual_seed(seed)
    return transformers.BertForMultipleChoice(to_hf_config(cfg, attn_implementation="eager")).eval()


@pytest.mark.parametrize("seed", [0, 1])
def test_multiple_choice_from_hf_matches_transformers(seed):
    cfg = BertConfig(**CONFIG)
    theirs = hf_multiple_choice(cfg, seed)
    ours = BertForMultipleChoice.from_hf(theirs).eval()
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    ids, seg, mask = choice_inputs(cfg, seed=seed)
    labels = torch.tensor([0, 3, 1])
    o = ours(ids, seg, mask, labels=labels, output_hidden_states=True, output_attentions=True)
    t = theirs(
        input_ids=ids,
        token_type_ids=seg,
        attention_mask=mask,
        labels=labels,
        output_hidden_states=True,
        output_attentions=True,
    )
    assert o.logits.shape == t.logits.shape == (3, 4)
    torch.testing.assert_close(o.logits, t.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(o.loss, t.loss, atol=ATOL, rtol=0)
    for a, b in zip(o.hidden_states, t.hidden_states):  # (B * N, T, H): one row per pair
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    for a, b in zip(o.attentions, t.attentions):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


def test_multiple_choice_to_hf_round_trip():
    cfg = BertConfig(**CONFIG)
    torch.manual_seed(5)
    ours = BertForMultipleChoice(cfg).eval()
    theirs = transformers.BertForMultipleChoice(to_hf_config(cfg, attn_implementation="eager")).eval()
    result = theirs.load_state_dict(ours.to_hf(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    ids, seg, mask = choice_inputs(cfg, B=2, N=5, T=9, seed=3)
    torch.testing.assert_close(
        ours(ids, seg, mask).logits,
        theirs(input_ids=ids, token_type_ids=seg, attention_mask=mask).logits,
        atol=ATOL,
        rtol=0,
    )
    again = BertForMultipleChoice.from_hf(ours.to_hf(), config=cfg)
    for (n, a), (_, b) in zip(ours.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), n


def test_multiple_choice_loss_is_cross_entropy_over_choices():
    cfg = BertConfig(**CONFIG)
    torch.manual_seed(2)
    model = BertForMultipleChoice(cfg).eval()
    ids, seg, mask = choice_inputs(cfg, seed=4)
    labels = torch.tensor([2, 0, 3])
    out = model(ids, seg, mask, labels=labels)
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, labels))
    # by hand: -log softmax over the N choices of each example, averaged over examples
    by_hand = sum(-(out.logits[b, labels[b]] - torch.logsumexp(out.logits[b], 0)) for b in range(3)) / 3
    torch.testing.assert_close(out.loss, by_hand)
    # with equal scores the loss is log N
    with torch.no_grad():
        model.classifier.weight.zero_()
    assert model(ids, seg, mask, labels=labels).loss.item() == pytest.approx(math.log(4))


def test_each_choice_is_scored_on_its_own():
    """logits[b, i] = V . C_i + b, C_i the pooled [CLS] of pair (b, i) encoded alone."""
    cfg = BertConfig(**CONFIG)
    torch.manual_seed(3)
    model = BertForMultipleChoice(cfg).eval()
    ids, seg, mask = choice_inputs(cfg, B=2, N=3, seed=6)
    logits = model(ids, seg, mask).logits
    V, bias = model.classifier.weight[0], model.classifier.bias[0]
    for b in range(2):
        for i in range(3):
            n = int(mask[b, i].sum())  # without its padding: padding changes nothing
            C = model.bert(ids[b, i, None, :n], seg[b, i, None, :n]).pooler_output[0]
            assert torch.allclose(logits[b, i], C @ V + bias, atol=ATOL)
    # the same weights as a one-output classifier give the same score for each pair
    clf = BertForSequenceClassification(cfg, num_labels=1).eval()
    clf.load_state_dict(model.state_dict())
    flat = clf(ids.flatten(0, 1), seg.flatten(0, 1), mask.flatten(0, 1)).logits.view(2, 3)
    torch.testing.assert_close(flat, logits)


def test_multiple_choice_parameters_and_loading_from_pretraining(tmp_path):
    cfg = BertConfig(**CONFIG)
    H = cfg.hidden_size
    assert BertForMultipleChoice(cfg).num_parameters() - BertModel(cfg).num_parameters() == H + 1
    # a pretraining checkpoint -> the encoder and pooler, a fresh V (the paper's fine-tuning)
    torch.manual_seed(9)
    theirs = transformers.BertForPreTraining(to_hf_config(cfg))
    model = BertForMultipleChoice.from_hf(theirs)
    torch.testing.assert_close(model.bert.pooler.weight, theirs.bert.pooler.dense.weight)
    # and from a bertlab model folder, as the book's reference run is loaded
    from bertlab import checkpoint as ckpt

    pre = BertForPreTraining(cfg)
    ckpt.save_model(tmp_path / "m", pre)
    loaded = ckpt.load_model(tmp_path / "m", BertForMultipleChoice)
    torch.testing.assert_close(loaded.bert.layers[1].ffn.w1.weight, pre.bert.layers[1].ffn.w1.weight)


def test_multiple_choice_bad_inputs():
    cfg = BertConfig(**CONFIG)
    model = BertForMultipleChoice(cfg)
    ids, seg, mask = choice_inputs(cfg, B=1, N=2, T=8)
    with pytest.raises(ValueError, match=r"\(batch, num_choices, seq_len\).*input_ids\[None\]"):
        model(ids[0])
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(ids, seg, mask[..., :5])
