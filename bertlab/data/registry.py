"""The dataset registry: every data file bertlab reads, where it comes from, and its sha256.

The facts are package data, in `registry.json`: "files" maps each file's path in the mirror's layout
to the fields of a `DataFile` (books and wiki add "info"), "licences" holds the licence texts. The
pinned sha256, not a URL, is the dataset (data/README.md, "Checksum policy"). Books and wiki are
gzipped in the mirror (`sha256`) while their sources serve raw text (`raw_sha256`). To add a file,
add an entry (fields left at their default are left out); tests/test_registry.py checks each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

MANIFEST = "registry.json"


@dataclass(frozen=True)
class Source:
    """One place to download a file from."""

    url: str
    known_hash: str | None  # "sha256:<hex>" / "md5:<hex>" of what `url` serves; None = unknown
    member: str | None = None  # path inside a zip archive at `url`, None = `url` is the file
    note: str = ""


@dataclass(frozen=True)
class DataFile:
    """One file of one dataset."""

    path: str  # relative path in the mirror layout, e.g. "glue/SST-2/dev.tsv"
    dataset: str  # "sst2", "mrpc", "rte", "qnli", "squad", "conll2003", "wikitext-2", "wikitext-103", "books", "wiki"
    split: str  # "train" / "dev" / "valid" / "test"; for books and wiki the file's stem ("pg11", "AA_wiki_00")
    sha256: str | None  # of the bytes at `path`; None = no checksum published (see `note`)
    size: int | None  # bytes at `path`, None if unknown
    in_mirror: bool  # does the offline mirror hold this file?
    licence: str
    url: str  # canonical public URL
    sources: tuple[Source, ...] = ()  # where `bertlab.data.download.fetch` may download it from, in order
    gzip: bool = False  # mirror stores the file gzipped; sources serve the raw text
    raw_sha256: str | None = None  # sha256 of the decompressed text (= what sources serve) when gzip
    derive: str | None = None  # name of a recipe that rebuilds the file from other registry files
    note: str = ""

    @property
    def name(self) -> str:
        """Short name accepted by `fetch`: "<dataset>:<split>", e.g. "sst2:dev"."""
        return f"{self.dataset}:{self.split}"

    @property
    def download_path(self) -> str:
        """Relative path of the downloaded (raw, never gzipped) copy in the cache."""
        return self.path[: -len(".gz")] if self.gzip else self.path

    @property
    def download_sha256(self) -> str | None:
        """sha256 of what a download yields: the raw text for gzipped mirror files."""
        return self.raw_sha256 if self.gzip else self.sha256


def load_manifest() -> dict:
    """registry.json as parsed JSON: {"licences": {name: text}, "files": {path: entry}}."""
    return json.loads(resources.files("bertlab.data").joinpath(MANIFEST).read_text(encoding="utf-8"))


def data_file(path: str, entry: dict) -> DataFile:
    """The `DataFile` of one manifest entry (its "info" aside); an unknown key is a TypeError."""
    fields = {k: v for k, v in entry.items() if k != "info"}
    sources = tuple(Source(**s) for s in fields.pop("sources", ()))
    return DataFile(path, **fields, sources=sources)


_MANIFEST = load_manifest()

CC_BY_SA: str = _MANIFEST["licences"]["CC_BY_SA"]
WIKITEXT_LICENCE: str = _MANIFEST["licences"]["WIKITEXT_LICENCE"]
GLUE_NOTE_LICENCE: str = _MANIFEST["licences"]["GLUE_NOTE_LICENCE"]
MRPC_LICENCE: str = _MANIFEST["licences"]["MRPC_LICENCE"]
CONLL_LICENCE: str = _MANIFEST["licences"]["CONLL_LICENCE"]
PD_US: str = _MANIFEST["licences"]["PD_US"]
WIKI_LICENCE: str = _MANIFEST["licences"]["WIKI_LICENCE"]

#: Every registered file, keyed by its mirror path, in the manifest's order.
FILES: dict[str, DataFile] = {path: data_file(path, entry) for path, entry in _MANIFEST["files"].items()}

#: Books metadata (title, author, raw bytes, words), keyed by the book's split name ("pg11").
BOOK_INFO: dict[str, dict] = {
    FILES[path].split: dict(entry["info"])
    for path, entry in _MANIFEST["files"].items()
    if FILES[path].dataset == "books" and "info" in entry
}

DATASETS: tuple[str, ...] = tuple(dict.fromkeys(f.dataset for f in FILES.values()))
