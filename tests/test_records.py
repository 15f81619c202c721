"""The records folder: found from a checkout, from a working directory, or named; absent is not an error."""

import pytest

from bertlab import records


def test_the_checkout_holds_the_records():
    assert (records.records_dir("pilots")).is_dir()
    assert records.records_dir() == records.records_dir("pilots").parent


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
    # nothing anywhere: the first place, which does not exist; readers then say "not recorded"
    monkeypatch.setattr(records, "_candidates", lambda: [tmp_path / "nowhere" / "data"])
    assert records.records_dir("reference_run") == tmp_path / "nowhere" / "data" / "reference_run"
