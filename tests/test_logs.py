"""heldout_by_phase: held-out evaluations grouped by the training length in force when each was made."""

from __future__ import annotations

import pytest

from bertlab.training.logs import heldout_by_phase, read_metrics


def _train(step, seq_len):
    return {"step": step, "split": "train", "seq_len": seq_len, "mlm_acc": 0.5}


def _eval(step, acc):
    return {"step": step, "split": "eval", "mlm_acc": acc}


def test_evaluations_fall_in_the_phase_of_the_last_training_line_before_them():
    lines = [
        _train(50, 32),
        _eval(100, 0.10),
        _train(100, 32),
        _eval(200, 0.12),
        _train(250, 64),
        _eval(300, 0.20),
        _train(350, 128),
        _eval(400, 0.30),
        _eval(450, 0.31),
    ]
    # shuffled input: the grouping follows the steps, not the order of the lines
    phases = heldout_by_phase(lines[::-1])
    assert [p["seq_len"] for p in phases] == [32, 64, 128]
    assert [p["steps"] for p in phases] == [[100, 200], [300], [400, 450]]
    assert [(p["first_acc"], p["last_acc"]) for p in phases] == [(0.10, 0.12), (0.20, 0.20), (0.30, 0.31)]


def test_a_run_without_lengths_or_training_lines_gives_no_phases():
    assert heldout_by_phase([_eval(100, 0.1)]) == []
    assert heldout_by_phase([{"step": 50, "split": "train"}, _eval(100, 0.1)]) == []


def test_the_book_record_is_grouped_by_its_own_phase_plan():
    from bertlab.experiments import reference

    run = reference.find()
    if run is None:
        pytest.skip("the book's record is not in this copy")
    plan = run.provenance["settings"]["phases"]  # "fraction:seq_len:batch,..."
    lengths = [int(part.split(":")[1]) for part in plan.split(",")]
    phases = heldout_by_phase(read_metrics(run.path / "metrics.jsonl"))
    assert [p["seq_len"] for p in phases] == lengths
    final = run.provenance["pretraining"]["final_heldout"]["mlm_acc"]
    assert phases[-1]["last_acc"] == pytest.approx(final, abs=0.005)
