"""The record's settings under several pretraining budgets: lab.time_budget."""

from __future__ import annotations

import math

import pytest

from lab import time_budget as tb
from lab.tests.test_rerun import SETTINGS, make_run, other_run, with_seeds


def _budget(folder, minutes, acc, conll_pretrained, sst2_2000_pretrained):
    """A run of the record's settings with another budget: CoNLL-2003 and SST-2 (2,000) gains set
    by their pre-trained scores against scratch arms of 64 and 70."""
    run = make_run(
        folder,
        acc=acc,
        steps=int(3300 * minutes / 50),
        sst2={2000: ([sst2_2000_pretrained] * 3, [70.0] * 3)},
        mrpc=([78.0] * 3, [78.0] * 3),
        conll=([conll_pretrained], [64.0]),
        stages={"pretrain_with_data_s": 60.0 * minutes + 180, "sst2_2000_s": 140.0},
        settings={**SETTINGS, "minutes": float(minutes)},
    )
    return with_seeds(run, {"pretrained": (0,), "scratch": (0,)})


@pytest.fixture
def runs(tmp_path):
    """The record (50 min, 39.3%) and two runs of its settings (38.7%, 38.0%), each with three seeds
    of CoNLL-2003 but the record with one; runs of 25 minutes (36.0%) and 100 minutes (41.3%)."""

    def fifty(name, acc, conll, sst2):
        run = make_run(
            tmp_path / name,
            acc=acc,
            steps=3300,
            sst2={2000: (sst2, [70.0] * 3)},
            mrpc=([78.0] * 3, [78.0] * 3),
            conll=conll,
            stages={"pretrain_with_data_s": 3180.0, "sst2_2000_s": 140.0},
        )
        seeds = tuple(range(len(conll[0])))
        return with_seeds(run, {"pretrained": seeds, "scratch": seeds})

    record = fifty("record", 0.393, ([80.0], [64.0]), [72.0] * 3)
    # seed 0 of CoNLL-2003: 79 against 64 and 81 against 64
    again = fifty("again", 0.387, ([79.0, 90.0, 90.0], [64.0, 50.0, 50.0]), [73.0] * 3)
    third = fifty("third", 0.380, ([81.0, 90.0, 90.0], [64.0, 50.0, 50.0]), [71.0] * 3)
    half = _budget(tmp_path / "half", 25, 0.360, 75.0, 73.0)
    longer = _budget(tmp_path / "longer", 100, 0.413, 85.0, 71.0)
    return record, [again, third], [half, longer]


def test_rows_hold_every_run_by_its_budget(runs):
    record, same, budgets = runs
    rows = {r["measure"]: r for r in tb.budget_rows(record, same, budgets)}
    held = rows["held-out MLM accuracy, every chosen position (%)"]
    assert held["values"] == pytest.approx([39.3, 38.7, 38.0, 36.0, 41.3])
    assert held["minutes"] == [50.0, 50.0, 50.0, 25.0, 100.0]
    assert rows["pretraining steps"]["values"] == [3300, 3300, 3300, 1650, 6600]
    # CoNLL-2003 over seed 0, which every run ran: +16, +15, +17, then +11 and +21
    conll = rows["gain on CoNLL-2003 (F1, points; seed 0 alone)"]
    assert conll["values"] == pytest.approx([16.0, 15.0, 17.0, 11.0, 21.0]) and conll["task"] == "conll2003"
    assert rows["gain on SST-2 with 2,000 sentences (accuracy, points)"]["values"] == pytest.approx(
        [2.0, 3.0, 1.0, 3.0, 1.0]
    )
    # only held-out accuracy, steps, tokens and gains: no minutes or speeds
    assert {r["kind"] for r in rows.values()} == {"heldout", "pretraining", "gain"}
    pretraining = sorted(m for m in rows if m.startswith("pretraining"))
    assert pretraining == ["pretraining steps", "pretraining tokens (millions)"]


def test_a_run_of_fixed_steps_or_other_settings_is_refused(tmp_path, runs):
    record, same, budgets = runs
    fixed = other_run(tmp_path / "fixed", settings={**SETTINGS, "minutes": None, "steps": 3520})
    assert tb.budget_minutes(fixed) is None and tb.budget_minutes(budgets[1]) == 100.0
    with pytest.raises(ValueError, match="fixed number of steps"):
        tb.budget_rows(record, same, [fixed])
    layers = other_run(tmp_path / "layers", settings={**SETTINGS, "minutes": 100.0, "layers": 2})
    with pytest.raises(ValueError, match="same settings besides minutes"):
        tb.budget_rows(record, same, [layers])


def test_find_budgets_keeps_the_runs_that_changed_only_the_minutes(tmp_path, runs):
    record, same, (half, longer) = runs
    layers = other_run(tmp_path / "layers", settings={**SETTINGS, "minutes": 100.0, "layers": 2})
    folders = [longer.path, layers.path, same[0].path, tmp_path / "absent", half.path]
    assert [r.path for r in tb.find_budgets(record, folders)] == [half.path, longer.path]
    assert tb.find_budgets(None, folders) == []


def test_the_line_in_log_time_and_its_standard_error():
    # log2(m / 50) = 0, 0, 1 with 38, 40, 42: slope 3, line 39 at 50 minutes, residuals -1, +1, 0
    fit = tb.log_time_fit([50, 50, 100], [38.0, 40.0, 42.0])
    assert fit.slope == pytest.approx(3.0) and fit.at(50) == pytest.approx(39.0)
    assert fit.residual_sd == pytest.approx(math.sqrt(2.0))
    assert fit.slope_se == pytest.approx(math.sqrt(2.0) / math.sqrt(2 / 3))
    assert (fit.runs, fit.budgets) == (3, (50.0, 100.0))
    assert fit.minutes_for(45.0) == pytest.approx(200.0)  # 39 + 3 * 2 doublings
    # a steeper line through the same centre (1/3 of a doubling past 50 minutes, 40%) gets there sooner
    assert fit.minutes_for(45.0, 5.0) == pytest.approx(50 * 2 ** (1 / 3 + 1.0))
    assert fit.minutes_for(45.0, -1.0) is None
    exact = tb.log_time_fit([25, 50, 100], [1.0, 3.0, 5.0])
    assert (exact.slope, exact.slope_se) == (pytest.approx(2.0), pytest.approx(0.0))
    two = tb.log_time_fit([50, 100], [38.0, 41.0])
    assert two.slope == pytest.approx(3.0) and two.slope_se is None and two.residual_sd is None
    with pytest.raises(ValueError, match="at least two budgets"):
        tb.log_time_fit([50, 50], [38.0, 39.0])
    with pytest.raises(ValueError, match="one budget per run"):
        tb.log_time_fit([50, 100], [38.0])


def test_each_step_up_in_time_is_read_between_the_medians():
    # medians 36 at 25 minutes, 39 at 50 (38, 39, 40), 40.5 at 100: +3 then +1.5 a doubling
    steps = tb.doublings_between([50, 25, 50, 100, 50], [38.0, 36.0, 39.0, 40.5, 40.0])
    assert steps == [(25.0, 50.0, pytest.approx(3.0)), (50.0, 100.0, pytest.approx(1.5))]
    assert tb.doublings_between([25, 100], [30.0, 34.0]) == [(25.0, 100.0, pytest.approx(2.0))]
    assert tb.doublings_between([50], [38.0]) == []
    with pytest.raises(ValueError):
        tb.doublings_between([50, 100], [38.0])


def test_returns_that_diminish_are_drawn_on_at_the_last_doublings_rate():
    # medians 28 at 25 minutes, 38.7 at 50 (38.0 to 39.3), 41.3 at 100: 10.7, then 2.6 a doubling
    minutes, values = [50, 50, 50, 25, 100], [39.3, 38.7, 38.0, 28.0, 41.3]
    assert tb.replicate_spread(minutes, values) == pytest.approx(1.3)
    assert tb.diminishing(minutes, values)
    assert not tb.diminishing([50, 50, 25, 100], [39.3, 38.0, 36.0, 41.3])  # 2.0 then 2.6
    assert not tb.diminishing([50, 100], [30.0, 31.0])  # one doubling: nothing to compare
    # a fall of 0.6 points a doubling is within a spread of 1.3, not without runs at one budget
    assert not tb.diminishing([25, 50, 50, 100], [35.7, 38.0, 39.3, 41.0])
    assert tb.diminishing([25, 50, 100], [35.0, 38.0, 40.0])
    fit = tb.log_time_fit(minutes, values)
    ext = tb.extension(minutes, values, fit)
    assert (ext.basis, ext.start) == ("last doubling", (100.0, pytest.approx(41.3)))
    assert ext.rate == pytest.approx(2.6)
    assert ext.minutes_for(45.0) == pytest.approx(100 * 2 ** (3.7 / 2.6))
    assert ext.at(200) == pytest.approx(43.9)
    assert tb.Extension(-1.0, (100.0, 41.3), "last doubling").minutes_for(45.0) is None


def test_a_reading_of_diminishing_returns_bounds_the_time_from_below(tmp_path, runs):
    record, same, (half, longer) = runs
    slow = _budget(tmp_path / "slow", 25, 0.280, 75.0, 73.0)
    rows = tb.budget_rows(record, same, [slow, longer])
    fit = tb.log_time_fit(*tb.heldout_points(rows))
    text = tb.budget_reading(rows, fit, target=45.0)
    hours = 100 * 2 ** (3.7 / 2.6) / 60
    assert text.startswith(
        "Over five runs at budgets of 25, 50 and 100 minutes, a doubling of the pretraining time bought "
        "10.7 points from 25 to 50 minutes and 2.6 points from 50 to 100 minutes, between the medians at "
        "each budget, a fall larger than the 1.3 points the runs at one budget spread. The returns "
        "diminish, so the least-squares line through every run in the logarithm of the time, "
        f"{fit.slope:.1f} points per doubling (standard error {fit.slope_se:.1f}), overstates what later "
        "doublings buy. Even if every further doubling bought as much as the last, "
        f"45% would take about {hours:.1f} hours of pretraining on the same cores, where the record "
        "pretrains for 50 minutes; returns that keep diminishing would take longer still."
    )


def test_table_has_a_column_per_budget(runs):
    rows = tb.budget_rows(*runs)
    table = tb.budget_table(rows).splitlines()
    assert table[0] == "| measure | 25 minutes | 50 minutes (three runs) | 100 minutes |"
    assert table[2] == "| held-out MLM accuracy, every chosen position (%) | 36.0 | 38.7 (38.0 to 39.3) | 41.3 |"
    assert "| pretraining steps | 1,650 | 3,300 (3,300 to 3,300) | 6,600 |" in table
    assert "| gain on CoNLL-2003 (F1, points; seed 0 alone) | +11.0 | +16.0 (+15.0 to +17.0) | +21.0 |" in table
    assert tb.budget_table([]) == ""


def test_reading_is_generated_from_the_rows_and_the_line(runs):
    rows = tb.budget_rows(*runs)
    minutes, values = tb.heldout_points(rows)
    fit = tb.log_time_fit(minutes, values)
    text = tb.budget_reading(rows, fit, target=45.0)
    assert text.startswith(
        f"Over five runs at budgets of 25, 50 and 100 minutes, held-out MLM accuracy rose {fit.slope:.1f} "
        f"points per doubling of the pretraining time (standard error {fit.slope_se:.1f}), fitted by least "
        "squares against the logarithm of the time. Step by step, between the medians at each budget, a "
        "doubling bought 2.7 from 25 to 50 minutes and 2.6 from 50 to 100 minutes. "
        "Were every further doubling to buy as much, 45% would "
        f"take about {fit.minutes_for(45.0) / 60:.1f} hours of pretraining on the same cores ("
    )
    assert "where the record has 25 to 100 minutes here" not in text  # the record's own budget is named
    assert "where the record pretrains for 50 minutes: a line drawn out, not a forecast." in text
    # CoNLL-2003 rose 11 -> 16 -> 21; SST-2 at 2,000 went 3 -> 2 -> 1, MRPC stayed at 0
    assert text.endswith(
        "Of the fine-tuned gains, CoNLL-2003 (+11.0 to +16.0 to +21.0) rose with every longer budget; "
        "SST-2 with 2,000 sentences and MRPC did not."
    )
    conll = [r for r in rows if r["kind"] != "gain" or r["task"] == "conll2003"]
    assert tb.budget_reading(conll, fit).endswith(
        "Every fine-tuned gain rose with every longer budget: CoNLL-2003 (+11.0 to +16.0 to +21.0)."
    )
    no_conll = [r for r in rows if r.get("task") != "conll2003"]
    assert tb.budget_reading(no_conll, fit).endswith(" None of the fine-tuned gains rose with every longer budget.")
    held_only = [r for r in rows if r["kind"] != "gain"]
    assert tb.budget_reading(held_only, fit).endswith("a line drawn out, not a forecast.")
    assert tb.budget_reading(rows, fit, target=40.0).count("The runs reach 40% within the longest budget.") == 1
    assert tb.extension(minutes, values, fit).basis == "line"  # 2.7 then 2.6 a doubling: no fall
    # a slope one standard error lower would not rise: the range ends in "never"
    scattered = tb.log_time_fit([50, 50, 100, 100], [36.0, 40.0, 37.0, 41.0])  # slope 1, se sqrt(8)
    assert (scattered.slope, scattered.slope_se) == (pytest.approx(1.0), pytest.approx(math.sqrt(8)))
    assert "hours or never with the slope one standard error either way)" in tb.budget_reading(rows, scattered)
    flat = tb.log_time_fit([25, 50, 100], [38.0, 38.0, 37.0])
    assert "more time alone gives no way to 45%" in tb.budget_reading(rows, flat)
    assert tb.budget_reading([], fit) == ""
    assert tb.heldout_points([]) == ([], [])
    mask_minutes, mask_values = tb.heldout_points(rows, mask_only=True)
    assert mask_minutes == minutes and mask_values == pytest.approx([v - 6.0 for v in values])


def test_the_recorded_budgets_read_beside_the_record():
    """The committed runs of the record's settings with other budgets, if this checkout has them."""
    from bertlab.experiments import reference
    from lab import rerun

    run = reference.find()
    budgets = tb.find_budgets(run)
    if not budgets:
        pytest.skip("no run of the record's settings with another budget in this checkout")
    same = rerun.find_runs_again(run)
    rows = tb.budget_rows(run, same, budgets)
    assert rows and all(len(r["values"]) == 1 + len(same) + len(budgets) for r in rows)
    fit = tb.log_time_fit(*tb.heldout_points(rows))
    assert fit.slope > 0  # more time has bought held-out accuracy in every recorded run so far
    text = tb.budget_reading(rows, fit)
    assert text.startswith("Over ") and f"{fit.slope:.1f} points per doubling" in text
    minutes, values = tb.heldout_points(rows)
    onward = tb.extension(minutes, values, fit)
    assert onward.minutes_for(45.0) > max(minutes)  # no recorded run has reached 45%
    if onward.basis == "last doubling":  # the returns diminished: each step named
        for a, b, rate in tb.doublings_between(minutes, values):
            assert f"{rate:.1f} points from {a:g} to {b:g} minutes" in text


def test_the_chart_draws_every_run_the_line_and_each_gain(runs):
    import matplotlib

    matplotlib.use("Agg")
    from bertlab.analysis.viz import budget_chart

    rows = tb.budget_rows(*runs)
    fit = tb.log_time_fit(*tb.heldout_points(rows))
    fig = budget_chart(rows, fit, target=45.0)
    left, right = fig.axes
    assert len(left.collections[0].get_offsets()) == 5  # one dot per run
    solid, dashed = left.lines[0], left.lines[1]
    assert list(solid.get_xdata()) == [25.0, 100.0]
    assert dashed.get_xdata()[-1] == pytest.approx(fit.minutes_for(45.0))  # drawn on to 45%
    assert dashed.get_ydata()[-1] == pytest.approx(45.0)
    gains = [r for r in rows if r["kind"] == "gain"]
    labels = [t.get_text() for t in right.get_legend().get_texts()]
    assert labels == [r["title"] for r in gains]
    conll = next(line for line in right.lines if line.get_label() == "CoNLL-2003")
    assert list(conll.get_ydata()) == pytest.approx([11.0, 16.0, 21.0])  # medians by budget
    no_target = budget_chart(rows, fit)
    assert len(no_target.axes[0].lines) == 1  # the line over the budgets only
    # returns that diminish: the medians joined, then the last doubling's rate drawn on
    minutes, values = [50, 50, 50, 25, 100], [39.3, 38.7, 38.0, 28.0, 41.3]
    held = next(r for r in rows if r["kind"] == "heldout")
    bent = [{**held, "minutes": minutes, "values": values}]
    fit = tb.log_time_fit(minutes, values)
    ext = tb.extension(minutes, values, fit)
    left = budget_chart(bent, fit, target=45.0, drawn_on=ext).axes[0]
    joined, onward = left.lines[0], left.lines[1]
    assert list(joined.get_ydata()) == pytest.approx([28.0, 38.7, 41.3])
    assert onward.get_xdata()[-1] == pytest.approx(ext.minutes_for(45.0))
    assert onward.get_label() == "drawn on at the last doubling's rate"
