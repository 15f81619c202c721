"""Pre-training corpora as documents of sentences: books, Wikipedia, WikiText.

"It is critical to use a document-level corpus rather than a shuffled sentence-level corpus"
(section 3.1): next sentence prediction needs consecutive sentences. So `load_corpus(name, split)`
returns `Document`s (id, title, sentences):

* "books": 153 Project Gutenberg books, our stand-in for BooksCorpus (no longer distributed);
* "wiki": 987 English Wikipedia articles (WikiExtractor output, 2015); "books+wiki": both;
* "wikitext-2" / "wikitext-103": WikiText raw (Merity et al. 2016), one document per article.

Books and wiki split into "train" and "heldout" (3%) by a hash of each document's id. The cleaned
corpus is cached in $BERTLAB_CACHE/corpus, keyed by its source files and this module's code.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from bertlab.data import download
from bertlab.data.registry import BOOK_INFO
from bertlab.files import write_bytes

CLEANER_VERSION = 2  # bump when cleaning or splitting changes: it invalidates the cache
HELDOUT_FRACTION = 0.03
CORPORA = ("books", "wiki", "books+wiki", "wikitext-2", "wikitext-103")


@dataclass
class Document:
    """One document: a book, an article. Paragraph i starts at sentence `paragraph_starts[i]`."""

    id: str
    title: str
    sentences: list[str]
    paragraph_starts: list[int] = field(default_factory=lambda: [0])
    source: str = ""  # "books", "wiki", "wikitext-103", ...

    @property
    def paragraphs(self) -> list[list[str]]:
        """The sentences grouped by paragraph."""
        bounds = [*self.paragraph_starts, len(self.sentences)]
        return [self.sentences[a:b] for a, b in zip(bounds, bounds[1:])]

    @property
    def num_words(self) -> int:
        return sum(len(s.split()) for s in self.sentences)

    @classmethod
    def from_paragraphs(cls, id: str, title: str, paragraphs: Iterable[str], source: str) -> "Document":
        sentences, starts = [], []
        for paragraph in paragraphs:
            split = split_sentences(paragraph)
            if split:
                starts.append(len(sentences))
                sentences.extend(split)
        return cls(id, title, sentences, starts or [0], source)


# --- Sentence splitting ---
# Words that end in a period without ending a sentence (lower-cased, no final period).
ABBREVIATIONS = frozenset(
    """
mr mrs ms messrs mme mlle dr prof rev hon st sr jr gen col maj capt cpt lt sgt cmdr adm gov sen rep pres
fr br sr esq mt ft no nos vol vols ch chap pp p fig figs ed eds approx ca cf viz vs etc al ibid op
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun inc ltd co corp bros dept univ
assn est e.g i.e a.m p.m u.s u.k u.n d.c b.c a.d
""".split()
)

_OPENERS = "\"'“‘([{«"
# a run of sentence-final punctuation, any closing quotes/brackets, then whitespace
_CANDIDATE = re.compile(r"([.!?…]+)([\"'”’)\]}»]*)\s+")
_DOTTED = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]$")  # U.S, e.g, i.e (the final period is the candidate)


def split_sentences(text: str) -> list[str]:
    """Split one paragraph at ".", "!", "?" or "…" (and closing quotes or brackets) followed by
    a space and a capital or digit; not after "Mr.", "H. G." or "U.S.", nor in "'Oh!' said Alice"."""
    text = " ".join(text.split())
    if not text:
        return []
    out, start = [], 0
    for m in _CANDIDATE.finditer(text):
        end = m.end()
        # the next sentence must start with an upper-case letter or digit, maybe after openers
        j = end
        while j < len(text) and text[j] in _OPENERS:
            j += 1
        if j >= len(text) or not (text[j].isupper() or text[j].isdigit()):
            continue
        punct = m.group(1)
        if punct == ".":
            before = text[start : m.start()]
            word = before.rsplit(" ", 1)[-1].lstrip(_OPENERS) if before and not before.endswith(" ") else ""
            if word:
                lower = word.lower()
                if lower in ABBREVIATIONS or _DOTTED.match(word) or (len(word) == 1 and word.isalpha()):
                    continue
        sentence = text[start : m.end()].strip()
        if sentence:
            out.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


# --- Project Gutenberg books ---
_PG_START = re.compile(r"^\*\*\* ?START OF (?:THIS|THE) PROJECT GUTENBERG.*$", re.M | re.I)
_PG_END = re.compile(r"^\*\*\* ?END OF (?:THIS|THE) PROJECT GUTENBERG.*$", re.M | re.I)
_PG_END_LINE = re.compile(r"^[ \t]*End of (?:the )?Project Gutenberg.*$", re.M | re.I)
_PG_CREDIT = re.compile(
    r"^(?:produced by|e-?text prepared by|this e-?(?:text|book) was (?:produced|prepared|created)|"
    r"transcribed (?:by|from)|prepared by|updated editions? )",
    re.I,
)
_PG_BOILERPLATE = re.compile(
    r"gutenberg|pgdp\.net|distributed proofread|transcriber'?s? note|"
    r"online distributed|www\.|http|\be-?text\b|\be-?book\b|\.{5,}|\bPG\b|"
    r"\btranscribed\b|\S@\S+\.[a-z]{2,}",
    re.I,
)
# short single-line paragraphs that are headings or numbers: "CHAPTER IV.", "Part One.", "59."
_PG_HEADING = re.compile(
    r"^(?:(?:chapter|book|part|section|volume|vol|act|scene|canto|letter|appendix|preface|"
    r"introduction|contents|footnotes?|the end)\b.*|[IVXLCDM]+[.)](?:\s.*)?|\d+[.)]?)$",
    re.I,
)
_PG_BOILERPLATE_HINTS = "gutenberg pgdp proofread transcri distributed www. http text book ..... pg @".split()
# [Illustration], [Footnote 3: ...] as a whole paragraph, or an illustration caption that runs on
_BRACKETED = re.compile(r"^\[(?:[^\]]*\]$|illustration|transcriber)", re.I)


class CorpusFormatError(download.DataError):
    """A corpus file does not have the structure its cleaner needs (names the file and the fix)."""


def gutenberg_body(text: str, name: str = "<text>") -> str:
    """The book between the "*** START" and "*** END" markers, without the "End of the Project
    Gutenberg EBook" line, with LF line ends."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    start, end = _PG_START.search(text), _PG_END.search(text)
    if start is None or end is None or end.start() < start.end():
        raise CorpusFormatError(
            f"{name}: no '*** START OF THIS PROJECT GUTENBERG' / '*** END OF ...' marker pair; "
            f"is this a Project Gutenberg plain-text file?"
        )
    body = text[start.end() : end.start()]
    end_lines = list(_PG_END_LINE.finditer(body))
    if end_lines and end_lines[-1].start() > len(body) * 0.5:
        body = body[: end_lines[-1].start()]
    return body


def gutenberg_paragraphs(body: str) -> list[str]:
    """Prose paragraphs of a book body: hard-wrapped lines joined; credits, boilerplate, bracketed
    notes, blocks of short lines (contents, verse), tables and headings dropped."""
    out = []
    for block in re.split(r"\n[ \t]*\n", body):
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        text = " ".join(" ".join(lines).replace("_", "").split())
        if not text or _PG_CREDIT.match(text) or _BRACKETED.match(text):
            continue
        lower = text.lower()
        if any(hint in lower for hint in _PG_BOILERPLATE_HINTS) and _PG_BOILERPLATE.search(text):
            continue
        if not any(c.islower() for c in text):
            continue
        if len(lines) >= 2 and max(len(line) for line in lines) < 50:
            continue
        unpunctuated = text[-1] not in ".!?\"'”’)…:;—-"
        if len(lines) == 1 and len(text.split()) < 8 and (unpunctuated or _PG_HEADING.match(text)):
            continue
        if len(lines) <= 3 and unpunctuated and _PG_HEADING.match(lines[0]):
            continue  # "Chapter One" + "Arrest - Conversation with Mrs. Grubach - Then Miss Bürstner"
        out.append(text)
    return out


def clean_gutenberg(text: str, id: str, title: str) -> Document:
    """A Project Gutenberg plain-text file as a `Document` of sentences."""
    return Document.from_paragraphs(id, title, gutenberg_paragraphs(gutenberg_body(text, id)), "books")


# --- Wikipedia (WikiExtractor output) ---
_WIKI_DOC = re.compile(r'<doc id="(\d+)" url="[^"]*" title="([^"]*)">\n(.*?)\n</doc>', re.S)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
# remnants of tables and timelines that WikiExtractor left as text: CSS ("height:2em;"), "[5]"
_CSS = re.compile(
    r"\b(?:width|height|margin[a-z-]*|padding|float|background[a-z-]*|font[a-z-]*|style|"
    r"align|color)\s*[:=]|\bem;|\bpx;|^\W*em;",
    re.I,
)
_CITATION = re.compile(r"\[\d+\]")
_WIKI_BOILERPLATE = re.compile(
    r"^(?:This article incorporates|Media related to|Listen to this article|"
    r"Wikimedia Commons has media)"
)
_REF = re.compile(r"<ref\b[^>]*?(?:/>|>.*?</ref>)", re.S)  # a footnote, with whatever survived inside it
_AUX = frozenset(
    "is was are were be been being has have had will would can could may might shall should "
    "must did does do became becomes become".split()
)


def is_wiki_heading(line: str) -> bool:
    """A WikiExtractor section heading: a line ending in '.', at most 10 words, no other sentence
    end, no verb-like word after the first: "Fate of Achilles' armor." but not "Paris was killed."."""
    if not line.endswith(".") or line.endswith(".."):
        return False
    words = line[:-1].split()
    if not words or len(words) > 10 or any(c in line[:-1] for c in ".!?"):
        return False
    return not any(w.lower() in _AUX or (w.lower().endswith("ed") and len(w) > 3) for w in words[1:])


def wiki_documents(text: str, name: str = "<text>") -> list[Document]:
    """WikiExtractor `<doc>` blocks as documents: tags, entities and "[5]" marks stripped; headings,
    table remnants, attribution boilerplate and short unpunctuated lines (list items) dropped."""
    docs = []
    for m in _WIKI_DOC.finditer(text):
        doc_id, title, body = m.group(1), html.unescape(m.group(2)), m.group(3)
        lines = body.split("\n")
        if lines and lines[0].strip() == title.strip():
            lines = lines[1:]  # the title line
        paragraphs = []
        for line in lines:
            line = " ".join(_CITATION.sub("", html.unescape(_TAG.sub(" ", _REF.sub(" ", line)))).split())
            if not line or is_wiki_heading(line) or _CSS.search(line) or _WIKI_BOILERPLATE.match(line):
                continue
            if len(line.split()) < 4 and line[-1] not in '.!?"”':
                continue  # list items and headings whose text was removed: "Domestic use", "X", "Ships by type:"
            paragraphs.append(line)
        doc = Document.from_paragraphs(f"wiki-{doc_id}", title, paragraphs, "wiki")
        if doc.sentences:
            docs.append(doc)
    if not docs and text.strip():
        raise CorpusFormatError(
            f"{name}: no '<doc id=... title=...>' ... '</doc>' blocks found; is this WikiExtractor output?"
        )
    return docs


# --- WikiText (raw) ---
_WT_TITLE = re.compile(r"^ = ([^=].*) = $")
_WT_HEADING = re.compile(r"^ (= )+.*( =)+ $")
_WT_MARKERS = re.compile(r" @([-,.])@ ")


def wikitext_documents(text: str, source: str) -> list[Document]:
    """WikiText raw as one document per article: a title " = Title = " has blank lines on both sides
    (a formula "= 1 rad / s =" has not); section lines dropped, "1 @,@ 000" joined back to "1,000"."""
    lines = text.replace("\r\n", "\n").split("\n")
    docs: list[Document] = []
    title, paragraphs = None, []

    def close() -> None:
        if title is not None:
            docs.append(Document.from_paragraphs(f"{source}-{len(docs):05d}", title, paragraphs, source))

    for i, line in enumerate(lines):
        m = _WT_TITLE.match(line)
        is_title = (
            m is not None and (i == 0 or not lines[i - 1].strip()) and (i + 1 >= len(lines) or not lines[i + 1].strip())
        )
        if is_title:
            close()
            title, paragraphs = _WT_MARKERS.sub(r"\1", m.group(1)).strip(), []
        elif line.strip() and not (_WT_HEADING.match(line) and (i + 1 >= len(lines) or not lines[i + 1].strip())):
            paragraphs.append(_WT_MARKERS.sub(r"\1", line).strip())
    close()
    return docs


def is_heldout(doc_id: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Held out when sha256("bertlab-heldout:" + id), as a number in [0, 1), is below `fraction`."""
    h = hashlib.sha256(f"bertlab-heldout:{doc_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < fraction


# --- Loading, with a cache of the cleaned documents ---
_CODE_HASH = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()  # any change to the cleaners renews the cache


def _cache_path(kind: str, files: list) -> Path:
    # a file without a published sha256 (WikiText-103) is identified by its archive's pinned hash
    ids = [(f.path, f.sha256 or next((s.known_hash for s in f.sources if s.known_hash), None)) for f in files]
    key = hashlib.sha256(json.dumps([CLEANER_VERSION, _CODE_HASH, kind, ids]).encode())
    return download.cache_dir() / "corpus" / f"{kind}-v{CLEANER_VERSION}-{key.hexdigest()[:16]}.jsonl.gz"


def _read_cache(path: Path) -> list[Document] | None:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [Document(**json.loads(line)) for line in f]
    except (OSError, ValueError, TypeError, EOFError):
        return None


def _write_cache(path: Path, docs: list[Document]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(asdict(d), ensure_ascii=False) + "\n" for d in docs)
    write_bytes(path, gzip.compress(lines.encode("utf-8"), compresslevel=1), fsync=False)


def _read_text(path: Path) -> str:
    with download.open_text(path) as f:
        return f.read()


def _clean_source(kind: str, files: list) -> list[Document]:
    if kind == "books":  # a book's id is its split name ("pg11")
        texts = ((f.split, _read_text(download.fetch(f))) for f in files)
        return [clean_gutenberg(text, name, BOOK_INFO[name]["title"]) for name, text in texts]
    if kind == "wiki":
        return [d for f in files for d in wiki_documents(_read_text(download.fetch(f)), f.path)]
    (f,) = files  # WikiText: one split
    try:
        source_path = download.fetch(f, progress=True)
    except download.SplitNotAvailableError as err:
        if kind == "wikitext-103" and f.split in ("valid", "test"):
            raise download.SplitNotAvailableError(
                f"{err}\nWikiText-103 raw {f.split} is believed to be the same 60 articles as "
                f"load_corpus('wikitext-2', {f.split!r}), which the mirror holds."
            ) from None
        raise
    return wikitext_documents(_read_text(source_path), kind)


def _load_source(kind: str, files: list, use_cache: bool) -> list[Document]:
    """The documents of `files` (books and wiki: every split), from the cache when it is there."""
    path = _cache_path(kind, files)
    if use_cache and path.is_file():
        docs = _read_cache(path)
        if docs is not None:
            return docs
    docs = _clean_source(kind, files)
    if use_cache:
        try:
            _write_cache(path, docs)
        except OSError:
            pass
    return docs


def load_corpus(name: str, split: str = "train", *, use_cache: bool = True) -> list[Document]:
    """Documents of a pre-training corpus (`CORPORA`). `split`: "train" or "heldout" for books and
    wiki; "train", "valid" or "test" for WikiText (whose train split the mirror lacks)."""
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; choose one of {CORPORA}")
    if name.startswith("wikitext"):
        if split not in ("train", "valid", "test"):
            raise ValueError(f"{name} has splits 'train', 'valid', 'test', not {split!r}")
        return _load_source(name, [download.lookup(f"{name}:{split}")], use_cache)
    if split not in ("train", "heldout"):
        raise ValueError(f"{name} has splits 'train' and 'heldout', not {split!r}")
    docs: list[Document] = []
    for kind in name.split("+"):
        files = [f for f in download.files_of(kind) if f.split != "INDEX"]
        docs.extend(_load_source(kind, files, use_cache))
    want_heldout = split == "heldout"
    return [d for d in docs if is_heldout(d.id) == want_heldout]
