"""lab.publish_records: the package's manifest is this checkout's data/ at the commit that made it, and
a published folder serves the book to a reader without a checkout; fetching and reading the records
is tested in tests/test_records.py."""

import json
from pathlib import Path

import pytest
import yaml

from bertlab.data import download, records
from bertlab.experiments import reference
from lab import publish_records

ROOT = Path(__file__).resolve().parents[2]  # the checkout: `python -m lab.publish_records` runs from here


def test_the_manifest_lists_every_committed_record_at_the_commit_that_made_them():
    """The package's manifest is what `--manifest` makes of this checkout now: every file git tracks
    under data/ but the READMEs, its size and sha256, the repository of _config.yml, and the commit
    that last changed one (whose raw files are the URLs a reader fetches)."""
    shipped = records.manifest()
    built = publish_records.build_manifest(ROOT)
    assert built["repository"] == yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    b, s = built["files"], shipped["files"]
    stale = sorted(p for p in set(b) | set(s) if b.get(p) != s.get(p))
    assert built == shipped, (
        "bertlab/data/published_records.json is not the manifest of this checkout's data/ "
        f"({len(stale)} entries differ, e.g. {stale[:3]}): commit data/, then run `python -m "
        "lab.publish_records --manifest` and commit the manifest"
    )


def test_a_published_folder_serves_the_book_without_a_checkout(no_checkout, monkeypatch):
    out = no_checkout / "published"
    written = publish_records.publish(out)
    assert len(written) == len(records.manifest()["files"])
    assert json.loads((out / records.MANIFEST).read_text()) == records.manifest()
    monkeypatch.setenv(records.URL_ENV, str(out))
    assert records.records_dir("reference_run") == out / "reference_run"
    run = reference.find()
    assert run is not None and run.path == (out / "reference_run").resolve()
    assert reference.pretrained_encoder().is_reference
    # a corrupt copy is named, with what to do; a missing one leaves the page one line to say so
    weights = out / "reference_run" / reference.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(download.ChecksumMismatchError, match="reference_run/model.fp16.safetensors"):
        records.records_dir("reference_run")
    weights.unlink()
    with pytest.warns(UserWarning, match="python -m lab.publish_records --out"):
        records.records_dir("reference_run")
    note = reference.pending("the curves")
    assert "could not be fetched" in note and "the curves" in note and len(note.splitlines()) == 1
    assert "python -m lab.publish_records --out" in note


def test_a_changed_record_is_refused(tmp_path):
    """Only the bytes the manifest lists are published: a copy from a changed data/ stops, naming the fix."""
    source = tmp_path / "data"
    path, entry = next(iter(records.manifest()["files"].items()))
    (source / path).parent.mkdir(parents=True)
    (source / path).write_bytes(b"not the committed record")
    with pytest.raises(RuntimeError, match=f"{path} is not the file the manifest publishes.*--manifest"):
        publish_records.publish(tmp_path / "out", source=source)


def test_the_command_writes_the_folder_and_says_how_to_serve_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        publish_records.main([])
    assert stop.value.code == 2 and "--out DIR" in capsys.readouterr().err
    assert publish_records.main(["--out", str(tmp_path / "r")]) == 0
    assert f"BERTLAB_RECORDS_URL={tmp_path / 'r'}" in capsys.readouterr().out
    config = Path("reference_run", "config.json")
    assert (tmp_path / "r" / config).read_bytes() == (ROOT / "data" / config).read_bytes()
