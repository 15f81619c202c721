"""bertlab's BERT against the paper: sizes, shapes, masking, heads, and clear errors."""

import pytest
import torch

from bertlab import (
    IGNORE_INDEX,
    BertConfig,
    BertForMultipleChoice,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from bertlab.model import SelfAttention


def tiny(**kw):
    return BertConfig.preset("tiny", vocab_size=kw.pop("vocab_size", 101), **kw)


def batch(cfg, B=3, T=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, cfg.vocab_size, (B, T), generator=g)
    seg = torch.zeros(B, T, dtype=torch.long)
    seg[:, T // 2 :] = 1
    mask = torch.ones(B, T, dtype=torch.long)
    if B >= 3:
        mask[1, T - 4 :] = 0  # a padded sequence
        mask[2, T - 1 :] = 0
    return ids, seg, mask


# --- the paper's sizes ----------------------------------------------------------------------------
def test_parameter_counts_match_the_paper():
    # Devlin et al.: BERT-Base 110M, BERT-Large 340M; the exact figures are those of the released
    # checkpoints (bert-base-uncased has 109,482,240 parameters in its encoder with the pooler).
    assert BertModel(BertConfig.preset("base")).num_parameters() == 109_482_240
    assert BertModel(BertConfig.preset("large")).num_parameters() == 335_141_888
    assert BertForPreTraining(BertConfig.preset("base")).num_parameters() == 110_106_428


def test_presets_are_the_named_sizes():
    expected = {
        "tiny": (2, 128, 2),
        "mini": (4, 256, 4),
        "small": (4, 512, 8),
        "medium": (8, 512, 8),
        "base": (12, 768, 12),
        "large": (24, 1024, 16),
    }
    for name, (L, H, A) in expected.items():
        c = BertConfig.preset(name)
        assert (c.L, c.H, c.A) == (L, H, A)
        assert c.intermediate_size == 4 * H
        assert c.max_position_embeddings == 512 and c.type_vocab_size == 2
        assert c.hidden_dropout == c.attention_dropout == 0.1
        assert c.layer_norm_eps == 1e-12 and c.hidden_act == "gelu"


def test_config_round_trips_through_json(tmp_path):
    c = BertConfig.preset("mini", vocab_size=16384)
    c.save(tmp_path / "config.json")
    assert BertConfig.load(tmp_path / "config.json") == c


# --- shapes and behaviour -------------------------------------------------------------------------
def test_output_shapes_and_counts():
    cfg = tiny()
    ids, seg, mask = batch(cfg)
    out = BertForPreTraining(cfg).eval()(ids, seg, mask, output_attentions=True, output_hidden_states=True)
    B, T = ids.shape
    assert out.mlm_logits.shape == (B, T, cfg.vocab_size)
    assert out.nsp_logits.shape == (B, 2)
    assert len(out.hidden_states) == cfg.num_layers + 1
    assert all(h.shape == (B, T, cfg.hidden_size) for h in out.hidden_states)
    assert len(out.attentions) == cfg.num_layers
    assert all(a.shape == (B, cfg.num_heads, T, T) for a in out.attentions)


def test_attention_rows_sum_to_one_and_ignore_padding():
    cfg = tiny()
    ids, seg, mask = batch(cfg)
    out = BertModel(cfg).eval()(ids, seg, mask, output_attentions=True)
    for a in out.attentions:
        torch.testing.assert_close(a.sum(-1), torch.ones_like(a.sum(-1)))
        # no query ever looks at a padded key
        assert a[1, :, :, -4:].abs().max() == 0
        assert a[2, :, :, -1:].abs().max() == 0


def test_padding_does_not_change_real_tokens():
    """A padded sequence gives its real tokens the same vectors as the unpadded one, on both paths."""
    cfg = tiny()
    model = BertModel(cfg).eval()
    ids, seg, _ = batch(cfg, B=1, T=7)
    padded = torch.cat([ids, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    pseg = torch.cat([seg, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    pmask = torch.cat([torch.ones(1, 7), torch.zeros(1, 5)], dim=1).long()
    for weights in (False, True):
        ref = model(ids, seg, output_attentions=weights).last_hidden_state
        got = model(padded, pseg, pmask, output_attentions=weights).last_hidden_state[:, :7]
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    # and without the mask the padding would leak in: the check above can fail
    leaked = model(padded, pseg).last_hidden_state[:, :7]
    assert (leaked - model(ids, seg).last_hidden_state).abs().max() > 1e-3


@pytest.mark.parametrize("causal", [False, True])
def test_fused_and_explicit_attention_agree(causal, monkeypatch):
    """The fused kernel (GPU default) and the written-out formula (CPU default) give the same
    outputs and the same gradients, with padding, bidirectional or causal."""
    cfg = tiny(causal=causal)
    ids, seg, mask = batch(cfg)
    model = BertModel(cfg).eval()
    results = {}
    for fused in (True, False):
        monkeypatch.setattr(SelfAttention, "fused", fused)
        model.zero_grad()
        out = model(ids, seg, mask).last_hidden_state
        (out * mask[..., None]).pow(2).sum().backward()
        results[fused] = out.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]
    (a, grads_a), (b, grads_b) = results[True], results[False]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert len(grads_a) == len(grads_b) > 0
    for ga, gb in zip(grads_a, grads_b):
        torch.testing.assert_close(ga, gb, atol=1e-4, rtol=1e-4)
    monkeypatch.setattr(SelfAttention, "fused", None)  # the default: on a CPU, the formula
    with_maps = model(ids, seg, mask, output_attentions=True).last_hidden_state
    torch.testing.assert_close(with_maps.detach(), b, atol=1e-6, rtol=1e-6)
    assert not model.layers[0].attention.fused_for(ids.device)


def test_bidirectional_every_token_sees_every_other():
    """Changing the last token changes the first token's output (unlike a left-to-right LM)."""
    cfg = tiny()
    model = BertModel(cfg).eval()
    ids, seg, _ = batch(cfg, B=1)
    other = ids.clone()
    other[0, -1] = (other[0, -1] % (cfg.vocab_size - 1)) + 1 if other[0, -1] != 1 else 2
    a = model(ids, seg).last_hidden_state[0, 0]
    b = model(other, seg).last_hidden_state[0, 0]
    assert (a - b).abs().max() > 1e-4


def test_dropout_active_in_train_mode_only():
    cfg = tiny()
    ids, seg, mask = batch(cfg)
    model = BertModel(cfg)
    model.train()
    assert not torch.equal(model(ids, seg, mask).last_hidden_state, model(ids, seg, mask).last_hidden_state)
    model.eval()
    assert torch.equal(model(ids, seg, mask).last_hidden_state, model(ids, seg, mask).last_hidden_state)


def test_mlm_decoder_is_tied_to_token_embeddings():
    model = BertForPreTraining(tiny())
    names = [n for n, _ in model.named_parameters()]
    assert not any("decoder" in n for n in names)  # one matrix, used twice
    ids, seg, mask = batch(model.config)
    out = model(ids, seg, mask)
    out.mlm_logits.sum().backward()
    assert model.bert.embeddings.token.weight.grad is not None


def test_pretraining_loss_on_selected_positions_equals_full_loss():
    """The fast path (MLM head on the selected positions only) computes the same loss as the
    head over every position with labels elsewhere ignored."""
    cfg = tiny()
    model = BertForPreTraining(cfg).eval()
    ids, seg, mask = batch(cfg)
    positions = torch.tensor([[1, 4, 0], [2, 3, 5], [6, 0, 0]])
    labels_p = torch.tensor([[7, 8, IGNORE_INDEX], [9, 10, 11], [12, IGNORE_INDEX, IGNORE_INDEX]])
    labels_full = torch.full_like(ids, IGNORE_INDEX)
    for b in range(3):
        for p, l in zip(positions[b], labels_p[b]):
            if l != IGNORE_INDEX:
                labels_full[b, p] = l
    nsp = torch.tensor([0, 1, 0])
    fast = model(ids, seg, mask, mlm_positions=positions, mlm_labels=labels_p, nsp_labels=nsp)
    full = model(ids, seg, mask, mlm_labels=labels_full, nsp_labels=nsp)
    assert fast.mlm_logits.shape == (3, 3, cfg.vocab_size)
    torch.testing.assert_close(fast.mlm_loss, full.mlm_loss)
    torch.testing.assert_close(fast.loss, full.mlm_loss + full.nsp_loss)
    without_nsp = model(ids, seg, mask, mlm_positions=positions, mlm_labels=labels_p)
    torch.testing.assert_close(without_nsp.loss, fast.mlm_loss)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_last_layer_at_the_chosen_positions_only_changes_nothing_but_the_work(norm_position, monkeypatch):
    """With the last layer run at the chosen positions and [CLS] only, the MLM logits, the NSP
    logits, the loss and every gradient are those of the model that runs it everywhere."""
    cfg = tiny(norm_position=norm_position)
    torch.manual_seed(0)
    model = BertForPreTraining(cfg).eval()
    ids, seg, mask = batch(cfg, B=3, T=11)
    positions = torch.tensor([[1, 4, 0], [2, 3, 5], [6, 0, 0]])  # unused slots point at 0, as masking pads
    labels = torch.tensor([[7, 8, IGNORE_INDEX], [9, 10, 11], [12, IGNORE_INDEX, IGNORE_INDEX]])
    nsp = torch.tensor([0, 1, 0])

    def run(sparse):
        monkeypatch.setattr(BertForPreTraining, "last_layer_at_chosen", sparse)
        model.zero_grad()
        out = model(ids, seg, mask, mlm_positions=positions, mlm_labels=labels, nsp_labels=nsp)
        out.loss.backward()
        return out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    sparse, sparse_grads = run(True)
    full, full_grads = run(False)
    torch.testing.assert_close(sparse.mlm_logits, full.mlm_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sparse.nsp_logits, full.nsp_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sparse.loss, full.loss, atol=1e-5, rtol=1e-5)
    assert sparse_grads.keys() == full_grads.keys()
    for name, g in full_grads.items():
        torch.testing.assert_close(sparse_grads[name], g, atol=1e-5, rtol=1e-4, msg=name)

    # and the encoder's own view: the last layer's vectors at those positions, [CLS] for the pooler
    every = model.bert(ids, seg, mask)
    few = model.bert(ids, seg, mask, last_layer_at=positions)
    assert few.last_hidden_state.shape == (3, 3, cfg.hidden_size)
    want = every.last_hidden_state.gather(1, positions[:, :, None].expand(-1, -1, cfg.hidden_size))
    torch.testing.assert_close(few.last_hidden_state, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(few.pooler_output, every.pooler_output, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("head", ["sequence", "choice"])
def test_a_classifier_runs_its_last_layer_at_cls_alone_and_changes_nothing_but_the_work(
    norm_position, head, monkeypatch
):
    """A classifier reads only the pooled [CLS] vector: with the last layer at [CLS] alone, its
    logits, loss and every gradient are those of the model that runs the layer everywhere."""
    cfg = tiny(norm_position=norm_position)
    torch.manual_seed(0)
    cls = BertForSequenceClassification if head == "sequence" else BertForMultipleChoice
    model = (cls(cfg, num_labels=3) if head == "sequence" else cls(cfg)).eval()
    ids, seg, mask = batch(cfg, B=4, T=9)
    labels = torch.tensor([0, 2, 1, 1])
    if head == "choice":  # 2 examples of 2 choices each
        ids, seg, mask = (t.view(2, 2, -1) for t in (ids, seg, mask))
        labels = torch.tensor([1, 0])
    calls = []
    model.bert.register_forward_hook(
        lambda m, args, kwargs, out: calls.append(kwargs["last_layer_at"]), with_kwargs=True
    )

    def run(at_cls):
        monkeypatch.setattr(cls, "last_layer_at_cls", at_cls)
        model.zero_grad()
        out = model(ids, seg, mask, labels=labels)
        out.loss.backward()
        return out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    fast, fast_grads = run(True)
    full, full_grads = run(False)
    assert calls[0].shape == (4, 0) and calls[1] is None  # the switch really reached the encoder
    torch.testing.assert_close(fast.logits, full.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast.loss, full.loss, atol=1e-5, rtol=1e-5)
    assert fast_grads.keys() == full_grads.keys()
    for name, g in full_grads.items():
        torch.testing.assert_close(fast_grads[name], g, atol=1e-5, rtol=1e-4, msg=name)
    # asking for every layer's output runs every position, whatever the switch
    monkeypatch.setattr(cls, "last_layer_at_cls", True)
    every = model(ids, seg, mask, output_hidden_states=True)
    assert calls[-1] is None and every.hidden_states[-1].size(-2) == 9
    torch.testing.assert_close(every.logits, fast.logits, atol=1e-5, rtol=1e-5)


def test_a_causal_classifier_pools_its_last_token_from_every_position():
    cfg = tiny(causal=True)
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg).eval()
    ids, seg, mask = batch(cfg)
    out = model(ids, seg, mask)  # no refusal: the causal model reads the last real token
    assert out.logits.shape == (ids.size(0), 2)


def test_last_layer_at_refuses_what_needs_every_position():
    cfg = tiny()
    model = BertModel(cfg)
    ids, seg, mask = batch(cfg)
    at = torch.tensor([[1], [2], [3]])
    for kw in ({"output_hidden_states": True}, {"output_attentions": True}):
        with pytest.raises(ValueError, match="last_layer_at"):
            model(ids, seg, mask, last_layer_at=at, **kw)
    with pytest.raises(ValueError, match="causal"):
        BertModel(tiny(causal=True))(ids, seg, mask, last_layer_at=at)
    # the pretraining model falls back to every position when the caller asks for every layer's output
    pre = BertForPreTraining(cfg)
    out = pre(ids, seg, mask, output_hidden_states=True, mlm_positions=at)
    assert out.hidden_states[-1].shape == (3, ids.size(1), cfg.hidden_size)


def test_fine_tuning_heads_shapes_and_losses():
    cfg = tiny()
    ids, seg, mask = batch(cfg)
    out = BertForSequenceClassification(cfg, num_labels=3)(ids, seg, mask, labels=torch.tensor([0, 2, 1]))
    assert out.logits.shape == (3, 3) and torch.isfinite(out.loss)
    labels = torch.randint(0, 9, ids.shape)
    labels[mask == 0] = IGNORE_INDEX
    out = BertForTokenClassification(cfg, num_labels=9)(ids, seg, mask, labels=labels)
    assert out.logits.shape == (3, 11, 9) and torch.isfinite(out.loss)
    qa = BertForQuestionAnswering(cfg).eval()
    out = qa(ids, seg, mask, start_positions=torch.tensor([1, 2, 0]), end_positions=torch.tensor([3, 2, 0]))
    assert out.start_logits.shape == out.end_logits.shape == (3, 11) and torch.isfinite(out.loss)
    # the start and end vectors S and E are the rows of one (2, H) matrix
    h = qa.bert(ids, seg, mask).last_hidden_state
    S, E = qa.qa.weight
    torch.testing.assert_close(qa(ids, seg, mask).start_logits, h @ S + qa.qa.bias[0])


def test_regression_head_uses_mse():
    cfg = tiny()
    ids, seg, mask = batch(cfg)
    out = BertForSequenceClassification(cfg, num_labels=1)(ids, seg, mask, labels=torch.tensor([0.5, 1.0, 4.0]))
    assert out.logits.shape == (3, 1) and out.loss > 0


def test_training_reduces_loss_on_a_fixed_batch():
    torch.manual_seed(0)
    cfg = tiny(hidden_dropout=0.0, attention_dropout=0.0)
    model = BertForPreTraining(cfg)
    ids, seg, mask = batch(cfg)
    positions = torch.tensor([[1, 2], [3, 4], [5, 6]])
    labels = ids.gather(1, positions)
    nsp = torch.tensor([0, 1, 0])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(30):
        loss = model(ids, seg, mask, mlm_positions=positions, mlm_labels=labels, nsp_labels=nsp).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# --- clear errors -----------------------------------------------------------------------------------
def test_error_heads_must_divide_hidden_size():
    with pytest.raises(ValueError, match="not divisible"):
        BertConfig(hidden_size=100, num_heads=3)


def test_error_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset 'huge'.*base"):
        BertConfig.preset("huge")


def test_error_sequence_longer_than_position_table():
    cfg = tiny(max_position_embeddings=16)
    with pytest.raises(ValueError, match="longer than the position table.*16"):
        BertModel(cfg)(torch.ones(1, 17, dtype=torch.long))


def test_error_token_id_outside_vocabulary():
    cfg = tiny()
    ids = torch.ones(1, 5, dtype=torch.long)
    ids[0, 3] = cfg.vocab_size
    with pytest.raises(ValueError, match=f"token id {cfg.vocab_size} is outside the vocabulary"):
        BertModel(cfg)(ids)
    ids[0, 3] = -1
    with pytest.raises(ValueError, match="token id -1"):
        BertModel(cfg)(ids)


def test_error_bad_shapes_and_segments():
    model = BertModel(tiny())
    with pytest.raises(ValueError, match="add a batch dimension"):
        model(torch.ones(5, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(torch.ones(2, 5, dtype=torch.long), attention_mask=torch.ones(2, 4))
    with pytest.raises(ValueError, match="token_type_ids must be in"):
        model(torch.ones(1, 5, dtype=torch.long), token_type_ids=torch.full((1, 5), 2))
    with pytest.raises(TypeError, match="integer token ids"):
        model(torch.ones(1, 5))


def test_error_mlm_labels_shape():
    cfg = tiny()
    ids, seg, mask = batch(cfg)
    with pytest.raises(ValueError, match="mlm_labels has shape"):
        BertForPreTraining(cfg)(
            ids, mlm_positions=torch.zeros(3, 2, dtype=torch.long), mlm_labels=torch.zeros(3, 5, dtype=torch.long)
        )


# --- the left-to-right (causal) option: the paper's "LTR" ablation, section 5.1 ------------------
def test_causal_output_at_t_ignores_the_tokens_after_t():
    cfg = tiny(causal=True)
    model = BertForPreTraining(cfg).eval()
    ids, seg, mask = batch(cfg, B=3, T=11)
    t = 5
    other = ids.clone()
    other[:, t + 1 :] = (other[:, t + 1 :] % (cfg.vocab_size - 1)) + 1  # every later token changes
    for explicit in (False, True):  # the fused kernel and the formula spelled out
        a = model(ids, seg, mask, output_attentions=explicit, output_hidden_states=True)
        b = model(other, seg, mask, output_attentions=explicit, output_hidden_states=True)
        for ha, hb in zip(a.hidden_states, b.hidden_states):
            torch.testing.assert_close(ha[:, : t + 1], hb[:, : t + 1], atol=1e-6, rtol=0)
        torch.testing.assert_close(a.mlm_logits[:, : t + 1], b.mlm_logits[:, : t + 1], atol=1e-6, rtol=0)
        assert (a.hidden_states[-1][0, t + 1 :] - b.hidden_states[-1][0, t + 1 :]).abs().max() > 1e-4


def test_causal_attention_is_lower_triangular_and_skips_padding():
    from bertlab.model import attention_mask_for

    cfg = tiny(causal=True)
    ids, seg, mask = batch(cfg, B=3, T=11)
    model = BertModel(cfg).eval()
    out = model(ids, seg, mask, output_attentions=True)
    T = ids.size(1)
    allowed = attention_mask_for(mask, T, causal=True)  # (B, 1, T, T)
    assert allowed.shape == (3, 1, T, T)
    expected = torch.ones(T, T, dtype=torch.bool).tril()[None] & mask.bool()[:, None, :]
    assert torch.equal(allowed[:, 0], expected)
    for w in out.attentions:  # (B, A, T, T): nothing above the diagonal, nothing on padding
        assert torch.all(w.masked_select(~allowed.expand_as(w)) == 0)
        torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
    fused = model(ids, seg, mask).last_hidden_state
    torch.testing.assert_close(fused, out.last_hidden_state, atol=1e-5, rtol=1e-5)
    # the bidirectional mask is the padding mask alone, broadcast over the queries
    assert torch.equal(attention_mask_for(mask, T, causal=False), mask.bool()[:, None, None, :])
    assert attention_mask_for(None, T, causal=False) is None


def test_causal_matches_transformers_decoder_attention():
    """transformers' BERT with is_decoder=True attends left to right: the same hidden states,
    attention maps and LM logits (its pooler reads [CLS]; ours reads the last token, see below)."""
    transformers = pytest.importorskip("transformers")
    from bertlab.hf import to_hf_config

    cfg = BertConfig(num_layers=2, hidden_size=64, num_heads=4, vocab_size=211, causal=True)
    torch.manual_seed(0)
    theirs = transformers.BertForPreTraining(to_hf_config(cfg, attn_implementation="eager")).eval()
    assert theirs.config.is_decoder
    ours = BertForPreTraining.from_hf(theirs).eval()
    assert ours.config.causal
    ids, seg, mask = batch(cfg, B=3, T=13)
    o = ours(ids, seg, mask, output_attentions=True, output_hidden_states=True)
    t = theirs(
        input_ids=ids, token_type_ids=seg, attention_mask=mask, output_attentions=True, output_hidden_states=True
    )
    for a, b in zip(o.hidden_states + o.attentions, t.hidden_states + t.attentions):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    torch.testing.assert_close(o.mlm_logits, t.prediction_logits, atol=1e-5, rtol=0)


def test_causal_pooler_reads_the_last_real_token():
    cfg = tiny(causal=True)
    model = BertModel(cfg).eval()
    ids, seg, mask = batch(cfg, B=3, T=11)
    out = model(ids, seg, mask)
    last = mask.sum(1) - 1  # right padding: the last real position
    C = out.last_hidden_state[torch.arange(3), last]
    torch.testing.assert_close(out.pooler_output, torch.tanh(model.pooler(C)))
    # so a causal classifier's input depends on the whole sentence, not on [CLS] alone
    other = ids.clone()
    other[:, 1] = (other[:, 1] % (cfg.vocab_size - 1)) + 1
    assert (model(other, seg, mask).pooler_output - out.pooler_output).abs().max() > 1e-4


def test_causal_is_off_by_default_and_survives_json(tmp_path):
    assert BertConfig().causal is False and BertConfig.preset("base").causal is False
    c = tiny(causal=True)
    c.save(tmp_path / "config.json")
    assert BertConfig.load(tmp_path / "config.json").causal is True
    assert BertConfig.from_dict({k: v for k, v in tiny().to_dict().items() if k != "causal"}).causal is False
    with pytest.raises(ValueError, match="causal"):
        tiny(causal="yes")


# ------------------------------------------------------------------------------------------------
# Pre-LN (config.norm_position="pre"), for fast short runs
# ------------------------------------------------------------------------------------------------
def test_pre_ln_layer_is_x_plus_sublayer_of_normalised_x():
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50,
        num_layers=2,
        hidden_size=16,
        num_heads=2,
        norm_position="pre",
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    model = BertModel(config).eval()
    for p in model.parameters():  # LayerNorm away from identity, so a misplaced norm would show
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 50, (2, 7))
    out = model(ids, output_hidden_states=True)
    x = model.embeddings(ids, torch.zeros_like(ids))
    for layer in model.layers:  # by hand: x + Attn(LN1(x)), then x + FFN(LN2(x))
        a, _ = layer.attention(layer.attention_norm(x), None)
        x = x + a
        x = x + layer.ffn(layer.ffn_norm(x))
    x = model.final_norm(x)  # the extra LayerNorm after the last layer
    torch.testing.assert_close(out.last_hidden_state, x, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.hidden_states[-1], x, rtol=1e-5, atol=1e-5)
    # the same weights read post-LN give a different function: the option is not ignored
    post = BertModel(BertConfig(**{**config.to_dict(), "norm_position": "post"})).eval()
    post.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("final_norm")})
    assert not torch.allclose(post(ids).last_hidden_state, x, atol=1e-3)


def test_pre_ln_has_one_more_layernorm_and_no_transformers_export():
    post = BertModel(BertConfig.preset("tiny", vocab_size=100))
    pre = BertModel(BertConfig.preset("tiny", vocab_size=100, norm_position="pre"))
    assert pre.num_parameters() - post.num_parameters() == 2 * 128  # final LayerNorm: gain and bias
    with pytest.raises(ValueError, match="post-LN.*save_model"):
        pre.to_hf()
    with pytest.raises(ValueError, match="norm_position must be 'post'"):
        BertConfig(norm_position="sandwich")
    assert BertConfig.from_dict(pre.config.to_dict()).norm_position == "pre"


# --- dropout with cheap masks on a CPU ------------------------------------------------------------
def test_dropout_drops_at_its_rate_and_keeps_the_expectation():
    from bertlab.model import Dropout

    torch.manual_seed(0)
    x = torch.ones(1_000_000)
    drop = Dropout(0.1).train()
    y = drop(x)
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - 0.1) < 0.002
    assert abs(y.mean().item() - 1.0) < 0.004  # survivors scaled by 1 / (1 - p)
    assert torch.unique(y[y != 0]).numel() == 1 and y.max().item() == pytest.approx(32768 / (32768 - 3277))
    assert not torch.equal(drop(x), y)  # a new mask every call
    torch.manual_seed(0)
    assert torch.equal(drop(x), y)  # from the default generator: seeded runs repeat
    assert torch.equal(drop.eval()(x), x) and torch.equal(Dropout(0.0).train()(x), x)
    assert (Dropout(1.0).train()(x) == 0).all()
    assert isinstance(drop, torch.nn.Dropout) and drop.p == 0.1


def test_dropout_gradient_uses_the_forward_mask_when_compiled():
    """Under torch.compile the mask must be drawn once: the backward pass multiplies by the same
    mask as the forward (the op is tagged as seeded randomness, so it is saved, not recomputed)."""
    from bertlab.model import Dropout

    drop = Dropout(0.5).train()

    def f(x):
        return drop(x.sin() + 2.0)  # never 0 where kept

    compiled = torch.compile(f, backend="inductor")
    torch.manual_seed(1)
    x = torch.randn(64, 33, requires_grad=True)
    y = compiled(x)
    y.sum().backward()
    kept = y != 0
    assert 0.35 < kept.float().mean().item() < 0.65
    scale = 32768 / (32768 - 16384)
    assert torch.equal(x.grad != 0, kept)  # the gradient flows exactly where the forward kept
    assert torch.allclose(x.grad[kept], x.detach().cos()[kept] * scale)
    assert torch.allclose(y[kept], (x.detach().sin() + 2.0)[kept] * scale)
