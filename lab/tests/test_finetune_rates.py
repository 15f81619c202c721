"""lab.finetune_rates (each arm read at its own best fine-tuning learning rate) and
scripts/record_finetune_lr.py, which records the grid it reads."""

import json

import pytest

from bertlab.tasks.metrics import difference_standard_error
from lab import pilots
from lab.finetune_rates import grid_reading, grid_table, rate_grid, recorded_on


def row(init, lr, scores, n=2000, task="sst2", seeds=(0, 1, 2)):
    ordered = sorted(scores)
    return {
        "task": task,
        "train_examples": n,
        "lr": lr,
        "init": init,
        "seeds": list(seeds),
        "scores": list(scores),
        "median": ordered[len(ordered) // 2],
    }


# pre-trained best at 2e-4, scratch best at 1e-3: the two arms want different rates
ROWS = [
    row("pretrained", 2e-4, [74.0, 75.0, 76.0]),
    row("scratch", 2e-4, [68.0, 69.0, 70.0]),
    row("pretrained", 5e-4, [72.0, 73.0, 74.0]),
    row("scratch", 5e-4, [70.0, 71.0, 72.0]),
    row("pretrained", 1e-3, [70.0, 71.0, 71.5]),
    row("scratch", 1e-3, [71.0, 72.5, 73.0]),
    row("pretrained", 1e-4, [60.0, 61.0, 62.0]),  # no scratch arm at 1e-4: not in the grid
    row("pretrained", 5e-4, [80.0, 80.0, 80.0], n=500),  # another size
    row("pretrained", 5e-4, [80.0, 80.0, 80.0], task="conll2003"),  # another task
]


def test_the_grid_holds_only_rates_both_arms_ran_at_this_size_and_task():
    grid = rate_grid(ROWS, recipe_lr=5e-4)
    assert grid.rates == [2e-4, 5e-4, 1e-3]
    assert grid.seeds == (0, 1, 2) and grid.recipe_lr == 5e-4
    assert grid.medians["pretrained"] == {2e-4: 75.0, 5e-4: 73.0, 1e-3: 71.0}


def test_each_arm_at_its_own_best_rate():
    grid = rate_grid(ROWS, recipe_lr=5e-4)
    assert grid.best("pretrained") == (2e-4, 75.0)
    assert grid.best("scratch") == (1e-3, 72.5)
    assert grid.gain_at(5e-4) == pytest.approx(2.0)
    assert grid.gain_at(2e-4) == pytest.approx(6.0)
    assert grid.best_gain() == pytest.approx(75.0 - 72.5)
    with pytest.raises(ValueError, match="not in the grid"):
        grid.gain_at(1e-4)
    with pytest.raises(ValueError, match="arm must be one of"):
        grid.best("teacher")


def test_of_equal_medians_the_lower_rate_is_best():
    rows = [row(a, lr, [70.0, 71.0, 72.0]) for a in ("pretrained", "scratch") for lr in (1e-3, 2e-4)]
    assert rate_grid(rows).best("pretrained") == (2e-4, 71.0)


def test_no_grid_without_two_shared_rates_or_with_mixed_seeds():
    assert rate_grid(ROWS[:2]) is None
    assert rate_grid(ROWS, task="mrpc") is None
    mixed = [*ROWS[:4], *(row(a, 1e-3, [70.0], seeds=(0,)) for a in ("pretrained", "scratch"))]
    with pytest.raises(ValueError, match="different seeds"):
        rate_grid(mixed)
    # a rate whose arms ran different seeds is not a matched pair: left out
    unmatched = [*ROWS[:4], row("pretrained", 1e-3, [70.0], seeds=(0,)), row("scratch", 1e-3, [71.0, 72.0, 73.0])]
    assert rate_grid(unmatched).rates == [2e-4, 5e-4]


def test_the_table_marks_each_arms_best_and_the_recipes_rate():
    table = grid_table(rate_grid(ROWS, recipe_lr=5e-4))
    lines = table.splitlines()
    assert lines[0].startswith("| learning rate |") and len(lines) == 2 + 3
    assert lines[2] == "| 2e-4 | **75.0** (74.0-76.0) | 69.0 (68.0-70.0) | +6.0 |"
    assert "5e-4 (the recipe's)" in lines[3] and "| +2.0 |" in lines[3]
    assert "**72.5** (71.0-73.0)" in lines[4]


def test_the_reading_names_the_best_rates_the_gains_and_whether_they_clear_the_noise():
    grid = rate_grid(ROWS, recipe_lr=5e-4)
    text = grid_reading(grid, n_dev=872)
    assert "pre-trained encoder does best at 2e-4 (75.0%)" in text
    assert "from scratch at 1e-3 (72.5%)" in text
    assert "The model from scratch wants the larger rate." in text
    assert "recipe's rate of 5e-4 pre-training gains +2.0 points" in text and "own best rate, +2.5" in text
    assert "so the shared rate understates pre-training's gain by 0.5 points" in text
    assert "widest gap of the table, +6.0 at 2e-4" not in text  # 2e-4 is the pre-trained arm's best
    two_se = 2 * difference_standard_error(75.0, 72.5, 872)
    assert f"within two standard errors ({two_se:.1f} points)" in text
    # a gain larger than two standard errors is called so
    big = rate_grid([*ROWS[:4], row("pretrained", 1e-3, [90.0] * 3), row("scratch", 1e-3, [60.0] * 3)])
    text = grid_reading(big, n_dev=872)
    assert "more than two standard errors" in text and "recipe's rate" not in text
    assert "Both arms prefer the same rate" not in text  # 1e-3 for pre-trained, 5e-4 for scratch


def test_a_rate_that_harms_both_arms_is_not_read_as_pre_trainings_gain():
    # both best at 5e-4 (+1.0); 2e-3 leaves scratch far lower: a wide gap that measures nothing
    rows = [
        row("pretrained", 5e-4, [72.0] * 3),
        row("scratch", 5e-4, [71.0] * 3),
        row("pretrained", 2e-3, [66.0] * 3),
        row("scratch", 2e-3, [52.0] * 3),
    ]
    text = grid_reading(rate_grid(rows, recipe_lr=5e-4), n_dev=872)
    assert "Both arms prefer the same rate." in text
    assert "gains +1.0 points; with each arm at its own best rate, +1.0, so the shared rate was not hiding" in text
    assert "The widest gap of the table, +14.0 at 2e-3, is no measure of pre-training" in text
    assert "(6.0 and 19.0 points below their best), the model from scratch more." in text
    assert text.index("two standard errors") < text.index("widest gap")


def test_recorded_on_names_the_machine_or_says_it_is_missing():
    cpu = {"cpu": "AMD EPYC", "cpu_family_model": "25/1", "cores": 2, "device": "cpu (2 cores)", "precision": "fp32"}
    assert recorded_on({"machine": {**cpu, "torch": "2.13.0+cpu"}}) == (
        "Recorded in fp32 on a 2-core AMD EPYC (family/model 25/1), torch 2.13.0+cpu."
    )
    gpu = {"device": "NVIDIA H100 80GB HBM3", "precision": "bf16"}
    assert recorded_on({"machine": gpu}) == "Recorded in bf16 on NVIDIA H100 80GB HBM3."
    assert recorded_on({"machine": "AMD EPYC (Zen 4), 2 threads"}) == "The machine was not recorded."
    assert recorded_on({}) == "The machine was not recorded."


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("scripts/record_finetune_lr.py")


def test_the_script_records_both_arms_per_rate_and_resumes(script, tmp_path):
    out = tmp_path / "grid.jsonl"
    argv = ["--lrs", "1e-3", "2e-4", "--seeds", "0", "--train-examples", "8", "--max-eval", "8", "--epochs", "1"]
    assert script.main([*argv, "--out", str(out)]) == 0
    meta, rows = pilots.finetune_sweeps(out)
    assert "from the record's weights and from scratch" in meta["about"] and meta["machine"]
    assert "at the learning rates 0.001, 0.0002, seeds 0, scored" in meta["about"]
    assert [(r["lr"], r["init"]) for r in rows] == [
        (1e-3, "pretrained"),
        (1e-3, "scratch"),
        (2e-4, "pretrained"),
        (2e-4, "scratch"),
    ]
    for r in rows:
        assert r["train_examples"] == 8 and r["seeds"] == [0] and r["epochs"] == 1
        assert len(r["scores"]) == 1 and 0 <= r["median"] <= 100
    grid = rate_grid(rows, train_examples=8, recipe_lr=meta["recipe_lr"])
    assert grid is not None and grid.rates == [2e-4, 1e-3]
    # run again with one more rate: only the new rate's arms are added
    assert script.main(["--lrs", "1e-3", "2e-4", "5e-4", *argv[3:], "--out", str(out)]) == 0
    _, again = pilots.finetune_sweeps(out)
    assert again[:4] == rows and [(r["lr"], r["init"]) for r in again[4:]] == [(5e-4, "pretrained"), (5e-4, "scratch")]
    # another seed at a rate already run is a new row, not a skip
    assert script.main(["--lrs", "1e-3", "--seeds", "1", *argv[5:], "--out", str(out)]) == 0
    _, more = pilots.finetune_sweeps(out)
    assert [(r["lr"], r["seeds"]) for r in more[6:]] == [(1e-3, [1]), (1e-3, [1])]


def test_the_script_will_not_resume_a_file_begun_on_another_kind_of_machine(script, tmp_path):
    out = tmp_path / "grid.jsonl"
    argv = ["--lrs", "1e-3", "--seeds", "0", "--train-examples", "8", "--max-eval", "8", "--epochs", "1"]
    assert script.main([*argv, "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["meta"]["machine"] = {**meta["meta"]["machine"], "cpu": "Another CPU", "cpu_family_model": "0/0"}
    out.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    with pytest.raises(SystemExit, match="was begun on cpu Another CPU.*start a new file with --out"):
        script.main(["--lrs", "2e-4", *argv[2:], "--out", str(out)])
    assert len(out.read_text().splitlines()) == len(lines)  # nothing was added


def test_the_script_refuses_a_rate_that_is_not_positive(script, tmp_path):
    with pytest.raises(SystemExit):
        script.main(["--lrs", "0", "--out", str(tmp_path / "x.jsonl")])


def test_a_gain_below_the_noise_says_the_model_from_scratch_is_ahead():
    rows = [
        row("pretrained", 5e-4, [60.0] * 3),
        row("scratch", 5e-4, [75.0] * 3),
        row("pretrained", 1e-3, [59.0] * 3),
        row("scratch", 1e-3, [74.0] * 3),
    ]
    text = grid_reading(rate_grid(rows), n_dev=872)
    assert "-15.0 at each arm's best is more than two standard errors" in text
    assert "with the model from scratch ahead" in text and "pre-trained encoder ahead" not in text
