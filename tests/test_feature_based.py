"""bertlab.tasks.feature_based: the six layer combinations of the paper's Table 7 (identical to the book's
exercise 8), hidden states extracted once and read at each word's first piece (checked against
running the encoder on every window alone), the tagger (padding never leaks into a sentence),
and training a tagger end to end."""

import pytest
import torch

from bertlab import BertConfig, BertModel, exercises
from bertlab.exercises import using_bert
from bertlab.tasks import CONLL_LABELS, get_task
from bertlab.tasks.feature_based import (
    COMBINATIONS,
    PAPER_DEV_F1,
    Tagger,
    WordStates,
    combine,
    extract_word_states,
    layers_used,
    predict_tags,
    train_tagger,
)
from bertlab.tasks.metrics import entity_f1
from bertlab.tasks.ner import featurize_ner


def test_the_table_names_the_exercise_strategies_in_the_papers_order():
    assert tuple(COMBINATIONS) == exercises.STRATEGIES
    assert set(PAPER_DEV_F1) == set(COMBINATIONS)
    assert list(PAPER_DEV_F1.values()) == sorted(PAPER_DEV_F1.values())  # listed by score
    assert PAPER_DEV_F1["concat_last_four"] == 96.1 and PAPER_DEV_F1["first_layer"] == 91.0


def test_combinations_equal_the_exercise_definitions_on_real_hidden_states(one_thread):
    hs = using_bert.minilm_hidden_states()  # all-MiniLM-L6-v2 on real sentences: 7 tensors (B, T, 384)
    assert len(hs) == 7
    for name in COMBINATIONS:
        want = using_bert.combine_layers_reference(hs, name)
        assert torch.equal(combine(hs, name), want), name  # bit for bit
        assert torch.equal(combine(torch.stack(hs), name), want), name  # a stacked tensor too
    assert combine(hs, "concat_last_four").shape[-1] == 4 * hs[0].shape[-1]
    # and the exercise's own checker accepts bertlab's combinations
    exercises.check("features", combine)


@pytest.mark.parametrize("L", [4, 6, 12])
def test_layers_used_says_what_each_combination_reads(L):
    # hidden state k is the constant 2**k: a sum reveals exactly which entries went in
    hs = tuple(torch.full((2, 3, 5), 2.0**k, dtype=torch.float64) for k in range(L + 1))
    for name in COMBINATIONS:
        used = layers_used(name, L)
        got = combine(hs, name)
        if name == "concat_last_four":
            blocks = got.split(5, dim=-1)
            assert [int(b[0, 0, 0].item()).bit_length() - 1 for b in blocks] == used
        else:
            assert torch.all(got == sum(2.0**k for k in used)), name
    assert layers_used("sum_all", L) == list(range(1, L + 1))  # the embedding output is not in it


def test_bad_combinations():
    hs = tuple(torch.zeros(1, 2, 3) for _ in range(7))
    with pytest.raises(ValueError, match="unknown combination 'sum_last_three'"):
        combine(hs, "sum_last_three")
    with pytest.raises(ValueError, match="at least 4 layers"):
        combine(hs[:3], "sum_last_four")


@pytest.fixture(scope="module")
def dev():
    from bertlab.data import download

    try:
        return get_task("conll2003").load("dev")
    except download.DataUnavailableError as err:
        pytest.skip(f"CoNLL-2003 dev not available here: {err}")


@pytest.mark.parametrize("max_len", [128, 12])
def test_extracted_states_equal_each_window_run_alone(bert_tokenizer, dev, max_len, one_thread):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=bert_tokenizer.vocab_size, num_layers=4, hidden_size=32, num_heads=2)
    model = BertModel(config).eval()
    sentences = dev[:40]
    f = featurize_ner(sentences, bert_tokenizer, max_len=max_len, label_names=CONLL_LABELS)
    if max_len == 12:
        assert f.report["sentences_split"] > 5  # long sentences are cut into windows
    states = extract_word_states(model, f, batch_size=7)
    L, H = config.num_layers, config.hidden_size
    assert states.layers.shape == (L + 1, sum(len(s.words) for s in sentences), H)
    assert states.lengths.tolist() == [len(s.words) for s in sentences]
    assert states.sentence_index.tolist() == list(range(len(sentences)))
    assert states.gold_tags() == [s.tags for s in sentences]
    # the same vectors from one window at a time, no padding, no batching
    word = 0
    with torch.no_grad():
        for n, item in enumerate(f.items):
            ids = torch.as_tensor(item["input_ids"])[None]
            hs = torch.stack(model(ids, output_hidden_states=True).hidden_states)[:, 0]
            firsts = torch.as_tensor(f.meta["first_piece"][n])
            want = hs[:, firsts]  # (L+1, words of this window, H)
            got = states.layers[:, word : word + len(firsts)]
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
            word += len(firsts)
    assert word == states.layers.shape[1]
    # float16 storage, float32 combinations
    half = extract_word_states(model, f, batch_size=64, dtype=torch.float16)
    assert half.layers.dtype == torch.float16
    for name in COMBINATIONS:
        assert half.features(name).dtype == torch.float32
        torch.testing.assert_close(half.features(name), states.features(name), atol=2e-2, rtol=2e-3)


@pytest.mark.parametrize("num_layers", [0, 1, 2])
def test_tagger_ignores_padding(num_layers, one_thread):
    torch.manual_seed(0)
    tagger = Tagger(6, 9, hidden=5, num_layers=num_layers).eval()
    a, b = torch.randn(4, 6), torch.randn(7, 6)
    alone = tagger(a[None], torch.tensor([4]))
    batch = torch.nn.utils.rnn.pad_sequence([a, b], batch_first=True)
    together = tagger(batch, torch.tensor([4, 7]))
    assert together.shape == (2, 7, 9)
    torch.testing.assert_close(together[0, :4], alone[0], atol=1e-6, rtol=1e-5)
    if num_layers:
        assert tagger.lstm.bidirectional and tagger.classifier.in_features == 10


def _synthetic_states(n_sentences, seed, num_layers=4, H=12):
    """Word states whose layer 2 and 3 encode the gold tag (others are noise): a tagger on the
    right layers can learn the tags perfectly, one on the embedding output cannot."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 9, (n_sentences,), generator=g)
    N = int(lengths.sum())
    tags = torch.randint(0, len(CONLL_LABELS), (N,), generator=g)
    tags[1:][(tags[1:] % 2 == 0) & (tags[1:] > 0)] = 0  # fewer I- tags: mostly valid IOB2
    layers = torch.randn(num_layers + 1, N, H, generator=g)
    code = torch.nn.functional.one_hot(tags, H).float() * 4
    layers[2] += code
    layers[3] += code
    return WordStates(layers, lengths, torch.arange(n_sentences), tags, CONLL_LABELS)


@pytest.mark.parametrize("num_layers", [0, 1])
def test_train_tagger_learns_what_the_layers_carry(num_layers, one_thread):
    train, dev = _synthetic_states(300, 0), _synthetic_states(80, 1)
    good = train_tagger(
        train, dev, "concat_last_four", hidden=16, num_layers=num_layers, epochs=6, lr=1e-2, batch_size=16
    )
    bad = train_tagger(train, dev, "first_layer", hidden=16, num_layers=num_layers, epochs=2, lr=1e-2, batch_size=16)
    assert good.f1 > 95 and bad.f1 < 50
    assert good.in_dim == 4 * 12 and bad.in_dim == 12
    assert len(good.history) == 6 and good.history[-1]["f1"] == good.f1
    # the reported scores are those of the returned predictions
    scores = entity_f1(dev.gold_tags(), good.predictions, by_type=True)
    assert scores["f1"] == good.f1 and scores["types"] == good.types
    assert [len(p) for p in good.predictions] == dev.lengths.tolist()


def test_train_tagger_weighs_every_word_the_same_in_batches_of_similar_lengths(monkeypatch, one_thread):
    """Batches of similar lengths hold very different numbers of words. With the optimizer's step
    replaced by one that only adds up the gradients (the weights stay put), an epoch's gradient
    must be that of the mean loss over all words times the number of batches: every word weighs
    the same, as in random batches. A plain mean per batch would give the short ones more."""
    from bertlab.tasks import feature_based

    states = _synthetic_states(120, 3)
    g_sum = {}

    class Accumulate:
        def __init__(self, params, **_):
            self.params = list(params)

        def zero_grad(self, set_to_none=True):
            for p in self.params:
                if p.grad is not None:
                    g_sum[p] = g_sum.get(p, 0) + p.grad.detach().clone()
                p.grad = None

        def step(self):
            pass

    made = []
    real_tagger = feature_based.Tagger
    monkeypatch.setattr(feature_based.torch.optim, "Adam", Accumulate)
    monkeypatch.setattr(feature_based, "Tagger", lambda *a, **k: made.append(real_tagger(*a, **k)) or made[-1])
    batches = []
    real_batches = feature_based.length_grouped_batches
    monkeypatch.setattr(
        feature_based, "length_grouped_batches", lambda *a, **k: batches.extend(real_batches(*a, **k)) or batches
    )
    feature_based.train_tagger(
        states, states, "last_hidden", hidden=4, num_layers=1, dropout=0.0, epochs=1, batch_size=8
    )
    tagger = made[0]
    for p in tagger.parameters():  # the last batch's gradient is still on p.grad
        g_sum[p] = g_sum.get(p, 0) + p.grad
        p.grad = None
    tagger.train()
    x = states.features("last_hidden")
    starts = torch.cumsum(states.lengths, 0) - states.lengths
    rows = torch.arange(len(states.lengths))
    xb, lb = feature_based._padded(x, starts, states.lengths, rows)
    yb, _ = feature_based._padded(states.tags, starts, states.lengths, rows)
    mask = torch.arange(xb.shape[1])[None, :] < lb[:, None]
    lengths = [int(states.lengths[b].sum()) for b in batches]
    assert max(lengths) > 2 * min(lengths)  # the batches differ in words
    whole = torch.nn.functional.cross_entropy(tagger(xb, lb)[mask], yb[mask]) * len(batches)
    whole.backward()
    for p in tagger.parameters():
        torch.testing.assert_close(g_sum[p], p.grad, atol=1e-5, rtol=1e-4)


def test_predict_tags_in_batches_equals_one_batch(one_thread):
    states = _synthetic_states(50, 2)
    torch.manual_seed(0)
    tagger = Tagger(12, 9, hidden=4, num_layers=1)
    x = states.features("last_hidden")
    assert predict_tags(tagger, x, states.lengths, CONLL_LABELS, batch_size=7) == predict_tags(
        tagger, x, states.lengths, CONLL_LABELS, batch_size=1000
    )


def test_compare_with_table7_reads_the_usual_comparisons():
    from bertlab.tasks.feature_based import PAPER_FINETUNE_DEV_F1, compare_with_table7

    f1 = {
        "first_layer": 60.0,
        "last_hidden": 70.0,
        "sum_all": 72.5,
        "second_to_last": 68.0,
        "sum_last_four": 69.0,
        "concat_last_four": 72.5,  # ties sum_all: the first in the given order is the best
    }
    r = compare_with_table7(f1, finetuned=75.0)
    assert (r.best, r.worst) == ("sum_all", "first_layer")
    assert r.mixed_beat == ["sum_all", "concat_last_four"]  # sum_last_four (69) is below the last layer
    assert r.second_minus_last == pytest.approx(-2.0) and r.best_minus_finetuned == pytest.approx(-2.5)
    # the paper's side, from its quoted Table 7
    assert (r.paper_best, r.paper_worst) == ("concat_last_four", "first_layer")
    assert r.paper_mixed_beat == list(r.mixed) and len(r.mixed) == 3
    assert r.paper_second_minus_last == pytest.approx(PAPER_DEV_F1["second_to_last"] - PAPER_DEV_F1["last_hidden"])
    assert r.paper_best_minus_finetuned == pytest.approx(max(PAPER_DEV_F1.values()) - PAPER_FINETUNE_DEV_F1)
    # against itself as "the paper", every comparison agrees with the run's
    same = compare_with_table7(f1, 75.0, paper=f1, paper_finetuned=75.0)
    assert (same.paper_best, same.paper_mixed_beat) == (same.best, same.mixed_beat)
    assert same.paper_second_minus_last == same.second_minus_last
    with pytest.raises(ValueError, match="sum_all"):
        compare_with_table7({k: v for k, v in f1.items() if k != "sum_all"}, 75.0)


# ------------------------------------------------------------------------------------------------
# The noise of an entity F1 on one dev set, and readings through bertlab.verdict
# ------------------------------------------------------------------------------------------------
def _tagged(n_sentences, seed, error_rate):
    """Gold tags of one entity per sentence and predictions that miss it with `error_rate`."""
    g = torch.Generator().manual_seed(seed)
    gold, pred = [], []
    for _ in range(n_sentences):
        gold.append(["O", "B-PER", "I-PER", "O"])
        wrong = torch.rand((), generator=g).item() < error_rate
        pred.append(["O", "B-ORG", "I-ORG", "O"] if wrong else ["O", "B-PER", "I-PER", "O"])
    return gold, pred


def test_sentence_counts_give_entity_f1_overall_and_by_type(dev):
    from bertlab.tasks.feature_based import f1_from_counts, sentence_counts

    gold = [s.tags for s in dev[:300]]
    g = torch.Generator().manual_seed(0)
    pred = [  # the gold tags with a fifth of the words' tags shuffled among the labels
        [CONLL_LABELS[int(torch.randint(0, 9, (), generator=g))] if torch.rand((), generator=g) < 0.2 else t for t in s]
        for s in gold
    ]
    want = entity_f1(gold, pred, by_type=True)
    counts = sentence_counts(gold, pred)
    assert counts.shape == (300, 3)
    assert counts.sum(0).tolist() == [
        round(want["precision"] * want["predicted_entities"] / 100),
        want["predicted_entities"],
        want["gold_entities"],
    ]
    assert f1_from_counts(counts) == pytest.approx(want["f1"], abs=1e-9)
    for kind, v in want["types"].items():
        assert f1_from_counts(sentence_counts(gold, pred, kind)) == pytest.approx(v["f1"], abs=1e-9), kind
    with pytest.raises(ValueError, match="sentence 0: 4 gold tags but 3"):
        sentence_counts([["O"] * 4], [["O"] * 3])


def test_f1_standard_error_matches_the_binomial_where_f1_is_an_accuracy():
    from bertlab.tasks.feature_based import f1_standard_error

    # one gold and one predicted entity per sentence: F1 is the share of sentences right
    gold, pred = _tagged(400, 0, 0.3)
    p = sum(a == b for a, b in zip(gold, pred)) / 400
    binomial = 100 * (p * (1 - p) / 400) ** 0.5
    se = f1_standard_error(gold, pred, draws=2000)
    assert se == pytest.approx(binomial, rel=0.1)
    assert f1_standard_error(gold, pred, draws=2000, seed=0) == se  # seeded: the page reads the same
    assert f1_standard_error(gold, pred, pred) == 0.0  # a system against itself: nothing to resample
    with pytest.raises(ValueError, match="two bootstrap draws"):
        f1_standard_error(gold, pred, draws=1)


def test_f1_difference_reads_clear_within_and_below():
    from bertlab.tasks.feature_based import f1_difference
    from bertlab.verdict import BELOW, CLEAR, WITHIN

    gold, good = _tagged(400, 0, 0.1)
    _, bad = _tagged(400, 1, 0.4)
    _, close = _tagged(400, 2, 0.12)
    r = f1_difference(gold, good, bad)
    assert r.words == CLEAR and r.gain == pytest.approx(entity_f1(gold, good)["f1"] - entity_f1(gold, bad)["f1"])
    assert "two bootstrap standard errors over 400 dev sentences" in r.phrase("it")
    assert f1_difference(gold, bad, good).words == BELOW
    assert f1_difference(gold, good, close).words == WITHIN
    # paired: the shared sentences cancel, so the difference's band is narrower than two
    # independent scores' would be
    from bertlab.tasks.feature_based import f1_standard_error

    independent = (f1_standard_error(gold, good) ** 2 + f1_standard_error(gold, close) ** 2) ** 0.5
    assert f1_standard_error(gold, good, close) < independent
    assert "one dev sentence" in f1_difference(gold[:1], good[:1], good[:1]).how


def test_feature_study_runs_table7_and_fine_tuning_on_the_same_sentences(tmp_path, bert_tokenizer, dev, one_thread):
    from bertlab import BertForPreTraining
    from bertlab import checkpoint as ckpt
    from bertlab.experiments.feature_study import feature_study
    from bertlab.experiments.reference import PretrainedEncoder
    from bertlab.tasks.feature_based import FINETUNED

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=bert_tokenizer.vocab_size, num_layers=4, hidden_size=32, num_heads=2, intermediate_size=64
    )
    tok_file = bert_tokenizer.save(tmp_path / "tokenizer") / "tokenizer.json"
    folder = ckpt.save_model(tmp_path / "enc", BertForPreTraining(config), tokenizer_file=tok_file)
    encoder = PretrainedEncoder("tiny", folder, False, "a tiny random encoder")
    task = get_task("conll2003")
    study = feature_study(
        encoder,
        task,
        dev[:60],
        dev[60:90],
        tagger=dict(hidden=8, num_layers=1, epochs=1, lr=1e-2, batch_size=16),
        finetune=dict(epochs=1, lr=1e-3, batch_size=16, max_len=64),
        out=str(tmp_path / "ft"),
    )
    assert list(study.taggers) == list(COMBINATIONS) and study.num_layers == 4
    assert (study.n_train, study.n_dev) == (60, 30) and study.gold == [s.tags for s in dev[60:90]]
    assert study.ranking()[0] == max(study.f1, key=study.f1.get)
    # the fine-tuned tags read back are those fine-tuning scored (fp32 on a CPU: exactly)
    assert study.finetuned == pytest.approx(study.finetuned_scores[0], abs=1e-6)
    r = study.reading("second_to_last", FINETUNED)
    assert r.gain == pytest.approx(study.f1["second_to_last"] - study.finetuned)
    assert r.low <= r.gain <= r.high and "30 dev sentences" in r.how
    assert set(study.seconds) == {"extract", "taggers", "finetune"}
    assert not any(p.requires_grad for p in study.encoder.parameters())
    with pytest.raises(ValueError, match="needs `out`"):
        feature_study(encoder, task, dev[:10], dev[10:20], tagger=dict(epochs=1, hidden=4), finetune=dict(epochs=1))
