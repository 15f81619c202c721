"""Getting dataset files, checked: the mirror, the download cache, the canonical URLs.

`fetch(name)` returns a local path to a registered file (`bertlab.data.registry`): from the mirror
($BERTLAB_DATA_MIRROR), else the cache ($BERTLAB_CACHE, default ~/.cache/bertlab), else downloaded
with `pooch`. Every byte is checked against the registry's sha256: a corrupt mirror file raises
`ChecksumMismatchError`, a corrupt cache file is fetched again, a source serving other bytes is
never accepted. A file that cannot be had raises `DataUnavailableError`, saying how to get it.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import shutil
import zipfile
from pathlib import Path

from bertlab.data.registry import DATASETS, FILES, DataFile, Source
from bertlab.files import sha256_file, write_bytes, write_text

log = logging.getLogger(__name__)

MIRROR_ENV = "BERTLAB_DATA_MIRROR"
CACHE_ENV = "BERTLAB_CACHE"
OFFLINE_ENV = "BERTLAB_OFFLINE"  # "1": never touch the network
DOWNLOAD_TIMEOUT_S = 60


class DataError(Exception):
    """Base class of every error bertlab.data.download and bertlab.data.task_data raise on purpose."""


class DataUnavailableError(DataError):
    """A file is in neither the mirror nor the cache, and downloading it failed or is disabled."""


class SplitNotAvailableError(DataUnavailableError):
    """The mirror lacks this split (e.g. WikiText-103 train), and it could not be downloaded."""


class ChecksumMismatchError(DataError):
    """Bytes on disk or from a URL differ from the registry's pinned sha256."""


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
    """The file of a mirror path ("glue/SST-2/dev.tsv") or short name ("sst2:dev", "books:pg11")."""
    if isinstance(name, DataFile):
        return name
    name = str(name)
    found = FILES.get(name) or next((f for f in FILES.values() if name in (f.name, f.download_path)), None)
    if found is not None:
        return found
    known = ", ".join(DATASETS)
    raise KeyError(
        f"unknown dataset file {name!r}: give a mirror path such as 'glue/SST-2/dev.tsv' or a "
        f"name '<dataset>:<split>' such as 'sst2:dev' (datasets: {known})"
    )


def files_of(dataset: str) -> list[DataFile]:
    """All registered files of one dataset, in registry order."""
    found = [f for f in FILES.values() if f.dataset == dataset]
    if not found:
        raise KeyError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    return found


# --- Checksums, with a record of files already verified (keyed by size and mtime) ---
def _load_stamps() -> dict:
    try:
        return json.loads((cache_dir() / "verified.json").read_text())
    except (OSError, ValueError):
        return {}


def _save_stamp(path: Path, digest: str) -> None:
    stamps = _load_stamps()
    st = path.stat()
    stamps[str(path.resolve())] = [st.st_size, st.st_mtime_ns, digest]
    target = cache_dir() / "verified.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text(target, json.dumps(stamps), fsync=False)  # atomic: a race loses a stamp, never corrupts
    except OSError:  # a read-only cache only costs re-hashing
        pass


def verify(path: Path, expected: str | None, what: str) -> None:
    """Raise `ChecksumMismatchError` unless `path` has sha256 `expected` (None: nothing to check).
    A file hashed before is not hashed again while its size and mtime are unchanged."""
    if expected is None:
        return
    st = path.stat()
    stamp = _load_stamps().get(str(path.resolve()))
    if stamp and stamp[0] == st.st_size and stamp[1] == st.st_mtime_ns:
        actual = stamp[2]
    else:
        actual = sha256_file(path)
        _save_stamp(path, actual)
    if actual != expected:
        raise ChecksumMismatchError(
            f"{what}: sha256 mismatch for {path}\n  expected {expected}\n  actual   {actual}\n"
            f"The file is corrupt, truncated or a different version. Delete it and fetch again, or "
            f"point {MIRROR_ENV} at a mirror whose copy passes `sha256sum -c SHA256SUMS`."
        )


def available_splits(dataset: str) -> list[str]:
    """Splits of `dataset` usable offline (in the mirror or the cache), so a caller can fall back early."""
    mirror = mirror_dir()
    return [
        f.split
        for f in files_of(dataset)
        if (mirror is not None and f.in_mirror and (mirror / f.path).is_file())
        or (cache_dir() / f.download_path).is_file()
    ]


def fetch(name: str | DataFile, *, progress: bool = False) -> Path:
    """Local path to a registered data file, checked: the mirror, the cache, then its sources. Books
    and wiki come gzipped from the mirror, raw when downloaded (`open_text` reads both)."""
    f = lookup(name)
    mirror = mirror_dir()
    if mirror is not None and f.in_mirror:
        candidate = mirror / f.path
        if candidate.is_file():
            verify(candidate, f.sha256, f"{f.name} in the mirror {mirror}")
            return candidate

    cached = cache_dir() / f.download_path
    if _cached_copy_ok(cached, lambda: _verify_download(cached, f)):
        return cached

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
                return _download(f, source, cached, progress=progress)
            except ChecksumMismatchError as err:
                problems.append(f"{source.url}: {err}")
            except Exception as err:  # network errors come in many classes (requests, OSError, ...)
                problems.append(f"{source.url}: {type(err).__name__}: {err}")
    mismatches = [p for p in problems if "sha256 mismatch" in p or "hash of downloaded file" in p]
    tried = "\n".join(f"  - {p}" for p in problems)
    where = f"the mirror {mirror}" if mirror is not None else f"no mirror ({MIRROR_ENV} is unset)"
    message = (
        f"cannot get {f.name} ({f.path}): it is in neither {where} nor the cache {cache_dir()}, "
        f"and downloading failed:\n{tried}\n"
    )
    if mismatches:
        raise ChecksumMismatchError(
            message + f"A source served bytes that differ from the pinned copy (sha256 {f.download_sha256}); "
            f"bertlab does not accept them silently. Use the mirror copy ({MIRROR_ENV}=/path/to/mirror "
            f"holding {f.path}) or see data/README.md, 'Checksum policy'."
        )
    if not f.in_mirror:
        others = [s for s in available_splits(f.dataset) if s != f.split]
        raise SplitNotAvailableError(
            message + f"The project mirror does not hold this split ({f.note or 'see data/README.md'}). "
            f"Splits of {f.dataset!r} available offline: {others or 'none'}. "
            f"Go online to download it, or choose an available split or corpus."
        )
    raise DataUnavailableError(
        message + f"To get it: set {MIRROR_ENV}=/path/to/mirror (a folder laid out like the bertlab data "
        f"mirror, holding {f.path}), or go online (unset {OFFLINE_ENV}) so it can be downloaded into "
        f"{cache_dir()}."
    )


def _cached_copy_ok(path: Path, check) -> bool:
    """Whether a cached file exists and passes `check`; a corrupt or partial one is deleted."""
    if not path.is_file():
        return False
    try:
        check()
        return True
    except ChecksumMismatchError as err:
        log.warning("%s; fetching it again", str(err).splitlines()[0])
        path.unlink()
        return False


def _verify_download(path: Path, f: DataFile) -> None:
    expected = f.download_sha256
    record = path.with_name(path.name + ".sha256")
    if expected is None and record.is_file():  # no published hash: the one recorded at extraction
        expected = record.read_text().strip()
    verify(path, expected, f"{f.name} in the cache")


def _download(f: DataFile, source: Source, target: Path, *, progress: bool) -> Path:
    """Download one source with pooch, extract a zip member, check it and only then place it at
    `target`: bytes that fail the check are deleted."""
    import pooch

    target.parent.mkdir(parents=True, exist_ok=True)
    downloader = pooch.HTTPDownloader(progressbar=progress, timeout=DOWNLOAD_TIMEOUT_S)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.part")  # two processes may fetch one file at once
    zipped = source.member is not None  # a member of a zip archive, kept in the cache's archives/ folder
    try:
        got = pooch.retrieve(
            source.url,
            known_hash=source.known_hash,
            fname=source.url.rstrip("/").split("/")[-1] if zipped else tmp.name,
            path=cache_dir() / "archives" if zipped else tmp.parent,
            downloader=downloader,
        )
        if zipped:
            with zipfile.ZipFile(got) as z, z.open(source.member) as src, open(tmp, "wb") as dst:
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
    os.replace(got, target)  # only checked bytes take the file's name
    _save_stamp(target, actual)
    return target


# --- Files the repository publishes (bertlab.data.records): the same checks ---
def fetch_published(path: str, sha256: str, *, source: str, cache: Path, progress: bool = False) -> Path:
    """Local copy of the published record `path` ("reference_run/config.json"), checked against
    `sha256`. `source`: a base URL (kept at `cache / path`) or a local folder (used in place)."""
    if "://" not in source:
        local = Path(source).expanduser() / path
        if not local.is_file():
            raise DataUnavailableError(
                f"the published record {path} is not in {local.parent} (the folder that "
                f"BERTLAB_RECORDS_URL names); write that folder again with `python -m lab.publish_records "
                f"--out {Path(source).expanduser()}` in a clone of the repository, or unset "
                f"BERTLAB_RECORDS_URL to fetch the records from the repository"
            )
        verify(local, sha256, f"the published record {path}")
        return local
    target = Path(cache) / path
    if _cached_copy_ok(target, lambda: verify(target, sha256, f"the published record {path} in the cache")):
        return target
    url = source.rstrip("/") + "/" + path
    how = (
        "To get it: go online, or write the records with `python -m lab.publish_records --out DIR` "
        "in a clone of the repository and set BERTLAB_RECORDS_URL=DIR."
    )
    if _offline():
        raise DataUnavailableError(
            f"cannot get the published record {path}: not in {target.parent}, "
            f"and {url} was not tried ({OFFLINE_ENV}=1). {how}"
        )
    f = DataFile(path, "records", path, sha256, None, False, "", url, (Source(url, f"sha256:{sha256}"),))
    try:
        return _download(f, f.sources[0], target, progress=progress)
    except ChecksumMismatchError:
        raise
    except Exception as err:  # network errors come in many classes (requests, OSError, ...)
        raise DataUnavailableError(
            f"cannot get the published record {path}: not in {target.parent}, and {url} failed "
            f"({type(err).__name__}: {err}). {how}"
        ) from None


# --- Files rebuilt by a recipe: GLUE's MRPC split ---
def _derive(f: DataFile, *, progress: bool) -> Path:
    if f.derive != "glue-mrpc":
        raise DataUnavailableError(f"{f.name}: unknown derive recipe {f.derive!r}")
    out = cache_dir() / f.download_path
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(out, build_mrpc_split(f.split, progress=progress), fsync=False)
    _verify_download(out, f)
    return out


def build_mrpc_split(split: str, *, progress: bool = False) -> bytes:
    """GLUE's MRPC train/dev/test.tsv, rebuilt from msr_paraphrase_{train,test}.txt as GLUE does:
    dev is the train pairs listed in dev_ids.tsv, train the rest, test has an index, no label."""
    if split == "test":
        lines = fetch("mrpc:msr_test", progress=progress).read_bytes().decode("utf-8-sig").split("\n")
        out = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
        for i, line in enumerate(line for line in lines[1:] if line.strip()):
            _label, id1, id2, s1, s2 = line.strip().split("\t")
            out.append(f"{i}\t{id1}\t{id2}\t{s1}\t{s2}\n")
        return "".join(out).encode("utf-8")
    dev_ids = {
        tuple(line.strip().split("\t"))
        for line in fetch("mrpc:dev_ids", progress=progress).read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    lines = fetch("mrpc:msr_train", progress=progress).read_text(encoding="utf-8").split("\n")
    out = [lines[0].strip() + "\n"]  # header, with its BOM
    for line in lines[1:]:
        if not line.strip():
            continue
        label, id1, id2, s1, s2 = line.strip().split("\t")
        if ((id1, id2) in dev_ids) == (split == "dev"):
            out.append(f"{label}\t{id1}\t{id2}\t{s1}\t{s2}\n")
    return "".join(out).encode("utf-8")


def open_text(path: Path) -> io.TextIOBase:
    """Open a UTF-8 text data file, gunzipping a *.gz."""
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")
