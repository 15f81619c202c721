"""Where the book's recorded runs live (the repository's data/ folder), and how a reader without
a checkout gets them.

`records_dir(*parts)` looks in $BERTLAB_RECORDS, then in the data/ folder of a checkout, then
fetches the published copy into the download cache (a reader on Colab, with bertlab from pip).
Published means the repository's raw files at the commit that last changed data/, listed with
their sha256 in `published_records.json` (`python -m bertlab publish-records --manifest` writes
it); $BERTLAB_RECORDS_URL overrides the base with a URL or a folder. A record that cannot be
fetched is warned about once and left absent; one whose bytes differ raises `ChecksumMismatchError`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from bertlab.data.download import DataUnavailableError, cache_dir, fetch_published
from bertlab.files import atomic_path, sha256_file, write_json

ENV_VAR = "BERTLAB_RECORDS"
URL_ENV = "BERTLAB_RECORDS_URL"
MANIFEST = "published_records.json"
_MARKERS = ("reference_run", "pilots")  # a records folder holds at least one of these
_RAW = "https://raw.githubusercontent.com/{owner}/{name}/{ref}/data/"

# What could not be fetched in this process (prefix -> reason), so a page can say why in one line.
unavailable: dict[str, str] = {}


def _candidates() -> list[Path]:
    package_root = Path(__file__).resolve().parents[2]  # the checkout, when bertlab runs from one
    here = Path.cwd()
    return [package_root / "data", here / "data", here.parent / "data"]


def checkout_records() -> Path | None:
    """The `data/` folder of the checkout bertlab runs from (or is run beside), or None."""
    return next((p for p in _candidates() if any((p / m).is_dir() for m in _MARKERS)), None)


@cache
def manifest() -> dict[str, Any]:
    """The published records' manifest: {"repository", "ref", "files": {path: {"size", "sha256"}}}."""
    return json.loads(resources.files("bertlab.data").joinpath(MANIFEST).read_text(encoding="utf-8"))


def base_url(m: dict[str, Any] | None = None) -> str:
    """Where records are fetched from: $BERTLAB_RECORDS_URL, else the manifest's repository at its commit."""
    override = os.environ.get(URL_ENV)
    if override:
        return override
    m = m or manifest()
    found = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?", m["repository"])
    if not found:
        raise ValueError(f"{MANIFEST}: repository {m['repository']!r} is not https://github.com/OWNER/NAME")
    return _RAW.format(owner=found[1], name=found[2], ref=m["ref"])


def published_files(prefix: str = "", m: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The manifest's entries at `prefix` (a file) or under it (a folder); "" means all."""
    files = (m or manifest())["files"]
    return {p: e for p, e in files.items() if not prefix or p == prefix or p.startswith(prefix + "/")}


def published_root() -> Path:
    """The folder of fetched records: a local $BERTLAB_RECORDS_URL, else the cache's folder of the commit."""
    source = os.environ.get(URL_ENV)
    if source and "://" not in source:
        return Path(source).expanduser()
    return cache_dir() / "records" / str(manifest()["ref"])[:12]


def fetch_records(*parts: str) -> Path:
    """Fetch every published record at or under `parts` and return its local path; raises
    `DataUnavailableError` or `ChecksumMismatchError`."""
    prefix = "/".join(parts)
    root = published_root()
    source = os.environ.get(URL_ENV) or base_url()
    for path, entry in published_files(prefix).items():
        fetch_published(path, entry["sha256"], source=source, cache=root)
    return root.joinpath(*parts)


def records_dir(*parts: str) -> Path:
    """The records folder, or `parts` inside it (see the module docstring)."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        root = Path(explicit)
        if not root.is_dir():
            raise FileNotFoundError(
                f"${ENV_VAR} is {explicit}, which is not a folder; point it at the data/ "
                f"folder of a checkout of the bertlab repository, or unset it"
            )
        return root.joinpath(*parts)
    local = checkout_records()
    if local is not None:
        return local.joinpath(*parts)
    prefix = "/".join(parts)
    try:
        return fetch_records(*parts)
    except DataUnavailableError as err:
        if prefix not in unavailable:
            unavailable[prefix] = str(err).splitlines()[0]
            warnings.warn(f"bertlab: a published record is unavailable, so pages show without it: {err}", stacklevel=2)
        return published_root().joinpath(*parts)


def missing_note(what: str, prefix: str) -> str:
    """One line (Markdown) for a page whose record the repository holds but this copy could not get."""
    why = unavailable.get(prefix) or next((v for k, v in unavailable.items() if prefix.startswith(k)), "")
    return (
        f"> The book's records could not be fetched here{f' ({why})' if why else ''}, so {what} is not "
        f"shown; the page goes on without it. Set ${URL_ENV} to a folder written by `python -m bertlab "
        f"publish-records`, or go online, and run the page again."
    )


# --- Publishing (from a checkout): the manifest, and a folder that serves every chapter offline ---
def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {checkout}: {done.stderr.strip()}")
    return done.stdout


def repository_url(checkout: Path) -> str:
    """The repository setting of the book's `_config.yml` (`repository: url:`)."""
    import yaml

    config = checkout / "_config.yml"
    url = ((yaml.safe_load(config.read_text()) or {}).get("repository") or {}).get("url")
    if not url:
        raise ValueError(f"{config} has no `repository: url:`; the records are published from that repository")
    return url.rstrip("/")


def build_manifest(checkout: Path) -> dict[str, Any]:
    """The manifest of a checkout: every file git tracks under data/ but its READMEs, at the commit
    that last changed one; refuses uncommitted changes (they would not be at that commit's URLs)."""
    checkout = Path(checkout)
    tracked = [p for p in sorted(_git(checkout, "ls-files", "-z", "--", "data").split("\0")) if p]
    published = [p for p in tracked if not p.endswith(".md")]
    dirty = _git(checkout, "status", "--porcelain", "--", *published).strip()
    if dirty:
        raise RuntimeError(
            f"data/ has changes that are not committed:\n{dirty}\ncommit them first: the records are "
            f"published as the files of a commit"
        )
    ref = _git(checkout, "log", "-1", "--format=%H", "--", *published).strip()
    files = {}
    for path in published:
        local = checkout / path
        files[path.removeprefix("data/")] = {"size": local.stat().st_size, "sha256": sha256_file(local)}
    return {"repository": repository_url(checkout), "ref": ref, "files": files}


def write_manifest(checkout: Path) -> Path:
    """Write the package's manifest from the checkout (`publish-records --manifest`)."""
    target = Path(checkout) / "bertlab" / "data" / MANIFEST
    write_json(target, build_manifest(checkout), indent=1)
    return target


def publish(out: Path, source: Path | None = None) -> list[Path]:
    """Copy the manifest's files, checked, and the manifest into `out`, laid out as the base URL serves
    them (default `source`: the checkout's data/): BERTLAB_RECORDS_URL=out serves every chapter offline."""
    source = Path(source) if source is not None else checkout_records()
    if source is None:
        raise FileNotFoundError("publish-records copies the records of a checkout: run it in a clone of the repository")
    out = Path(out)
    written = []
    for path, entry in manifest()["files"].items():
        src = source / path
        if not src.is_file() or sha256_file(src) != entry["sha256"]:
            raise RuntimeError(
                f"{src} is not the file the manifest publishes (missing or changed); commit data/, run "
                f"`python -m bertlab publish-records --manifest` and commit the manifest"
            )
        dst = out / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(dst, fsync=False) as tmp:
            shutil.copyfile(src, tmp)
        written.append(dst)
    write_json(out / MANIFEST, manifest(), indent=1, fsync=False)
    return written
