"""The encoder-decoder Transformer (bertlab.encoder_decoder): its decoder layer against PyTorch's,
causality, the source padding mask, and a tiny translator that learns its training pairs."""

import pytest
import torch
from torch import nn

from bertlab import BertConfig
from bertlab.encoder_decoder import (
    TOY_PAIRS,
    CrossAttention,
    DecoderLayer,
    EncoderDecoder,
    Vocabulary,
    sinusoidal_positions,
    translation_batch,
)
from bertlab.model import EncoderLayer, attention_mask_for


def small(**kw):
    defaults = {
        "vocab_size": 23,
        "num_layers": 2,
        "hidden_size": 32,
        "num_heads": 4,
        "max_position_embeddings": 16,
        "hidden_act": "relu",
        "hidden_dropout": 0.0,
        "attention_dropout": 0.0,
    }
    return BertConfig(**{**defaults, **kw})


def copy_into_torch_layer(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer) -> None:
    with torch.no_grad():
        theirs.self_attn.in_proj_weight.copy_(ours.self_attention.qkv.weight)  # [W^Q; W^K; W^V]
        theirs.self_attn.in_proj_bias.copy_(ours.self_attention.qkv.bias)
        theirs.self_attn.out_proj.weight.copy_(ours.self_attention.out.weight)
        theirs.self_attn.out_proj.bias.copy_(ours.self_attention.out.bias)
        cross = ours.cross_attention
        theirs.multihead_attn.in_proj_weight.copy_(torch.cat([cross.q.weight, cross.kv.weight]))
        theirs.multihead_attn.in_proj_bias.copy_(torch.cat([cross.q.bias, cross.kv.bias]))
        theirs.multihead_attn.out_proj.weight.copy_(cross.out.weight)
        theirs.multihead_attn.out_proj.bias.copy_(cross.out.bias)
        theirs.linear1.weight.copy_(ours.ffn.w1.weight)
        theirs.linear1.bias.copy_(ours.ffn.w1.bias)
        theirs.linear2.weight.copy_(ours.ffn.w2.weight)
        theirs.linear2.bias.copy_(ours.ffn.w2.bias)
        norms = {"norm1": ours.self_attention_norm, "norm2": ours.cross_attention_norm, "norm3": ours.ffn_norm}
        for name, norm in norms.items():
            getattr(theirs, name).weight.copy_(norm.weight)
            getattr(theirs, name).bias.copy_(norm.bias)


@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("need_weights", [False, True])
def test_decoder_layer_equals_torch_transformer_decoder_layer(act, need_weights):
    torch.manual_seed(0)
    cfg = small(hidden_act=act, layer_norm_eps=1e-5)
    ours = DecoderLayer(cfg).eval()
    for p in ours.parameters():  # non-trivial LayerNorm gains and biases too
        nn.init.normal_(p, std=0.3)
    theirs = nn.TransformerDecoderLayer(
        cfg.hidden_size,
        cfg.num_heads,
        dim_feedforward=cfg.intermediate_size,
        dropout=0.0,
        activation=act,
        layer_norm_eps=1e-5,
        batch_first=True,
        norm_first=False,
    ).eval()
    copy_into_torch_layer(ours, theirs)

    B, S, T = 3, 7, 5
    y, memory = torch.randn(B, T, cfg.hidden_size), torch.randn(B, S, cfg.hidden_size)
    src_mask = torch.ones(B, S, dtype=torch.long)
    src_mask[1, 4:] = 0  # padded sources
    src_mask[2, 6:] = 0
    with torch.no_grad():
        got, self_w, cross_w = ours(
            y,
            memory,
            attention_mask_for(None, T, causal=True),
            attention_mask_for(src_mask, S, causal=False),
            need_weights,
        )
        want = theirs(
            y,
            memory,
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(T),
            memory_key_padding_mask=~src_mask.bool(),
            tgt_is_causal=True,
        )
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    if need_weights:
        assert self_w.shape == (B, cfg.num_heads, T, T)
        assert cross_w.shape == (B, cfg.num_heads, T, S)
        assert (self_w.triu(1) == 0).all()  # nothing from the future
        assert (cross_w[1, ..., 4:] == 0).all() and (cross_w[2, ..., 6:] == 0).all()
        assert torch.allclose(cross_w.sum(-1), torch.ones(B, cfg.num_heads, T))


def test_cross_attention_queries_from_one_sequence_keys_and_values_from_the_other():
    torch.manual_seed(0)
    cfg = small()
    attn = CrossAttention(cfg).eval()
    y, memory = torch.randn(2, 3, 32), torch.randn(2, 6, 32)
    fused, _ = attn(y, memory, None)
    explicit, w = attn(y, memory, None, need_weights=True)
    assert fused.shape == (2, 3, 32) and w.shape == (2, 4, 3, 6)
    assert torch.allclose(fused, explicit, atol=1e-6)
    # each target position is computed from its own query alone: permuting the targets permutes
    # the outputs; permuting the source tokens changes nothing (no positions inside attention)
    perm = torch.tensor([2, 0, 1])
    assert torch.allclose(attn(y[:, perm], memory, None)[0], fused[:, perm], atol=1e-6)
    src_perm = torch.randperm(6)
    assert torch.allclose(attn(y, memory[:, src_perm], None)[0], fused, atol=1e-6)


def test_the_encoder_is_bertlabs_encoder_and_the_output_layer_is_tied():
    model = EncoderDecoder(small(), num_decoder_layers=3)
    assert all(type(layer) is EncoderLayer for layer in model.encoder) and len(model.encoder) == 2
    assert len(model.decoder) == 3
    pe = sinusoidal_positions(16, 32)
    assert torch.allclose(model.positions, pe)
    assert torch.allclose(pe[5, 0::2], torch.sin(5 / 10000 ** (torch.arange(0, 32, 2) / 32)))
    assert torch.allclose(pe[5, 1::2], torch.cos(5 / 10000 ** (torch.arange(0, 32, 2) / 32)))
    src, tgt = torch.randint(3, 23, (2, 5)), torch.randint(3, 23, (2, 4))
    logits = model(src, tgt).logits
    assert logits.shape == (2, 4, 23)
    y = model.embedding.weight
    assert model.num_parameters() == sum(p.numel() for p in model.parameters())
    assert not any(p is not y and p.shape == y.shape for p in model.parameters())  # tied
    with pytest.raises(ValueError, match="post"):
        EncoderDecoder(small(norm_position="pre"))
    with pytest.raises(ValueError, match="causal"):
        EncoderDecoder(small(causal=True))


def test_the_decoder_is_causal():
    torch.manual_seed(0)
    model = EncoderDecoder(small()).eval()
    src = torch.randint(3, 23, (2, 6))
    tgt = torch.randint(3, 23, (2, 7))
    with torch.no_grad():
        base = model(src, tgt).logits
        for j in range(1, 7):
            changed = tgt.clone()
            changed[:, j] = (changed[:, j] - 3 + 1) % 20 + 3  # another real token
            out = model(src, changed).logits
            assert torch.allclose(out[:, :j], base[:, :j], atol=1e-6), f"token {j} leaked back"
            assert not torch.allclose(out[:, j:], base[:, j:])


def test_padded_source_positions_change_nothing():
    torch.manual_seed(0)
    model = EncoderDecoder(small()).eval()
    src = torch.randint(3, 23, (2, 6))
    src_mask = torch.ones(2, 6, dtype=torch.long)
    src_mask[0, 3:] = 0
    tgt = torch.randint(3, 23, (2, 5))
    with torch.no_grad():
        base = model(src, tgt, src_mask=src_mask, output_attentions=True)
        changed = src.clone()
        changed[0, 3:] = torch.randint(3, 23, (3,))
        out = model(changed, tgt, src_mask=src_mask).logits
        assert torch.allclose(out, base.logits, atol=1e-6)
        real_changed = src.clone()
        real_changed[1, 5] = (real_changed[1, 5] - 3 + 1) % 20 + 3  # a real token does matter
        assert not torch.allclose(model(real_changed, tgt, src_mask=src_mask).logits[1], base.logits[1])
    for w in base.cross_attentions:
        assert (w[0, ..., 3:] == 0).all()


def test_a_tiny_transformer_learns_to_translate_the_toy_pairs(one_thread):
    vocab = Vocabulary(sentence for pair in TOY_PAIRS for sentence in pair)
    src, tgt_in, labels = translation_batch(TOY_PAIRS, vocab)
    assert vocab.decode(tgt_in[0]) == "i am a student" and labels[0, 4] == vocab.eos_id
    torch.manual_seed(0)
    cfg = small(vocab_size=len(vocab), num_layers=1, num_heads=2, hidden_dropout=0.1, attention_dropout=0.1)
    model = EncoderDecoder(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    model.eval()
    first = model(src, tgt_in, labels=labels).loss.item()
    model.train()
    for _ in range(150):
        loss = model(src, tgt_in, labels=labels).loss  # teacher forcing
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    final = model(src, tgt_in, labels=labels).loss.item()
    assert final < first / 20, (first, final)
    out = model.greedy_decode(src, vocab.bos_id, vocab.eos_id, max_len=10)
    assert (out[:, 0] == vocab.bos_id).all()
    assert [vocab.decode(o) for o in out] == [en for _, en in TOY_PAIRS]
    # greedy decoding is the argmax of teacher-forced logits on its own output
    with torch.no_grad():
        forced = model(src, out[:, :-1], tgt_mask=torch.ones_like(out[:, :-1])).logits.argmax(-1)
    done = torch.cumsum((out[:, :-1] == vocab.eos_id).long(), dim=1) > 0
    assert torch.equal(forced[~done], out[:, 1:][~done])
