"""The pilot study's readings: series grouped by baseline, compared at equal tokens (not steps),
cross-length scores preferred, tables and sentences generated from the numbers."""

import json

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from bertlab import files  # noqa: E402
from bertlab.analysis.viz import lever_chart  # noqa: E402
from lab import pilots  # noqa: E402
from lab.pilots import (  # noqa: E402
    accuracy_at,
    lever_effects,
    levers_reading,
    pilot_series,
    series_reading,
    series_table,
)


def curve(points, per_step=1000):
    """A held-out curve: (step, accuracy) pairs, `per_step` tokens a step."""
    return [{"step": s, "tokens": s * per_step, "mlm_acc": a} for s, a in points]


BASE = {"name": "cpu-x-base", "change": "", "recipe": {"seq_len": 128}, "heldout": curve([(10, 0.10), (20, 0.15)])}
PILOTS = [
    BASE,
    {
        "name": "cpu-x-good",
        "change": "a change that helps",
        "baseline": "cpu-x-base",
        "heldout": curve([(10, 0.12), (20, 0.25)]),
    },
    # twice the batch: half the steps for the same tokens; compared at 20,000 tokens, not step 20
    {
        "name": "cpu-x-batch",
        "change": "twice the batch",
        "baseline": "cpu-x-base",
        "heldout": curve([(5, 0.09), (10, 0.13)], per_step=2000),
    },
    {
        "name": "cpu-x-short",
        "change": "shorter sequences",
        "baseline": "cpu-x-base",
        "heldout": curve([(10, 0.2), (20, 0.30)]),
        "cross_eval": {
            "rows": [
                {"run": "cpu-x-short", "seq_len": 128, "mlm_acc": 0.17},
                {"run": "cpu-x-base", "seq_len": 128, "mlm_acc": 0.15},
            ]
        },
    },
    {
        "name": "cpu-x-stall",
        "change": "a change that stalls",
        "baseline": "cpu-x-base",
        "heldout": curve([(10, 0.151), (20, 0.152)]),
    },
    {"name": "unrelated", "change": "", "heldout": curve([(1, 0.5)])},
]


def test_series_compare_at_equal_tokens():
    [s] = pilot_series(PILOTS)
    assert s.name == "cpu-x-base" and s.tokens == 20_000 and s.minutes is None
    assert {p["name"] for p in s.pilots} == {"cpu-x-good", "cpu-x-batch", "cpu-x-short", "cpu-x-stall"}
    assert accuracy_at(s.baseline["heldout"], 20_000) == 0.15
    with pytest.raises(KeyError, match="15,000 tokens"):
        accuracy_at(s.baseline["heldout"], 15_000)


def test_short_labels_drop_what_a_pilot_shares_with_its_baseline():
    from lab.pilots import short_label

    assert short_label("cpu-mini-mask-30", "cpu-mini-8k") == "mask-30"
    assert short_label("cpu-post-ln", "cpu-tiny-16k") == "post-ln"
    assert short_label("cpu-size-tiny-10min", "cpu-size-mini-10min") == "tiny-10min"
    assert short_label("p1", "base") == "p1" and short_label("cpu-mini", "cpu-mini-8k") == "mini"


def test_lever_effects_are_sorted_and_use_the_baselines_window_length():
    levers = lever_effects(pilot_series(PILOTS))
    assert [(lv.label, lv.points) for lv in levers] == [("good", 10.0), ("short", 2.0), ("stall", 0.2), ("batch", -2.0)]
    assert levers[1].scored_on == "128-token windows" and levers[0].scored_on is None  # cross_eval: 17% vs 15%
    text = levers_reading(levers)
    assert "raised it: good (+10.0), short (+2.0 on 128-token windows)" in text and "lowered it: batch (-2.0)" in text
    assert "less than 0.5 of a point: stall" in text and "at 20,000 tokens" in text
    assert "One run each" in text  # no noise measured: the reading says so instead of a verdict


def test_table_and_reading_are_generated_from_the_numbers():
    [s] = pilot_series(PILOTS)
    table = series_table(s).splitlines()
    assert table[0].startswith("| run | change | held-out accuracy at 20,000 tokens")
    assert "| cpu-x-batch | twice the batch | 13.0% | -2.0 points |" in table
    # scored on its own windows and again on the baseline's: the row names both numbers
    short = next(line for line in table if line.startswith("| cpu-x-short |"))
    assert "+15.0 points on its own windows, +2.0 on 128-token windows" in short
    reading = series_reading(s)
    assert "ahead of the baseline: `cpu-x-short` (+15.0), `cpu-x-good` (+10.0)" in reading
    assert "never rose above its first held-out score" in reading and "`cpu-x-stall`" in reading
    assert "`cpu-x-short` on 128 tokens, 17.0%" in reading


def test_a_timed_series_is_also_read_by_where_each_run_ended():
    timed = [dict(p, minutes=10.0) if p.get("baseline") else p for p in PILOTS[:3]]
    [s] = pilot_series(timed)
    assert s.minutes == 10.0
    assert "After the whole 10 minutes: `cpu-x-good` 25.0%" in series_reading(s)
    assert "after 10 minutes (steps)" in series_table(s)


def test_a_pilot_trained_past_the_common_tokens_is_read_where_it_ended():
    """Two layers for the CPU time of four: the pilot trains past the series' common tokens, and
    the reading says where it ended beside the baseline at the common tokens."""
    longer = {
        "name": "cpu-x-2-layers",
        "change": "two layers for the same time",
        "baseline": "cpu-x-base",
        "heldout": curve([(10, 0.11), (20, 0.14), (34, 0.19)]),
    }
    [s] = pilot_series([BASE, longer])
    assert s.tokens == 20_000
    reading = series_reading(s)
    assert "behind it: `cpu-x-2-layers` (-1.0)" in reading
    assert (
        "Past those tokens: `cpu-x-2-layers` 19.0% after 34,000 tokens; "
        "the baseline had 15.0% after 20,000 tokens." in reading
    )
    # pilots that all stop at the common tokens add nothing, whatever the baseline ran past them
    assert "Past those tokens" not in series_reading(pilot_series(PILOTS)[0])
    longer_base = dict(BASE, heldout=curve([(10, 0.10), (20, 0.15), (40, 0.2)]))
    assert "Past those tokens" not in series_reading(pilot_series([longer_base, PILOTS[1]])[0])


def test_the_lever_chart_draws_one_bar_per_change():
    levers = lever_effects(pilot_series(PILOTS))
    ax = lever_chart(levers, title="levers", limit=12)
    assert ax.get_xlim() == (-12, 12)
    assert len(ax.patches) == 4 and [t.get_text() for t in ax.get_yticklabels()][1] == "short\n(on 128-token windows)"
    assert ax.patches[0].get_width() == pytest.approx(10.0)


def test_the_recorded_pilots_form_series():
    series = {s.name: s for s in pilot_series()}
    if "cpu-mini-8k" not in series:
        pytest.skip("no mini pilot series recorded in this checkout")
    mini = series["cpu-mini-8k"]
    assert mini.tokens == 1250 * 64 * 128  # every run of the series was scored after 10.2M tokens
    assert all(lv.series == "cpu-mini-8k" for lv in lever_effects([mini]))


def test_pilot_curves_draw_every_run_up_to_the_common_tokens():
    from lab.charts import pilot_curves

    [s] = pilot_series(PILOTS)
    ax = pilot_curves(s, threshold=0.2)
    assert len(ax.lines) == 5 + 1  # five runs and the threshold
    assert max(max(line.get_xdata()) for line in ax.lines[:5]) == pytest.approx(0.02)  # 20,000 tokens
    # a pilot that trained past the common tokens goes on, dashed, in its own colour; the baseline does not
    longer = dict(PILOTS[1], heldout=curve([(10, 0.12), (20, 0.25), (34, 0.3)]))
    base = dict(BASE, heldout=curve([(10, 0.10), (20, 0.15), (40, 0.2)]))
    ax = pilot_curves(pilot_series([base, longer])[0])
    solid, dashed = (
        [ln for ln in ax.lines if ln.get_linestyle() == "-"],
        [ln for ln in ax.lines if ln.get_linestyle() == "--"],
    )
    assert len(solid) == 2 and max(max(ln.get_xdata()) for ln in solid) == pytest.approx(0.02)
    [on] = dashed
    assert list(on.get_xdata()) == pytest.approx([0.02, 0.034]) and on.get_color() == solid[1].get_color()


def test_machines_table_says_where_each_pilot_ran():
    from lab.pilots import machines_table

    pilots = [
        dict(
            PILOTS[1],
            machine={"cpu": "AMD EPYC", "runtime": "cpu (2 cores), bf16", "median_tokens_per_s": 17401.7},
            git_commit="0123456789abcdef",
        ),
        PILOTS[0],
    ]
    lines = machines_table(pilots).splitlines()
    assert lines[2] == "| cpu-x-base | not recorded | not recorded | not recorded | not recorded |"
    assert lines[3] == "| cpu-x-good | AMD EPYC | cpu (2 cores), bf16 | 17,402 | 0123456 |"


def sweep_row(model, task, n, init, median):
    return {"model": model, "task": task, "train_examples": n, "init": init, "median": median}


def test_size_check_sets_the_challenger_beside_the_record():
    import math

    from lab.pilots import size_check, size_check_table

    rows = [
        sweep_row("tiny", "sst2", 2000, "pretrained", 70.0),
        sweep_row("tiny", "sst2", 2000, "scratch", 71.0),
        sweep_row("record", "sst2", 2000, "pretrained", 72.0),
        sweep_row("record", "sst2", 2000, "scratch", 70.5),
        sweep_row("tiny", "conll2003", None, "pretrained", 80.0),
        sweep_row("tiny", "conll2003", None, "scratch", 60.0),
        sweep_row("record", "conll2003", None, "pretrained", 79.0),
        sweep_row("record", "conll2003", None, "scratch", 61.0),
    ]
    check = size_check(rows, [dict(BASE, name="tiny")])
    assert check.models == ["record", "tiny"] and check.challenger == "tiny"
    assert check.tasks == [("conll2003", None), ("sst2", 2000)]
    assert check.behind == [("sst2", 2000)]  # on CoNLL-2003 the tiny model is ahead
    assert check.heldout == 0.15  # its last held-out score as a pilot
    lines = size_check_table(check).splitlines()
    assert lines[0] == "| task | record: pre-trained (scratch) | tiny: pre-trained (scratch) |"
    assert lines[2] == "| conll2003, all (entity F1) | 79.0 (61.0) | 80.0 (60.0) |"
    assert lines[3] == "| sst2, 2,000 sentences | 72.0 (70.5) | 70.0 (71.0) |"
    assert math.isnan(size_check(rows, []).heldout)  # not a recorded pilot
    assert size_check([], PILOTS) is None


class FakeRun:
    """What whole_run_rows reads of a ReferenceRun."""

    provenance = {"settings": {"batch_size": 64, "recipe": "cpu", "mlm_probability": 0.3}}

    def __init__(self, metrics):
        self._metrics = metrics

    def metrics(self):
        return self._metrics

    def config(self):
        from bertlab import BertConfig

        return BertConfig.preset("mini", vocab_size=8192)

    def phase_plan(self):
        return "steps"


def test_whole_runs_are_read_by_tokens_and_where_they_left_the_plateau():
    from lab.pilots import earlier_runs, whole_run_rows, whole_runs_table

    timed = dict(BASE, name="cpu-x-50min", minutes=50.0, baseline="cpu-x-base")
    size = dict(BASE, name="cpu-size-x-10min", minutes=10.0)
    alone = dict(BASE, name="p1-alone")
    runs = earlier_runs([*PILOTS, timed, size, alone], pilot_series(PILOTS))
    assert [p["name"] for p in runs] == ["unrelated", "cpu-x-50min", "p1-alone"]  # not baselines, one-change or sizes

    model = {"L": 2, "H": 128, "A": 2, "vocab_size": 16384}
    pilot = dict(alone, model=model, recipe={"batch_size": 32}, change="a whole recipe")
    pilot["heldout"] = curve([(10, 0.1), (20, 0.25), (30, 0.3)])
    metrics = [
        {"split": "train", "step": 100, "tokens": 5_000_000},
        {"split": "eval", "step": 100, "mlm_acc": 0.21},
        {"split": "eval", "step": 150, "mlm_acc": 0.3},  # no training record at this step: 0 tokens
    ]
    rows = whole_run_rows([pilot], FakeRun(metrics))
    assert [r["name"] for r in rows] == ["p1-alone", "recorded run"]
    assert rows[0]["exit"]["step"] == 20 and rows[1]["exit"]["tokens"] == 5_000_000
    assert [q["tokens"] for q in rows[1]["points"]] == [5_000_000, 0]
    lines = whole_runs_table(rows).splitlines()
    assert lines[0].endswith("| reached 20% after |")
    assert lines[2] == "| p1-alone | 2/128/2 | 16,384 | 32 | a whole recipe | 0.0M | 30.0% | 0.0M tokens |"
    assert lines[3].startswith("| recorded run | 4/256/4 | 8,192 | 64 | the `cpu` recipe with 30% masked |")
    assert [r["name"] for r in whole_run_rows([pilot], FakeRun([]))] == ["p1-alone"]  # no evaluations logged
    never = dict(pilot, heldout=curve([(10, 0.1)]))
    assert whole_runs_table(whole_run_rows([never])).endswith("| never |")


def test_runs_by_tokens_draws_every_run_and_the_threshold():
    from lab.charts import runs_by_tokens

    ax = runs_by_tokens([("a", curve([(1, 0.1), (2, 0.3)], per_step=10**6)), ("b", curve([(3, 0.2)]))], threshold=0.2)
    assert len(ax.lines) == 3 and list(ax.lines[0].get_xdata()) == [1.0, 2.0]
    assert list(ax.lines[0].get_ydata()) == pytest.approx([10.0, 30.0]) and ax.lines[2].get_ydata()[0] == 20.0
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def test_the_recorded_size_check_and_whole_runs_are_consistent():
    from bertlab.experiments import reference
    from lab import pilots

    recorded = pilots.load()
    _, sweep = pilots.finetune_sweeps(pilots.PILOTS_DIR / "finetune_size_50min.jsonl")
    check = pilots.size_check(sweep, recorded)
    if check is not None:
        assert check.models[0] == "record" and check.challenger in check.models
        keys = {(m, t, n, i) for m in check.models for t, n in check.tasks for i in ("pretrained", "scratch")}
        assert keys == set(check.scores) and set(check.behind) <= set(check.tasks)
    run = reference.find()
    rows = pilots.whole_run_rows(pilots.earlier_runs(recorded, pilot_series(recorded)), run)
    if run is not None and pilots.recorded_curve(run):
        assert rows[-1]["name"] == "recorded run"
    for r in rows:
        accs = [q["mlm_acc"] for q in r["points"]]
        if r["exit"] is None:
            assert max(accs) < pilots.PLATEAU_EXIT_ACC
        else:  # the first evaluation at or above the threshold
            k = r["points"].index(r["exit"])
            assert accs[k] >= pilots.PLATEAU_EXIT_ACC > max(accs[:k], default=0.0)


def test_sweep_pairs_and_the_pooling_effect():
    from lab import pilots

    def row(init, median, pooling="cls", lr=5e-4, n=2000, task="sst2"):
        return {"task": task, "train_examples": n, "lr": lr, "pooling": pooling, "init": init, "median": median}

    rows = [
        row("pretrained", 72.0),
        row("scratch", 70.0),
        row("pretrained", 75.0, "mean"),
        row("scratch", 70.5, "mean"),
        row("pretrained", 60.0, lr=1e-4),  # no scratch arm: left out
        row("pretrained", 80.0, "mean", task="conll2003", n=None),
        row("scratch", 60.0, "mean", task="conll2003", n=None),  # no [CLS] twin: no pooling pair
    ]
    pairs = pilots.sweep_pairs(rows)
    assert set(pairs) == {("sst2", 2000, 5e-4, "cls"), ("sst2", 2000, 5e-4, "mean"), ("conll2003", None, 5e-4, "mean")}
    assert pairs[("sst2", 2000, 5e-4, "mean")]["pretrained"]["median"] == 75.0
    assert pilots.pooling_effect(pairs) == [(pytest.approx(4.5), pytest.approx(2.0), 5e-4)]


def test_runs_of_one_phase_plan_compare_only_inside_the_same_phase():
    plan = [{"fraction": 0.8, "seq_len": 64, "batch_size": 16}, {"fraction": 0.2, "seq_len": 128, "batch_size": 8}]
    base = {"name": "cpu-p-base", "change": "", "minutes": 5.0, "recipe": {"phases": plan}}
    base["heldout"] = curve([(10, 0.1), (20, 0.2), (30, 0.3), (40, 0.4), (50, 0.5)])  # 40 steps at 64, then 128
    pilot = {"name": "cpu-p-pre", "change": "slower", "baseline": "cpu-p-base", "minutes": 5.0}
    pilot["recipe"] = {"phases": plan}
    pilot["heldout"] = curve([(10, 0.1), (20, 0.2), (30, 0.35)])  # 24 steps at 64: step 30 is in its second phase
    [s] = pilot_series([base, pilot])
    assert s.tokens == 20_000  # not 30,000: there the pilot had already moved to 128 tokens
    [lever] = lever_effects([s])
    assert lever.points == 0.0
    reading = series_reading(s)
    assert reading.startswith("At 20,000 tokens, where every run was still in the same phase of sequence lengths,")
    assert "After the whole five minutes: `cpu-p-base` 50.0%" in reading
    # a pilot whose change is the plan itself is compared at every common count
    other = dict(pilot, recipe={"phases": plan[:1]})
    assert pilot_series([base, other])[0].tokens == 30_000
    # without phases nothing changes
    assert pilot_series([dict(base, recipe={}), dict(pilot, recipe={})])[0].tokens == 30_000


def test_training_seq_lens_reads_the_last_logged_length_before_each_step():
    from lab.pilots import training_seq_lens

    log = [
        {"split": "train", "step": 50, "seq_len": 32},
        {"split": "eval", "step": 100, "mlm_acc": 0.1},  # not a training line
        {"split": "train", "step": 100, "seq_len": 32},
        {"split": "train", "step": 150, "seq_len": 64},
    ]
    assert training_seq_lens(log, [10, 50, 120, 150, 400]) == [None, 32, 32, 64, 64]
    assert training_seq_lens([{"split": "train", "step": 50}], [50]) == [None]


def test_recorded_sequence_lengths_override_the_plan_when_phases_moved():
    """A run whose phases moved early (a time budget that misjudged its length) follows the same
    plan on paper; its recorded sequence lengths show where it really was."""
    plan = [{"fraction": 0.8, "seq_len": 64, "batch_size": 16}, {"fraction": 0.2, "seq_len": 128, "batch_size": 8}]

    def run(name, points, **extra):
        heldout = [{"step": s, "tokens": s * 1000, "mlm_acc": a, "seq_len": n} for s, a, n in points]
        return {"name": name, "change": "", "minutes": 5.0, "recipe": {"phases": plan}, "heldout": heldout, **extra}

    base = run("cpu-q-base", [(10, 0.1, 64), (20, 0.2, 64), (30, 0.3, 64), (40, 0.4, 64), (50, 0.5, 128)])
    moved = run("cpu-q-moved", [(10, 0.1, 64), (20, 0.25, 128), (30, 0.35, 128)], baseline="cpu-q-base")
    # by its plan (last point step 30, so the boundary falls at step 24) the pilot would still be on
    # 64 tokens at step 20; its log says it was already on 128
    assert pilot_series([base, moved])[0].tokens == 10_000
    unrecorded = [
        dict(r, heldout=[{k: v for k, v in q.items() if k != "seq_len"} for q in r["heldout"]]) for r in (base, moved)
    ]
    assert pilot_series(unrecorded)[0].tokens == 20_000  # without the lengths: the plan decides


def test_the_recorded_runs_own_pilot_file_is_not_a_second_row():
    from lab.pilots import whole_run_rows

    metrics = [
        {"split": "train", "step": 10, "tokens": 10_000},
        {"split": "eval", "step": 10, "mlm_acc": 0.1},
        {"split": "train", "step": 20, "tokens": 20_000},
        {"split": "eval", "step": 20, "mlm_acc": 0.15},
    ]
    model = {"L": 4, "H": 256, "A": 4, "vocab_size": 8192}
    own = dict(BASE, name="cpu-own-50min", model=model, recipe={"batch_size": 64})
    other = dict(own, name="cpu-other", heldout=curve([(10, 0.1), (20, 0.16)]))
    rows = whole_run_rows([own, other], FakeRun(metrics))
    assert [r["name"] for r in rows] == ["cpu-other", "recorded run"]


def test_runs_that_ended_at_the_records_tokens_are_read_against_it():
    from lab.pilots import same_tokens_reading

    def row(name, points):
        return {"name": name, "points": [{"tokens": t, "mlm_acc": a} for t, a in points]}

    record = row("recorded run", [(1_000_000, 0.2), (28_835_840, 0.381)])
    fair = row("cpu-x-levers", [(1_000_000, 0.1), (28_835_840, 0.4123)])
    longer = row("cpu-x-50min", [(41_869_312, 0.3869)])  # ended elsewhere: not compared
    text = same_tokens_reading([longer, fair, record])
    assert text == (
        "After the same 28.8M tokens as the recorded run, which ended at 38.1% held-out accuracy: "
        "`cpu-x-levers` ended at 41.2% (+3.1 points)."
    )
    behind = row("cpu-x-worse", [(28_835_840, 0.37)])
    assert same_tokens_reading([fair, behind, record]).endswith(
        "`cpu-x-levers` ended at 41.2% (+3.1 points); `cpu-x-worse` ended at 37.0% (-1.1 points)."
    )
    assert same_tokens_reading([longer, record]) == ""  # nothing ended at the record's tokens
    assert same_tokens_reading([fair, longer]) == ""  # no recorded run among the rows
    assert same_tokens_reading([]) == ""


def test_a_recorded_runs_settings_in_words():
    from lab.pilots import recorded_settings_text

    fifth = {
        "recipe": "cpu",
        "norm_position": "post",
        "segment_pairs": True,
        "phases": "0.8:64:128,0.1:128:64,0.1:256:32",
        "mlm_probability": 0.3,
    }
    assert recorded_settings_text(fifth) == (
        "the `cpu` recipe with post-LN layers, two segments per sequence, 80% of the steps on 128 "
        "sequences of 64 tokens, then 10% on 64 of 128 and 10% on 32 of 256, 30% masked"
    )
    assert "post-LN layers, two segments per sequence, 80% of the time on 128 sequences" in (
        recorded_settings_text(fifth, "time")
    )
    assert recorded_settings_text({"recipe": "budget", "segment_pairs": False, "phases": None}) == "the `budget` recipe"
    assert recorded_settings_text({}) == "the `cpu` recipe"


def _sweep_run(config, points):
    return {"eval": [{"step": s, "mlm_acc": a} for s, a in points], "run": {"config": config}}


def test_a_gpu_sweep_is_read_against_its_base_and_checked_by_a_cpu_pilot(tmp_path):
    import json

    from lab.pilots import (
        sweep_change,
        sweep_check,
        sweep_check_reading,
        sweep_rows,
        sweep_table,
    )

    base = {"lr": None, "mlm_probability": 0.3, "out": "/tmp/a", "steps": 100}
    sweep = {
        "mask-40": _sweep_run({**base, "mlm_probability": 0.4, "out": "/tmp/b"}, [(50, 0.2), (100, 0.32)]),
        "base": _sweep_run(base, [(50, 0.2), (100, 0.30)]),
        "lr-up": _sweep_run({**base, "lr": 0.003}, [(100, 0.27)]),
        "short": _sweep_run({**base, "phases": "0.5:32:256,0.5:64:128"}, [(100, 0.31)]),
    }
    path = tmp_path / "recipe_sweep.json"
    path.write_text(json.dumps(sweep))
    assert sweep_change(base, {**base, "out": "/elsewhere"}) == ""  # where a run writes is no change
    rows = sweep_rows(path)
    assert [r["name"] for r in rows] == ["base", "mask-40", "short", "lr-up"]  # base, then best first
    assert rows[1]["change"] == "mlm_probability 0.4" and rows[1]["points"] == pytest.approx(2.0)
    assert rows[3]["change"] == "lr 0.003" and rows[3]["points"] == pytest.approx(-3.0)
    table = sweep_table(rows)
    assert "| base | the recipe | 100 | 30.0% |  |" in table and "| lr-up | lr 0.003 | 100 | 27.0% | -3.0 |" in table

    pilot = {"name": "cpu-both", "heldout": [{"step": 100, "tokens": 8000, "mlm_acc": 0.305}]}
    control = {"name": "cpu-control", "points": [{"step": 100, "tokens": 8000, "mlm_acc": 0.30}]}
    check = sweep_check(rows, ["mask-40", "short"], pilot, control)
    assert check["predicted"] == pytest.approx(3.0) and check["measured"] == pytest.approx(0.5)
    text = sweep_check_reading(check, same_machine=True)
    assert "`mask-40` +2.0 and `short` +1.0" in text and "together, if they added up, +3.0" in text
    assert "+0.5 points against `cpu-control` (30.0%)" in text and "not the changes' alone" not in text
    assert "not the changes' alone" in sweep_check_reading(check, same_machine=False)
    record = {"name": "recorded run", "points": control["points"]}
    one = sweep_check_reading(sweep_check(rows, ["short"], pilot, record), True)
    assert "against the recorded run (30.0%)" in one and "`short` +1.0 points over the recipe." in one
    assert "made this change and" in one and "together" not in one
    with pytest.raises(ValueError, match="no run named"):
        sweep_check(rows, ["mask-50"], pilot, control)
    with pytest.raises(ValueError, match="same tokens"):
        sweep_check(rows, ["short"], pilot, {"name": "x", "points": [{"tokens": 4000, "mlm_acc": 0.2}]})
    # two layers for the CPU time of four: checked by the ratio of steps, not by tokens
    sweep["layers-2"] = _sweep_run({**base, "layers": 2, "steps": 171}, [(171, 0.335)])
    path.write_text(json.dumps(sweep))
    rows = sweep_rows(path)
    two = {"name": "cpu-two", "heldout": [{"step": 1710, "tokens": 13_680, "mlm_acc": 0.32}]}
    longer = {"name": "recorded run", "points": [{"step": 1000, "tokens": 8000, "mlm_acc": 0.30}]}
    check = sweep_check(rows, ["layers-2"], two, longer, same="steps ratio")
    assert check["predicted"] == pytest.approx(3.5) and check["measured"] == pytest.approx(2.0)
    text = sweep_check_reading(check, same_machine=True)
    assert "`layers-2` +3.5 points over the recipe." in text
    assert "+2.0 points against the recorded run (30.0%) after 1.71 times its steps, as on the GPU." in text
    with pytest.raises(ValueError, match="same tokens"):
        sweep_check(rows, ["layers-2"], two, longer)
    with pytest.raises(ValueError, match="run it for 1,710 steps"):
        sweep_check(rows, ["layers-2"], dict(two, heldout=[dict(two["heldout"][0], step=1500)]), longer, "steps ratio")
    with pytest.raises(ValueError, match="takes one part"):
        sweep_check(rows, ["layers-2", "short"], two, longer, same="steps ratio")
    with pytest.raises(ValueError, match="must be 'tokens' or 'steps ratio'"):
        sweep_check(rows, ["layers-2"], two, longer, same="time")
    del sweep["base"]
    path.write_text(json.dumps(sweep))
    with pytest.raises(ValueError, match="named 'base'"):
        sweep_rows(path)


def test_the_recorded_gpu_sweep_reads():
    from lab.pilots import sweep_rows

    rows = sweep_rows()
    assert rows[0]["name"] == "base" and rows[0]["points"] == 0
    assert all(r["change"] for r in rows[1:])  # every other run changes something, named


def test_record_pilot_keeps_the_heldout_curve(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    files.write_json(
        run / "run.json",
        {
            "config": {"minutes": 10.0, "steps": None, "corpus": "books+wiki", "seed": 0},
            "recipe": {"name": "cpu", "batch_size": 64, "seq_len": 128, "lr": 2e-3},
            "model_config": {
                "num_layers": 2,
                "hidden_size": 128,
                "num_heads": 2,
                "vocab_size": 16384,
                "norm_position": "pre",
            },
            "parameters": 2_500_000,
            "runtime": "cpu (2 cores), fp32, eager",
            "torch": "2.13.0",
            "git_commit": "abc",
        },
    )
    lines = [{"step": s, "split": "train", "tokens": s * 8192, "tokens_per_s": 1e4 + s} for s in (250, 500, 750)]
    lines += [
        {"step": s, "split": "eval", "mlm_loss": 6.5 - s / 500, "mlm_acc": a, "elapsed_s": s / 2}
        for s, a in ((250, 0.11), (500, 0.21), (750, 0.26))
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    path = pilots.record_pilot(run, "b-pre-ln", "pre-LN instead of post-LN", out_dir=tmp_path / "pilots")
    rec = json.loads(path.read_text())
    assert [p["tokens"] for p in rec["heldout"]] == [250 * 8192, 500 * 8192, 750 * 8192]
    assert rec["plateau_exit"]["step"] == 500  # the first evaluation at >= 20% accuracy
    assert rec["model"]["norm_position"] == "pre" and rec["machine"]["median_tokens_per_s"] == 10500
    files.write_json(tmp_path / "pilots" / "a-probe.json", {"rows": []})  # another check, not a pilot
    assert [p["name"] for p in pilots.load(tmp_path / "pilots")] == ["b-pre-ln"]
    assert pilots.plateau_exit(rec["heldout"], threshold=0.5) is None
    assert "baseline" not in rec
    path = pilots.record_pilot(run, "b-post-ln", "post-LN", out_dir=tmp_path / "pilots", baseline="b-pre-ln")
    assert json.loads(path.read_text())["baseline"] == "b-pre-ln"  # what chapter 10 compares it with
    assert all("seq_len" not in p for p in rec["heldout"])  # the log did not say
    # a log with sequence lengths (phases): each point keeps the length its run was training on
    phased = [dict(x, seq_len=64 if x["step"] < 750 else 128) for x in lines[:3]] + lines[3:]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in phased))
    path = pilots.record_pilot(run, "b-phases", "phases", out_dir=tmp_path / "pilots")
    assert [p["seq_len"] for p in json.loads(path.read_text())["heldout"]] == [64, 64, 128]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines[:3]))
    with pytest.raises(ValueError, match="no held-out MLM evaluation"):
        pilots.record_pilot(run, "c", "nothing", out_dir=tmp_path / "pilots")


def test_finetune_sweeps_reads_the_recorded_table(tmp_path):
    assert pilots.finetune_sweeps(tmp_path / "absent.jsonl") == ({}, [])
    f = tmp_path / "checks.jsonl"
    f.write_text(
        '{"meta": {"machine": "cpu"}}\n{"task": "sst2", "lr": 0.0005, "median": 71.1}\n\n'
        '{"task": "conll2003", "lr": 0.0005, "median": 74.4}\n'
    )
    meta, rows = pilots.finetune_sweeps(f)
    assert meta == {"machine": "cpu"} and [r["task"] for r in rows] == ["sst2", "conll2003"]
    _, shipped = pilots.finetune_sweeps()  # the table in data/pilots/
    assert {r["task"] for r in shipped} >= {"sst2", "conll2003"} and all("median" in r for r in shipped)


def test_json_lines_are_appended_each_on_disk_as_it_is_written(tmp_path, monkeypatch):
    synced = []
    real_fsync = pilots.os.fsync
    monkeypatch.setattr(pilots.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    out = tmp_path / "runs.jsonl"
    pilots.append_json_line(out, {"meta": {"about": "x"}})
    pilots.append_json_line(out, {"lr": 5e-4, "scores": [72.5, 72.8]})
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"meta": {"about": "x"}},
        {"lr": 5e-4, "scores": [72.5, 72.8]},
    ]
    assert len(synced) == 2  # each line reached the disk before the call returned


def test_the_cpu_lr_study_orders_the_peak_rates():
    setup, runs = pilots.cpu_lr_study()
    assert "tiny preset" in setup
    at_300 = {lr: acc for (lr, steps), (_, acc) in runs.items() if steps == 300}
    assert at_300[2e-3] > at_300[5e-4] > at_300[1e-4]
