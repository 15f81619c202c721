"""The same reference run made twice: rows, table and reading of lab.rerun."""

from __future__ import annotations

import json

import pytest

from bertlab import files
from bertlab.experiments.reference import ReferenceRun
from lab import rerun

SETTINGS = {"preset": "mini", "recipe": "cpu", "minutes": 50.0, "seeds": [0, 1, 2], "squad": True}


def _arm(task, metric, scores, n=None):
    return {
        "task": task,
        "main_metric": metric,
        "median": sorted(scores)[len(scores) // 2],
        "scores": scores,
        "config": {"max_train_examples": n},
    }


def make_run(folder, *, acc, steps, sst2, mrpc, conll, stages, settings=None, wall=None, speeds=()):
    """A record folder as reference_run writes it, holding only what the comparison reads:
    `sst2` {n: (pretrained scores, scratch scores)}, `mrpc` / `conll` (pretrained, scratch), and
    a pretraining log whose lines ran at `speeds` tokens/s."""
    folder.mkdir(parents=True)
    lines = [{"step": 50 * (i + 1), "split": "train", "tokens_per_s": v} for i, v in enumerate(speeds)]
    lines.append({"step": steps, "split": "eval", "mlm_acc": acc})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    files.write_json(
        folder / "provenance.json",
        {
            "settings": {"out": str(folder), **(settings or SETTINGS)},
            "wall_time_s": wall if wall is not None else sum(stages.values()) + 30.0,
            "stage_times_s": stages,
            "pretraining": {
                "steps": steps,
                "tokens": steps * 8192,
                "final_heldout": {"mlm_acc": acc, "mlm_acc_mask": acc - 0.06},
            },
        },
    )
    files.write_json(
        folder / "sst2_curve.json",
        [
            {
                "train_examples": n,
                "pretrained": _arm("sst2", "accuracy", p, n),
                "scratch": _arm("sst2", "accuracy", s, n),
            }
            for n, (p, s) in sst2.items()
        ],
    )
    files.write_json(
        folder / "finetune_results.json",
        {
            "mrpc_pretrained": _arm("mrpc", "f1", mrpc[0]),
            "mrpc_scratch": _arm("mrpc", "f1", mrpc[1]),
            "conll2003": {
                "pretrained": _arm("conll2003", "f1", conll[0]),
                "scratch": _arm("conll2003", "f1", conll[1]),
            },
        },
    )
    return ReferenceRun(folder)


def other_run(folder, **changes):
    """A run whose fine-tuned scores do not matter to the test: `changes` replace make_run's
    arguments (settings, stages, sst2, wall, ...)."""
    args = dict(acc=0.4, steps=3000, sst2={}, mrpc=([1.0], [1.0]), conll=([1.0], [1.0]), stages=STAGES)
    return make_run(folder, **{**args, **changes})


STAGES = {"pretrain_with_data_s": 3000.0, "sst2_500_s": 100.0, "sst2_2000_s": 140.0, "mrpc_s": 400.0, "rte_s": 360.0}


@pytest.fixture
def pair(tmp_path):
    first = make_run(
        tmp_path / "first",
        acc=0.393,
        steps=3350,
        sst2={500: ([62.0, 61.0, 63.0], [64.0, 63.0, 65.0]), 2000: ([73.0, 72.0, 74.0], [70.0, 71.0, 69.0])},
        mrpc=([78.0, 77.0, 79.0], [79.0, 78.0, 80.0]),
        conll=([81.0, 82.0, 80.0], [64.0, 63.0, 65.0]),
        stages={**STAGES, "conll2003_s": 900.0},
        speeds=(10000.0, 11000.0, 10500.0),
    )
    again = make_run(
        tmp_path / "again",
        acc=0.387,
        steps=3747,
        sst2={500: ([64.0, 65.0, 66.0], [63.0, 62.0, 64.0]), 2000: ([73.5, 72.5, 74.5], [70.0, 71.0, 69.0])},
        mrpc=([79.0, 78.0, 80.0], [78.0, 77.0, 79.0]),
        conll=([81.0, 82.0, 80.0], [64.0, 63.0, 65.0]),
        stages={**STAGES, "mrpc_s": 300.0, "rte_s": 270.0, "conll2003_s": 900.0},
        speeds=(9000.0, 8800.0, 9100.0),
    )
    return first, again


def test_rows_pair_each_measure_of_the_two_runs(pair):
    first, again = pair
    rows = {r["measure"]: r for r in rerun.rerun_rows(first, again)}
    held = rows["held-out MLM accuracy, every chosen position (%)"]
    assert (held["first"], held["again"], held["change"]) == pytest.approx((39.3, 38.7, -0.6))
    assert rows["held-out MLM accuracy, [MASK] positions only (%)"]["again"] == pytest.approx(32.7)
    assert rows["pretraining steps"]["change"] == 397
    speed = rows["pretraining tokens/s (median of the log)"]  # the eval line has no speed
    assert (speed["first"], speed["again"]) == (10500.0, 9000.0)
    sst500 = rows["gain on SST-2 with 500 sentences (accuracy, points)"]
    assert (sst500["first"], sst500["again"], sst500["change"]) == pytest.approx((-2.0, 2.0, 4.0))
    assert sst500["task"] == "sst2" and sst500["train_examples"] == 500
    assert rows["gain on MRPC (F1, points)"]["change"] == pytest.approx(2.0)
    assert rows["gain on CoNLL-2003 (F1, points)"]["change"] == pytest.approx(0.0)
    # the classifiers' stage: SST-2's sizes, MRPC and RTE; the second run took 190 s less
    # (SQuAD was run by neither, so it has no row)
    assert rows["minutes: SST-2, MRPC and RTE"]["change"] == pytest.approx(-190 / 60)
    assert "minutes: SQuAD v1.1" not in rows
    end = rows["minutes: end to end"]
    assert end["end_to_end"] and end["change"] == pytest.approx(-190 / 60)


def test_table_and_reading_are_generated_from_the_rows(pair):
    rows = rerun.rerun_rows(*pair)
    table = rerun.rerun_table(rows).splitlines()
    assert table[0] == "| measure | the record | run again | difference |"
    assert "| pretraining steps | 3,350 | 3,747 | +397 |" in table
    assert "| pretraining tokens/s (median of the log) | 10,500 | 9,000 | -1,500 |" in table
    assert "| gain on CoNLL-2003 (F1, points) | +17.0 | +17.0 | 0.0 |" in table  # never "-0.0"
    text = rerun.rerun_reading(rows, limit_minutes=100)
    assert text.startswith(
        "Made again with the same settings, the pipeline ends its pretraining at 38.7% held-out MLM "
        "accuracy against the record's 39.3% (-0.6 points), after 3,747 steps against 3,350 (its machine "
        "trained at 9.0k tokens/s against 10.5k: a time budget buys as many steps as the machine's speed allows);"
    )
    # moves 4.0 (SST-2 500), 0.5 (SST-2 2,000), 2.0 (MRPC), 0.0 (CoNLL): the lower median is 0.5
    assert (
        "gains move by 0.5 points in the median task and by up to 4.0 (SST-2 with 500 sentences: -2.0 then +2.0)"
        in text
    )
    assert "on SST-2 with 500 sentences and MRPC one run finds pre-training ahead and the other behind" in text
    assert (
        "A difference of 4.0 points between two records of different settings can therefore arise with no change"
        in text
    )
    assert "stopped before" not in text  # both runs fine-tuned the same tasks
    assert text.endswith(
        f"End to end the second run took {rows[-1]['again']:.1f} minutes, the record "
        f"{rows[-1]['first']:.1f} (within the 100 minutes the pipeline is meant to fit)."
    )
    assert "over the 60 minutes" in rerun.rerun_reading(rows, limit_minutes=60)
    assert rerun.rerun_reading([]) == ""


def test_runs_of_different_settings_are_refused(tmp_path, pair):
    first, _ = pair
    other = other_run(tmp_path / "other", settings={**SETTINGS, "minutes": 60.0, "squad": False})
    assert rerun.settings_differences(first, other) == ["minutes: 50.0 -> 60.0"]  # squad: which tasks ran
    with pytest.raises(ValueError, match=r"not made with the same settings \(minutes: 50.0 -> 60.0\).*pilots"):
        rerun.rerun_rows(first, other)


def test_end_to_end_leaves_out_a_stage_only_one_run_ran(tmp_path, pair):
    first, _ = pair
    shorter = other_run(tmp_path / "shorter", sst2={500: ([60.0], [60.0])}, wall=4000.0)  # stopped before CoNLL
    rows = rerun.rerun_rows(first, shorter)
    end = rows[-1]
    assert end["measure"] == "minutes: end to end, without CoNLL-2003" and end["without"] == ["CoNLL-2003"]
    first_wall = sum(STAGES.values()) + 900.0 + 30.0  # make_run's wall time: the stages and 30 s
    assert end["first"] == pytest.approx((first_wall - 900.0) / 60) and end["again"] == pytest.approx(4000 / 60)
    text = rerun.rerun_reading(rows, limit_minutes=60)
    assert text.endswith(
        f"End to end without CoNLL-2003 the second run took 66.7 minutes, the record {end['first']:.1f}."
    )
    assert [r["measure"] for r in rows if r["kind"] == "minutes"][:2] == [
        "minutes: pretraining, with its data",
        "minutes: SST-2, MRPC and RTE",
    ]  # no CoNLL-2003 row: one run lacks it
    assert rows[-2]["measure"] == "minutes: SST-2, MRPC and RTE"
    missing = [r for r in rows if r["kind"] == "not run again"]  # the record's SST-2 at 2,000
    assert [(r["title"], r["first"], r["again"]) for r in missing] == [("SST-2 with 2,000 sentences", 3.0, None)]
    assert "| gain on SST-2 with 2,000 sentences (accuracy, points) | +3.0 | not run |  |" in rerun.rerun_table(rows)
    assert "The second run stopped before SST-2 with 2,000 sentences, which it does not compare." in text


def test_a_task_added_later_is_a_stage_of_its_run(tmp_path, pair):
    first, _ = pair
    # the first run fine-tuned SQuAD inside its pipeline, the second had it added afterwards
    prov = json.loads((first.path / "provenance.json").read_text())
    prov["stage_times_s"]["squad_s"] = 900.0
    prov["wall_time_s"] += 900.0
    prov["added_tasks"] = {"squad": {"wall_time_s": 900.0}}  # written by both ways of running it
    files.write_json(first.path / "provenance.json", prov)
    later = other_run(tmp_path / "later", stages={**STAGES, "conll2003_s": 900.0}, wall=5000.0)
    prov = json.loads((later.path / "provenance.json").read_text())
    prov["added_tasks"] = {"squad": {"wall_time_s": 1020.0}}
    files.write_json(later.path / "provenance.json", prov)
    assert rerun.stage_seconds(later)["squad_s"] == 1020.0
    assert rerun.wall_seconds(later) == 6020.0
    assert rerun.wall_seconds(first) == prov_wall(first)  # counted once, not again from added_tasks
    rows = {r["measure"]: r for r in rerun.rerun_rows(first, later)}
    assert (rows["minutes: SQuAD v1.1"]["first"], rows["minutes: SQuAD v1.1"]["again"]) == (15.0, 17.0)
    end = rows["minutes: end to end"]  # nothing left out: both ran every stage
    assert end["without"] == [] and end["again"] == pytest.approx(6020 / 60)


def with_squad(run, gain, window, lengths):
    """`run` given a SQuAD fine-tuning added later (windows of `window` tokens, pre-training's gain
    `gain`) and a pretraining log whose training lines, 50 steps apart, ran at `lengths`."""
    lines = [{"step": 50 * (i + 1), "split": "train", "seq_len": n} for i, n in enumerate(lengths)]
    (run.path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    results = json.loads((run.path / "finetune_results.json").read_text())
    for arm, f1 in (("pretrained", 10.0 + gain), ("scratch", 10.0)):
        results[f"squad_{arm}"] = {**_arm("squad", "f1", [f1]), "train_questions": 8333}
    files.write_json(run.path / "finetune_results.json", results)
    prov = json.loads((run.path / "provenance.json").read_text())
    prov["added_tasks"] = {"squad": {"settings": {"max_len": window, "epochs": 2}, "wall_time_s": 600.0}}
    files.write_json(run.path / "provenance.json", prov)
    return run


def test_the_steps_at_each_sequence_length_are_set_side_by_side(pair):
    first, again = pair
    with_squad(first, 10.0, 256, [32] * 4 + [128] * 2 + [256] * 3)
    with_squad(again, 3.0, 256, [32] * 5 + [128] * 2 + [256] * 2)
    assert rerun.steps_by_length(first) == {32: 250, 128: 100, 256: 100}  # a change counts at its line
    rows = {r["measure"]: r for r in rerun.rerun_rows(first, again)}
    longest = rows["pretraining steps on 256-token sequences"]
    assert (longest["first"], longest["again"], longest["length"]) == (100, 50, 256)
    assert "| pretraining steps on 32-token sequences | 250 | 300 | +50 |" in rerun.rerun_table(list(rows.values()))
    assert rows["gain on SQuAD v1.1 (F1, points)"]["change"] == pytest.approx(-7.0)


def test_a_task_added_with_other_settings_is_not_compared(pair):
    first, again = pair
    with_squad(first, 10.0, 128, [32, 64])
    with_squad(again, 3.0, 256, [32, 64])
    rows = {r["measure"]: r for r in rerun.rerun_rows(first, again)}
    squad = rows["gain on SQuAD v1.1 (F1, points)"]
    assert squad["kind"] == "other settings"
    assert rerun.largest_gain_move(list(rows.values()))["task"] != "squad"
    assert "| gain on SQuAD v1.1 (F1, points) | +10.0 | +3.0 | -7.0 |" in rerun.rerun_table(list(rows.values()))
    text = rerun.rerun_reading(list(rows.values()))
    assert "SQuAD v1.1 was fine-tuned with other settings in each run, so its gains are not compared." in text


def with_seeds(run, task_arms):
    """`run` with the seeds of CoNLL-2003's arms listed ({"pretrained": (seed, ...), ...}, in the
    order of their scores), as a fine-tuning result lists its runs."""
    results = json.loads((run.path / "finetune_results.json").read_text())
    for arm, seeds in task_arms.items():
        entry = results["conll2003"][arm]
        assert len(seeds) == len(entry["scores"])
        entry["runs"] = [{"seed": s} for s in seeds]
    files.write_json(run.path / "finetune_results.json", results)
    return run


def test_runs_of_other_seeds_compare_the_seeds_both_ran(tmp_path, pair):
    """Which seeds a fine-tuning ran, and in how many processes, is not a setting of the pipeline:
    a gain is compared over the seeds both runs ran, and runs that share none are not compared."""
    first, _ = pair  # CoNLL-2003: pre-trained 81, 82, 80; scratch 64, 63, 65 (seeds 0, 1, 2)
    with_seeds(first, {"pretrained": (0, 1, 2), "scratch": (0, 1, 2)})
    one_seed = other_run(
        tmp_path / "one",
        settings={**SETTINGS, "ft_tasks_seeds": {"conll2003": [0]}, "ft_workers": 2},
        conll=([75.0], [60.0]),
    )
    with_seeds(one_seed, {"pretrained": (0,), "scratch": (0,)})
    rows = {r["measure"]: r for r in rerun.rerun_rows(first, one_seed)}
    conll = rows["gain on CoNLL-2003 (F1, points; seed 0 alone)"]
    assert (conll["kind"], conll["seeds"]) == ("gain", [0])
    assert (conll["first"], conll["again"]) == (pytest.approx(81.0 - 64.0), pytest.approx(15.0))
    # the same seeds, listed in another order: the medians, and no seed named
    with_seeds(first, {"pretrained": (0, 1, 2), "scratch": (2, 0, 1)})  # scratch: seed 2 64, 0 63, 1 65
    again = other_run(tmp_path / "again3", conll=([70.0, 71.0, 72.0], [60.0] * 3))
    with_seeds(again, {"pretrained": (2, 1, 0), "scratch": (0, 1, 2)})
    conll = next(r for r in rerun.rerun_rows(first, again) if r.get("task") == "conll2003")
    assert conll["measure"] == "gain on CoNLL-2003 (F1, points)" and "seeds" not in conll
    assert conll["change"] == pytest.approx(11.0 - 17.0)
    two = other_run(tmp_path / "two", conll=([70.0, 72.0], [60.0, 61.0]))
    with_seeds(two, {"pretrained": (1, 2), "scratch": (1, 2)})
    # seeds 1 and 2: first's 82, 80 against 65, 64 (81 - 64.5); two's 71 - 60.5
    conll = next(r for r in rerun.rerun_rows(first, two) if r.get("task") == "conll2003")
    assert conll["measure"].endswith("; seeds 1 and 2)")
    assert (conll["first"], conll["again"]) == (pytest.approx(16.5), pytest.approx(10.5))
    none = with_seeds(other_run(tmp_path / "none", conll=([70.0], [60.0])), {"pretrained": (5,), "scratch": (5,)})
    conll = next(r for r in rerun.rerun_rows(first, none) if r.get("task") == "conll2003")
    assert conll["kind"] == "other settings"


def test_a_task_added_with_other_workers_is_compared(pair):
    first, again = pair
    with_squad(first, 10.0, 256, [32, 64])
    with_squad(again, 3.0, 256, [32, 64])
    prov = json.loads((again.path / "provenance.json").read_text())
    prov["added_tasks"]["squad"]["settings"]["workers"] = 2
    files.write_json(again.path / "provenance.json", prov)
    squad = next(r for r in rerun.rerun_rows(first, again) if r.get("task") == "squad")
    assert (squad["kind"], squad["change"]) == ("gain", pytest.approx(-7.0))


def moved(row, again):
    """`row` of a pair of runs with the second run's figure `again` instead."""
    return dict(row, again=again, change=again - row["first"], values=[row["first"], again])


def prov_wall(run):
    return json.loads((run.path / "provenance.json").read_text())["wall_time_s"]


def test_find_again_only_returns_a_run_of_the_records_settings(tmp_path, pair):
    first, again = pair
    assert rerun.find_again(first, again.path).path == again.path
    assert rerun.find_again(None, again.path) is None  # no record
    assert rerun.find_again(first, tmp_path / "absent") is None  # no second run
    other = other_run(tmp_path / "other", settings={**SETTINGS, "minutes": 40.0})
    assert rerun.find_again(first, other.path) is None  # a record made with other settings


def test_gains_note_for_under_the_records_table(pair):
    rows = rerun.rerun_rows(*pair)
    assert rerun.gains_note(rows) == (
        "Each gain is one run's. The same pipeline made again with the same settings moved them by "
        "0.5 points in the median task and by up to 4.0 (SST-2 with 500 sentences: -2.0 then +2.0), "
        "and on SST-2 with 500 sentences and MRPC the sign of the gain turned."
    )
    steady = [moved(r, r["first"] + 0.25) if r["kind"] == "gain" else r for r in rows]
    assert rerun.gains_note(steady).endswith("by up to 0.2 (SST-2 with 500 sentences: -2.0 then -1.8).")
    assert rerun.gains_note([r for r in rows if r["kind"] != "gain"]) == ""


def test_the_recorded_rerun_reads_beside_the_record():
    """The committed second run of the record's settings, if this checkout has one for its record:
    every gain the record holds has its twin, and the readings are built from those rows."""
    from bertlab.experiments import reference

    run = reference.find()
    again = rerun.find_again(run)
    if again is None:
        pytest.skip("no second run of the record's settings in this checkout")
    rows = rerun.rerun_rows(run, again)
    gains = [r for r in rows if r["kind"] == "gain"]
    rows_of_the_record = [r for r in rows if r["kind"] in ("gain", "not run again")]
    assert [(r["task"], r["train_examples"]) for r in rows_of_the_record] == [
        (g["task"], g["train_examples"]) for g in run.gains()
    ]  # every fine-tuning of the record has its row, compared where the second run made it too
    for r in gains:
        assert r["change"] == pytest.approx(r["again"] - r["first"])
    held = rows[0]
    assert held["kind"] == "heldout" and 0 < held["again"] < 100
    text = rerun.rerun_reading(rows, limit_minutes=100)
    assert f"{held['again']:.1f}% held-out MLM accuracy against the record's {held['first']:.1f}%" in text
    assert rerun.gains_note(rows).startswith("Each gain is one run's.")


def test_one_named_setting_may_differ_and_is_read_against_the_same_settings_twice(tmp_path, pair):
    first, again = pair
    two = make_run(
        tmp_path / "two",
        acc=0.401,
        steps=6700,
        settings={**SETTINGS, "layers": 2},
        sst2={500: ([66.0, 67.0, 68.0], [60.0, 61.0, 62.0]), 2000: ([73.0, 72.0, 74.0], [70.0, 71.0, 69.0])},
        mrpc=([78.0, 77.0, 79.0], [79.0, 78.0, 80.0]),
        conll=([75.0, 76.0, 74.0], [64.0, 63.0, 65.0]),
        stages={**STAGES, "mrpc_s": 200.0, "rte_s": 180.0, "conll2003_s": 450.0},
        speeds=(19000.0, 19500.0),
    )
    with pytest.raises(ValueError, match=r"same settings \(layers: None -> 2\)"):
        rerun.rerun_rows(first, two)  # an unnamed change is refused, as before
    with pytest.raises(ValueError, match="the same layers"):
        rerun.rerun_rows(first, again, changed=("layers",))  # a named one must have changed
    with pytest.raises(ValueError, match=r"besides layers \(minutes: 50.0 -> 60.0\)"):
        rerun.rerun_rows(
            first, other_run(tmp_path / "o", settings={**SETTINGS, "layers": 2, "minutes": 60.0}), changed=("layers",)
        )
    rows = rerun.rerun_rows(first, two, changed=("layers",))
    noise = rerun.rerun_rows(first, again)
    # gains (first -> two): SST-2 500 -2 -> +6 (moved 8; twice: 4), SST-2 2,000 +3 -> +3 (0; twice 0.5),
    # MRPC -1 -> -1 (0; twice 2), CoNLL +17 -> +11 (6; twice 0)
    far = rerun.beyond_chance(rows, noise)
    assert [(r["task"], r["train_examples"]) for r in far] == [("sst2", 500), ("conll2003", None)]
    text = rerun.lever_reading(rows, "two layers instead of four", noise=noise, limit_minutes=100)
    assert text.startswith(
        "With two layers instead of four, the pipeline ends its pretraining at 40.1% held-out MLM accuracy "
        "against the record's 39.3% (+0.8 points), after 6,700 steps against 3,350 (2.00 times as many in its "
        "time budget); pre-training's gains move by "
    )
    assert (
        "2 of the 4 gains moved further than when the record's settings were made again: "
        "SST-2 with 500 sentences (+8.0), CoNLL-2003 (-6.0)." in text
    )
    end = rows[-1]
    assert end["end_to_end"] and end["again"] < end["first"]
    assert text.endswith(
        f"End to end it took {end['again']:.1f} minutes, the record {end['first']:.1f} "
        "(within the 100 minutes the pipeline is meant to fit)."
    )
    # when every gain stayed within what chance moved it, the reading says the tasks cannot tell
    steady = [moved(r, r["first"]) if r["kind"] == "gain" else r for r in rows]
    assert "None of the 4 gains moved further than it moved" in rerun.lever_reading(steady, "x", noise=noise)
    # when every gain moved further than chance did, the reading says all of them
    shifted = [moved(r, r["first"] - 9.0) if r["kind"] == "gain" else r for r in rows]
    assert "All 4 gains moved further than when" in rerun.lever_reading(shifted, "x", noise=noise)
    assert "gains moved further" not in rerun.lever_reading(rows, "x")  # without the pair made twice
    assert rerun.lever_reading([], "x") == ""


def test_find_changed_returns_a_run_that_changed_only_the_named_settings(tmp_path, pair):
    first, again = pair
    two = other_run(tmp_path / "two", settings={**SETTINGS, "layers": 2})
    assert rerun.find_changed(first, ("layers",), two.path).path == two.path
    assert rerun.find_changed(first, ("layers",), again.path) is None  # did not change the layers
    both = other_run(tmp_path / "both", settings={**SETTINGS, "layers": 2, "minutes": 60.0})
    assert rerun.find_changed(first, ("layers",), both.path) is None  # changed more than it names
    assert rerun.find_changed(None, ("layers",), two.path) is None
    assert rerun.find_changed(first, ("layers",), tmp_path / "absent") is None
    with pytest.raises(ValueError, match="name the folder"):
        rerun.find_changed(first, ("preset",))


@pytest.fixture
def three(tmp_path, pair):
    """The pair and a third run of the same settings: SST-2 500 -1.0, 2,000 +2.0, MRPC +1.0,
    CoNLL-2003 +14.0; 3,600 steps at 38.0%."""
    first, again = pair
    third = make_run(
        tmp_path / "third",
        acc=0.380,
        steps=3600,
        sst2={500: ([62.0, 63.0, 64.0], [64.0, 64.0, 64.0]), 2000: ([72.0, 73.0, 74.0], [71.0, 71.0, 71.0])},
        mrpc=([79.0, 79.0, 79.0], [78.0, 78.0, 78.0]),
        conll=([78.0, 78.0, 78.0], [64.0, 64.0, 64.0]),
        stages={**STAGES, "mrpc_s": 250.0, "rte_s": 200.0, "conll2003_s": 800.0},
        speeds=(10000.0,),
    )
    return first, again, third


def test_spread_rows_set_every_run_of_the_settings_side_by_side(three):
    first, again, third = three
    rows = {r["measure"]: r for r in rerun.spread_rows(first, [again, third])}
    held = rows["held-out MLM accuracy, every chosen position (%)"]
    assert held["values"] == pytest.approx([39.3, 38.7, 38.0])
    assert (held["low"], held["high"], held["spread"]) == pytest.approx((38.0, 39.3, 1.3))
    steps = rows["pretraining steps"]
    assert (steps["values"], steps["spread"]) == ([3350, 3747, 3600], 397)
    # gains: SST-2 500 -2 / +2 / -1, 2,000 +3 / +3.5 / +2, MRPC -1 / +1 / +1, CoNLL +17 / +17 / +14
    conll = rows["gain on CoNLL-2003 (F1, points)"]
    assert conll["values"] == pytest.approx([17.0, 17.0, 14.0]) and conll["change"] == pytest.approx(3.0)
    assert conll["task"] == "conll2003" and conll["first"] == pytest.approx(17.0)
    assert rows["gain on SST-2 with 2,000 sentences (accuracy, points)"]["spread"] == pytest.approx(1.5)
    end = rows["minutes: end to end"]
    assert end["values"][2] == pytest.approx((sum(STAGES.values()) - 310 + 800 + 30) / 60)
    with pytest.raises(ValueError, match="at least one run"):
        rerun.spread_rows(first, [])


def test_spread_table_and_reading_are_generated_from_the_rows(three):
    first, again, third = three
    rows = rerun.spread_rows(first, [again, third])
    table = rerun.spread_table(rows, ("the record", "again", "third")).splitlines()
    assert table[:2] == ["| measure | the record | again | third | spread |", "|---|---:|---:|---:|---:|"]
    assert "| pretraining steps | 3,350 | 3,747 | 3,600 | 397 |" in table
    assert "| gain on CoNLL-2003 (F1, points) | +17.0 | +17.0 | +14.0 | 3.0 |" in table
    with pytest.raises(ValueError, match="name each of the 3 runs"):
        rerun.spread_table(rows, ("the record", "again"))
    text = rerun.spread_reading(rows, limit_minutes=100)
    # spreads: SST-2 500 4.0, 2,000 1.5, MRPC 2.0, CoNLL 3.0: the lower median is 2.0
    assert text.startswith(
        "Over three runs of the record's settings, pretraining ended between 38.0% and 39.3% held-out MLM "
        "accuracy, after 3,350 to 3,747 steps; pre-training's gains spread by 2.0 points in the median task "
        "and by up to 4.0 (SST-2 with 500 sentences: -2.0, +2.0 then -1.0)."
    )
    assert (
        "On SST-2 with 500 sentences and MRPC some runs find pre-training ahead and others behind; "
        "every other gain kept its sign." in text
    )
    end = next(r for r in rows if r.get("end_to_end"))
    assert text.endswith(
        f"End to end the record took {end['values'][0]:.1f} minutes, the other runs "
        f"{end['values'][1]:.1f} and {end['values'][2]:.1f} (within the 100 minutes the pipeline is meant to fit)."
    )
    two_runs = rerun.spread_reading(rerun.spread_rows(first, [again]))
    assert "the record took" in two_runs and "minutes, the other run " in two_runs
    steady = [dict(r, values=[5.0, 6.0, 7.0]) if r["kind"] == "gain" else r for r in rows]
    assert "Every gain kept its sign in all three runs." in rerun.spread_reading(steady)
    assert rerun.spread_reading([]) == ""


def test_notes_and_lever_readings_take_several_runs_as_chance(tmp_path, three):
    first, again, third = three
    spread = rerun.spread_rows(first, [again, third])
    assert rerun.gains_note(spread) == (
        "Each gain is one run's. Over three runs of the same settings the gains spread by 2.0 points in the "
        "median task and by up to 4.0 (SST-2 with 500 sentences: -2.0, +2.0 then -1.0), and on SST-2 with "
        "500 sentences and MRPC the sign of the gain turned."
    )
    two = other_run(
        tmp_path / "two",
        settings={**SETTINGS, "layers": 2},
        sst2={500: ([66.0], [60.0]), 2000: ([73.0], [70.0])},
        mrpc=([78.0], [79.0]),
        conll=([75.0], [64.0]),
    )
    rows = rerun.rerun_rows(first, two, changed=("layers",))
    # moves: SST-2 500 8.0 (spread 4.0), 2,000 0.0 (1.5), MRPC 0.0 (2.0), CoNLL 6.0 (3.0)
    text = rerun.lever_reading(rows, "two layers", noise=spread)
    assert (
        "2 of the 4 gains moved further than they spread across the three runs of the record's settings: "
        "SST-2 with 500 sentences (+8.0), CoNLL-2003 (-6.0)." in text
    )
    steady = [moved(r, r["first"]) if r["kind"] == "gain" else r for r in rows]
    assert "None of the 4 gains moved further than it spread across the three runs" in rerun.lever_reading(
        steady, "x", noise=spread
    )


def test_find_runs_again_lists_the_recorded_runs_of_the_records_settings(tmp_path, monkeypatch, pair):
    first, again = pair
    records = tmp_path / "records"
    monkeypatch.setenv("BERTLAB_RECORDS", str(records))
    records.mkdir()
    assert rerun.find_runs_again(first) == []
    (records / "pilots").mkdir()
    again.path.rename(records / "pilots" / "record7-again")
    other_run(records / "pilots" / "record7-third", settings={**SETTINGS, "minutes": 40.0})  # other settings
    assert [r.path.name for r in rerun.find_runs_again(first)] == ["record7-again"]
    (records / "pilots" / "record7-third").rename(records / "pilots" / "elsewhere")
    other_run(records / "pilots" / "record7-third")
    assert [r.path.name for r in rerun.find_runs_again(first)] == ["record7-again", "record7-third"]
    # the previous record first; a record among them is not its own run again
    other_run(records / "pilots" / "record7", settings={**SETTINGS, "ft_workers": 2})
    names = ["record7", "record7-again", "record7-third"]
    assert [r.path.name for r in rerun.find_runs_again(first)] == names
    assert [r.path.name for r in rerun.find_runs_again(ReferenceRun(records / "pilots" / "record7"))] == names[1:]
    assert rerun.find_runs_again(None) == []


def test_the_recorded_runs_of_the_records_settings_spread_beside_it():
    """Every committed run of the record's settings (record7, record7-again, record7-third), if this checkout
    has them: the spread rows hold one figure per run and the reading names them all."""
    from bertlab.experiments import reference

    run = reference.find()
    runs_again = rerun.find_runs_again(run)
    if not runs_again:
        pytest.skip("no run of the record's settings made again in this checkout")
    rows = rerun.spread_rows(run, runs_again)
    assert rows and all(len(r["values"]) == len(runs_again) + 1 for r in rows)
    gains = [r for r in rows if r["kind"] == "gain"]
    assert gains and all(r["low"] <= r["first"] <= r["high"] for r in gains)
    text = rerun.spread_reading(rows, limit_minutes=100)
    held = rows[0]
    words = {1: "two", 2: "three", 3: "four"}  # the runs besides the record: 1 to 3 so far
    assert text.startswith(f"Over {words[len(runs_again)]} runs of the record's settings")
    assert f"between {held['low']:.1f}% and {held['high']:.1f}% held-out" in text
