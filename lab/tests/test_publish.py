"""lab.publish: the results the chapters read are what the lab's studies make of the committed records."""

import json

import pytest

from bertlab.data import results
from bertlab.data.records import records_dir
from lab import ablations_reading, publish


def test_a_fresh_publish_equals_the_committed_files_byte_for_byte(tmp_path, mirror):
    # (the mirror: the ablations' table of trivial floors reads the tasks' training and dev sets)
    written = publish.publish(tmp_path)
    committed = records_dir("results")
    for path in written:
        ours = committed / path.name
        assert ours.is_file(), f"data/results/{path.name} is not committed: run `python -m lab.publish`"
        assert path.read_bytes() == ours.read_bytes(), (
            f"data/results/{path.name} is stale (a record or a study changed): run `python -m lab.publish` "
            "and commit it"
        )
    assert sorted(p.name for p in committed.glob("*.json")) == sorted(p.name for p in written)


def test_every_file_names_its_records_by_sha256_and_the_chapters_read_it():
    for name in publish.PUBLISHED:
        res = results.load(name)
        sources = res.data["from"]
        assert sources and all(len(h) == 64 for h in sources.values())
        assert all((records_dir() / p).is_file() for p in sources)
    assert results.load("finetune_seeds").value("sst2_readings")["2000"]["low"] > 0


def test_check_names_a_stale_file_and_fails(tmp_path, capsys, mirror):
    publish.publish(tmp_path)
    path = tmp_path / "pilots.json"
    data = json.loads(path.read_text())
    data["text"]["pretraining_finding"] = "changed"
    path.write_text(json.dumps(data))
    assert publish.main(["--check", "--out", str(tmp_path)]) == 1
    assert "pilots.json" in capsys.readouterr().err
    publish.publish(tmp_path)
    assert publish.main(["--check", "--out", str(tmp_path)]) == 0


def test_the_ablations_file_holds_what_chapters_9_and_17_show():
    """Chapter 17 draws its curves and chapter 9 states the NSP accuracy from the file: they are the
    record's, in the plan's order; every sentence and table the chapters show is there."""
    record = ablations_reading.load()
    res = results.load("ablations")
    if record is None:
        assert res is None or not res.keys("table")
        return
    assert res.value("nsp_accuracy") == ablations_reading.nsp_accuracy(record)
    curves = ablations_reading.heldout_curves(record)
    shown = res.series("heldout_curves")
    for group, names in (("task", ablations_reading.TASK_MODELS), ("size", ablations_reading.SIZE_MODELS)):
        assert [c["name"] for c in shown[group]] == list(names)
        assert all((c["step"], c["accuracy"]) == tuple(curves[c["name"]]) for c in shown[group])
    assert res.keys("table") == ["beside_reference", "finetune", "heldout", "models", "paper"]
    for key in ("plan", "mask_rate", "same_plan", "size_and_nsp", "nsp_head", "comparisons", "summary"):
        assert res.text(key), key
    assert res.text("summary").count("\n* ") == 2  # the three results, one bullet each
    assert "ablations/ablations.json" in res.data["from"] and "pilots/sst2_2000_seeds.jsonl" in res.data["from"]


def test_the_findings_file_holds_the_openings_of_chapters_12_and_14_from_the_record(mirror):
    from bertlab.experiments import reference
    from bertlab.tasks import get_task
    from lab import findings

    run, res = reference.find(), results.load("findings")
    if run is None:
        pytest.skip("the book's record is not in this copy")
    dev = {name: get_task(name).load("dev") for name in ("mrpc", "rte")}
    assert res.text("pairs") == findings.pairs_finding(run, dev)
    assert res.text("ner") == findings.ner_finding(run)
