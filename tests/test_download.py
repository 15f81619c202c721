"""Tests of bertlab.data.download: the registry, checksummed fetch from the mirror, the cache or a URL.

They run on the real data mirror (``$BERTLAB_DATA_MIRROR``, or ``../shared/data`` beside the
repository) and on small broken files written to a temporary folder.  Downloads are exercised
against an HTTP server on 127.0.0.1 only.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import os
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from bertlab.data import download, task_data
from bertlab.data.download import ChecksumMismatchError, DataUnavailableError, SplitNotAvailableError, fetch
from bertlab.data.registry import FILES, Source

pytestmark = pytest.mark.usefixtures("mirror")


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("BERTLAB_CACHE", str(cache))
    return cache


def sha256sums(mirror: Path) -> dict[str, str]:
    out = {}
    for line in (mirror / "SHA256SUMS").read_text().splitlines():
        digest, path = line.split(None, 1)
        out[path.strip()] = digest
    return out


# ----------------------------------------------------------------------------------------------
# Registry and checksums
# ----------------------------------------------------------------------------------------------


def test_registry_covers_every_mirror_file_with_its_published_sha256(mirror):
    sums = sha256sums(mirror)
    in_mirror = {p: f for p, f in FILES.items() if f.in_mirror}
    assert set(in_mirror) == set(sums)
    for path, f in in_mirror.items():
        assert f.sha256 == sums[path], path
        assert f.licence and f.url.startswith("https://"), path
    # every file that is NOT in the mirror still says where to get it
    for f in FILES.values():
        if not f.in_mirror:
            assert f.sources, f.path


def test_books_and_wiki_pin_both_gz_and_raw_checksums(mirror):
    books = [f for f in FILES.values() if f.dataset == "books" and f.split != "INDEX"]
    wiki = [f for f in FILES.values() if f.dataset == "wiki"]
    assert len(books) == 153 and len(wiki) == 15
    f = FILES["books/pg11.txt.gz"]
    import gzip

    raw = gzip.decompress((mirror / f.path).read_bytes())
    assert hashlib.sha256(raw).hexdigest() == f.raw_sha256
    # the first source serves the pinned bytes; gutenberg.org is listed second, with its caveat
    assert "raw.githubusercontent.com/rcdm-uga" in f.sources[0].url
    assert "gutenberg.org" in f.sources[1].url and "mismatch" in f.sources[1].note


def test_fetch_returns_the_verified_mirror_file(mirror, tmp_cache):
    path = fetch("sst2:dev")
    assert path == mirror / "glue/SST-2/dev.tsv"
    assert fetch("glue/SST-2/dev.tsv") == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256sums(mirror)["glue/SST-2/dev.tsv"]


def test_corrupted_mirror_copy_is_reported(mirror, tmp_path, tmp_cache, monkeypatch):
    bad_mirror = tmp_path / "mirror"
    target = bad_mirror / "glue/RTE/dev.tsv"
    target.parent.mkdir(parents=True)
    data = bytearray((mirror / "glue/RTE/dev.tsv").read_bytes())
    data[1000] ^= 0x20  # one flipped bit
    target.write_bytes(bytes(data))
    monkeypatch.setenv("BERTLAB_DATA_MIRROR", str(bad_mirror))
    with pytest.raises(ChecksumMismatchError) as err:
        fetch("rte:dev")
    message = str(err.value)
    assert str(target) in message and FILES["glue/RTE/dev.tsv"].sha256 in message


def test_verification_record_notices_a_later_change(mirror, tmp_path, tmp_cache, monkeypatch):
    copy = tmp_path / "mirror" / "glue/RTE/dev.tsv"
    copy.parent.mkdir(parents=True)
    shutil.copy(mirror / "glue/RTE/dev.tsv", copy)
    monkeypatch.setenv("BERTLAB_DATA_MIRROR", str(tmp_path / "mirror"))
    assert fetch("rte:dev") == copy  # verified and recorded
    with open(copy, "r+b") as f:  # same size, different bytes, new mtime
        f.seek(10)
        f.write(b"#")
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    with pytest.raises(ChecksumMismatchError):
        fetch("rte:dev")


# ----------------------------------------------------------------------------------------------
# Downloads, against a server on the loopback interface
# ----------------------------------------------------------------------------------------------


class _Server:
    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.requests: list[str] = []
        self.httpd.requests = self.requests
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        super().do_GET()


def _without_mirror(monkeypatch, path: str, **changes):
    """Make `path` a download-only file whose sources are `changes['sources']`."""
    monkeypatch.delenv("BERTLAB_DATA_MIRROR", raising=False)
    monkeypatch.setitem(FILES, path, dataclasses.replace(FILES[path], **changes))


def test_partial_download_in_the_cache_is_detected_and_fetched_again(mirror, tmp_path, tmp_cache, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    original = (mirror / "glue/RTE/dev.tsv").read_bytes()
    (served / "dev.tsv").write_bytes(original)
    sha = FILES["glue/RTE/dev.tsv"].sha256
    with _Server(served) as server:
        _without_mirror(monkeypatch, "glue/RTE/dev.tsv", sources=(Source(server.url + "dev.tsv", "sha256:" + sha),))
        partial = tmp_cache / "glue/RTE/dev.tsv"
        partial.parent.mkdir(parents=True)
        partial.write_bytes(original[: len(original) // 3])  # an interrupted download
        path = fetch("rte:dev")
        assert path == partial and path.read_bytes() == original
        assert server.requests == ["/dev.tsv"]
        assert fetch("rte:dev") == path  # now cached: no second request
        assert server.requests == ["/dev.tsv"]
        examples, report = task_data.read_rte("dev")
        assert len(examples) == 277 and report.ok


def test_zip_member_download_and_changed_source_bytes(mirror, tmp_path, tmp_cache, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    good = (mirror / "glue/SST-2/dev.tsv").read_bytes()
    with zipfile.ZipFile(served / "SST-2.zip", "w") as z:
        z.writestr("SST-2/dev.tsv", good)
    with zipfile.ZipFile(served / "changed.zip", "w") as z:
        z.writestr("SST-2/dev.tsv", good.replace(b"\t1\n", b"\t0\n", 1))
    with _Server(served) as server:
        _without_mirror(
            monkeypatch, "glue/SST-2/dev.tsv", sources=(Source(server.url + "SST-2.zip", None, "SST-2/dev.tsv"),)
        )
        path = fetch("sst2:dev")
        assert path.read_bytes() == good
        # a source that now serves different bytes is an error that names the file and the mirror
        path.unlink()
        _without_mirror(
            monkeypatch, "glue/SST-2/dev.tsv", sources=(Source(server.url + "changed.zip", None, "SST-2/dev.tsv"),)
        )
        with pytest.raises(ChecksumMismatchError) as err:
            fetch("sst2:dev")
        message = str(err.value)
        assert "sst2:dev" in message and "changed.zip" in message and "BERTLAB_DATA_MIRROR" in message
        assert not path.exists()  # the wrong bytes are not left behind as if they were the dataset


def test_offline_without_mirror_or_cache_is_one_clear_error(tmp_cache, monkeypatch):
    monkeypatch.delenv("BERTLAB_DATA_MIRROR")
    monkeypatch.setenv("BERTLAB_OFFLINE", "1")
    with pytest.raises(DataUnavailableError) as err:
        fetch("squad:dev")
    message = str(err.value)
    assert "squad:dev" in message and "squad-v1.1/dev-v1.1.json" in message
    assert "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json" in message
    assert "BERTLAB_DATA_MIRROR=" in message and "online" in message
    assert not isinstance(err.value, SplitNotAvailableError)


def test_unreachable_url_names_the_url_and_the_fix(tmp_cache, monkeypatch):
    import socket

    with socket.socket() as s:  # a loopback port with nothing listening: connection refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/dev-v1.1.json"
    _without_mirror(monkeypatch, "squad-v1.1/dev-v1.1.json", sources=(Source(url, None),))
    with pytest.raises(DataUnavailableError) as err:
        fetch("squad:dev")
    assert url in str(err.value) and "BERTLAB_DATA_MIRROR=" in str(err.value)


def test_missing_split_says_so_and_lists_what_exists(tmp_cache, monkeypatch):
    monkeypatch.setenv("BERTLAB_OFFLINE", "1")
    with pytest.raises(SplitNotAvailableError) as err:
        fetch("squad:train")
    message = str(err.value)
    assert "does not hold this split" in message and "['dev']" in message
    assert download.available_splits("squad") == ["dev"]
    assert download.available_splits("wikitext-2") == ["valid", "test"]
    assert download.available_splits("wikitext-103") == []
    assert download.available_splits("qnli") == ["dev"]
    with pytest.raises(KeyError, match="unknown dataset"):
        download.available_splits("imdb")


def test_mrpc_split_is_rebuilt_byte_for_byte_from_its_sources(mirror):
    for split in ("train", "dev", "test"):
        assert download.build_mrpc_split(split) == (mirror / f"glue/MRPC/{split}.tsv").read_bytes(), split


def test_regenerated_gutenberg_file_is_a_mismatch_not_a_new_version(mirror, tmp_path, tmp_cache, monkeypatch):
    """Project Gutenberg now serves regenerated files: with the pinned copy unreachable, the changed
    bytes from gutenberg.org must be refused with a message that names the book and the mirror."""
    import gzip
    import socket

    served = tmp_path / "served"
    served.mkdir()
    raw = gzip.decompress((mirror / "books/pg11.txt.gz").read_bytes())
    (served / "pg11.txt").write_bytes(raw.replace(b"Posting Date: June 25, 2008", b"Release date: June 27, 2008"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/pinned/pg11.txt"
    pinned = FILES["books/pg11.txt.gz"].raw_sha256
    with _Server(served) as server:
        _without_mirror(
            monkeypatch,
            "books/pg11.txt.gz",
            sources=(Source(dead, "sha256:" + pinned), Source(server.url + "pg11.txt", "sha256:" + pinned)),
        )
        with pytest.raises(ChecksumMismatchError) as err:
            fetch("books:pg11")
    message = str(err.value)
    assert "books:pg11" in message and dead in message and "pg11.txt" in message
    assert pinned in message and "BERTLAB_DATA_MIRROR=" in message
    assert not (tmp_cache / "books/pg11.txt").exists()
