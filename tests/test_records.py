"""The records: found in a checkout or named; listed in the package's manifest; fetched, checked, by a
reader who has no checkout (Colab), from the repository's raw files, a URL or a folder. Publishing them
(the manifest, a folder) is the lab's: lab/tests/test_publish_records.py."""

import functools
import http.server
import subprocess
import threading
from pathlib import Path

import pytest

from bertlab.data import download, records
from bertlab.experiments import reference

ROOT = Path(__file__).resolve().parents[1]


def test_the_checkout_holds_the_records(tmp_path, monkeypatch):
    assert (records.records_dir("pilots")).is_dir()
    assert records.records_dir() == records.records_dir("pilots").parent
    monkeypatch.chdir(tmp_path)  # found beside the package, from any working directory
    assert records.checkout_records() == ROOT / "data"


def test_a_named_folder_wins_and_a_wrong_name_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(records.ENV_VAR, str(tmp_path))
    assert records.records_dir("pilots") == tmp_path / "pilots"
    monkeypatch.setenv(records.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="BERTLAB_RECORDS"):
        records.records_dir()


def test_without_a_checkout_the_working_directory_is_searched(tmp_path, monkeypatch):
    """An installed package (no data/ beside it): data/ in the working directory or its parent."""
    monkeypatch.delenv(records.ENV_VAR, raising=False)
    (tmp_path / "data" / "pilots").mkdir(parents=True)
    (tmp_path / "book").mkdir()
    monkeypatch.setattr(
        records, "_candidates", lambda: [tmp_path / "site" / "data", tmp_path / "book" / "data", tmp_path / "data"]
    )
    assert records.records_dir() == tmp_path / "data"


def test_the_manifests_commit_holds_exactly_the_published_bytes():
    """Every file's blob at the manifest's commit is the file in the checkout: the raw URL serves
    what the sha256 expects."""
    ref = records.manifest()["ref"]
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "-r", ref, "--", "data"], capture_output=True, text=True
    )
    if listing.returncode != 0:
        pytest.skip(f"commit {ref[:12]} is not in this clone (a shallow clone?)")
    at_ref = {line.split("\t")[1].removeprefix("data/"): line.split()[2] for line in listing.stdout.splitlines()}
    paths = sorted(records.manifest()["files"])
    here = subprocess.run(
        ["git", "-C", str(ROOT), "hash-object", *[f"data/{p}" for p in paths]], capture_output=True, text=True
    ).stdout.split()
    assert set(paths) <= set(at_ref), sorted(set(paths) - set(at_ref))[:5]
    assert dict(zip(paths, here)) == {p: at_ref[p] for p in paths}


def test_the_base_url_is_the_repositorys_raw_files_at_the_commit(monkeypatch):
    m = {"repository": "https://github.com/someone/fork", "ref": "abc123", "files": {}}
    monkeypatch.delenv(records.URL_ENV, raising=False)
    assert records.base_url(m) == "https://raw.githubusercontent.com/someone/fork/abc123/data/"
    monkeypatch.setenv(records.URL_ENV, "https://example.org/records/")
    assert records.base_url(m) == "https://example.org/records/"
    monkeypatch.delenv(records.URL_ENV)
    with pytest.raises(ValueError, match="OWNER/NAME"):
        records.base_url({**m, "repository": "https://gitlab.com/x"})


class _Server:
    """A local web server over a folder, like raw.githubusercontent.com over the repository."""

    def __init__(self, folder: Path):
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *a, **k: None
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_records_come_from_a_url_into_the_cache_checked(no_checkout, monkeypatch):
    served = no_checkout / "served"
    (served / "run").mkdir(parents=True)
    (served / "run" / "a.json").write_text('{"a": 1}\n')
    (served / "run" / "b.bin").write_bytes(b"\x00" * 1000)
    from bertlab.files import sha256_file

    files = {f"run/{p.name}": {"size": p.stat().st_size, "sha256": sha256_file(p)} for p in (served / "run").iterdir()}
    m = {"repository": "https://github.com/someone/fork", "ref": "0123456789abcdef", "files": files}
    monkeypatch.setattr(records, "manifest", lambda: m)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server = _Server(served)
    try:
        monkeypatch.setenv(records.URL_ENV, server.url)
        got = records.records_dir("run")
        assert got == no_checkout / "cache" / "records" / "0123456789ab" / "run"
        assert (got / "a.json").read_text() == '{"a": 1}\n' and (got / "b.bin").stat().st_size == 1000
        # bytes that differ from the manifest are refused and never kept under the file's name
        (got / "b.bin").unlink()
        (served / "run" / "b.bin").write_bytes(b"\x01" * 1000)
        with pytest.raises(download.ChecksumMismatchError):
            records.records_dir("run")
        assert not (got / "b.bin").exists() and not list(got.glob(".*b.bin*")) and not list(got.glob("b.bin.*"))
    finally:
        server.close()
    # the cache serves what it holds when the source is gone; what it lacks is named, with the way to get it
    assert (records.records_dir("run", "a.json")).read_text() == '{"a": 1}\n'
    monkeypatch.setenv(download.OFFLINE_ENV, "1")
    with pytest.raises(download.DataUnavailableError, match=r"run/b.bin.*BERTLAB_RECORDS_URL=DIR"):
        records.fetch_records("run")


def test_a_fork_without_a_record_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(records, "manifest", lambda: {"repository": "https://github.com/a/b", "ref": "x", "files": {}})
    note = reference.pending("the curves")
    assert "holds no recorded reference run" in note and len(note.splitlines()) == 1
