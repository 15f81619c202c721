"""Where the book's recorded runs live (the repository's data/ folder), and how a reader without
a checkout gets them.

`records_dir(*parts)` looks in $BERTLAB_RECORDS, then in the data/ folder of a checkout, then
fetches the published copy into the download cache (a reader on Colab, with bertlab from pip).
Published means the repository's raw files at the commit that last changed data/, listed with
their sha256 in `published_records.json` (`python -m lab.publish_records --manifest` writes it in
a checkout); $BERTLAB_RECORDS_URL overrides the base with a URL or a folder. A record that cannot
be fetched is warned about once and left absent; one whose bytes differ raises `ChecksumMismatchError`.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from bertlab.data.download import DataUnavailableError, cache_dir, fetch_published

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
        f"shown; the page goes on without it. Set ${URL_ENV} to a folder written by `python -m "
        f"lab.publish_records --out DIR` in a clone of the repository, or go online, and run the page again."
    )
