"""bertlab.tasks.ner on the real CoNLL-2003 dev set: first-sub-token alignment, the round trip
word labels -> sub-token labels -> word labels, windows for long sentences, entity F1 through the
whole path against seqeval, a forward pass, and bad input."""

import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from bertlab import IGNORE_INDEX, BertConfig
from bertlab.tasks import CONLL_LABELS, get_task
from bertlab.tasks.inputs import stack_ragged
from bertlab.tasks.ner import featurize_ner, split_into_windows, word_predictions


@pytest.fixture(scope="module")
def tok(bert_tokenizer):
    return bert_tokenizer


@pytest.fixture(scope="module")
def dev():
    from bertlab.data import download

    try:
        return get_task("conll2003").load("dev")
    except download.DataUnavailableError as err:
        pytest.skip(f"CoNLL-2003 dev not available here: {err}")


def token_labels(f):
    """The features' own sub-token labels as one (N, T) matrix (IGNORE_INDEX padding)."""
    return stack_ragged([torch.as_tensor(it["labels"])[None] for it in f.items], IGNORE_INDEX)


@pytest.mark.parametrize("max_len", [128, 24])
def test_first_sub_token_alignment_on_dev(tok, dev, max_len):
    f = featurize_ner(dev, tok, max_len=max_len, label_names=CONLL_LABELS)
    r = f.report
    print({k: v for k, v in r.items() if k != "locations"})
    assert r["sentences"] == len(dev) == 3250 and r["words"] == 51362
    assert r["words_without_pieces"] == 0 and r["empty_sentences"] == 0
    if max_len == 24:
        assert r["sentences_split"] > 100 and r["windows"] > len(dev)
    # Independent word pieces: each word tokenized alone (same pieces as in context for BERT's
    # pre-tokenizer, which never joins across a word boundary).
    labelled_per_sentence = np.zeros(len(dev), dtype=np.int64)
    sample = set(range(0, len(dev), 7))
    for n, item in enumerate(f.items):
        ids, labels = item["input_ids"], item["labels"]
        assert len(ids) <= max_len and ids[0] == tok.cls_id and ids[-1] == tok.sep_id
        assert labels[0] == IGNORE_INDEX and labels[-1] == IGNORE_INDEX
        assert (item["token_type_ids"] == 0).all()
        s, lo = f.meta["sentence_index"][n], f.meta["word_start"][n]
        firsts = f.meta["first_piece"][n]
        labelled = np.flatnonzero(labels != IGNORE_INDEX)
        assert np.array_equal(labelled, firsts)  # exactly the first pieces carry labels
        labelled_per_sentence[s] += len(labelled)
        words, tags = dev[s].words, dev[s].tags
        assert [CONLL_LABELS[k] for k in labels[labelled]] == tags[lo : lo + len(labelled)]
        if s in sample:  # the pieces of each word, checked against tokenizing the word alone
            bounds = list(firsts) + [len(ids) - 1]
            for k, w in enumerate(range(lo, lo + len(firsts))):
                alone = tok.ids_batch([words[w]])[0][: max_len - 2] or [tok.unk_id]
                assert ids[bounds[k] : bounds[k + 1]].tolist() == alone, (s, w, words[w])
    # every word has exactly one labelled sub-token
    assert labelled_per_sentence.tolist() == [len(s.words) for s in dev]


@pytest.mark.parametrize("max_len", [128, 24, 6])
def test_round_trip_is_the_identity_on_dev(tok, dev, max_len):
    """word tags -> sub-token labels -> word tags gives back every tag of the dev set."""
    f = featurize_ner(dev, tok, max_len=max_len, label_names=CONLL_LABELS)
    back = word_predictions(token_labels(f), f)
    assert back == [s.tags for s in dev]
    # and from logits: one-hot of the labels (IGNORE_INDEX positions get an arbitrary class)
    labels = token_labels(f)
    logits = torch.nn.functional.one_hot(labels.clamp(min=0), len(CONLL_LABELS)).float()
    assert word_predictions(logits, f) == [s.tags for s in dev]


def test_evaluate_matches_seqeval_through_the_whole_path(tok, dev):
    sm = pytest.importorskip("seqeval.metrics")
    task = get_task("conll2003")
    f = task.featurize(dev, tok, max_len=32)
    labels = token_labels(f)
    assert task.evaluate(labels, f) == {"f1": 100.0, "precision": 100.0, "recall": 100.0}
    g = torch.Generator().manual_seed(0)
    noisy = labels.clone()
    flip = (torch.rand(labels.shape, generator=g) < 0.08) & (labels != IGNORE_INDEX)
    noisy[flip] = torch.randint(0, len(CONLL_LABELS), (int(flip.sum()),), generator=g)
    scores = task.evaluate(noisy, f)
    pred_words = word_predictions(noisy, f)
    gold = [s.tags for s in dev]
    assert scores["f1"] == pytest.approx(100 * sm.f1_score(gold, pred_words), abs=1e-9)
    assert scores["precision"] == pytest.approx(100 * sm.precision_score(gold, pred_words), abs=1e-9)
    assert scores["recall"] == pytest.approx(100 * sm.recall_score(gold, pred_words), abs=1e-9)
    assert 40 < scores["f1"] < 100


def test_forward_and_evaluate_with_a_tiny_model(tok, dev):
    task = get_task("conll2003")
    f = task.featurize(dev[:64], tok, max_len=64)
    torch.manual_seed(0)
    model = task.build_model(BertConfig.preset("tiny", vocab_size=tok.vocab_size))
    loader = DataLoader(f, batch_size=16, collate_fn=task.collate)
    batch = next(iter(loader))
    assert batch["labels"].shape == batch["input_ids"].shape
    assert (batch["labels"][batch["attention_mask"] == 0] == IGNORE_INDEX).all()
    out = model(**batch)
    assert torch.isfinite(out.loss) and out.logits.shape == (*batch["input_ids"].shape, 9)
    out.loss.backward()
    model.eval()
    with torch.no_grad():
        outs = [task.gather(model(**b)) for b in loader]  # (B, T_k, 9), T_k differ per batch
    scores = task.evaluate(outs, f)
    assert set(scores) == {"f1", "precision", "recall"}
    assert all(0 <= v <= 100 for v in scores.values())


# --- windows and bad input -------------------------------------------------------------------
def test_split_into_windows_by_hand():
    assert split_into_windows([1, 2, 3, 1], 4) == [(0, 2), (2, 4)]
    assert split_into_windows([5, 1], 4) == [(0, 1), (1, 2)]  # an overlong word is alone (cut later)
    assert split_into_windows([1, 1, 1], 10) == [(0, 3)]
    assert split_into_windows([], 4) == [(0, 0)]


def test_long_sentences_and_long_words(tok):
    rng = random.Random(0)
    vocab = ["Germany", "said", "on", "Monday", "the", "European", "Commission", "Leicestershire"]
    words = [rng.choice(vocab) for _ in range(300)]
    tags = [rng.choice(CONLL_LABELS) for _ in words]
    long_word = "-".join("abcdefghijklmnop")  # 31 pieces: letters and hyphens
    examples = [{"words": words, "tags": tags}, {"words": ["x", long_word, "y"], "tags": ["O", "B-MISC", "O"]}]
    f = featurize_ner(examples, tok, max_len=16, label_names=CONLL_LABELS)
    r = f.report
    assert r["sentences_split"] == 2 and r["words_truncated"] == 1
    assert r["locations"]["words_truncated"] == [(1, 1)]
    assert all(len(it["input_ids"]) <= 16 for it in f.items)
    assert word_predictions(token_labels(f), f) == [tags, ["O", "B-MISC", "O"]]


def test_odd_words_and_empty_sentences_are_counted(tok):
    examples = [
        {"words": ["EU", "\u200b", "rejects"], "tags": ["B-ORG", "O", "O"]},
        {"words": [], "tags": []},
        {"words": ["Peter", "Blackburn"], "tags": ["B-PER", "I-PER"]},
    ]
    f = featurize_ner(examples, tok, max_len=32, label_names=CONLL_LABELS)
    r = f.report
    assert r["words_without_pieces"] == 1 and r["locations"]["words_without_pieces"] == [(0, 1, "\u200b")]
    assert r["empty_sentences"] == 1 and len(f) == 2
    assert f[0]["input_ids"][2] == tok.unk_id  # the invisible word became [UNK], still labelled
    assert word_predictions(token_labels(f), f) == [["B-ORG", "O", "O"], [], ["B-PER", "I-PER"]]


def test_bad_tags_name_the_sentence(tok):
    with pytest.raises(ValueError, match="sentence 1: unknown tag 'B-FOO'"):
        featurize_ner(
            [{"words": ["a"], "tags": ["O"]}, {"words": ["b"], "tags": ["B-FOO"]}], tok, label_names=CONLL_LABELS
        )
    with pytest.raises(ValueError, match="sentence 0: 2 words but 1 tags"):
        featurize_ner([{"words": ["a", "b"], "tags": ["O"]}], tok, label_names=CONLL_LABELS)
    f = featurize_ner([{"words": ["a", "b"], "tags": ["O", "O"]}], tok, label_names=CONLL_LABELS)
    with pytest.raises(ValueError, match="1 windows"):
        word_predictions(torch.zeros(2, 4, dtype=torch.long), f)
    with pytest.raises(ValueError, match="IGNORE_INDEX"):
        word_predictions(torch.full((1, 4), IGNORE_INDEX), f)


def test_unlabelled_sentences(tok):
    f = featurize_ner([{"words": ["Peter", "Blackburn"]}], tok, label_names=CONLL_LABELS)
    assert "labels" not in f[0]
    batch = get_task("conll2003").collate(f.items)
    assert "labels" not in batch
    assert word_predictions(torch.tensor([[0, 1, 2, 0]]), f) == [["B-PER", "I-PER"]]


@pytest.mark.parametrize("max_len", [64, 12])
def test_predict_words_equals_reading_the_logits(tok, dev, max_len, one_thread):
    from bertlab.tasks.ner import predict_words

    task = get_task("conll2003")
    f = task.featurize(dev[:50], tok, max_len=max_len)
    torch.manual_seed(0)
    model = task.build_model(BertConfig.preset("tiny", vocab_size=tok.vocab_size)).train()
    with torch.no_grad():
        model.eval()
        logits = [
            task.gather(model(**{k: v for k, v in b.items() if k != "labels"}))
            for b in DataLoader(f, batch_size=13, collate_fn=task.collate)
        ]
        model.train()
    want = word_predictions(stack_ragged(logits, float("nan")), f)
    got = predict_words(model, f, batch_size=8)
    assert got == want and [len(p) for p in got] == [len(s.words) for s in dev[:50]]
    assert model.training  # the mode is given back
    assert predict_words(model, task.featurize([], tok)) == []
