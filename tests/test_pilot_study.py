"""The pilot study's readings: series grouped by baseline, compared at equal tokens (not steps),
cross-length scores preferred, tables and sentences generated from the numbers."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from bertlab.analysis.viz import lever_chart  # noqa: E402
from bertlab.experiments.pilots import (  # noqa: E402
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
    from bertlab.experiments.pilots import short_label

    assert short_label("cpu-mini-mask-30", "cpu-mini-8k") == "mask-30"
    assert short_label("cpu-post-ln", "cpu-tiny-16k") == "post-ln"
    assert short_label("cpu-size-tiny-10min", "cpu-size-mini-10min") == "tiny-10min"
    assert short_label("p1", "base") == "p1" and short_label("cpu-mini", "cpu-mini-8k") == "mini"


def test_lever_effects_are_sorted_and_use_the_baselines_window_length():
    levers = lever_effects(pilot_series(PILOTS))
    assert [(lv.label, lv.points) for lv in levers] == [("good", 10.0), ("short", 2.0), ("stall", 0.2), ("batch", -2.0)]
    assert levers[1].scored_on == "128-token windows" and levers[0].scored_on is None  # cross_eval: 17% vs 15%
    text = levers_reading(levers)
    assert "raised it: good (+10.0), short (+2.0)" in text and "lowered it: batch (-2.0)" in text
    assert "less than 0.5 of a point: stall" in text and "at 20,000 tokens" in text


def test_table_and_reading_are_generated_from_the_numbers():
    [s] = pilot_series(PILOTS)
    table = series_table(s).splitlines()
    assert table[0].startswith("| run | change | held-out accuracy at 20,000 tokens")
    assert "| cpu-x-batch | twice the batch | 13.0% | -2.0 points |" in table
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
    from bertlab.analysis.viz import pilot_curves

    [s] = pilot_series(PILOTS)
    ax = pilot_curves(s, threshold=0.2)
    assert len(ax.lines) == 5 + 1  # five runs and the threshold
    assert max(max(line.get_xdata()) for line in ax.lines[:5]) == pytest.approx(0.02)  # 20,000 tokens


def test_machines_table_says_where_each_pilot_ran():
    from bertlab.experiments.pilots import machines_table

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
