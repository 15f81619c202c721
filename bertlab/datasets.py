"""Getting dataset files, checked, and reading the fine-tuning datasets into plain records.

BERT is pre-trained on books and Wikipedia and fine-tuned on GLUE, SQuAD and CoNLL-2003.  This
module gets those files and reads the fine-tuning ones:

* `fetch(name)` returns a local path to a registered file (`bertlab.registry`).  It looks first in
  a local mirror (env ``BERTLAB_DATA_MIRROR``, a folder laid out like the project's offline
  mirror), then in the download cache (env ``BERTLAB_CACHE``, default ``~/.cache/bertlab``), and
  only then downloads with `pooch`.  Every byte is checked against the registry's sha256: a
  corrupt mirror file raises `ChecksumMismatchError`, a corrupt or partial cache file is fetched
  again, and a source that now serves different bytes is reported, never accepted.
* ``read_sst2``, ``read_mrpc``, ``read_rte``, ``read_qnli``, ``read_squad``, ``read_conll2003``
  return ``(examples, report)``: a list of small dataclasses and a `LoadReport` that lists every
  row that was skipped, with file, line (or example id) and reason.  ``strict=True`` raises
  `DataFormatError` on the first bad row instead.

Offline with neither a mirror nor a cached copy, `fetch` raises ONE `DataUnavailableError` that
names the file, the URLs tried and how to get it.  Files the mirror does not hold (WikiText
train, SQuAD train, QNLI train) raise `SplitNotAvailableError`; `available_splits` tells callers
what they can use instead.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from bertlab.registry import DATASETS, FILES, DataFile, Source

log = logging.getLogger(__name__)

MIRROR_ENV = "BERTLAB_DATA_MIRROR"
CACHE_ENV = "BERTLAB_CACHE"
OFFLINE_ENV = "BERTLAB_OFFLINE"  # "1": never touch the network
DOWNLOAD_TIMEOUT_S = 60


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------

class DataError(Exception):
    """Base class of every error this module raises on purpose."""


class DataUnavailableError(DataError):
    """A file is in neither the mirror nor the cache, and downloading it failed (or is disabled)."""


class SplitNotAvailableError(DataUnavailableError):
    """The mirror does not hold this split at all (e.g. WikiText-103 train), and it could not be downloaded."""


class ChecksumMismatchError(DataError):
    """Bytes on disk or from a URL differ from the registry's pinned sha256."""


class DataFormatError(DataError):
    """A data file has a row that cannot be read (raised by the readers with ``strict=True``)."""


# ----------------------------------------------------------------------------------------------
# Locations
# ----------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """The download/derived-data cache: ``$BERTLAB_CACHE`` or ``~/.cache/bertlab``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "bertlab").expanduser()


def mirror_dir() -> Path | None:
    """The local mirror named by ``$BERTLAB_DATA_MIRROR``, or None."""
    value = os.environ.get(MIRROR_ENV)
    return Path(value).expanduser() if value else None


def _offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in {"1", "true", "yes"}


def lookup(name: str) -> DataFile:
    """Resolve a mirror path ("glue/SST-2/dev.tsv") or short name ("sst2:dev", "books:pg11")."""
    if isinstance(name, DataFile):
        return name
    name = str(name)
    if name in FILES:
        return FILES[name]
    for f in FILES.values():
        if name in (f.name, f.download_path):
            return f
    known = ", ".join(DATASETS)
    raise KeyError(f"unknown dataset file {name!r}: give a mirror path such as 'glue/SST-2/dev.tsv' or a "
                   f"name '<dataset>:<split>' such as 'sst2:dev' (datasets: {known})")


def files_of(dataset: str) -> list[DataFile]:
    """All registered files of one dataset, in registry order."""
    found = [f for f in FILES.values() if f.dataset == dataset]
    if not found:
        raise KeyError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    return found


# ----------------------------------------------------------------------------------------------
# Checksums, with a small record of files already verified (keyed by size and mtime)
# ----------------------------------------------------------------------------------------------

def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _stamp_file() -> Path:
    return cache_dir() / "verified.json"


def _load_stamps() -> dict:
    try:
        return json.loads(_stamp_file().read_text())
    except (OSError, ValueError):
        return {}


def _save_stamp(path: Path, digest: str) -> None:
    stamps = _load_stamps()
    st = path.stat()
    stamps[str(path.resolve())] = [st.st_size, st.st_mtime_ns, digest]
    target = _stamp_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(stamps, f)
        os.replace(tmp, target)  # atomic: concurrent writers lose a stamp at worst, never corrupt it
    except OSError:  # a read-only cache only costs re-hashing
        pass


def file_sha256(path: Path) -> str:
    """sha256 of `path`, re-used from an earlier check while its size and mtime are unchanged."""
    path = Path(path)
    st = path.stat()
    stamp = _load_stamps().get(str(path.resolve()))
    if stamp and stamp[0] == st.st_size and stamp[1] == st.st_mtime_ns:
        return stamp[2]
    digest = sha256_file(path)
    _save_stamp(path, digest)
    return digest


def verify(path: Path, expected: str | None, what: str) -> None:
    """Raise `ChecksumMismatchError` unless `path` has sha256 `expected` (None: nothing to check)."""
    if expected is None:
        return
    actual = file_sha256(path)
    if actual != expected:
        raise ChecksumMismatchError(
            f"{what}: sha256 mismatch for {path}\n  expected {expected}\n  actual   {actual}\n"
            f"The file is corrupt, truncated or a different version. Delete it and fetch again, or "
            f"point {MIRROR_ENV} at a mirror whose copy passes `sha256sum -c SHA256SUMS`.")


# ----------------------------------------------------------------------------------------------
# fetch
# ----------------------------------------------------------------------------------------------

def _how_to_get(f: DataFile) -> str:
    return (f"To get it: set {MIRROR_ENV}=/path/to/mirror (a folder laid out like the bertlab data "
            f"mirror, holding {f.path}), or go online (unset {OFFLINE_ENV}) so it can be downloaded into "
            f"{cache_dir()}.")


def available_splits(dataset: str) -> list[str]:
    """Splits of `dataset` usable without the network: in the mirror or already in the cache.

    WikiText-103 on this project's mirror gives [] and WikiText-2 gives ["valid", "test"], so a
    caller can fall back (e.g. to the books corpus) explicitly instead of failing late.
    """
    mirror = mirror_dir()
    out = []
    for f in files_of(dataset):
        in_mirror = mirror is not None and f.in_mirror and (mirror / f.path).is_file()
        in_cache = (cache_dir() / f.download_path).is_file()
        if in_mirror or in_cache:
            out.append(f.split)
    return out


def fetch(name: str | DataFile, *, progress: bool = False) -> Path:
    """Local path to a registered data file, checked against its pinned sha256.

    Order: the mirror (``$BERTLAB_DATA_MIRROR``), the cache (``$BERTLAB_CACHE``), then the
    file's download sources.  Gzipped mirror files (books, wiki) are returned as the ``.gz``;
    downloads of them are the raw text (use `open_text`, which reads both).
    """
    f = lookup(name)
    mirror = mirror_dir()
    if mirror is not None and f.in_mirror:
        candidate = mirror / f.path
        if candidate.is_file():
            verify(candidate, f.sha256, f"{f.name} in the mirror {mirror}")
            return candidate

    cached = cache_dir() / f.download_path
    if cached.is_file():
        try:
            _verify_download(cached, f)
            return cached
        except ChecksumMismatchError as err:  # corrupt or partial: fetch it again
            log.warning("%s; fetching it again", str(err).splitlines()[0])
            cached.unlink()

    if f.derive:
        return _derive(f, progress=progress)

    problems = []
    if not f.sources:
        problems.append("no download source is registered (the file exists only in the mirror)")
    elif _offline():
        problems += [f"{source.url}: not tried ({OFFLINE_ENV}=1)" for source in f.sources]
    else:
        for source in f.sources:
            try:
                path = _download(f, source, cached, progress=progress)
                return path
            except ChecksumMismatchError as err:
                problems.append(f"{source.url}: {err}")
            except Exception as err:  # network errors come in many classes (requests, OSError, ...)
                problems.append(f"{source.url}: {type(err).__name__}: {err}")
    mismatches = [p for p in problems if "sha256 mismatch" in p or "hash of downloaded file" in p]
    tried = "\n".join(f"  - {p}" for p in problems)
    where = f"the mirror {mirror}" if mirror is not None else f"no mirror ({MIRROR_ENV} is unset)"
    message = (f"cannot get {f.name} ({f.path}): it is in neither {where} nor the cache {cache_dir()}, "
               f"and downloading failed:\n{tried}\n")
    if mismatches:
        raise ChecksumMismatchError(
            message + f"A source served bytes that differ from the pinned copy (sha256 {f.download_sha256}); "
            f"bertlab does not accept them silently. Use the mirror copy ({MIRROR_ENV}=/path/to/mirror "
            f"holding {f.path}) or see data/README.md, 'Checksum policy'.")
    if not f.in_mirror:
        others = [s for s in available_splits(f.dataset) if s != f.split]
        raise SplitNotAvailableError(
            message + f"The project mirror does not hold this split ({f.note or 'see data/README.md'}). "
            f"Splits of {f.dataset!r} available offline: {others or 'none'}. "
            f"Go online to download it, or choose an available split or corpus.")
    raise DataUnavailableError(message + _how_to_get(f))


def _verify_download(path: Path, f: DataFile) -> None:
    expected = f.download_sha256
    if expected is None:  # no published hash: compare with the hash recorded when it was extracted
        expected = _recorded_member_hash(path)
    verify(path, expected, f"{f.name} in the cache")


def _recorded_member_hash(path: Path) -> str | None:
    record = path.with_name(path.name + ".sha256")
    return record.read_text().strip() if record.is_file() else None


def _download(f: DataFile, source: Source, target: Path, *, progress: bool) -> Path:
    """Download one source with pooch (hash-checked), extract a zip member, verify, place at `target`.

    Bytes that fail the check are deleted, so nothing wrong is ever left where the file belongs.
    """
    import pooch

    target.parent.mkdir(parents=True, exist_ok=True)
    downloader = pooch.HTTPDownloader(progressbar=progress, timeout=DOWNLOAD_TIMEOUT_S)
    tmp = target.with_name(target.name + ".part")
    try:
        if source.member is None:
            got = Path(pooch.retrieve(source.url, known_hash=source.known_hash, fname=tmp.name,
                                      path=tmp.parent, downloader=downloader))
        else:  # a member of a zip archive: keep the archive in the cache's archives/ folder
            archive = pooch.retrieve(source.url, known_hash=source.known_hash,
                                     fname=source.url.rstrip("/").split("/")[-1],
                                     path=cache_dir() / "archives", downloader=downloader)
            with zipfile.ZipFile(archive) as z, z.open(source.member) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
            got = tmp
    except ValueError as err:  # pooch reports a hash mismatch as ValueError
        tmp.unlink(missing_ok=True)
        raise ChecksumMismatchError(f"sha256 mismatch: {err}") from None
    actual = sha256_file(got)
    expected = f.download_sha256
    if expected is not None and actual != expected:
        got.unlink()
        raise ChecksumMismatchError(f"sha256 mismatch: {source.url} gave sha256 {actual}, expected {expected}")
    if expected is None:  # no published hash: the archive's pinned hash vouches; record the member's
        target.with_name(target.name + ".sha256").write_text(actual + "\n")
    os.replace(got, target)
    _save_stamp(target, actual)
    return target


# ----------------------------------------------------------------------------------------------
# Files rebuilt by a recipe: GLUE's MRPC split, from the SentEval source files
# ----------------------------------------------------------------------------------------------

def _derive(f: DataFile, *, progress: bool) -> Path:
    if f.derive != "glue-mrpc":
        raise DataUnavailableError(f"{f.name}: unknown derive recipe {f.derive!r}")
    out = cache_dir() / f.download_path
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(build_mrpc_split(f.split, progress=progress))
    os.replace(tmp, out)
    _verify_download(out, f)
    return out


def build_mrpc_split(split: str, *, progress: bool = False) -> bytes:
    """GLUE's MRPC train/dev/test.tsv, rebuilt from ``msr_paraphrase_{train,test}.txt`` and ``dev_ids.tsv``.

    GLUE's recipe: dev is the train pairs listed in ``dev_ids.tsv``, train is the rest (header and
    BOM kept, each row's fields rewritten after stripping the line), test is the test file with an
    ``index`` column instead of the label.
    """
    if split == "test":
        lines = fetch("mrpc:msr_test", progress=progress).read_bytes().decode("utf-8-sig").split("\n")
        out = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
        for i, line in enumerate(line for line in lines[1:] if line.strip()):
            _label, id1, id2, s1, s2 = line.strip().split("\t")
            out.append(f"{i}\t{id1}\t{id2}\t{s1}\t{s2}\n")
        return "".join(out).encode("utf-8")
    dev_ids = {tuple(line.strip().split("\t")) for line in
               fetch("mrpc:dev_ids", progress=progress).read_text(encoding="utf-8").splitlines() if line.strip()}
    lines = fetch("mrpc:msr_train", progress=progress).read_text(encoding="utf-8").split("\n")
    out = [lines[0].strip() + "\n"]  # header, with its BOM
    for line in lines[1:]:
        if not line.strip():
            continue
        label, id1, id2, s1, s2 = line.strip().split("\t")
        if ((id1, id2) in dev_ids) == (split == "dev"):
            out.append(f"{label}\t{id1}\t{id2}\t{s1}\t{s2}\n")
    return "".join(out).encode("utf-8")


# ----------------------------------------------------------------------------------------------
# Reading helpers
# ----------------------------------------------------------------------------------------------

def open_text(path: Path) -> io.TextIOBase:
    """Open a text data file, transparently gunzipping ``*.gz`` (UTF-8, strict)."""
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


@dataclass
class Skipped:
    """One item a reader did not return, and why."""

    file: str
    line: int | None  # 1-based line number, None for JSON records
    item: str | None  # example id where there is one
    reason: str
    excerpt: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.item:
            where += f" [{self.item}]"
        return f"{where}: {self.reason}" + (f" -- {self.excerpt!r}" if self.excerpt else "")


@dataclass
class LoadReport:
    """What a reader read: how many records, and every item it skipped or found suspicious."""

    file: str
    loaded: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[Skipped] = field(default_factory=list)  # kept, but worth knowing (e.g. IOB2 repairs)

    @property
    def ok(self) -> bool:
        return not self.skipped

    def __str__(self) -> str:
        lines = [f"{self.file}: {self.loaded} loaded, {len(self.skipped)} skipped, {len(self.warnings)} warnings"]
        lines += [f"  skipped {s}" for s in self.skipped[:20]]
        lines += [f"  warning {s}" for s in self.warnings[:20]]
        more = len(self.skipped) + len(self.warnings) - 40
        if more > 0:
            lines.append(f"  ... and {more} more")
        return "\n".join(lines)


class _Recorder:
    """Collects skipped items into a report, or raises on the first one when strict."""

    def __init__(self, report: LoadReport, strict: bool):
        self.report, self.strict = report, strict

    def skip(self, line: int | None, reason: str, excerpt: str = "", item: str | None = None) -> None:
        s = Skipped(self.report.file, line, item, reason, excerpt[:120])
        if self.strict:
            raise DataFormatError(f"{s} (strict=True; pass strict=False to skip and report such rows)")
        self.report.skipped.append(s)

    def warn(self, line: int | None, reason: str, excerpt: str = "", item: str | None = None) -> None:
        self.report.warnings.append(Skipped(self.report.file, line, item, reason, excerpt[:120]))


def _resolve(split_or_path: str | Path, template: str) -> Path:
    """A split name ("dev") becomes a fetched registry file; anything path-like is used as is."""
    p = Path(split_or_path)
    if isinstance(split_or_path, Path) or os.sep in str(split_or_path) or p.suffix:
        if not p.is_file():
            raise FileNotFoundError(f"no such data file: {p}")
        return p
    return fetch(template.format(split=split_or_path))


def _decoded_lines(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line number, text, problem) per line; an undecodable line has text None and says why."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):  # utf-8-sig: drop the BOM
        data = data[3:]
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":  # the final newline does not start a line
        raw_lines.pop()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            yield number, raw.decode("utf-8").rstrip("\r"), ""
        except UnicodeDecodeError as err:
            yield number, None, (f"undecodable bytes (not UTF-8) at byte {err.start}: "
                                 f"{raw.decode('utf-8', 'replace')[:120]!r}")


def _tsv_rows(path: Path, expected_header: Sequence[str], rec: _Recorder) -> Iterator[tuple[int, list[str]]]:
    """Rows of a GLUE TSV (tab-separated, QUOTE_NONE, UTF-8 with optional BOM), header checked."""
    lines = _decoded_lines(path)
    first = next(lines, None)
    if first is None or first[1] is None:
        raise DataFormatError(f"{path}:1: empty or undecodable header, expected {list(expected_header)}")
    header = next(csv.reader([first[1]], delimiter="\t", quoting=csv.QUOTE_NONE))
    if header != list(expected_header):
        raise DataFormatError(f"{path}:1: header {header} is not {list(expected_header)}: is this the right file?")
    for number, text, problem in lines:
        if text is None:
            rec.skip(number, problem)
            continue
        if not text.strip():
            rec.skip(number, "empty line")
            continue
        row = next(csv.reader([text], delimiter="\t", quoting=csv.QUOTE_NONE))
        if len(row) != len(header):
            rec.skip(number, f"{len(row)} tab-separated fields, expected {len(header)}", text)
            continue
        yield number, row


# ----------------------------------------------------------------------------------------------
# GLUE: SST-2, MRPC, RTE, QNLI
# ----------------------------------------------------------------------------------------------

SST2_LABELS = ("negative", "positive")
MRPC_LABELS = ("not_equivalent", "equivalent")
RTE_LABELS = ("entailment", "not_entailment")
QNLI_LABELS = ("entailment", "not_entailment")


@dataclass
class SentenceExample:
    """A single-sentence classification example (SST-2). ``label`` is None on the unlabelled test split."""

    id: str
    sentence: str
    label: int | None


@dataclass
class PairExample:
    """A sentence-pair classification example (MRPC, RTE, QNLI). ``label`` is None on test."""

    id: str
    text_a: str
    text_b: str
    label: int | None


def _label(value: str, names: Sequence[str], numeric: bool) -> int:
    if numeric:
        label = int(value)
        if not 0 <= label < len(names):
            raise ValueError
        return label
    return list(names).index(value)


def read_sst2(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[SentenceExample], LoadReport]:
    """SST-2 (Socher et al. 2013, as in GLUE): ``sentence\\tlabel``, label 0 = negative, 1 = positive."""
    path = _resolve(split_or_path, "glue/SST-2/{split}.tsv")
    report = LoadReport(str(path))
    rec = _Recorder(report, strict)
    test = _first_field(path) == "index"
    header = ("index", "sentence") if test else ("sentence", "label")
    out = []
    for number, row in _tsv_rows(path, header, rec):
        if test:
            out.append(SentenceExample(row[0], row[1].strip(), None))
            continue
        sentence = row[0].strip()
        if not sentence:
            rec.skip(number, "empty sentence", "\t".join(row))
            continue
        try:
            label = _label(row[1], SST2_LABELS, numeric=True)
        except ValueError:
            rec.skip(number, f"label {row[1]!r} is not 0 or 1", "\t".join(row))
            continue
        out.append(SentenceExample(f"{Path(path).stem}-{number - 1}", sentence, label))
    report.loaded = len(out)
    return out, report


def _first_field(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.readline().decode("utf-8", "replace").lstrip("\ufeff")
    return head.split("\t")[0].strip()


def _read_pairs(path: Path, names: Sequence[str], columns: dict, strict: bool) -> tuple[list[PairExample], LoadReport]:
    """Shared reader of GLUE pair TSVs; `columns` maps header -> (id, a, b, label) column names."""
    report = LoadReport(str(path))
    rec = _Recorder(report, strict)
    test = columns["label"] not in _header_of(path)
    header = columns["test_header"] if test else columns["header"]
    idx = {name: header.index(name) for name in header}
    out = []
    for number, row in _tsv_rows(path, header, rec):
        id_ = "-".join(row[idx[c]] for c in columns["id"])
        a, b = row[idx[columns["a"]]].strip(), row[idx[columns["b"]]].strip()
        if not a or not b:
            rec.skip(number, "empty text", "\t".join(row), item=id_)
            continue
        label = None
        if not test:
            try:
                label = _label(row[idx[columns["label"]]], names, numeric=columns["numeric"])
            except ValueError:
                rec.skip(number, f"label {row[idx[columns['label']]]!r} not in {list(names)}", "\t".join(row), item=id_)
                continue
        out.append(PairExample(id_, a, b, label))
    report.loaded = len(out)
    return out, report


def _header_of(path: Path) -> list[str]:
    with open(path, "rb") as f:
        return f.readline().decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r\n").split("\t")


def read_mrpc(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[PairExample], LoadReport]:
    """MRPC (Dolan & Brockett 2005, GLUE split). id = "<#1 ID>-<#2 ID>"; label 1 = paraphrase."""
    path = _resolve(split_or_path, "glue/MRPC/{split}.tsv")
    return _read_pairs(path, MRPC_LABELS, {
        "header": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
        "test_header": ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
        "id": ["#1 ID", "#2 ID"], "a": "#1 String", "b": "#2 String", "label": "Quality", "numeric": True,
    }, strict)


def read_rte(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[PairExample], LoadReport]:
    """RTE (GLUE): label 0 = entailment, 1 = not_entailment (GLUE's order)."""
    path = _resolve(split_or_path, "glue/RTE/{split}.tsv")
    return _read_pairs(path, RTE_LABELS, {
        "header": ["index", "sentence1", "sentence2", "label"],
        "test_header": ["index", "sentence1", "sentence2"],
        "id": ["index"], "a": "sentence1", "b": "sentence2", "label": "label", "numeric": False,
    }, strict)


def read_qnli(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[PairExample], LoadReport]:
    """QNLI (GLUE v2): text_a = question, text_b = sentence; 0 = entailment, 1 = not_entailment."""
    path = _resolve(split_or_path, "glue/QNLI/{split}.tsv")
    return _read_pairs(path, QNLI_LABELS, {
        "header": ["index", "question", "sentence", "label"],
        "test_header": ["index", "question", "sentence"],
        "id": ["index"], "a": "question", "b": "sentence", "label": "label", "numeric": False,
    }, strict)


# ----------------------------------------------------------------------------------------------
# SQuAD v1.1
# ----------------------------------------------------------------------------------------------

@dataclass
class SquadExample:
    """One SQuAD v1.1 question. ``answers`` are (text, answer_start) with ``context[start:start+len(text)] == text``."""

    id: str
    title: str
    question: str
    context: str
    answers: list[tuple[str, int]]


def read_squad(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[SquadExample], LoadReport]:
    """SQuAD v1.1 (Rajpurkar et al. 2016).

    An answer whose text is not at ``answer_start`` in its context is dropped and reported; a
    question left with no valid answer is skipped and reported.
    """
    path = _resolve(split_or_path, "squad-v1.1/{split}-v1.1.json")
    report = LoadReport(str(path))
    rec = _Recorder(report, strict)
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise DataFormatError(f"{path}: not UTF-8 at byte {err.start}") from None
    except json.JSONDecodeError as err:
        raise DataFormatError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    if not isinstance(data, dict) or "data" not in data:
        raise DataFormatError(f"{path}: expected a JSON object with a 'data' list (SQuAD format)")
    if data.get("version") not in (None, "1.1"):
        rec.warn(None, f"version is {data.get('version')!r}, expected '1.1'")
    out, seen = [], set()
    for a, article in enumerate(data["data"]):
        title = article.get("title", "")
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            if not isinstance(context, str) or not context.strip():
                rec.skip(None, f"article {a} paragraph {p}: missing or empty context", item=title)
                continue
            for qa in paragraph.get("qas", []):
                qid = str(qa.get("id", f"article{a}-paragraph{p}-?"))
                question = qa.get("question")
                if not isinstance(question, str) or not question.strip():
                    rec.skip(None, "missing or empty question", item=qid)
                    continue
                if qid in seen:
                    rec.skip(None, "duplicate question id", question, item=qid)
                    continue
                answers = []
                for k, ans in enumerate(qa.get("answers", [])):
                    text, start = ans.get("text"), ans.get("answer_start")
                    if not isinstance(text, str) or not isinstance(start, int):
                        rec.skip(None, f"answer {k}: missing text or answer_start", str(ans), item=qid)
                    elif context[start:start + len(text)] != text:
                        rec.skip(None, f"answer {k}: {text!r} is not at answer_start {start} "
                                       f"(context there: {context[start:start + len(text)]!r})", text, item=qid)
                    else:
                        answers.append((text, start))
                if not answers:
                    rec.skip(None, "no valid answer", question, item=qid)
                    continue
                seen.add(qid)
                out.append(SquadExample(qid, title, question, context, answers))
    report.loaded = len(out)
    return out, report


# ----------------------------------------------------------------------------------------------
# CoNLL-2003 NER
# ----------------------------------------------------------------------------------------------

CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


@dataclass
class NerSentence:
    """One CoNLL-2003 sentence: words and their IOB2 NER tags (plus POS and chunk columns)."""

    id: str  # "<split>-<sentence number>"
    words: list[str]
    tags: list[str]
    pos: list[str]
    chunks: list[str]
    document: int  # index of the -DOCSTART- document this sentence belongs to
    line: int  # line of the first word in the file


def read_conll2003(split_or_path: str | Path = "train", *, strict: bool = False) -> tuple[list[NerSentence], LoadReport]:
    """CoNLL-2003 English NER (Tjong Kim Sang & De Meulder 2003) in IOB2: ``word POS chunk NER``.

    Blank lines end sentences and ``-DOCSTART-`` lines start documents.  A sentence with a line
    that is not four columns or carries an unknown tag is skipped and reported as a whole (its
    tags would be misaligned otherwise); an ``I-X`` tag that does not continue an ``X`` entity
    (invalid IOB2) is kept and reported as a warning.
    """
    path = _resolve(split_or_path, "conll2003/{split}.txt")
    report = LoadReport(str(path))
    rec = _Recorder(report, strict)
    stem = Path(path).stem
    out: list[NerSentence] = []
    document = -1
    rows: list[tuple[int, list[str]]] = []
    bad: tuple[int, str, str] | None = None

    def flush() -> None:
        nonlocal rows, bad
        if bad is not None:
            rec.skip(bad[0], f"sentence starting at line {rows[0][0] if rows else bad[0]} skipped: {bad[1]}", bad[2])
        elif rows:
            words, pos, chunks, tags = (list(col) for col in zip(*(r for _, r in rows)))
            sentence = NerSentence(f"{stem}-{len(out)}", words, tags, pos, chunks, max(document, 0), rows[0][0])
            for i, tag in enumerate(tags):
                prev = tags[i - 1] if i else "O"
                if tag.startswith("I-") and prev[2:] != tag[2:]:
                    rec.warn(rows[i][0], f"invalid IOB2: {tag} after {prev}", words[i], item=sentence.id)
            out.append(sentence)
        rows, bad = [], None

    for number, text, problem in _decoded_lines(Path(path)):
        if text is None:
            if bad is None:
                bad = (number, problem, "")
            continue
        if not text.strip():
            flush()
            continue
        cols = text.split()
        if cols[0] == "-DOCSTART-":
            flush()
            document += 1
            continue
        if bad is not None:
            continue
        if len(cols) != 4:
            bad = (number, f"{len(cols)} columns, expected 4 (word POS chunk NER)", text)
        elif cols[3] not in CONLL_TAGS:
            bad = (number, f"unknown NER tag {cols[3]!r}", text)
        else:
            rows.append((number, cols))
    flush()
    report.loaded = len(out)
    return out, report


__all__ = [
    "DataError", "DataUnavailableError", "SplitNotAvailableError", "ChecksumMismatchError", "DataFormatError",
    "cache_dir", "mirror_dir", "lookup", "files_of", "available_splits", "fetch", "verify", "file_sha256",
    "open_text", "build_mrpc_split", "LoadReport", "Skipped",
    "SentenceExample", "PairExample", "SquadExample", "NerSentence",
    "SST2_LABELS", "MRPC_LABELS", "RTE_LABELS", "QNLI_LABELS", "CONLL_TAGS",
    "read_sst2", "read_mrpc", "read_rte", "read_qnli", "read_squad", "read_conll2003",
]
