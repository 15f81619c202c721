"""bertlab.analysis.attention on attention maps built by hand, where the right answer is known,
and on a small random BertModel (padding, loading)."""

import math

import matplotlib
import pytest
import torch

from bertlab.analysis import attention as aa
from bertlab.config import BertConfig
from bertlab.model import BertForPreTraining, BertModel

matplotlib.use("Agg")


def previous_token_head(T: int) -> torch.Tensor:
    """Every token puts all its attention on the token before it ([CLS] on itself)."""
    att = torch.zeros(T, T)
    att[0, 0] = 1.0
    att[torch.arange(1, T), torch.arange(0, T - 1)] = 1.0
    return att


def uniform_head(T: int) -> torch.Tensor:
    return torch.full((T, T), 1.0 / T)


def test_previous_token_head_scores_one_on_previous_and_zero_elsewhere():
    att = previous_token_head(6)
    assert torch.equal(aa.offset_mass(att, -1), torch.ones(5))
    assert torch.equal(aa.offset_mass(att, +1), torch.zeros(5))
    # only [CLS] looks at itself
    assert torch.equal(aa.offset_mass(att, 0), torch.tensor([1.0, 0, 0, 0, 0, 0]))
    assert aa.offset_mass(att, -3).shape == (3,)  # queries 3, 4, 5 have a token 3 back


def test_offset_mass_is_att_i_i_plus_k_with_leading_dims():
    att = torch.rand(2, 3, 5, 5).softmax(-1)
    got = aa.offset_mass(att, 2)
    assert got.shape == (2, 3, 3)
    for i in range(3):
        assert torch.equal(got[..., i], att[..., i, i + 2])


def test_key_mass_on_cls_sink_and_uniform_heads():
    T = 5
    sink = torch.zeros(T, T)
    sink[:, 0] = 1.0  # everything on [CLS]
    cls = [True] + [False] * (T - 1)
    assert torch.equal(aa.key_mass(sink, cls), torch.ones(T))
    sep = [False] * (T - 1) + [True]
    assert torch.equal(aa.key_mass(sink, sep), torch.zeros(T))
    both = [a or b for a, b in zip(cls, sep)]
    assert torch.allclose(aa.key_mass(uniform_head(T), both), torch.full((T,), 2 / T))
    with pytest.raises(ValueError, match="one entry per key"):
        aa.key_mass(sink, [True, False])


def test_entropy_is_zero_for_one_key_and_log_t_for_uniform():
    T = 7
    assert torch.allclose(aa.attention_entropy(previous_token_head(T)), torch.zeros(T))
    assert torch.allclose(aa.attention_entropy(uniform_head(T)), torch.full((T,), math.log(T)))
    p = torch.tensor([[0.5, 0.25, 0.25, 0.0]])
    want = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    assert aa.attention_entropy(p).item() == pytest.approx(want)


def test_is_punctuation():
    assert all(aa.is_punctuation(t) for t in (".", ",", "--", '"', "'", "?!"))
    assert not any(aa.is_punctuation(t) for t in ("[CLS]", "[SEP]", "a", "##s", "3", "", "$"))


def test_sequence_measures_and_head_averages_weigh_every_query_alike():
    # two layers, two heads: (0,0) previous-token, (0,1) uniform, (1,0) all on [CLS],
    # (1,1) all on the last [SEP]
    def maps(T):
        sink, sep = torch.zeros(T, T), torch.zeros(T, T)
        sink[:, 0] = 1.0
        sep[:, -1] = 1.0
        return torch.stack([torch.stack([previous_token_head(T), uniform_head(T)]), torch.stack([sink, sep])])

    seqs = [(maps(4), ["[CLS]", "hi", ".", "[SEP]"]), (maps(6), ["[CLS]", "a", ",", "b", "c", "[SEP]"])]
    avg = aa.HeadAverages()
    for att, tokens in seqs:
        m = aa.sequence_measures(att, tokens)
        assert m["prev"].shape == (2, 2, att.shape[-1] - 1)
        assert m["cls"].shape == (2, 2, att.shape[-1])
        avg.add(m)
    means = avg.means()
    assert avg.sequences == 2 and avg.counts["cls"] == 10 and avg.counts["prev"] == 8
    assert means["prev"][0, 0] == pytest.approx(1.0)
    assert means["cls"][1, 0] == pytest.approx(1.0)
    assert means["sep"][1, 1] == pytest.approx(1.0)
    assert means["entropy"][0, 0] == pytest.approx(0.0, abs=1e-6)
    # uniform head: 4 queries with log 4, 6 with log 6, each query weighs the same
    want = (4 * math.log(4) + 6 * math.log(6)) / 10
    assert means["entropy"][0, 1] == pytest.approx(want, rel=1e-6)
    assert means["uniform_entropy"][0, 0] == pytest.approx(want, rel=1e-6)
    # uniform head on punctuation: 1/4 for 4 queries, 1/6 for 6 queries
    assert means["punct"][0, 1] == pytest.approx((4 * 0.25 + 6 / 6) / 10, rel=1e-6)
    with pytest.raises(ValueError, match="tokens"):
        aa.sequence_measures(maps(4), ["[CLS]", "[SEP]"])


def test_top_heads():
    scores = torch.tensor([[0.1, 0.9, 0.2], [0.5, 0.0, 0.8]])
    assert aa.top_heads(scores, 2) == [(0, 1, pytest.approx(0.9)), (1, 2, pytest.approx(0.8))]
    assert aa.top_heads(scores, 1, largest=False) == [(1, 1, 0.0)]


def test_word_groups_keep_specials_alone_and_join_pieces():
    assert aa.word_groups([None, 0, 0, 1, None]) == [[0], [1, 2], [3], [4]]
    assert aa.word_groups([None, 0, 1, 1, 1, 2, None, 0, None]) == [[0], [1], [2, 3, 4], [5], [6], [7], [8]]


def test_word_level_attention_sums_to_words_and_averages_from_words():
    # [CLS] play ##ing ball [SEP]
    att = torch.tensor(
        [
            [0.1, 0.2, 0.3, 0.4, 0.0],
            [0.0, 0.5, 0.5, 0.0, 0.0],
            [0.2, 0.0, 0.0, 0.6, 0.2],
            [0.0, 0.3, 0.3, 0.0, 0.4],
            [1.0, 0.0, 0.0, 0.0, 0.0],
        ]
    )
    groups = aa.word_groups([None, 0, 0, 1, None])
    w = aa.word_level_attention(att, groups)
    assert w.shape == (4, 4)
    want = torch.tensor(
        [
            [0.1, 0.5, 0.4, 0.0],  # to "playing": 0.2 + 0.3
            [0.1, 0.5, 0.3, 0.1],  # from "playing": mean of its two rows
            [0.0, 0.6, 0.0, 0.4],
            [1.0, 0.0, 0.0, 0.0],
        ]
    )
    assert torch.allclose(w, want)
    assert torch.allclose(w.sum(-1), torch.ones(4))
    # one piece per word: nothing changes; leading (L, A) dimensions are kept
    maps = torch.rand(2, 3, 5, 5).softmax(-1)
    assert torch.allclose(aa.word_level_attention(maps, [[i] for i in range(5)]), maps)


def test_chunk_spans_iob2_and_iob1():
    iob2 = ["B-NP", "I-NP", "B-NP", "B-VP", "B-PP", "B-NP", "I-NP", "O"]
    assert aa.chunk_spans(iob2) == [(0, 2), (2, 3), (5, 7)]
    assert aa.chunk_spans(iob2, "PP") == [(4, 5)]
    iob1 = ["I-NP", "I-NP", "B-NP", "I-VP", "I-NP"]
    assert aa.chunk_spans(iob1) == [(0, 2), (2, 3), (4, 5)]


def test_chunk_relations_on_a_tagged_sentence():
    #        0      1      2        3       4     5      6       7
    words = ["The", "new", "car", "stopped", "at", "the", "red", "light"]
    pos = ["DT", "JJ", "NN", "VBD", "IN", "DT", "JJ", "NN"]
    chunks = ["B-NP", "I-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP", "I-NP"]
    assert len(words) == len(pos)
    rel = aa.chunk_relations(pos, chunks)
    assert rel["np_head"] == [(0, 2), (1, 2), (5, 7), (6, 7)]
    assert rel["det_noun"] == [(0, 2), (5, 7)]
    assert rel["prep_object"] == [(4, 7)]


def test_most_attended_other_skips_itself_and_non_candidates():
    w = torch.tensor([[0.9, 0.05, 0.05, 0.0], [0.1, 0.6, 0.2, 0.1], [0.0, 0.3, 0.7, 0.0], [0.5, 0.2, 0.1, 0.2]])
    pred = aa.most_attended_other(w, candidates=[1, 2])
    assert pred.tolist() == [1, 2, 1, 1]


def test_probe_relations_scores_a_head_that_attends_to_the_phrase_head():
    # [CLS] The new car stopped [SEP]: word ids None 0 1 2 3 None, "new" in two pieces
    word_ids = [None, 0, 1, 1, 2, 3, None]
    T = len(word_ids)
    rels = aa.chunk_relations(["DT", "JJ", "NN", "VBD"], ["B-NP", "I-NP", "I-NP", "B-VP"])
    assert rels["np_head"] == [(0, 2), (1, 2)]
    good = torch.zeros(T, T)
    good[:, 4] = 1.0  # every token looks at "car"
    good[4, 5] = 1.0
    good[4, 4] = 0.0
    prev = previous_token_head(T)
    maps = torch.stack([torch.stack([good, prev])])  # (L=1, A=2, T, T)
    res = aa.probe_relations([maps, maps], [word_ids, word_ids], [rels, rels], offsets=(-1, 1, 2))
    r = res["np_head"]
    assert r.n == 4
    assert r.head_hits.tolist() == [[4, 0]]  # the previous-token head never looks forward
    assert r.head_accuracy[0, 0] == 1.0 and r.best_head() == (0, 0, 1.0)
    assert r.offset_hits == {-1: 0, 1: 2, 2: 2}
    assert r.best_offset == (1, 0.5)  # ties go to the smaller offset
    assert res["det_noun"].n == 2 and res["prep_object"].n == 0


@pytest.fixture
def tiny_model():
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=50, num_layers=2, hidden_size=16, num_heads=2, max_position_embeddings=32)
    return BertModel(cfg).eval()


def test_attention_maps_cut_padding_and_match_one_by_one(tiny_model):
    seqs = [
        dict(input_ids=[2, 5, 6, 7, 3]),
        dict(input_ids=[2, 9, 3], token_type_ids=[0, 0, 0]),
        dict(input_ids=[2, 8, 8, 3, 4, 4, 3], token_type_ids=[0, 0, 0, 0, 1, 1, 1]),
    ]
    batched = list(aa.attention_maps(tiny_model, seqs, batch_size=3))
    assert [m.shape for m in batched] == [(2, 2, 5, 5), (2, 2, 3, 3), (2, 2, 7, 7)]
    for m, s in zip(batched, seqs):
        assert torch.allclose(m.sum(-1), torch.ones(m.shape[:-1]), atol=1e-5)
        alone = next(aa.attention_maps(tiny_model, [s], batch_size=1))
        assert torch.allclose(m, alone, atol=1e-5)


def test_load_encoder_from_a_bertlab_folder(tmp_path):
    from bertlab import checkpoint as ckpt

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=50, num_layers=2, hidden_size=16, num_heads=2, max_position_embeddings=32)
    full = BertForPreTraining(cfg)
    ckpt.save_model(tmp_path / "m", full)
    enc = aa.load_encoder(tmp_path / "m")
    assert isinstance(enc, BertModel) and not enc.training
    ids = torch.tensor([[2, 5, 6, 3]])
    full.eval()
    assert torch.allclose(enc(ids).last_hidden_state, full.bert(ids).last_hidden_state)


def test_load_encoder_from_a_hugging_face_folder():
    from bertlab.notebook import minilm_path

    try:
        folder = minilm_path()
    except RuntimeError as err:
        pytest.skip(str(err))
    enc = aa.load_encoder(folder)
    assert isinstance(enc, BertModel) and enc.config.num_layers == 6 and not enc.training


def test_layer_head_heatmap_draws_one_cell_per_head():
    import matplotlib.pyplot as plt

    from bertlab.analysis.viz import layer_head_heatmap

    scores = torch.rand(3, 4)
    ax = layer_head_heatmap(scores, title="t", label="mass")
    assert ax.images[0].get_array().shape == (3, 4)
    assert len(ax.texts) == 12 and ax.get_title() == "t"
    with pytest.raises(ValueError, match=r"\(L, A\)"):
        layer_head_heatmap(torch.rand(3))
    plt.close("all")


def test_sentence_pairs_are_consecutive_reproducible_and_long_enough():
    from bertlab.data.corpus import Document

    docs = [
        Document("a", "A", ["One two three.", "Four five six.", "Hi.", "Seven eight nine.", "Ten eleven twelve."]),
        Document("b", "B", ["Ten eleven twelve.", "Thirteen fourteen fifteen."]),
    ]
    # "Hi." is too short: the pairs around it do not qualify
    usable = {
        ("One two three.", "Four five six."),
        ("Seven eight nine.", "Ten eleven twelve."),
        ("Ten eleven twelve.", "Thirteen fourteen fifteen."),
    }
    assert set(aa.sentence_pairs(docs, 3)) == usable
    two = aa.sentence_pairs(docs, 2, seed=1)
    assert two == aa.sentence_pairs(docs, 2, seed=1) and set(two) <= usable and len(set(two)) == 2
    assert len(aa.sentence_pairs(docs, 4, min_words=1)) == 4
    with pytest.raises(ValueError, match="only 3"):
        aa.sentence_pairs(docs, 4)


def test_sink_reading_is_generated_from_the_shares():
    from bertlab.analysis.attention import sink_heads, sink_reading

    expected = {"[CLS]": 0.03, "[SEP]": 0.06}
    none = {"[CLS]": torch.full((2, 2), 0.04), "[SEP]": torch.tensor([[0.05, 0.08], [0.06, 0.07]])}
    text = sink_reading(none, expected)
    assert text.startswith(
        "No head of this model parks its attention on [CLS] or [SEP]: the heaviest, on [SEP], gives it 8%"
    )
    some = {"[CLS]": torch.tensor([[0.04, 0.5], [0.04, 0.04]]), "[SEP]": torch.tensor([[0.3, 0.6], [0.06, 0.07]])}
    assert sink_heads(some["[SEP]"], 0.06) == [(0, 1, pytest.approx(0.6)), (0, 0, pytest.approx(0.3))]
    text = sink_reading(some, expected)
    assert "one head on [CLS] (the heaviest 50%, against 3% of the tokens)" in text
    assert "two heads on [SEP] (the heaviest 60%" in text
