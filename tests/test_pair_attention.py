"""bertlab.analysis.pair_attention: roles of a packed pair, attention mass by role on hand-made maps,
padding, the uniform baseline, and a real model's maps."""

import pytest
import torch

from bertlab import BertConfig, BertModel
from bertlab.analysis.pair_attention import (
    CLS,
    PAD,
    ROLES,
    SEP,
    A,
    B,
    attention_mass,
    same_token_attention,
    token_roles,
    twin_reading,
    uniform_attention,
)
from bertlab.tasks import pack
from bertlab.tasks.inputs import SpecialIds, collate, fast_tokenizer


@pytest.fixture(scope="module")
def packed(bert_tokenizer):
    """Two real pairs packed by bertlab.tasks.pack and padded by collate."""
    special = SpecialIds.of(fast_tokenizer(bert_tokenizer))
    items = []
    for a, b in [("the cat sat on the mat .", "a cat was sitting ."), ("yes .", "no , it is not .")]:
        ids, seg = pack(bert_tokenizer.ids_batch([a])[0], bert_tokenizer.ids_batch([b])[0], special)
        items.append({"input_ids": ids, "token_type_ids": seg})
    return collate(items, pad_id=special.pad), special


def test_roles_of_a_packed_pair(packed):
    batch, special = packed
    roles = token_roles(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], special.cls, special.sep)
    assert ROLES == ("[CLS]", "A", "[SEP]", "B")
    # "yes ." / "no , it is not .": [CLS] yes . [SEP] no , it is not . [SEP], then padding
    assert roles[1].tolist() == [CLS, A, A, SEP, B, B, B, B, B, B, SEP] + [PAD] * (roles.shape[1] - 11)
    assert (roles[0] != PAD).all() and roles[0, 0] == CLS and (roles[0] == SEP).sum() == 2


def test_mass_on_hand_made_maps():
    roles = torch.tensor([[CLS, A, A, SEP, B, SEP]])
    T = roles.shape[1]
    w = torch.zeros(1, 1, 2, T, T)  # one layer, one pair, two heads
    w[0, 0, 0, :, 4] = 1.0  # head 0: every query looks at the one B token
    w[0, 0, 1, :, 1] = 0.5  # head 1: half on the first A token, half on [CLS]
    w[0, 0, 1, :, 0] = 0.5
    per_head = attention_mass(w, roles, per_head=True)  # (1, 2, R, R)
    assert per_head.shape == (1, 2, 4, 4)
    assert torch.allclose(per_head[0, 0, :, B], torch.ones(4))
    assert torch.allclose(per_head[0, 1, A], torch.tensor([0.5, 0.5, 0.0, 0.0]))
    mean = attention_mass([w[0]], roles)  # a tuple of L maps, as models return them
    assert torch.allclose(mean, per_head.mean(dim=1))
    assert torch.allclose(mean.sum(-1), torch.ones(1, 4))
    assert torch.allclose(mean[0, A], torch.tensor([0.25, 0.25, 0.0, 0.5]))


def test_uniform_baseline_gives_the_share_of_tokens(packed):
    batch, special = packed
    roles = token_roles(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], special.cls, special.sep)
    mass = attention_mass(uniform_attention(roles, num_layers=2, num_heads=3), roles)
    n = (roles != PAD).sum(1).float()  # real length of each pair
    nb = (roles == B).sum(1).float()
    na = (roles == A).sum(1).float()
    # a query of A spreads evenly, so it puts |B| / T of its weight on B (pooled over A's queries)
    want = (na * nb / n).sum() / na.sum()
    assert mass.shape == (2, 4, 4)
    assert torch.allclose(mass[:, A, B], want.expand(2))
    assert torch.allclose(mass.sum(-1), torch.ones(2, 4))


def test_real_model_padding_changes_nothing(packed):
    batch, special = packed
    torch.manual_seed(0)
    model = BertModel(BertConfig.preset("tiny", vocab_size=30522)).eval()
    roles = token_roles(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], special.cls, special.sep)
    with torch.no_grad():
        padded = model(**batch, output_attentions=True).attentions
        n = int(batch["attention_mask"][1].sum())
        alone = model(batch["input_ids"][1:, :n], batch["token_type_ids"][1:, :n], output_attentions=True).attentions
    got = attention_mass([a[1:] for a in padded], roles[1:])
    want = attention_mass(alone, roles[1:, :n])
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(got.sum(-1), torch.ones_like(got.sum(-1)), atol=1e-5)
    with pytest.raises(ValueError, match="do not match"):
        attention_mass(padded, roles[:, :3])


def test_same_token_attention():
    # [CLS] x y [SEP] y z [SEP]: "y" occurs in both texts, "x" only in A
    ids = torch.tensor([[1, 10, 11, 2, 11, 12, 2]])
    roles = token_roles(ids, torch.tensor([[0, 0, 0, 0, 1, 1, 1]]), None, cls_id=1, sep_id=2)
    w = torch.zeros(1, 1, 2, 7, 7)
    w[0, 0, 0, :, 4] = 1.0  # head 0: every query looks at the "y" of B
    w[0, 0, 1, :, 5] = 1.0  # head 1: every query looks at "z"
    got = same_token_attention(w, ids, roles)
    assert got.shape == (1, 2) and torch.allclose(got, torch.tensor([[1.0, 0.0]]))
    even = same_token_attention(uniform_attention(roles, num_heads=2), ids, roles)
    assert torch.allclose(even, torch.full((1, 2), 1 / 7))  # one twin among 7 tokens
    with pytest.raises(ValueError, match="no query token has a twin"):
        same_token_attention(w, torch.tensor([[1, 10, 13, 2, 11, 12, 2]]), roles)


def test_twin_reading_names_the_strongest_head_and_whether_it_stands_out():
    twins = torch.tensor([[0.01, 0.02], [0.07, 0.005]])  # (L=2, heads=2)
    text = twin_reading(twins, even=0.019)
    assert text.startswith("One head stands out: in layer 1, head 0,")  # the second layer: counted from 0
    assert "0.070" in text and "3.7 times an even spread (0.019)" in text
    assert "7 times the median head (0.010)" in text  # torch's median of 4 values: the lower middle
    weak = twin_reading(twins, even=0.03)  # 2.3 times: below STANDS_OUT
    assert weak.startswith("No head stands out: the strongest, layer 1, head 0,")
    assert "2.3 times an even spread" in weak
    with pytest.raises(ValueError, match="non-empty"):
        twin_reading(torch.zeros(0, 2), even=0.1)
    with pytest.raises(ValueError, match="even spread"):
        twin_reading(twins, even=0.0)
