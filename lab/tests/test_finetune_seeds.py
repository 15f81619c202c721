"""Reading a fine-tuning setting run with many seeds: the gain of the medians, seed by seed, from the
first seeds only, a bootstrap interval, and the sentence the book prints."""

import statistics

import pytest

from lab import finetune_seeds
from lab.finetune_seeds import SeedGains, seed_gains, seeds_reading, squad_seed_gains


def _row(init, scores, seeds=None, lr=5e-4, n=2000, task="sst2"):
    seeds = list(range(len(scores))) if seeds is None else seeds
    return {"task": task, "train_examples": n, "lr": lr, "init": init, "seeds": seeds, "scores": scores}


PRE = [72.8, 73.4, 73.1, 74.0, 71.9, 73.6, 72.2, 74.5, 73.0, 72.7]
SCR = [70.3, 70.5, 70.9, 70.1, 71.5, 69.8, 70.6, 71.0, 70.2, 72.9]


def test_gains_over_seeds():
    rows = [
        _row("pretrained", [60.0, 61.0, 62.0], lr=2e-4),  # another rate: both arms, fewer seeds
        _row("scratch", [59.0, 60.0, 61.0], lr=2e-4),
        _row("pretrained", PRE),
        _row("scratch", SCR),
        _row("pretrained", [99.0] * 10, n=500),  # another size
    ]
    g = seed_gains(rows)
    assert g.lr == 5e-4 and g.seeds == tuple(range(10))  # the setting with the most seeds
    assert g.gain() == pytest.approx(statistics.median(PRE) - statistics.median(SCR))
    assert g.paired()[0] == pytest.approx(2.5) and g.paired()[-1] == pytest.approx(-0.2)
    three = g.first(3)
    assert three.seeds == (0, 1, 2) and three.gain() == pytest.approx(73.1 - 70.5)
    assert seed_gains(rows, lr=2e-4).gain() == pytest.approx(1.0)
    # only one arm, or the arms with other seeds: nothing to pair
    assert seed_gains([_row("pretrained", PRE)]) is None
    assert seed_gains([_row("pretrained", PRE), _row("scratch", SCR[:9], seeds=list(range(1, 10)))]) is None
    with pytest.raises(ValueError, match="between 1 and the 10 seeds"):
        g.first(11)
    with pytest.raises(ValueError, match="one score per seed"):
        SeedGains("sst2", 2000, 5e-4, (0, 1), (70.0,), (69.0, 68.0))


def test_the_bootstrap_interval():
    g = seed_gains([_row("pretrained", PRE), _row("scratch", SCR)])
    lo, hi = g.interval()
    assert lo <= g.gain() <= hi and lo < hi
    assert g.interval() == (lo, hi)  # the same draws every time
    wide = g.interval(level=0.98)
    assert wide[0] <= lo and wide[1] >= hi
    # every seed alike: nothing to draw but the one gain
    same = SeedGains("sst2", 2000, 5e-4, (0, 1, 2, 3), (73.0,) * 4, (70.0,) * 4)
    assert same.interval() == pytest.approx((3.0, 3.0))
    with pytest.raises(ValueError, match="level"):
        g.interval(level=1.5)


def test_the_reading_says_what_the_seeds_say():
    g = seed_gains([_row("pretrained", PRE), _row("scratch", SCR)])
    lo, hi = g.interval()
    text = seeds_reading(g, shown=3, target=3.0)
    assert text.startswith("Over 10 fine-tuning seeds with 2,000 labelled sentences (lr 5e-4)")
    assert f"a gain of {g.gain():+.1f} points, where the first three seeds alone give +2.6" in text
    assert f"from {min(g.paired()):+.1f} to {max(g.paired()):+.1f}" in text
    assert f"between {lo:+.1f} and {hi:+.1f} in 90% of the draws" in text
    reach = sum(p >= 3.0 for p in g.paired())
    assert reach == 3 and text.endswith("Three of the 10 seeds reach a gain of +3.")
    assert "first" not in seeds_reading(g.first(3), shown=3) and "reach" not in seeds_reading(g)


def test_the_script_records_seeds_that_the_reading_reads(load_script, tmp_path):
    """scripts/record_finetune_lr.py with one rate and several seeds writes what seed_gains reads."""
    from lab import pilots

    out = tmp_path / "seeds.jsonl"
    argv = ["--lrs", "1e-3", "--seeds", "0", "1", "--train-examples", "8", "--max-eval", "8", "--epochs", "1"]
    assert load_script("scripts/record_finetune_lr.py").main([*argv, "--out", str(out)]) == 0
    meta, rows = pilots.finetune_sweeps(out)
    g = seed_gains(rows, train_examples=8)
    assert g.seeds == (0, 1) and g.lr == 1e-3 and "seeds 0, 1" in meta["about"]
    assert g.pretrained == tuple(rows[0]["scores"]) and g.scratch == tuple(rows[1]["scores"])


def test_the_shipped_seeds_are_the_records_fine_tuning():
    """data/pilots/sst2_2000_seeds.jsonl, which chapter 11 reads: both arms of the record's own
    SST-2 fine-tuning (its rate and its epochs for 2,000 sentences), over more seeds than the record's."""
    from bertlab.experiments import reference
    from lab import pilots
    from lab.reference_run import finetune_epochs

    path = pilots.PILOTS_DIR / "sst2_2000_seeds.jsonl"
    run = reference.find()
    if not path.exists() or run is None:
        pytest.skip("no seeds file or no record in this checkout")
    meta, rows = pilots.finetune_sweeps(path)
    s = run.provenance["settings"]
    g = seed_gains(rows)
    assert g is not None and g.lr == s["ft_lr"] and len(g.seeds) > len(s["seeds"])
    assert g.seeds[: len(s["seeds"])] == tuple(s["seeds"])  # the record's seeds first
    assert {r["epochs"] for r in rows} == {finetune_epochs(s, 2000)}
    assert meta["record"] == "data/reference_run" and meta["machine"]["cpu"]


def test_replay_reading_measures_the_replay_on_the_arm_from_scratch():
    g = finetune_seeds.SeedGains("sst2", 2000, 5e-4, (0, 1, 2, 3), (73.0, 72.0, 74.0, 71.0), (69.0, 70.0, 71.0, 70.5))
    text = finetune_seeds.replay_reading(g, (0, 1, 2), [70.0, 71.5, 70.8], workers=2)
    assert "in 16-bit floats, where the pipeline fine-tuned its 32-bit weights, and each seed" in text
    assert "scored a median 70.0 on seeds 0-2 here against 70.8 in the pipeline." in text
    one = finetune_seeds.replay_reading(g, (0, 1, 2), [69.0, 70.0, 71.0])
    assert "side by side" not in one and "gives the same median on seeds 0-2 both ways (70.0)." in one
    with pytest.raises(ValueError, match="not the first seeds run here"):
        finetune_seeds.replay_reading(g, (1, 2), [70.0, 71.0])
    with pytest.raises(ValueError, match="one from-scratch score per pipeline seed"):
        finetune_seeds.replay_reading(g, (0, 1, 2), [70.0])


def squad_row(init, seed, f1, record="data/reference_run", lr=5e-4, batch_size=32):
    settings = {"epochs": 2, "lr": lr, "batch_size": batch_size, "max_len": 256, "doc_stride": 128}
    return {"init": init, "record": record, "seed": seed, "metrics": {"f1": f1, "exact_match": f1 / 2}, **settings}


def test_squad_seed_gains_pairs_the_seeds_both_arms_ran_with_one_recipe():
    rows = [
        squad_row("pretrained", 0, 12.0),
        squad_row("scratch", 0, 8.0),
        squad_row("pretrained", 1, 14.0),
        squad_row("scratch", 1, 9.0),
        squad_row("pretrained", 2, 13.0),  # no scratch twin: left out
        squad_row("pretrained", 0, 20.0, record="data/pilots/record7"),  # another record's weights
        squad_row("pretrained", 0, 15.0, batch_size=16),  # another recipe, one arm only
    ]
    g = squad_seed_gains(rows, "data/reference_run")
    assert (g.task, g.train_examples, g.lr, g.seeds) == ("squad", None, 5e-4, (0, 1))
    assert g.pretrained == (12.0, 14.0) and g.scratch == (8.0, 9.0) and g.gain() == 4.5
    assert squad_seed_gains(rows, "data/reference_run", batch_size=16) is None
    assert squad_seed_gains(rows, "data/pilots/record7") is None
    made = {"record_git_commit": "abc"}  # the file says which record's weights it fine-tuned
    assert squad_seed_gains(rows, "data/reference_run", meta=made, record_commit="abc").gain() == 4.5
    assert squad_seed_gains(rows, "data/reference_run", meta=made, record_commit="def") is None
    assert squad_seed_gains(rows, "data/reference_run", meta={}, record_commit="abc") is None
    text = seeds_reading(g, shown=1)
    assert text.startswith("Over two fine-tuning seeds (lr 5e-4), the pre-trained median is 13.0 against 8.5")
    assert "where the first seed alone gives +4.0" in text
    with pytest.raises(ValueError, match="unknown SQuAD settings"):
        squad_seed_gains(rows, "data/reference_run", windows=128)
    with pytest.raises(ValueError, match="appears twice"):
        squad_seed_gains([*rows, squad_row("scratch", 1, 9.5)], "data/reference_run")
