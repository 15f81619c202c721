"""Tests of bertlab.data.registry: registry.json (the manifest of every data file) loads into
`DataFile`/`Source` values of the declared types, loses nothing on the way, and every checksum in
it is well formed. Nothing is downloaded and no mirror is needed."""

from __future__ import annotations

import dataclasses
import json
import re
from importlib import resources

import pytest

from bertlab.data import registry
from bertlab.data.registry import BOOK_INFO, DATASETS, FILES, DataFile, Source

SHA256 = re.compile(r"[0-9a-f]{64}")
KNOWN_HASH = re.compile(r"sha256:[0-9a-f]{64}|md5:[0-9a-f]{32}")
LICENCE_NAMES = ("CC_BY_SA", "WIKITEXT_LICENCE", "GLUE_NOTE_LICENCE", "MRPC_LICENCE", "CONLL_LICENCE", "PD_US")
LICENCE_NAMES += ("WIKI_LICENCE",)


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys in registry.json: {keys}"
    return dict(pairs)


@pytest.fixture(scope="module")
def manifest() -> dict:
    text = resources.files("bertlab.data").joinpath(registry.MANIFEST).read_text(encoding="utf-8")
    return json.loads(text, object_pairs_hook=_no_duplicate_keys)


def _non_default(obj) -> dict:
    """The fields of a dataclass value that differ from their defaults, as the manifest writes them."""
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.default is dataclasses.MISSING or value != f.default or type(value) is not type(f.default):
            out[f.name] = [_non_default(s) for s in value] if f.name == "sources" else value
    return out


def test_manifest_round_trips_through_the_dataclasses(manifest):
    """Every key and value of every entry comes back from `FILES` (and books' info from BOOK_INFO)
    unchanged: nothing in the JSON is ignored, retyped or reordered."""
    assert set(manifest) == {"licences", "files"}
    assert list(FILES) == list(manifest["files"])
    for path, entry in manifest["files"].items():
        written = _non_default(FILES[path])
        assert written.pop("path") == path
        assert {**written, **({"info": entry["info"]} if "info" in entry else {})} == entry, path
        assert list(written) == [k for k in entry if k != "info"], f"{path}: keys out of field order"
    assert DATASETS == tuple(dict.fromkeys(e["dataset"] for e in manifest["files"].values()))


def test_an_unknown_key_is_an_error_not_ignored():
    with pytest.raises(TypeError, match="sha265"):
        registry.data_file("x/y.txt", {"dataset": "x", "split": "y", "sha265": None})
    entry = {k: v for k, v in _non_default(FILES["glue/RTE/dev.tsv"]).items() if k != "path"}
    assert registry.data_file("glue/RTE/dev.tsv", entry) == FILES["glue/RTE/dev.tsv"]
    with pytest.raises(TypeError, match="'hash'"):
        registry.data_file("x/y.txt", {**entry, "sources": [{"url": "https://example.org/", "hash": ""}]})


def _check_types(obj) -> None:
    """Each field holds a value of its annotated type (bool is not an int here, as in JSON)."""
    allowed = {"str": (str,), "str | None": (str, type(None)), "int | None": (int, type(None)), "bool": (bool,)}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name == "sources":
            assert isinstance(value, tuple) and all(isinstance(s, Source) for s in value)
            for s in value:
                _check_types(s)
            continue
        assert type(value) in allowed[f.type], f"{obj!r}: {f.name}={value!r} is not {f.type}"


def test_every_file_has_typed_fields_and_well_formed_checksums():
    for path, f in FILES.items():
        assert isinstance(f, DataFile) and f.path == path
        _check_types(f)
        assert f.sha256 is None or SHA256.fullmatch(f.sha256), f"{path}: sha256 {f.sha256!r}"
        assert f.raw_sha256 is None or SHA256.fullmatch(f.raw_sha256), f"{path}: raw_sha256 {f.raw_sha256!r}"
        assert f.size is None or f.size > 0
        for s in f.sources:
            assert s.known_hash is None or KNOWN_HASH.fullmatch(s.known_hash), f"{path}: {s.known_hash!r}"
            assert s.url.startswith("https://"), f"{path}: {s.url}"
        if f.sha256 is None or not f.sources:  # an unknown checksum, or no source, is explained
            assert f.note or f.derive or f.in_mirror, path
        if f.gzip:  # the mirror's .gz and the raw text its sources serve are both pinned
            assert path.endswith(".gz") and f.raw_sha256 and f.sha256 != f.raw_sha256, path
            assert all(s.known_hash == "sha256:" + f.raw_sha256 for s in f.sources), path
        else:
            assert f.raw_sha256 is None, path
    names = [f.name for f in FILES.values()]
    assert len(names) == len(set(names)), "two files share a '<dataset>:<split>' name"


def test_licences_are_named_once_and_used(manifest):
    texts = {name: getattr(registry, name) for name in LICENCE_NAMES}
    assert texts == manifest["licences"]
    used = {f.licence for f in FILES.values()}
    for f in FILES.values():
        assert any(f.licence.startswith(t) for t in texts.values()), f"{f.path}: licence {f.licence!r}"
    assert all(any(u.startswith(t) for u in used) for t in texts.values())


def test_book_info_covers_every_book():
    books = {f.split for f in FILES.values() if f.dataset == "books" and f.gzip}
    assert set(BOOK_INFO) == books and len(books) == 153
    for split, info in BOOK_INFO.items():
        assert list(info) == ["title", "author", "raw_bytes", "words"], split
        assert info["title"] and info["author"] and info["raw_bytes"] > info["words"] > 0, split
