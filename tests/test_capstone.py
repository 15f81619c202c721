"""The capstone's grader (bertlab.course.capstone) on a real, tiny model folder made here: a few
pretraining steps on two books of the mirror, then a grade with small settings (the same code
path as the real grade, with fewer batches, examples and seeds). Broken submissions (a missing
file, corrupt weights, a pickle) get a message naming the file; the points follow the thresholds."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import nbformat
import pytest
import torch

from bertlab.course.capstone import (
    GRADING,
    SOLUTION_RECORD,
    Grading,
    SubmissionError,
    grade_capstone,
    main,
    model_solution,
    score,
    validate_submission,
)
from bertlab.training.pretrain import PretrainConfig, evaluate_checkpoint, pretrain

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_thread")

# the real grade's code path, with small data: two held-out books, 64 SST-2 sentences, two seeds
SMALL = dict(
    corpus="books",
    seq_len=32,
    eval_batches=2,
    eval_batch_size=8,
    max_documents=2,
    train_examples=64,
    eval_examples=64,
    seeds=(0, 1),
    epochs=1,
    batch_size=16,
    threads=1,
    timeout=120,
)


@pytest.fixture(scope="module")
def final(tmp_path_factory) -> Path:
    """A pretrained model folder as the capstone asks for: pretrain's <out>/final."""
    from tests.conftest import MIRROR

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}: set BERTLAB_DATA_MIRROR")
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("run")
    pretrain(
        PretrainConfig(
            preset="tiny",
            recipe="cpu",
            corpus="books",
            max_documents=2,
            vocab_size=1000,
            seq_len=32,
            batch_size=8,
            steps=8,
            warmup=0.25,
            log_every=4,
            eval_every=8,
            eval_batches=1,
            checkpoint_every=8,
            out=str(out),
            progress=False,
            device="cpu",
            precision="fp32",
        )
    )
    return out / "final"


def make_submission(final: Path, where: Path) -> Path:
    where.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        shutil.copy(final / name, where / name)
    nbformat.write(nbformat.v4.new_notebook(), where / "09_capstone.ipynb")
    return where


@pytest.fixture(scope="module")
def graded(final, tmp_path_factory) -> dict:
    folder = make_submission(final, tmp_path_factory.mktemp("subs") / "alice")
    # a claim the grader must not read: it measures the weights
    (folder / "metrics.jsonl").write_text(json.dumps({"split": "eval", "mlm_acc": 0.99}) + "\n")
    return grade_capstone(folder, **SMALL)


def test_grade_end_to_end_measures_the_weights(graded, final):
    assert graded["valid"] and graded["error"] == "" and graded["notes"] == []
    assert graded["model"]["layers"] == 2 and graded["model"]["vocab_size"] == 1000
    again = evaluate_checkpoint(
        final,
        corpus="books",
        seq_len=32,
        nsp=False,
        batches=2,
        batch_size=8,
        max_documents=2,
        device="cpu",
        precision="fp32",
    )
    assert graded["mlm_acc"] == pytest.approx(again["mlm_acc"]) and graded["mlm_acc"] < 0.9
    ft = graded["measured"]["finetune"]
    assert ft["seeds"] == [0, 1] and len(ft["pretrained"]) == len(ft["scratch"]) == 2
    assert all(0 <= s <= 100 for s in ft["pretrained"] + ft["scratch"])
    assert graded["gain"] == pytest.approx(sum(ft["pretrained"]) / 2 - sum(ft["scratch"]) / 2)  # median of two
    settings = Grading(**SMALL)
    assert len(graded["parts"]) == 1 + len(settings.mlm_levels) + len(settings.gain_levels)
    assert graded["of"] == settings.points == GRADING.points == 50
    assert graded["points"] == sum(p["points"] for p in graded["parts"]) >= settings.valid_points
    assert score(graded["measured"], settings)["points"] == graded["points"]
    assert graded["seconds"] < 90


def test_thresholds_change_the_score(graded):
    acc, gain, measured = graded["mlm_acc"], graded["gain"], graded["measured"]
    below = Grading(mlm_levels=((acc - 0.01, 7),), gain_levels=((gain - 0.5, 3),))
    above = Grading(mlm_levels=((acc + 0.01, 7),), gain_levels=((gain + 0.5, 3),))
    assert score(measured, below)["points"] == 10 + 7 + 3
    assert score(measured, above)["points"] == 10
    assert [p["passed"] for p in score(measured, above)["parts"]] == [True, False, False]
    exact = Grading(mlm_levels=((acc, 1),), gain_levels=((gain, 1),))  # MLM: >= ; gain: strictly >
    assert [p["passed"] for p in score(measured, exact)["parts"]] == [True, True, False]


def test_worse_than_scratch_gets_partial_credit(graded):
    measured = json.loads(json.dumps(graded["measured"]))
    ft = measured["finetune"]
    ft["pretrained"] = [s - 5.0 for s in ft["scratch"]]  # the scratch arm's real scores, 5 points better
    low = Grading(mlm_levels=((0.0, 5), (1.01, 5)))
    result = score(measured, low)
    assert result["gain"] == pytest.approx(-5.0)
    assert [p["passed"] for p in result["parts"]] == [True, True, False, False, False, False]
    assert 0 < result["points"] == 15 < result["of"]


def test_missing_file_is_named_with_the_fix(final, tmp_path):
    folder = make_submission(final, tmp_path / "bob")
    (folder / "tokenizer.json").unlink()
    grade = grade_capstone(folder, **SMALL)
    assert not grade["valid"] and grade["points"] == 0 and grade["of"] == 50
    assert "tokenizer.json missing" in grade["error"] and "<out>/final" in grade["error"]
    assert grade["measured"] == {}  # nothing was run
    with pytest.raises(SubmissionError, match="does not exist|no such folder"):
        validate_submission(tmp_path / "nobody")


def test_corrupt_weights_are_named(final, tmp_path):
    folder = make_submission(final, tmp_path / "cat")
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])  # a truncated copy
    with pytest.raises(SubmissionError, match=r"model\.safetensors is corrupt or truncated"):
        validate_submission(folder)
    (folder / "model.safetensors").write_bytes(b"not a safetensors file at all")
    grade = grade_capstone(folder, **SMALL)
    assert grade["points"] == 0 and "model.safetensors is corrupt or truncated" in grade["error"]


def test_pickle_only_submission_is_refused_unopened(final, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    folder = make_submission(final, tmp_path / "dan")
    torch.save(load_file(str(folder / "model.safetensors")), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()

    def never(*args, **kwargs):
        raise AssertionError("the grader must never unpickle a submission")

    monkeypatch.setattr(torch, "load", never)
    monkeypatch.setattr(pickle, "load", never)
    monkeypatch.setattr(pickle, "loads", never)
    grade = grade_capstone(folder, **SMALL)
    assert grade["points"] == 0
    assert "pytorch_model.bin, a pickle, which the grader refuses to open" in grade["error"]
    assert "model.safetensors" in grade["error"]


def test_other_broken_models_are_refused(final, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = make_submission(final, tmp_path / "eve")
    with pytest.raises(SubmissionError, match="over the capstone's limit of 1,000"):
        validate_submission(folder, max_parameters=1000)
    weights = load_file(str(folder / "model.safetensors"))
    weights["bert.embeddings.token.weight"][0, 0] = float("nan")
    save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises(SubmissionError, match="NaN or infinite"):
        validate_submission(folder)
    del weights["mlm.bias"]
    weights["bert.embeddings.token.weight"][0, 0] = 0.0
    save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises(SubmissionError, match="no masked-LM head"):
        validate_submission(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": 999}))
    with pytest.raises(SubmissionError, match="tokenizer.json has 1,000 pieces but config.json says vocab_size 999"):
        validate_submission(folder)


def test_a_folder_relative_to_the_working_directory(graded, final, tmp_path, monkeypatch):
    make_submission(final, tmp_path / "capstone_submission")
    monkeypatch.chdir(tmp_path)  # the notebook's case: Path("capstone_submission")
    grade = grade_capstone(Path("capstone_submission"), **{**SMALL, "seeds": ()})  # held-out MLM only
    assert grade["valid"] and grade["error"] == "", grade["error"]
    assert grade["mlm_acc"] == pytest.approx(graded["mlm_acc"])


def test_time_limit_keeps_what_was_measured(final, tmp_path):
    folder = make_submission(final, tmp_path / "fay")
    grade = grade_capstone(folder, **{**SMALL, "timeout": 2})
    assert grade["valid"] and grade["error"].startswith("timeout: the measurements were stopped after 2 s")
    assert grade["measured"].get("stage") != "done"
    assert grade["points"] == sum(p["points"] for p in grade["parts"]) < grade["of"]
    assert all(not p["passed"] for p in grade["parts"][-3:])  # no fine-tuning pair finished


def test_cli_and_course_table(final, tmp_path, capsys):
    from grader.course import ASSIGNMENTS, PROJECTS, QUESTIONS, metadata_table, projects_of

    assert PROJECTS["capstone"].points == GRADING.points and projects_of("09_capstone") == [PROJECTS["capstone"]]
    assert PROJECTS["capstone"].difficulty == "hard" and PROJECTS["capstone"].device == "CPU"
    assert PROJECTS["capstone"].timeout == GRADING.timeout
    assert "09_capstone" in ASSIGNMENTS and QUESTIONS["q_capstone"].notebook == "09_capstone"
    nb = nbformat.read(ROOT / "book" / "exercises" / "09_capstone.ipynb", as_version=4)
    assert metadata_table("09_capstone") in "\n".join(c.source for c in nb.cells)
    folder = make_submission(final, tmp_path / "gus")
    (folder / "config.json").unlink()
    assert main([str(folder), "--out", str(tmp_path / "grades")]) == 1
    out = capsys.readouterr().out
    assert "0/50" in out and "config.json missing" in out
    rows = (tmp_path / "grades.csv").read_text().splitlines()
    assert rows[0].startswith("submission,points,of,mlm_acc") and len(rows) == 2
    assert json.loads((tmp_path / "grades.json").read_text())[0]["valid"] is False


def test_the_model_solution_record_is_consistent_with_the_grader(tmp_path):
    """data/capstone/model_solution.json: graded on the grader's task, and every recorded grade
    is what score() gives for its own measurements and settings."""
    record = model_solution()
    assert record is not None, f"{SOLUTION_RECORD} is missing: scripts/record_capstone_solution.py writes it"
    assert GRADING.task in record["grades"]
    for task, grade in record["grades"].items():
        settings = Grading.from_dict(grade["settings"])
        assert settings.task == task and grade["valid"] and grade["error"] == ""
        assert settings.seeds == GRADING.seeds and settings.train_examples == GRADING.train_examples
        again = score(grade["measured"], settings)
        assert again["points"] == grade["points"] and again["gain"] == pytest.approx(grade["gain"])
        assert len(grade["measured"]["finetune"]["pretrained"]) == len(settings.seeds)
    held = record["pretraining"]["heldout"]
    # the grader re-measures the held-out accuracy from the weights: the run's last evaluation agrees
    assert record["grades"][GRADING.task]["mlm_acc"] == pytest.approx(held[-1]["mlm_acc"], abs=0.01)
    assert model_solution(tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text(json.dumps({"grades": []}))
    with pytest.raises(ValueError, match="record_capstone_solution.py"):
        model_solution(tmp_path / "bad.json")
