"""lab.linear_probe: sentence vectors are the mean of the real tokens' states (the same batched or
alone), and the linear probe finds a signal that is there and none that is not, choosing its
penalty without looking at the evaluation set."""

import pytest
import torch

from bertlab import BertConfig, BertModel
from lab.linear_probe import L2_GRID, linear_probe, sentence_vectors


@pytest.fixture
def encoder(bert_tokenizer):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=bert_tokenizer.vocab_size, num_layers=2, hidden_size=32, num_heads=2)
    return BertModel(config).eval()


def test_sentence_vectors_average_the_real_tokens_batched_or_alone(encoder, bert_tokenizer, one_thread):
    texts = ["a short one", "a much longer sentence than the first, with a comma", "word"]
    batched = sentence_vectors(encoder, bert_tokenizer, texts, batch_size=2)
    assert batched.shape == (3, 3, 32) and batched.dtype == torch.float32  # (L+1, N, H)
    for i, text in enumerate(texts):
        enc = bert_tokenizer.encode_batch([text], return_tensors="pt")
        with torch.no_grad():
            hs = encoder(enc.input_ids, enc.token_type_ids, enc.attention_mask, output_hidden_states=True).hidden_states
        for layer in range(3):
            torch.testing.assert_close(batched[layer, i], hs[layer][0].mean(0), atol=1e-5, rtol=1e-5)
    # the encoder inside a model with a head is used, and its training mode is restored
    head = torch.nn.Module()
    head.bert = encoder.train()
    again = sentence_vectors(head, bert_tokenizer, texts)
    assert encoder.training
    torch.testing.assert_close(again, batched, atol=1e-5, rtol=1e-5)
    assert sentence_vectors(encoder, bert_tokenizer, []).shape == (3, 0, 32)


def test_the_probe_finds_a_word_in_the_embeddings_of_a_random_encoder(encoder, bert_tokenizer, one_thread):
    g = torch.Generator().manual_seed(0)
    fillers = ["the film", "this movie", "a story", "the plot", "it", "the acting", "that show"]

    def texts(n):
        labels = torch.randint(0, 2, (n,), generator=g)
        words = [("wonderful" if y else "dreadful") for y in labels]
        picks = torch.randint(0, len(fillers), (n,), generator=g)
        return [f"{fillers[p]} was {w}" for p, w in zip(picks, words)], labels

    (tr, ytr), (ev, yev) = texts(200), texts(100)
    x_tr = sentence_vectors(encoder, bert_tokenizer, tr)[0]  # the embedding output
    x_ev = sentence_vectors(encoder, bert_tokenizer, ev)[0]
    assert linear_probe(x_tr, ytr, x_ev, yev).accuracy == 100.0
    shuffled = ytr[torch.randperm(len(ytr), generator=g)]  # the same vectors, labels with no signal
    assert linear_probe(x_tr, shuffled, x_ev, yev).accuracy < 75.0


def test_the_probe_on_vectors_with_and_without_a_signal():
    g = torch.Generator().manual_seed(1)
    y = torch.randint(0, 3, (600,), generator=g)
    centres = 3.0 * torch.randn(3, 16, generator=g)
    x = centres[y] + torch.randn(600, 16, generator=g)
    result = linear_probe(x[:400], y[:400], x[400:], y[400:])
    assert result.accuracy > 95.0 and result.train_examples == 400 and result.l2 in L2_GRID
    noise = torch.randn(600, 16, generator=g)
    assert 15.0 < linear_probe(noise[:400], y[:400], noise[400:], y[400:]).accuracy < 50.0


def test_the_penalty_is_chosen_without_the_evaluation_labels():
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(300, 8, generator=g), torch.randint(0, 2, (300,), generator=g)
    a = linear_probe(x[:200], y[:200], x[200:], y[200:])
    b = linear_probe(x[:200], y[:200], x[200:], 1 - y[200:])  # flipped evaluation labels
    assert a.l2 == b.l2 and a.accuracy + b.accuracy == pytest.approx(100.0)


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="one label each"):
        linear_probe(torch.zeros(20, 4), torch.zeros(19), torch.zeros(5, 4), torch.zeros(5))
    with pytest.raises(ValueError, match="at least 10"):
        linear_probe(torch.zeros(5, 4), torch.zeros(5), torch.zeros(5, 4), torch.zeros(5))


def test_compare_probes_against_the_median_twin():
    from lab.linear_probe import compare_probes

    rows = [
        {"init": "pretrained", "seed": 0, "layer": 0, "train_examples": 500, "accuracy": 60.0},
        {"init": "pretrained", "seed": 0, "layer": 1, "train_examples": 500, "accuracy": 64.0},
        {"init": "pretrained", "seed": 0, "layer": 1, "train_examples": 2000, "accuracy": 64.0},
        {"init": "pretrained", "seed": 0, "layer": 0, "train_examples": 2000, "accuracy": 58.0},
    ]
    for seed, acc in ((0, 50.0), (1, 56.0), (2, 52.0)):
        for layer in (0, 1):
            for n in (500, 2000):
                rows.append({"init": "random", "seed": seed, "layer": layer, "train_examples": n, "accuracy": acc})
    cmp = compare_probes(rows)
    assert cmp.layers == (0, 1) and cmp.sizes == (500, 2000) and cmp.twins == 3
    assert cmp.random[(1, 500)] == 52.0  # the median of 50, 56, 52
    assert cmp.gain(0, 500) == pytest.approx(8.0)
    assert cmp.best() == (1, 500)  # 64 twice: the fewer sentences
    with pytest.raises(ValueError, match="unmatched"):
        compare_probes(rows[:4])
    with pytest.raises(ValueError, match="init"):
        compare_probes([{**rows[0], "init": "frozen"}])
