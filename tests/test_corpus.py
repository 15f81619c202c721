"""Tests of bertlab.data.corpus: cleaning real books, Wikipedia and WikiText into documents of sentences.

The corpus tests load the real mirror (``$BERTLAB_DATA_MIRROR``, or ``../shared/data`` beside the
repository).  The first run cleans books+wiki (tens of seconds on a 2-core CPU) and caches the
result in ``$BERTLAB_CACHE``; later runs read the cache in about a second.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bertlab.data import corpus, download
from bertlab.data.corpus import Document, load_corpus, split_sentences
from conftest import DEFAULT_MIRROR

pytestmark = pytest.mark.usefixtures("mirror")


@pytest.fixture(scope="module")
def books_and_wiki() -> dict[str, list[Document]]:
    """Every book and article, both splits (cached in $BERTLAB_CACHE after the first run)."""
    path = os.environ.get("BERTLAB_DATA_MIRROR") or str(DEFAULT_MIRROR)
    if not Path(path, "SHA256SUMS").is_file():
        pytest.skip("no data mirror")
    old = os.environ.get("BERTLAB_DATA_MIRROR")
    os.environ["BERTLAB_DATA_MIRROR"] = path
    try:
        return {(name, split): load_corpus(name, split) for name in ("books", "wiki") for split in ("train", "heldout")}
    finally:
        if old is None:
            del os.environ["BERTLAB_DATA_MIRROR"]


# ----------------------------------------------------------------------------------------------
# Sentence splitting
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Mr. Hyde met Dr. Jekyll. They talked.", ["Mr. Hyde met Dr. Jekyll.", "They talked."]),
        ("H. G. Wells wrote it. J. R. R. Tolkien did not.", ["H. G. Wells wrote it.", "J. R. R. Tolkien did not."]),
        ("It costs 3.50 dollars. Pi is 3.14159 or so.", ["It costs 3.50 dollars.", "Pi is 3.14159 or so."]),
        ("Some fruit, e.g. Apples, keep. Others rot.", ["Some fruit, e.g. Apples, keep.", "Others rot."]),
        ("He moved to the U.S. Army in 1990. Then he left.", ["He moved to the U.S. Army in 1990.", "Then he left."]),
        ("‘Oh dear!’ said the Rabbit. ‘I shall be late!’", ["‘Oh dear!’ said the Rabbit.", "‘I shall be late!’"]),
        ('"Is it?" he asked. "Yes." She smiled.', ['"Is it?" he asked.', '"Yes."', "She smiled."]),
        ("Wait... What was that? Nothing!", ["Wait...", "What was that?", "Nothing!"]),
        ("See p. 23 and Fig. 4 for details. Vol. 2 follows.", ["See p. 23 and Fig. 4 for details.", "Vol. 2 follows."]),
        ("It ended in 1914. 1915 was worse.", ["It ended in 1914.", "1915 was worse."]),
        ("He said (quietly.) Then left.", ["He said (quietly.)", "Then left."]),
        (
            "The lobster , H. americanus , is blue . It is big .",
            ["The lobster , H. americanus , is blue .", "It is big ."],
        ),
        ("no capital after this. so one sentence", ["no capital after this. so one sentence"]),
        ("   ", []),
    ],
)
def test_split_sentences_tricky_cases(text, expected):
    assert split_sentences(text) == expected


def test_sentences_never_cross_paragraphs():
    doc = Document.from_paragraphs("d", "t", ["First para ends without a stop", "Second one. Has two."], "test")
    assert doc.sentences == ["First para ends without a stop", "Second one.", "Has two."]
    assert doc.paragraph_starts == [0, 1]
    assert doc.paragraphs == [["First para ends without a stop"], ["Second one.", "Has two."]]


# ----------------------------------------------------------------------------------------------
# Project Gutenberg
# ----------------------------------------------------------------------------------------------

SYNTHETIC_PG = (
    "The Project Gutenberg EBook of Tiny, by Someone\r\n\r\nThis eBook is for the use of anyone anywhere\r\n"
    "\r\n*** START OF THIS PROJECT GUTENBERG EBOOK TINY ***\r\n\r\nProduced by A. Volunteer and the Online\r\n"
    "Distributed Proofreading Team\r\n\r\n\r\nTINY\r\n\r\nCHAPTER I.\r\n\r\nIt was a dark night. The wind\r\n"
    "blew hard, and Mr. Smith walked home along the long and winding road by the sea.\r\n\r\n"
    "Contents line one\r\nAnother short line\r\n\r\n[Illustration: a dog]\r\n\r\n"
    "She said _nothing_ at all.\r\n\r\nEnd of the Project Gutenberg EBook of Tiny, by Someone\r\n\r\n"
    "*** END OF THIS PROJECT GUTENBERG EBOOK TINY ***\r\n\r\nSection 1. General Terms of Use...\r\n"
)


def test_gutenberg_cleaning_on_a_synthetic_book():
    doc = corpus.clean_gutenberg(SYNTHETIC_PG, "pg0", "Tiny")
    assert doc.sentences == [
        "It was a dark night.",
        "The wind blew hard, and Mr. Smith walked home along the long and winding road by the sea.",
        "She said nothing at all.",
    ]
    assert doc.paragraph_starts == [0, 2]
    with pytest.raises(corpus.CorpusFormatError, match="pg9.*START"):
        corpus.clean_gutenberg("Just some text.", "pg9", "x")


# Phrases of the Project Gutenberg header, licence and footer (lower-cased)
LICENCE_PHRASES = (
    "project gutenberg",
    "gutenberg.org",
    "gutenberg-tm",
    "distributed proofread",
    "*** start of",
    "*** end of",
    "this ebook is for the use",
    "literary archive foundation",
)


def test_books_keep_the_first_real_sentence_and_no_licence_text(books_and_wiki):
    books = books_and_wiki["books", "train"] + books_and_wiki["books", "heldout"]
    assert len(books) == 153
    alice = next(d for d in books if d.id == "pg11")
    assert alice.title.startswith("Alice")
    assert alice.sentences[0].startswith("Alice was beginning to get very tired of sitting by her sister")
    assert alice.sentences[-1].endswith("remembering her own child-life, and the happy summer days.")
    text = "\n".join(s for d in books for s in d.sentences).lower()
    assert [phrase for phrase in LICENCE_PHRASES if phrase in text] == []
    assert not [s for d in books for s in d.sentences if s.lower().startswith("produced by")]
    # cleaning keeps the text: over 95% of the words between the START and END markers
    from bertlab.data.registry import BOOK_INFO

    kept = sum(d.num_words for d in books)
    assert kept > 0.95 * sum(info["words"] for info in BOOK_INFO.values())


def test_book_cleaning_from_the_raw_file_matches_the_cache(books_and_wiki):
    with download.open_text(download.fetch("books:pg35")) as f:
        raw = f.read()
    assert "\r\n" in raw and "*** START OF" in raw  # the real file has CRLF and the PG header
    fresh = corpus.clean_gutenberg(raw, "pg35", "The Time Machine")
    cached = next(d for k, docs in books_and_wiki.items() if k[0] == "books" for d in docs if d.id == "pg35")
    assert fresh.sentences == cached.sentences
    assert all("\r" not in s and "\n" not in s for s in fresh.sentences)
    assert max(len(s.split()) for s in fresh.sentences) < 300  # hard-wrapped lines joined, sentences split


# ----------------------------------------------------------------------------------------------
# Wikipedia
# ----------------------------------------------------------------------------------------------

SYNTHETIC_WIKI = """<doc id="7" url="http://en.wikipedia.org/wiki?curid=7" title="Tiny &amp; Co">
Tiny &amp; Co

Tiny is a thing.<ref name="a">source</ref> It was made in 1900.[3]
History.
Early years.
It grew.<br> Then it shrank.
</dl>
References.
Further reading.
 height:2.8em;
Domestic use
</doc>
<doc id="8" url="http://en.wikipedia.org/wiki?curid=8" title="Empty">
Empty

</doc>
"""


def test_wiki_markup_headings_and_empty_sections_are_dropped():
    docs = corpus.wiki_documents(SYNTHETIC_WIKI)
    assert len(docs) == 1  # an article with no text is no document
    doc = docs[0]
    assert (doc.id, doc.title) == ("wiki-7", "Tiny & Co")
    assert doc.paragraphs == [["Tiny is a thing.", "It was made in 1900."], ["It grew.", "Then it shrank."]]
    assert corpus.is_wiki_heading("Fate of Achilles' armor.")
    assert not corpus.is_wiki_heading("Paris was later killed by Philoctetes.")
    with pytest.raises(corpus.CorpusFormatError, match="no '<doc"):
        corpus.wiki_documents("plain text, not WikiExtractor output")


def test_real_wiki_articles_are_clean(books_and_wiki):
    wiki = books_and_wiki["wiki", "train"] + books_and_wiki["wiki", "heldout"]
    assert 950 <= len(wiki) <= 987  # 987 articles; a few are only headings and lists
    markup = re.compile(r"</?(?:dl|dd|br|ref|div|poem|onlyinclude|doc|span|sup|sub)\b|&amp;|\bem;|\[\d+\]")
    assert [(d.id, s) for d in wiki for s in d.sentences if markup.search(s)] == []
    headings = {"History.", "References.", "Further reading.", "External links.", "See also."}
    assert not [s for d in wiki for s in d.sentences if s in headings]
    anarchism = next(d for d in wiki if d.title == "Anarchism")
    assert not [s for d in wiki for s in d.sentences if s.startswith("This article incorporates")]
    assert anarchism.sentences[0].startswith("Anarchism is a political philosophy that advocates stateless")


# ----------------------------------------------------------------------------------------------
# WikiText
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("split, first", [("valid", "Homarus gammarus"), ("test", "Robert Boulter")])
def test_wikitext_has_60_articles(split, first):
    docs = load_corpus("wikitext-2", split)
    assert len(docs) == 60
    assert docs[0].title == first
    titles = [d.title for d in docs]
    assert len(set(titles)) == 60 and not any(t.startswith(("1 rad", "=")) for t in titles)
    assert not any(s.startswith("= =") for d in docs for s in d.sentences)  # section headings dropped
    assert not any("@-@" in s or "@,@" in s for d in docs for s in d.sentences)
    if split == "test":  # the formula lines that look like titles stay inside their article
        constant_k = next(d for d in docs if d.title == "Constant k filter")
        assert any(s.startswith("= 1 rad / s") for s in constant_k.sentences)


def test_wikitext_train_is_absent_offline_and_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTLAB_OFFLINE", "1")
    monkeypatch.setenv("BERTLAB_CACHE", str(tmp_path))
    with pytest.raises(download.SplitNotAvailableError, match="does not hold this split"):
        load_corpus("wikitext-103", "train")
    with pytest.raises(download.SplitNotAvailableError, match=r"load_corpus\('wikitext-2', 'valid'\)"):
        load_corpus("wikitext-103", "valid")
    with pytest.raises(ValueError, match="heldout"):
        load_corpus("wikitext-2", "heldout")
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("bookcorpus")


# ----------------------------------------------------------------------------------------------
# Held-out split and cache
# ----------------------------------------------------------------------------------------------


def test_heldout_is_disjoint_deterministic_and_whole_documents(books_and_wiki):
    for name in ("books", "wiki"):
        train, heldout = books_and_wiki[name, "train"], books_and_wiki[name, "heldout"]
        assert heldout and train
        assert not {d.id for d in train} & {d.id for d in heldout}
        fraction = len(heldout) / (len(train) + len(heldout))
        assert 0.005 < fraction < 0.08, (name, fraction)
        assert all(corpus.is_heldout(d.id) for d in heldout) and not any(corpus.is_heldout(d.id) for d in train)
        ids = [d.id for d in train + heldout]
        assert len(ids) == len(set(ids))  # each document is whole, on exactly one side
    again = load_corpus("books+wiki", "heldout")
    held = books_and_wiki["books", "heldout"] + books_and_wiki["wiki", "heldout"]
    assert [d.id for d in again] == [d.id for d in held]


def test_cleaned_corpus_is_cached_by_source_checksums(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTLAB_CACHE", str(tmp_path))
    files = download.files_of("wiki")[:2]
    first = corpus._load_source("wiki", files, use_cache=True)
    cached = list((tmp_path / "corpus").glob("wiki-*.jsonl.gz"))
    assert len(cached) == 1
    again = corpus._load_source("wiki", files, use_cache=True)
    assert again == first and again is not first
    other = corpus._load_source("wiki", files[:1], use_cache=True)  # different sources, different key
    assert len(list((tmp_path / "corpus").glob("wiki-*.jsonl.gz"))) == 2 and len(other) < len(first)


def test_wikitext_103_train_works_once_downloaded(mirror, monkeypatch, tmp_path):
    """WikiText-103 train has no published sha256 of its own: the archive's pinned hash vouches for
    it, the extracted file's hash is recorded, and the cleaned corpus is cached.  Served here from
    127.0.0.1 with WikiText-2 valid standing in for the 540 MB file."""
    import dataclasses
    import functools
    import hashlib
    import http.server
    import threading
    import zipfile

    from bertlab.data.registry import FILES, Source

    served = tmp_path / "served"
    served.mkdir()
    archive = served / "wikitext-103-raw-v1.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("wikitext-103-raw/wiki.train.raw", (mirror / "wikitext-2-raw/wiki.valid.raw").read_bytes())
    archive_hash = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/wikitext-103-raw-v1.zip"
        path = "wikitext-103-raw/wiki.train.raw"
        assert FILES[path].sha256 is None
        monkeypatch.setitem(FILES, path, dataclasses.replace(FILES[path], sources=(Source(url, archive_hash, path),)))
        monkeypatch.setenv("BERTLAB_CACHE", str(tmp_path / "cache"))
        docs = load_corpus("wikitext-103", "train")
        assert len(docs) == 60 and docs[0].title == "Homarus gammarus"
        record = tmp_path / "cache" / (path + ".sha256")
        raw = (mirror / "wikitext-2-raw/wiki.valid.raw").read_bytes()
        assert record.read_text().strip() == hashlib.sha256(raw).hexdigest()
        assert download.available_splits("wikitext-103") == ["train"]
        # a later corruption of the extracted file is caught by the recorded hash
        extracted = tmp_path / "cache" / path
        extracted.write_bytes(extracted.read_bytes()[:1000])
        assert download.fetch(path).stat().st_size > 1000  # re-extracted from the verified archive
        assert len(list((tmp_path / "cache" / "corpus").glob("wikitext-103-*.jsonl.gz"))) == 1
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
