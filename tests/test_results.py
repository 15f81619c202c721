"""bertlab.data.results: the lab's published results, read by the chapters as data."""

import json

import pytest

from bertlab.data import download, records, results
from bertlab.errors import ActionableError


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A records folder of our own ($BERTLAB_RECORDS), holding one results file."""
    monkeypatch.setenv(records.ENV_VAR, str(tmp_path))
    (tmp_path / "results").mkdir()
    data = {
        "from": {"pilots/x.jsonl": "ab" * 32},
        "table": {"grid": "| a | b |\n|---|---|\n| 1 | 2 |"},
        "text": {"gain": "Pre-training is worth +2.2 points."},
        "value": {"gain": 2.2, "band": {"low": 1.3, "high": 3.4}},
        "series": {"curve": {"x": [500, 2000], "y": [66.6, 71.3]}},
    }
    (tmp_path / "results" / "study.json").write_text(json.dumps(data, indent=1) + "\n")
    return tmp_path


def test_a_published_file_reads_back_entry_by_entry(folder):
    res = results.load("study")
    assert res.path == folder / "results" / "study.json"
    assert res.table("grid").splitlines()[2] == "| 1 | 2 |"
    assert res.text("gain") == "Pre-training is worth +2.2 points."
    assert res.value("gain") == 2.2 and res.value("band") == {"low": 1.3, "high": 3.4}
    assert res.series("curve")["y"] == [66.6, 71.3]
    assert res.keys("value") == ["band", "gain"] and res.keys("nothing") == []
    assert res.data["from"] == {"pilots/x.jsonl": "ab" * 32}


def test_a_missing_file_is_none_and_the_page_says_so_in_one_line(folder, monkeypatch):
    assert results.load("no_such_study") is None
    monkeypatch.setattr(records, "published_files", lambda prefix="", m=None: {})
    line = results.missing("the seeds' table", "no_such_study")
    assert "\n" not in line and "the seeds' table" in line and "python -m lab.publish" in line


def test_a_published_file_that_could_not_be_fetched_says_why(tmp_path, monkeypatch):
    """A reader without a checkout: the manifest lists the file, the fetch failed (offline)."""
    monkeypatch.delenv(records.ENV_VAR, raising=False)
    monkeypatch.setattr(records, "_candidates", lambda: [tmp_path / "site" / "data"])
    monkeypatch.setenv(download.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(records.URL_ENV, str(tmp_path / "empty"))
    monkeypatch.setattr(records, "unavailable", {})
    listed = {"results/study.json": {"size": 2, "sha256": "0" * 64}}
    monkeypatch.setattr(records, "published_files", lambda prefix="", m=None: listed)
    monkeypatch.setattr(
        records, "fetch_records", lambda *parts: (_ for _ in ()).throw(download.DataUnavailableError("offline"))
    )
    with pytest.warns(UserWarning, match="unavailable"):
        assert results.load("study") is None
    assert "could not be fetched" in results.missing("the table", "study")


def test_a_missing_key_names_the_key_what_the_file_holds_and_the_fix(folder):
    res = results.load("study")
    with pytest.raises(ActionableError) as err:
        res.text("gian")
    message = str(err.value)
    assert "'gian'" in message and "study.json" in message
    assert "gain" in message and "python -m lab.publish" in message
    with pytest.raises(ActionableError, match="no series 'curves'"):
        res.series("curves")
