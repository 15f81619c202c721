"""Pretraining examples: sentence pairs for next-sentence prediction, stored memory-mapped.

The paper (section 3.1, appendix A.2) cuts [CLS] A [SEP] B [SEP] from whole documents, B half of
the time the text that follows A (IsNext = 0), otherwise text from another document (NotNext = 1);
1 time in 10 the target length is shorter, like fine-tuning's inputs. As Google's
create_pretraining_data does it:

1. Collect a document's sentences into a chunk until it reaches the target length.
2. Split the chunk at a random sentence boundary: A before, B after (IsNext). With probability 1/2
   B is replaced by sentences from another document (NotNext) and the chunk's unused sentences
   are read again. A lone sentence drawn IsNext takes the next one as B; a document's last
   sentence has none and is dropped (relabelling it NotNext would unbalance the classes).
3. Cut the longer segment one token at a time until the pair fits ("longest first"): A loses
   tokens from its start, B from its end, so the seam between them stays intact.

Without NSP an example is one segment of whole sentences up to max_len; with `pairs=True` it is
[CLS] A [SEP] B [SEP], B always the text after A, so both segment embeddings are trained.

Storage (numpy .npy opened with mmap_mode="r": a batch is one fancy-indexing read):

    <dir>/tokens/           the corpus tokenized once
        tokens.npy              (n_tokens,)      uint16 (vocab < 65536) or int32
        sentence_starts.npy     (n_sentences+1,) sentence s = tokens[starts[s]:starts[s+1]]
        document_starts.npy     (n_documents+1,) document d = sentences starts[d]:starts[d+1]
    <dir>/<examples>/       fixed-size examples cut from it
        input_ids.npy           (N, T)  [CLS] A [SEP] B [SEP] [PAD]...
        lengths.npy             (N,)    real tokens; attention_mask = position < length
        segment_b_start.npy     (N,)    B's first position (= length if no B)
        nsp_labels.npy          (N,)    0 IsNext, 1 NotNext (NSP only)
        spans.npy               (N, 4)  sentence ids of A's and B's first/last (-1: none), uncut

Each folder's meta.json records the tokenizer, the corpus checksum, the settings and counts. The
pairings are fixed when the arrays are built (`dupe_factor` copies, each cut differently); masks
are drawn anew for every batch (`bertlab.data.masking`).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol, Sequence

import numpy as np
import torch

from bertlab.data.tokenizer import WordPieceTokenizer
from bertlab.files import write_json

FORMAT_VERSION = 1
IS_NEXT, NOT_NEXT = 0, 1


class DocumentLike(Protocol):
    id: Any
    sentences: Sequence[str]


def corpus_checksum(documents: Sequence[DocumentLike]) -> str:
    """sha256 of the documents' ids and sentences, in order: which text the arrays came from."""
    h = hashlib.sha256()
    for doc in documents:
        h.update(str(doc.id).encode() + b"\x1d")
        for s in doc.sentences:
            h.update(s.encode() + b"\x1e")
        h.update(b"\x1c")
    return h.hexdigest()


def _read_meta(directory: Path) -> dict | None:
    path = directory / "meta.json"
    return json.loads(path.read_text()) if path.exists() else None


def _memmaps(directory: Path, *names: str) -> list[np.ndarray]:
    return [np.load(directory / f"{name}.npy", mmap_mode="r") for name in names]


def _open(where: Path, kind: str, tokenizer: WordPieceTokenizer | None, how: str) -> dict:
    """The meta.json of a folder built by this module, checked: its kind, format and vocabulary."""
    meta = _read_meta(where)
    if meta is None or meta.get("kind") != kind:
        raise FileNotFoundError(f"{where} holds no {kind.replace('_', ' ')} (no meta.json); {how}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{where} was written in format {meta.get('format_version')}, this "
            f"bertlab reads format {FORMAT_VERSION}; rebuild the data"
        )
    want = meta["tokenizer"]
    if tokenizer is not None and want["fingerprint"] != tokenizer.fingerprint:
        raise ValueError(
            f"vocabulary mismatch: the data in {where} was tokenized with a vocabulary of "
            f"{want['vocab_size']} tokens (fingerprint {want['fingerprint'][:12]}), but the tokenizer "
            f"given has {tokenizer.vocab_size} tokens (fingerprint {tokenizer.fingerprint[:12]}). "
            f"Use the tokenizer the data was built with, or rebuild the data with this one."
        )
    return meta


# --- Stage 1: tokenize the corpus once ---
@dataclass
class TokenizedCorpus:
    """A corpus as one flat token array plus sentence and document boundaries (memory-mapped)."""

    directory: Path
    tokens: np.ndarray  # (n_tokens,)
    sentence_starts: np.ndarray  # (n_sentences + 1,)
    document_starts: np.ndarray  # (n_documents + 1,)
    meta: dict

    @property
    def n_documents(self) -> int:
        return len(self.document_starts) - 1

    @property
    def n_sentences(self) -> int:
        return len(self.sentence_starts) - 1

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def document_of_sentence(self, s: int | np.ndarray) -> np.ndarray:
        return np.searchsorted(self.document_starts, s, side="right") - 1

    @classmethod
    def load(cls, directory: str | Path, tokenizer: WordPieceTokenizer | None = None) -> "TokenizedCorpus":
        directory = Path(directory)
        meta = _open(
            directory, "tokenized_corpus", tokenizer, "make one with tokenize_corpus(documents, tokenizer, directory)"
        )
        return cls(directory, *_memmaps(directory, "tokens", "sentence_starts", "document_starts"), meta)


def tokenize_corpus(
    documents: Sequence[DocumentLike], tokenizer: WordPieceTokenizer, directory: str | Path
) -> TokenizedCorpus:
    """Tokenize every sentence once (no special tokens) into flat arrays in `directory`. Sentences
    that give no tokens and documents left empty are dropped and counted."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    documents = list(documents)
    if not documents:
        raise ValueError("tokenize_corpus got no documents")
    t0 = time.perf_counter()
    dtype = np.dtype(np.uint16 if tokenizer.vocab_size < 65536 else np.int32)
    flat = [s for doc in documents for s in doc.sentences]
    lengths = np.empty(len(flat), dtype=np.int64)
    pieces = []
    step = 20_000  # sentences per tokenizer call: bounds the memory of its id lists
    for i in range(0, len(flat), step):
        ids = tokenizer.ids_batch(flat[i : i + step])
        lengths[i : i + len(ids)] = [len(x) for x in ids]
        pieces.append(np.fromiter((t for x in ids for t in x), dtype=dtype, count=int(lengths[i : i + len(ids)].sum())))
    tokens = np.concatenate(pieces) if pieces else np.zeros(0, dtype)
    keep = lengths > 0
    doc_of_sentence = np.repeat(np.arange(len(documents)), [len(doc.sentences) for doc in documents])
    sentence_starts = np.concatenate([[0], np.cumsum(lengths[keep])])
    kept_per_doc = np.bincount(doc_of_sentence[keep], minlength=len(documents))
    doc_keep = kept_per_doc > 0
    document_starts = np.concatenate([[0], np.cumsum(kept_per_doc[doc_keep])])
    if tokens.size == 0:
        raise ValueError(f"the {len(documents)} documents ({len(flat)} sentences) give no tokens at all")

    np.save(directory / "tokens.npy", tokens)
    np.save(directory / "sentence_starts.npy", sentence_starts.astype(np.int64))
    np.save(directory / "document_starts.npy", document_starts.astype(np.int64))
    meta = {
        "format_version": FORMAT_VERSION,
        "kind": "tokenized_corpus",
        "tokenizer": {"fingerprint": tokenizer.fingerprint, "vocab_size": tokenizer.vocab_size},
        "corpus": {
            "checksum": corpus_checksum(documents),
            "document_ids": [str(d.id) for d, k in zip(documents, doc_keep) if k],
            "n_documents": int(doc_keep.sum()),
            "n_sentences": int(keep.sum()),
            "n_tokens": int(tokens.size),
            "dropped_empty_sentences": int((~keep).sum()),
            "dropped_empty_documents": int((~doc_keep).sum()),
            "n_words": sum(len(s.split()) for s in flat),
        },
        "dtype": dtype.name,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    write_json(directory / "meta.json", meta, indent=1, fsync=False)  # last: a folder with one is complete
    return TokenizedCorpus.load(directory)


# --- Stage 2: cut examples ---
def truncate_longest_first(len_a: int, len_b: int, max_tokens: int) -> tuple[int, int]:
    """How many tokens of A and of B to keep so that len_a + len_b <= max_tokens, taking one token
    at a time from the longer text (from B on a tie) as BERT's released code does; in closed form,
    a text within its half of the budget is kept whole, else A keeps ceil(max_tokens / 2), B the rest."""
    if len_a + len_b <= max_tokens:
        return len_a, len_b
    if len_b <= max_tokens // 2:
        return max_tokens - len_b, len_b
    if len_a <= (max_tokens + 1) // 2:
        return len_a, max_tokens - len_a
    return (max_tokens + 1) // 2, max_tokens // 2


def _cut_document(
    corpus: TokenizedCorpus,
    lengths: np.ndarray,
    d: int,
    rng: np.random.Generator,
    max_tokens: int,
    nsp: bool,
    short_seq_prob: float,
    out: list,
    dropped: list,
    pairs: bool = False,
) -> None:
    """Append one document's examples to `out` as (a0, a1, b0, b1, label) inclusive sentence spans
    (b = -1: a single segment), and the sentences left out to `dropped`."""
    s0, s1 = int(corpus.document_starts[d]), int(corpus.document_starts[d + 1])
    n_docs = corpus.n_documents

    def target() -> int:
        return int(rng.integers(2, max_tokens + 1)) if rng.random() < short_seq_prob else max_tokens

    goal = target()
    start, length, i = s0, 0, s0
    if not nsp and not pairs:  # whole sentences while they fit; a lone over-long sentence is cut later
        for i in range(s0, s1):
            if length > 0 and length + lengths[i] > goal:
                out.append((start, i - 1, -1, -1, -1))
                start, length, goal = i, 0, target()
            length += lengths[i]
        out.append((start, s1 - 1, -1, -1, -1))
        return
    while i < s1:
        length += lengths[i]
        if i == s1 - 1 or length >= goal:
            is_next = rng.random() < 0.5 if nsp else True
            if is_next and i == start:  # one sentence: B is the sentence after it, if any
                if i + 1 < s1:
                    i += 1
                else:  # the document's last sentence, alone: no B (see the module docstring)
                    dropped.append(i)
                    break
            n = i + 1 - start
            a_end = start + (int(rng.integers(1, n)) if n >= 2 else 1)  # first sentence not in A
            if is_next:
                out.append((start, a_end - 1, a_end, i, IS_NEXT))
            else:
                la = int(corpus.sentence_starts[a_end] - corpus.sentence_starts[start])
                want_b = max(goal - la, 1)
                other = int(rng.integers(n_docs - 1))
                other += other >= d  # any document but this one
                o0, o1 = int(corpus.document_starts[other]), int(corpus.document_starts[other + 1])
                b0 = int(rng.integers(o0, o1))
                b1, lb = b0, int(lengths[b0])
                while lb < want_b and b1 + 1 < o1:
                    b1 += 1
                    lb += int(lengths[b1])
                out.append((start, a_end - 1, b0, b1, NOT_NEXT))
                i = a_end - 1  # the chunk's sentences after A go back to be used
            start, length, goal = i + 1, 0, target()
        i += 1


def build_examples(
    corpus: TokenizedCorpus,
    directory: str | Path,
    max_len: int = 128,
    nsp: bool = True,
    seed: int = 0,
    short_seq_prob: float = 0.1,
    dupe_factor: int = 1,
    cls_id: int | None = None,
    sep_id: int | None = None,
    pad_id: int = 0,
    pairs: bool = False,
) -> "PretrainingDataset":
    """Cut examples of max_len tokens from `corpus` into `directory`, deterministically given
    `seed`. `pairs` (without NSP): two segments, B the text that follows A."""
    directory = Path(directory)
    t0 = time.perf_counter()
    if cls_id is None or sep_id is None:
        raise ValueError("build_examples needs cls_id and sep_id (tokenizer.cls_id, tokenizer.sep_id)")
    two = nsp or pairs
    n_special = 3 if two else 2
    if max_len < n_special + 2:
        raise ValueError(
            f"max_len={max_len} is too small: {'[CLS] A [SEP] B [SEP]' if two else '[CLS] A [SEP]'} "
            f"needs {n_special} special tokens and at least one token per segment"
        )
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}")
    if dupe_factor < 1:
        raise ValueError(f"dupe_factor must be at least 1, got {dupe_factor}")
    if nsp and corpus.n_documents < 2:
        raise ValueError(
            f"next-sentence prediction needs at least 2 documents: a NotNext B must come from a "
            f"DIFFERENT document, and this corpus has {corpus.n_documents} "
            f"({corpus.n_tokens:,} tokens). Add documents, or build with nsp=False."
        )
    max_tokens = max_len - n_special
    lengths = np.diff(np.asarray(corpus.sentence_starts))

    spans: list = []
    dropped: list = []
    for dupe in range(dupe_factor):
        rng = np.random.default_rng([seed, dupe])
        for d in range(corpus.n_documents):
            _cut_document(corpus, lengths, d, rng, max_tokens, nsp, short_seq_prob, spans, dropped, pairs)
    if not spans:
        raise ValueError(f"the corpus gave no examples: {corpus.n_documents} documents, {corpus.n_tokens:,} tokens")
    spans_arr = np.asarray(spans, dtype=np.int64)  # (N, 5)
    N = len(spans_arr)

    # Token extents of A and B; the longest-first cut keeps A's end and B's (or a lone segment's) start.
    st = np.asarray(corpus.sentence_starts)
    a_end, a_len = st[spans_arr[:, 1] + 1], st[spans_arr[:, 1] + 1] - st[spans_arr[:, 0]]
    has_b = spans_arr[:, 2] >= 0
    b_from = np.where(has_b, st[np.maximum(spans_arr[:, 2], 0)], 0)
    b_len = np.where(has_b, st[spans_arr[:, 3] + 1] - b_from, 0)
    cut = [truncate_longest_first(int(x), int(y), max_tokens) for x, y in zip(a_len, b_len)]  # b_len 0: no B
    a_keep, b_keep = np.array(cut, dtype=np.int64).T
    a_from = np.where(has_b, a_end - a_keep, st[spans_arr[:, 0]])
    length = 2 + a_keep + np.where(has_b, 1 + b_keep, 0)
    b_start = np.where(has_b, 2 + a_keep, length)

    directory.mkdir(parents=True, exist_ok=True)
    dtype = np.dtype(corpus.meta["dtype"])
    ids = np.lib.format.open_memmap(directory / "input_ids.npy", mode="w+", dtype=dtype, shape=(N, max_len))
    tokens = corpus.tokens
    chunk = 4096
    for c0 in range(0, N, chunk):  # fill in blocks to bound memory; a few slices per example
        c1 = min(c0 + chunk, N)
        block = np.full((c1 - c0, max_len), pad_id, dtype=dtype)
        block[:, 0] = cls_id
        for r, n in enumerate(range(c0, c1)):
            la, lb = a_keep[n], b_keep[n]
            block[r, 1 : 1 + la] = tokens[a_from[n] : a_from[n] + la]
            block[r, 1 + la] = sep_id
            if has_b[n]:
                block[r, 2 + la : 2 + la + lb] = tokens[b_from[n] : b_from[n] + lb]
                block[r, 2 + la + lb] = sep_id
        ids[c0:c1] = block
    ids.flush()
    del ids
    small = np.int16 if max_len < 32768 else np.int32
    np.save(directory / "lengths.npy", length.astype(small))
    np.save(directory / "segment_b_start.npy", b_start.astype(small))
    np.save(directory / "spans.npy", spans_arr[:, :4].astype(np.int32))
    labels = spans_arr[:, 4]
    if nsp:
        np.save(directory / "nsp_labels.npy", labels.astype(np.int8))
    meta = {
        "format_version": FORMAT_VERSION,
        "kind": "pretraining_examples",
        "tokenizer": corpus.meta["tokenizer"],
        "corpus": {k: v for k, v in corpus.meta["corpus"].items() if k != "document_ids"},
        "corpus_directory": str(corpus.directory),
        "max_len": max_len,
        "nsp": nsp,
        "pairs": two,
        "seed": seed,
        "short_seq_prob": short_seq_prob,
        "dupe_factor": dupe_factor,
        "cls_id": cls_id,
        "sep_id": sep_id,
        "pad_id": pad_id,
        "dtype": dtype.name,
        "counts": {
            "examples": N,
            "is_next": int((labels == IS_NEXT).sum()) if nsp else None,
            "not_next": int((labels == NOT_NEXT).sum()) if nsp else None,
            "real_tokens": int(length.sum()),
            "fill": round(float(length.sum()) / (N * max_len), 4),
            "truncated_examples": int(((a_keep < a_len) | (b_keep < b_len)).sum()),
            "dropped_last_sentences": len(dropped),
        },
        "seconds": round(time.perf_counter() - t0, 2),
    }
    write_json(directory / "meta.json", meta, indent=1, fsync=False)  # last: a folder with one is complete
    return PretrainingDataset(directory)


# --- Reading: a Dataset over the memmaps, and a resumable batch iterator ---
class PretrainingDataset(torch.utils.data.Dataset):
    """Examples built by `build_examples`, memory-mapped. `ds[i]` is one unmasked example:
    input_ids, token_type_ids, attention_mask (T,) and nsp_label () when NSP is on."""

    def __init__(self, directory: str | Path, tokenizer: WordPieceTokenizer | None = None):
        self.directory = Path(directory)
        how = "build them with prepare_pretraining_data or build_examples"
        self.meta = meta = _open(self.directory, "pretraining_examples", tokenizer, how)
        self.max_len: int = meta["max_len"]
        self.nsp: bool = meta["nsp"]
        arrays = _memmaps(self.directory, "input_ids", "lengths", "segment_b_start", "spans")
        self.input_ids, self.lengths, self.segment_b_start, self.spans = arrays
        self.nsp_labels = _memmaps(self.directory, "nsp_labels")[0] if self.nsp else None
        self._positions = torch.arange(self.max_len)

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"example {i} out of range for {len(self)} examples")
        return {k: v[0] for k, v in self.get_batch([int(i) % len(self)]).items()}

    def get_batch(self, indices: Sequence[int] | np.ndarray) -> dict[str, torch.Tensor]:
        """Stacked unmasked examples: input_ids, token_type_ids, attention_mask (B, T) long and
        nsp_labels (B,) long when NSP is on."""
        idx = np.asarray(indices, dtype=np.int64)
        ids = torch.from_numpy(self.input_ids[idx].astype(np.int64))  # (B, T)
        length = torch.from_numpy(self.lengths[idx].astype(np.int64))[:, None]  # (B, 1)
        b_start = torch.from_numpy(self.segment_b_start[idx].astype(np.int64))[:, None]
        pos = self._positions[None, :]
        attention = pos < length
        out = {
            "input_ids": ids,
            "token_type_ids": ((pos >= b_start) & attention).long(),
            "attention_mask": attention.long(),
        }
        if self.nsp:
            out["nsp_labels"] = torch.from_numpy(self.nsp_labels[idx].astype(np.int64))
        return out

    def describe(self, i: int, tokenizer: WordPieceTokenizer) -> dict[str, Any]:
        """Segment A, segment B and the label of example i as text, for reading examples."""
        n, b = int(self.lengths[i]), int(self.segment_b_start[i])
        ids = np.asarray(self.input_ids[i])
        out = {"A": tokenizer.decode(ids[1 : b - 1] if b < n else ids[1 : n - 1]), "B": None, "label": None}
        if self.nsp:
            out["B"] = tokenizer.decode(ids[b : n - 1])
            out["label"] = "IsNext" if int(self.nsp_labels[i]) == IS_NEXT else "NotNext"
        return out

    def __repr__(self) -> str:
        c = self.meta["counts"]
        return (
            f"PretrainingDataset({len(self):,} examples of max_len {self.max_len}, nsp={self.nsp}, "
            f"fill {c['fill']:.0%}, from {self.meta['corpus']['n_tokens']:,} tokens in "
            f"{self.meta['corpus']['n_documents']} documents)"
        )


class PretrainingBatches:
    """An endless stream of masked batches, each epoch every example once in an order shuffled by
    (seed, epoch); `state_dict()` (with the collator's) resumes the same batches and masks."""

    def __init__(self, dataset: PretrainingDataset, batch_size: int, collator, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if len(dataset) < batch_size:
            c = dataset.meta["corpus"]
            raise ValueError(
                f"corpus too small: {len(dataset)} examples of max_len {dataset.max_len} (from "
                f"{c['n_tokens']:,} tokens in {c['n_documents']} documents) cannot fill one batch of "
                f"{batch_size}; that needs at least {batch_size} examples, about "
                f"{batch_size * (dataset.max_len - 3):,} tokens. Use more text, a smaller batch_size "
                f"or a smaller max_len (or dupe_factor > 1)."
            )
        self.dataset, self.batch_size, self.collator, self.seed = dataset, batch_size, collator, seed
        self.epoch, self.index = 0, 0
        self._order: np.ndarray | None = None
        self._order_epoch = -1

    def __len__(self) -> int:
        """Batches per epoch (the last partial batch is dropped, so every batch has B rows)."""
        return len(self.dataset) // self.batch_size

    def _epoch_order(self) -> np.ndarray:
        if self._order_epoch != self.epoch:
            self._order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.dataset))
            self._order_epoch = self.epoch
        return self._order

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        if self.index >= len(self):
            self.epoch, self.index = self.epoch + 1, 0
        rows = self._epoch_order()[self.index * self.batch_size : (self.index + 1) * self.batch_size]
        self.index += 1
        return self.collator(self.dataset.get_batch(rows))

    def state_dict(self) -> dict[str, Any]:
        state = {
            "epoch": self.epoch,
            "index": self.index,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "n_examples": len(self.dataset),
        }
        if hasattr(self.collator, "state_dict"):
            state["collator"] = self.collator.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key, mine in (("seed", self.seed), ("batch_size", self.batch_size), ("n_examples", len(self.dataset))):
            if state[key] != mine:
                raise ValueError(f"cannot resume: the saved stream had {key}={state[key]}, this one has {mine}")
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        if "collator" in state and hasattr(self.collator, "load_state_dict"):
            self.collator.load_state_dict(state["collator"])


class PhasedBatches:
    """One stream per phase: batches from `streams[0]` until `ends[0]` have been drawn in all, then
    from `streams[1]`, and so on; the last never ends (the paper's 90% of the steps at 128 tokens,
    then 10% at 512). `set_ends` may move the boundaries during a run; a phase begun is never left."""

    def __init__(self, streams: Sequence["PretrainingBatches"]):
        if not streams:
            raise ValueError("PhasedBatches needs at least one stream")
        self.streams = list(streams)
        self.drawn = 0
        self.reached = 0  # the phase of the last batch drawn: later batches come from it or a later one
        self.ends: list[int] | None = None

    def set_ends(self, ends: Sequence[int]) -> None:
        ends = [int(e) for e in ends]
        if len(ends) != len(self.streams) or any(b < a for a, b in zip(ends, ends[1:])):
            raise ValueError(f"need one non-decreasing end per stream ({len(self.streams)}), got {ends}")
        self.ends = ends

    @property
    def phase(self) -> int:
        """The phase of the next batch: the first until boundaries are set, never an earlier one."""
        return max(self._due(self.drawn), self.reached)

    def _due(self, n: int) -> int:
        """The phase the boundaries give batch number n (counting from 0)."""
        if self.ends is None:
            return 0
        return next((k for k, end in enumerate(self.ends[:-1]) if n < end), len(self.streams) - 1)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        self.reached = self.phase
        batch = next(self.streams[self.reached])
        self.drawn += 1
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {
            "drawn": self.drawn,
            "reached": self.reached,
            "ends": self.ends,
            "streams": [s.state_dict() for s in self.streams],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if len(state["streams"]) != len(self.streams):
            raise ValueError(
                f"cannot resume: the saved run had {len(state['streams'])} phases, this one has {len(self.streams)}"
            )
        for stream, saved in zip(self.streams, state["streams"]):
            stream.load_state_dict(saved)
        self.drawn = int(state["drawn"])
        if state["ends"] is not None:
            self.set_ends(state["ends"])
        # a checkpoint without `reached`: the phase its boundaries gave the last batch
        self.reached = int(state.get("reached", self._due(self.drawn - 1) if self.drawn else 0))


# --- One call from documents to a dataset, with caching ---
def prepare_pretraining_data(
    documents: Sequence[DocumentLike],
    tokenizer: WordPieceTokenizer,
    directory: str | Path,
    max_len: int = 128,
    nsp: bool = True,
    seed: int = 0,
    short_seq_prob: float = 0.1,
    dupe_factor: int = 1,
    pairs: bool = False,
) -> PretrainingDataset:
    """Tokenize `documents` into <directory>/tokens and cut examples into
    <directory>/examples_T{max_len}_{nsp|pairs|nonsp}_s{seed}_d{dupe_factor}; each stage is reused
    when its meta.json says it was built from the same text with the same tokenizer."""
    directory = Path(directory)
    documents = list(documents)
    checksum, fingerprint = corpus_checksum(documents), tokenizer.fingerprint

    def same_source(meta: dict) -> bool:  # the same text, tokenized with the same vocabulary
        return (meta["corpus"]["checksum"], meta["tokenizer"]["fingerprint"]) == (checksum, fingerprint)

    tok_dir = directory / "tokens"
    meta = _read_meta(tok_dir)
    if meta is not None and same_source(meta):
        corpus = TokenizedCorpus.load(tok_dir, tokenizer)
    else:
        corpus = tokenize_corpus(documents, tokenizer, tok_dir)
    kind = "nsp" if nsp else "pairs" if pairs else "nonsp"
    ex_dir = directory / f"examples_T{max_len}_{kind}_s{seed}_d{dupe_factor}"
    meta = _read_meta(ex_dir)
    if (
        meta is not None
        and meta.get("format_version") == FORMAT_VERSION
        and same_source(meta)
        and meta["short_seq_prob"] == short_seq_prob
    ):
        return PretrainingDataset(ex_dir, tokenizer)
    special = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id)
    return build_examples(corpus, ex_dir, max_len, nsp, seed, short_seq_prob, dupe_factor, pairs=pairs, **special)


def unigram_log_probs(
    dataset: PretrainingDataset, vocab_size: int, exclude: Sequence[int] = (), smoothing: float = 1.0
) -> torch.Tensor:
    """(V,) log p(token) over the dataset's real tokens, add-`smoothing` counts; ids in `exclude`
    get -1e4. Starts the MLM output bias at word frequencies instead of the uniform log(1/V)."""
    counts = np.zeros(vocab_size, dtype=np.float64)
    for start in range(0, len(dataset), 8192):
        ids = np.asarray(dataset.input_ids[start : start + 8192], dtype=np.int64)
        lengths = np.asarray(dataset.lengths[start : start + 8192], dtype=np.int64)
        real = np.arange(ids.shape[1])[None, :] < lengths[:, None]
        counts += np.bincount(ids[real], minlength=vocab_size)[:vocab_size]
    counts += smoothing
    counts[np.asarray(list(exclude), dtype=np.int64)] = 0.0
    logp = np.full(vocab_size, -1e4)
    keep = counts > 0
    logp[keep] = np.log(counts[keep] / counts[keep].sum())
    return torch.tensor(logp, dtype=torch.float32)
