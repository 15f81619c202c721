"""Pretraining examples (NSP pairs and single segments) built from real books, stored memory-mapped,
checked against the source documents."""

from __future__ import annotations

import copy
import json
import os
import time

import numpy as np
import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab.data.corpus import Document, load_corpus
from bertlab.data.masking import MaskedLMCollator
from bertlab.data.pretraining_data import (
    IS_NEXT,
    NOT_NEXT,
    PretrainingBatches,
    PretrainingDataset,
    TokenizedCorpus,
    build_examples,
    prepare_pretraining_data,
    tokenize_corpus,
    unigram_log_probs,
)
from bertlab.data.tokenizer import bert_uncased_tokenizer, train_wordpiece

IDS = ["pg11", "pg35", "pg43", "pg46", "pg16", "pg55", "pg105", "pg103"]


@pytest.fixture(scope="module")
def books():
    return load_corpus("books", "train")


@pytest.fixture(scope="module")
def tok():
    return bert_uncased_tokenizer()


@pytest.fixture(scope="module")
def docs(books):
    by_id = {d.id: d for d in books}
    return [by_id[i] for i in IDS]


@pytest.fixture(scope="module")
def built(tok, docs, tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain")
    ds = prepare_pretraining_data(docs, tok, root, max_len=128, nsp=True, seed=0)
    corpus = TokenizedCorpus.load(root / "tokens", tok)
    return root, corpus, ds


def test_unigram_log_probs_count_the_real_tokens(tok, built):
    _, _, ds = built
    specials = [tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id]
    logp = unigram_log_probs(ds, tok.vocab_size, exclude=specials, smoothing=0.0)
    # by hand, in one pass over every example's real tokens
    counts = np.zeros(tok.vocab_size)
    for i in range(len(ds)):
        n = int(ds.lengths[i])
        np.add.at(counts, np.asarray(ds.input_ids[i, :n], dtype=np.int64), 1)
    counts[specials] = 0
    seen = counts > 0
    np.testing.assert_allclose(logp[torch.from_numpy(seen)].numpy(), np.log(counts[seen] / counts.sum()), rtol=1e-5)
    assert torch.all(logp[specials] == -1e4)  # never a masked-LM target
    assert abs(float(logp[logp > -1e4].exp().sum()) - 1.0) < 1e-4
    # the most frequent pieces of English prose: punctuation and "the"
    assert {tok.id_to_token(int(i)) for i in logp.topk(3).indices} <= {",", ".", "the", "and"}
    smoothed = unigram_log_probs(ds, tok.vocab_size, exclude=specials)
    assert torch.isfinite(smoothed[~torch.from_numpy(seen)]).all()  # unseen pieces: finite, small


def test_layout_of_examples(tok, built):
    root, corpus, ds = built
    assert ds.input_ids.dtype == np.uint16 and isinstance(ds.input_ids, np.memmap)
    assert corpus.tokens.dtype == np.uint16 and corpus.n_documents == len(IDS)
    N = len(ds)
    assert N > 2000 and ds.input_ids.shape == (N, 128)
    b = ds.get_batch(np.arange(N))
    ids, tt, am = b["input_ids"], b["token_type_ids"], b["attention_mask"]
    length = am.sum(1)
    assert (ids[:, 0] == tok.cls_id).all()
    assert ((ids == tok.sep_id).sum(1) == 2).all()
    assert (ids[am == 0] == tok.pad_id).all() and (ids[am == 1] != tok.pad_id).all()
    assert torch.equal(ids.gather(1, (length - 1)[:, None])[:, 0], torch.full((N,), tok.sep_id))
    # segment ids: 0 through the first [SEP], then 1 through the last [SEP], 0 on padding
    first_sep = (ids == tok.sep_id).long().argmax(1)
    pos = torch.arange(128)[None]
    assert torch.equal(tt.bool(), (pos > first_sep[:, None]) & (am == 1))
    assert (tt.sum(1) >= 2).all()  # B has at least one token and its [SEP]
    # most examples fill the target length; ~10% are deliberately shorter
    assert (length == 128).float().mean() > 0.8
    assert ((length < 100).float().mean() - 0.1).abs() < 0.05
    one = ds[5]
    assert set(one) == {"input_ids", "token_type_ids", "attention_mask", "nsp_labels"}
    assert one["input_ids"].shape == (128,) and one["nsp_labels"].shape == ()
    meta = json.loads((ds.directory / "meta.json").read_text())
    assert meta["max_len"] == 128 and meta["nsp"] and meta["tokenizer"]["vocab_size"] == 30522
    assert meta["counts"]["examples"] == N


def test_nsp_labels_balanced(built):
    _, _, ds = built
    labels = np.asarray(ds.nsp_labels)
    assert len(labels) >= 2000
    assert abs(labels.mean() - 0.5) < 0.02, labels.mean()


def test_nsp_balanced_on_short_documents(tok, tmp_path):
    """Wikipedia articles are short: many end in a lone sentence, which must not tip the labels."""
    wiki = load_corpus("wiki", "train")[:250]
    ds = prepare_pretraining_data(wiki, tok, tmp_path, max_len=256, seed=0)
    labels = np.asarray(ds.nsp_labels)
    assert len(labels) >= 2000 and abs(labels.mean() - 0.5) < 0.02, (len(labels), labels.mean())
    assert ds.meta["counts"]["dropped_last_sentences"] > 0  # counted, not silently lost


def _segments(ds, i):
    ids = np.asarray(ds.input_ids[i]).astype(np.int64)
    n, b = int(ds.lengths[i]), int(ds.segment_b_start[i])
    return ids[1 : b - 1], ids[b : n - 1]


def test_is_next_is_contiguous_text_and_not_next_is_another_document(tok, docs, built):
    _, corpus, ds = built
    # the documents' sentences, tokenized afresh from the source text
    sentence_text = [s for d in docs for s in d.sentences]
    starts = np.asarray(corpus.sentence_starts)
    flat = np.asarray(corpus.tokens).astype(np.int64)
    n_checked = {IS_NEXT: 0, NOT_NEXT: 0}
    for i in range(0, len(ds), 7):
        a, b = _segments(ds, i)
        a0, a1, b0, b1 = (int(x) for x in ds.spans[i])
        label = int(ds.nsp_labels[i])
        # A is the END of its sentence span (truncation takes A's first tokens), B the START of its
        da, db = corpus.document_of_sentence(a0), corpus.document_of_sentence(b0)
        assert corpus.document_of_sentence(a1) == da and corpus.document_of_sentence(b1) == db
        a_end = starts[a1 + 1]
        assert len(a) <= a_end - starts[a0] and len(b) <= starts[b1 + 1] - starts[b0]
        assert np.array_equal(a, flat[a_end - len(a) : a_end])
        assert np.array_equal(b, flat[starts[b0] : starts[b0] + len(b)])
        if label == IS_NEXT:
            # contiguous text of one document: B's first token is the one right after A's last
            assert db == da and b0 == a1 + 1 and starts[b0] == a_end
            # ... checked against the source text: A ends with the end of sentence a1, B begins
            # with sentence a1 + 1, both tokenized afresh
            last = tok.encode(sentence_text[a1]).input_ids[1:-1]
            k = min(len(a), len(last))
            assert np.array_equal(a[len(a) - k :], last[len(last) - k :])
            nxt = tok.encode(sentence_text[a1 + 1]).input_ids[1:-1]
            k = min(len(b), len(nxt))
            assert np.array_equal(b[:k], nxt[:k])
        else:
            assert db != da  # NotNext: B comes from another document
        n_checked[label] += 1
    assert min(n_checked.values()) > 150


def test_deterministic_and_seeded(tok, built, tmp_path):
    root, corpus, ds = built
    again = build_examples(
        corpus, tmp_path / "same", 128, nsp=True, seed=0, cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id
    )
    assert np.array_equal(np.asarray(again.input_ids), np.asarray(ds.input_ids))
    assert np.array_equal(np.asarray(again.nsp_labels), np.asarray(ds.nsp_labels))
    other = build_examples(
        corpus, tmp_path / "other", 128, nsp=True, seed=1, cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id
    )
    n = min(len(other), len(ds))
    assert not np.array_equal(np.asarray(other.input_ids[:n]), np.asarray(ds.input_ids[:n]))
    twice = build_examples(
        corpus,
        tmp_path / "dupe",
        128,
        nsp=True,
        seed=0,
        dupe_factor=2,
        cls_id=tok.cls_id,
        sep_id=tok.sep_id,
        pad_id=tok.pad_id,
    )
    assert abs(len(twice) - 2 * len(ds)) < 0.05 * len(ds)


def test_without_nsp_single_segments(tok, docs, built, tmp_path):
    _, corpus, _ = built
    ds = build_examples(
        corpus, tmp_path / "nonsp", 128, nsp=False, seed=0, cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id
    )
    assert ds.nsp_labels is None and not (ds.directory / "nsp_labels.npy").exists()
    b = ds.get_batch(np.arange(len(ds)))
    assert "nsp_labels" not in b and (b["token_type_ids"] == 0).all()
    assert ((b["input_ids"] == tok.sep_id).sum(1) == 1).all()
    starts, flat = np.asarray(corpus.sentence_starts), np.asarray(corpus.tokens)
    for i in range(0, len(ds), 11):
        a0, a1, b0, _ = (int(x) for x in ds.spans[i])
        assert b0 == -1 and corpus.document_of_sentence(a0) == corpus.document_of_sentence(a1)
        n = int(ds.lengths[i])
        seg = np.asarray(ds.input_ids[i, 1 : n - 1])
        whole = flat[starts[a0] : starts[a1 + 1]]
        # whole sentences, packed: only a lone over-long sentence is cut
        assert np.array_equal(seg, whole[: len(seg)]) and (len(seg) == len(whole) or a0 == a1)
    # consecutive segments of one document tile it: no sentence lost, none repeated
    spans = np.asarray(ds.spans)
    assert (spans[1:, 0] == spans[:-1, 1] + 1).all() and spans[-1, 1] == corpus.n_sentences - 1
    assert ds.meta["counts"]["fill"] > 0.8


def test_batches_resume_exactly(tok, built):
    _, _, ds = built
    collate = MaskedLMCollator(tok, seed=0)
    stream = PretrainingBatches(ds, batch_size=512, collator=collate, seed=0)
    per_epoch = len(stream)
    next(stream)
    jump = stream.state_dict()
    assert jump["epoch"] == 0 and jump["index"] == 1
    jump["index"] = per_epoch - 1  # skip to just before an epoch boundary
    stream.load_state_dict(jump)
    state = stream.state_dict()
    ahead = [next(stream) for _ in range(3)]
    assert stream.epoch == 1
    resumed = PretrainingBatches(ds, 512, MaskedLMCollator(tok, seed=123), seed=0)
    resumed.load_state_dict(state)
    for want in ahead:
        got = next(resumed)
        assert got.keys() == want.keys()
        for k in want:
            assert torch.equal(got[k], want[k]), k
    # an epoch visits every example once
    seen = np.concatenate([stream._epoch_order()[j * 512 : (j + 1) * 512] for j in range(per_epoch)])
    assert len(np.unique(seen)) == per_epoch * 512
    with pytest.raises(ValueError, match="cannot resume"):
        PretrainingBatches(ds, 256, collate).load_state_dict(state)


def test_batch_feeds_the_model(tok, built):
    _, _, ds = built
    batch = next(PretrainingBatches(ds, 8, MaskedLMCollator(tok, seed=0)))
    assert {k: v.dtype for k, v in batch.items()} == dict.fromkeys(
        ["input_ids", "token_type_ids", "attention_mask", "mlm_positions", "mlm_labels", "nsp_labels"], torch.long
    )
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tok.vocab_size))
    out = model(**batch)
    assert torch.isfinite(out.loss) and torch.isfinite(out.mlm_loss) and torch.isfinite(out.nsp_loss)
    out.loss.backward()


def test_cache_and_clear_errors(tok, docs, built, tmp_path):
    root, corpus, ds = built
    stamp = (ds.directory / "input_ids.npy").stat().st_mtime_ns
    again = prepare_pretraining_data(docs, tok, root, max_len=128, nsp=True, seed=0)
    assert (again.directory / "input_ids.npy").stat().st_mtime_ns == stamp and len(again) == len(ds)
    # NotNext needs a second document
    one = tokenize_corpus(docs[:1], tok, tmp_path / "one")
    with pytest.raises(ValueError, match="at least 2 documents"):
        build_examples(one, tmp_path / "x", 128, nsp=True, cls_id=101, sep_id=102)
    # too little text for a batch: the message gives the counts and what is needed
    tiny_docs = [Document("a", "a", docs[0].sentences[:30]), Document("b", "b", docs[1].sentences[:30])]
    small = prepare_pretraining_data(tiny_docs, tok, tmp_path / "tiny", max_len=128)
    with pytest.raises(ValueError, match=r"corpus too small: \d+ examples .* tokens in 2 documents"):
        PretrainingBatches(small, batch_size=256, collator=MaskedLMCollator(tok))
    # data tokenized with one vocabulary, read with another
    other = train_wordpiece([s for d in docs[:2] for s in d.sentences], vocab_size=2000)
    with pytest.raises(ValueError, match="vocabulary mismatch.*30522 tokens.*2000 tokens"):
        PretrainingDataset(ds.directory, other)
    with pytest.raises(ValueError, match="vocabulary mismatch"):
        TokenizedCorpus.load(root / "tokens", other)
    with pytest.raises(FileNotFoundError, match="no pretraining examples"):
        PretrainingDataset(tmp_path)


def test_trained_vocabulary_end_to_end(docs, tmp_path):
    texts = [s for d in docs for s in d.sentences]
    tok = train_wordpiece(texts, vocab_size=3000)
    ds = prepare_pretraining_data(docs[:4], tok, tmp_path, max_len=64, nsp=True, seed=2)
    batch = next(PretrainingBatches(ds, 16, MaskedLMCollator(tok, whole_word=True, seed=0)))
    assert int(batch["input_ids"].max()) < 3000 and (batch["input_ids"][:, 0] == tok.cls_id).all()
    out = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tok.vocab_size))(**batch)
    assert torch.isfinite(out.loss)


@pytest.mark.skipif(os.environ.get("BERTLAB_BENCH") != "1", reason="benchmark: set BERTLAB_BENCH=1 (about a minute)")
def test_benchmark_books_corpus(tok, tmp_path):
    """Time to tokenize the books corpus (train split) and build max_len-128 NSP arrays (printed; -s)."""
    t0 = time.perf_counter()
    docs = load_corpus("books", "train")
    t1 = time.perf_counter()
    corpus = tokenize_corpus(docs, tok, tmp_path / "tokens")
    t2 = time.perf_counter()
    ds = build_examples(corpus, tmp_path / "ex", 128, nsp=True, seed=0, cls_id=tok.cls_id, sep_id=tok.sep_id)
    t3 = time.perf_counter()
    stream = PretrainingBatches(ds, 256, MaskedLMCollator(tok, seed=0))
    next(stream)
    t4 = time.perf_counter()
    for _ in range(20):
        next(stream)
    t5 = time.perf_counter()
    words = corpus.meta["corpus"]["n_words"]
    print(
        f"\n[pretraining-data] {len(docs)} books, {words:,} words, {corpus.n_tokens:,} tokens: read {t1 - t0:.1f}s, "
        f"tokenize {t2 - t1:.1f}s ({words / (t2 - t1):,.0f} words/s), build {len(ds):,} examples "
        f"(T=128, NSP) {t3 - t2:.1f}s; batches of 256 masked: {(t5 - t4) / 20 * 1000:.0f} ms each"
    )
    assert len(ds) > 100_000


def test_segment_pairs_without_nsp(tok, built, tmp_path):
    """pairs=True without NSP: every example is [CLS] A [SEP] B [SEP] with B the text that follows
    A in the same document, segment ids 0 then 1, and no NSP labels."""
    _, corpus, _ = built
    ds = build_examples(
        corpus,
        tmp_path / "pairs",
        128,
        nsp=False,
        pairs=True,
        seed=0,
        cls_id=tok.cls_id,
        sep_id=tok.sep_id,
        pad_id=tok.pad_id,
    )
    assert ds.nsp_labels is None and ds.meta["pairs"] and not ds.meta["nsp"]
    b = ds.get_batch(np.arange(len(ds)))
    assert "nsp_labels" not in b
    assert ((b["input_ids"] == tok.sep_id).sum(1) == 2).all()
    starts, flat = np.asarray(corpus.sentence_starts), np.asarray(corpus.tokens).astype(np.int64)
    for i in range(0, len(ds), 5):
        a0, a1, b0, b1 = (int(x) for x in ds.spans[i])
        assert b0 == a1 + 1 and corpus.document_of_sentence(b1) == corpus.document_of_sentence(a0)
        n, sb = int(ds.lengths[i]), int(ds.segment_b_start[i])
        tt = b["token_type_ids"][i]
        assert (tt[:sb] == 0).all() and (tt[sb:n] == 1).all() and (tt[n:] == 0).all()
        a_tokens = np.asarray(ds.input_ids[i, 1 : sb - 1]).astype(np.int64)
        b_tokens = np.asarray(ds.input_ids[i, sb : n - 1]).astype(np.int64)
        # contiguous text: A ends where sentence a1 ends, B starts where sentence a1 + 1 starts
        assert np.array_equal(a_tokens, flat[starts[a1 + 1] - len(a_tokens) : starts[a1 + 1]])
        assert np.array_equal(b_tokens, flat[starts[b0] : starts[b0] + len(b_tokens)])
    # the same text as the single-segment examples, cut at a sentence boundary: a second row of
    # segment embeddings trained on about half the tokens
    share = float((b["token_type_ids"] == 1).sum()) / float(b["attention_mask"].sum())
    assert 0.3 < share < 0.6


def test_phased_batches_switch_and_resume(tok, built, tmp_path):
    """Two streams of different lengths and batch sizes, one after the other; a stream saved in
    the first phase and resumed gives the same batches across the boundary."""
    from bertlab.data.pretraining_data import PhasedBatches

    _, corpus, long = built
    short = build_examples(
        corpus, tmp_path / "short", 32, nsp=False, seed=0, cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id
    )

    def make():
        return PhasedBatches(
            [
                PretrainingBatches(short, 16, MaskedLMCollator(tok, seed=0), seed=0),
                PretrainingBatches(long, 4, MaskedLMCollator(tok, seed=1), seed=1),
            ]
        )

    stream = make()
    assert next(stream)["input_ids"].shape == (16, 32)  # no boundary yet: the first phase
    stream.set_ends([3, 6])
    shapes = [tuple(next(stream)["input_ids"].shape) for _ in range(4)]
    assert shapes == [(16, 32), (16, 32), (4, 128), (4, 128)]
    again = make()
    next(again)
    again.set_ends([3, 6])
    next(again)
    saved = again.state_dict()  # after two batches: one more of the first phase to come
    want = [next(again) for _ in range(3)]
    resumed = make()
    resumed.load_state_dict(copy.deepcopy(saved))
    for w in want:
        got = next(resumed)
        assert all(torch.equal(got[k], w[k]) for k in w)
    with pytest.raises(ValueError, match="non-decreasing"):
        stream.set_ends([5, 2])
    with pytest.raises(ValueError, match="phases"):
        PhasedBatches([PretrainingBatches(short, 16, MaskedLMCollator(tok, seed=0))]).load_state_dict(saved)
    # a time budget moves the boundary back behind a run already in the second phase: it stays there
    assert stream.phase == 1 and stream.drawn == 5
    stream.set_ends([8, 12])
    assert stream.phase == 1 and next(stream)["input_ids"].shape == (4, 128)
    state = stream.state_dict()
    assert state["reached"] == 1
    back = make()
    back.load_state_dict(copy.deepcopy(state))
    assert back.phase == 1  # resumed in the phase it had reached
    del state["reached"]  # a checkpoint written before the phase reached was kept
    old = make()
    old.load_state_dict(state)
    assert old.reached == 0 and old.phase == 0  # its boundaries put its last batch in the first phase
