"""scripts/record_squad_epochs.py: SQuAD from the record (and from scratch) scored after every
epoch of one schedule, each arm appended to a JSONL file as it finishes."""

import json
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("scripts/record_squad_epochs.py")


def test_each_arm_is_a_row_with_every_epochs_score(script, tmp_path):
    out = tmp_path / "squad_epochs.jsonl"
    argv = ["--epochs", "2", "--arms", "pretrained", "scratch", "--max-train", "12", "--max-eval", "6"]
    assert script.main([*argv, "--out", str(out)]) == 0
    meta, *rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert "by-article split" in meta["meta"]["about"]
    assert [r["init"] for r in rows] == ["pretrained", "scratch"]
    for r in rows:
        assert r["epochs"] == 2 and r["train_questions"] == 12 and r["eval_questions"] == 6
        assert [h["epoch"] for h in r["history"]] == [1, 2]
        assert all(0 <= h["f1"] <= 100 for h in r["history"])
        assert r["metrics"]["f1"] == r["history"][-1]["f1"]  # the run's score is the last epoch's
        assert r["machine"]["device"].startswith("cpu")
    # a second run appends its rows under the one description
    assert script.main(["--epochs", "1", "--max-train", "12", "--max-eval", "6", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum("meta" in x for x in lines) == 1 and len(lines) == 4 and lines[-1]["epochs"] == 1


def test_the_window_is_a_setting_of_the_row(script, tmp_path):
    out = tmp_path / "squad_windows.jsonl"
    argv = ["--epochs", "1", "--max-len", "64", "--max-train", "8", "--max-eval", "4", "--out", str(out)]
    assert script.main(argv) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()][1:]
    assert (row["max_len"], row["doc_stride"]) == (64, 32)  # the stride defaults to half the window
    with pytest.raises(SystemExit):
        script.main(["--max-len", "64", "--doc-stride", "64", "--out", str(out)])


def test_refuses_no_epochs(script, tmp_path):
    with pytest.raises(SystemExit):
        script.main(["--epochs", "0", "--out", str(tmp_path / "x.jsonl")])


def test_another_record_fine_tunes_and_each_row_names_it(script, tmp_path):
    # another record with its weights: the book's record copied (the kept pilots' weights left the tree)
    again = tmp_path / "record-again"
    shutil.copytree(script.records_dir("reference_run"), again)
    out = tmp_path / "squad_again.jsonl"
    argv = ["--epochs", "1", "--max-train", "8", "--max-eval", "4", "--record", str(again), "--out", str(out)]
    assert script.main(argv) == 0
    meta, row = [json.loads(line) for line in out.read_text().splitlines()]
    assert Path(row["record"]).resolve() == again.resolve()
    assert "each row names" in meta["meta"]["about"]
    with pytest.raises(FileNotFoundError, match="no reference run at"):
        script.main([*argv[:-4], "--record", str(tmp_path / "none"), "--out", str(out)])


def test_the_batch_and_threads_are_in_the_row(script, tmp_path):
    out = tmp_path / "squad_batch.jsonl"
    argv = ["--epochs", "1", "--batch-size", "4", "--max-train", "8", "--max-eval", "4", "--out", str(out)]
    assert script.main(argv) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()][1:]
    assert row["batch_size"] == 4 and row["threads"] == script.torch.get_num_threads()
    # 8 questions in batches of 4 make at least two updates an epoch (one window or more each)
    assert row["history"][-1]["step"] >= 2
    with pytest.raises(SystemExit):
        script.main(["--batch-size", "0", "--out", str(out)])
