"""What fine-tuning's speed levers bought and cost, read from their records: tables and sentences
generated from the numbers."""

import json

import pytest

from lab import finetune_speed


def bench(**epoch_seconds):
    """A benchmark record: {task: (seconds per epoch in the four settings)}."""
    tasks = {}
    for name, secs in epoch_seconds.items():
        row = {"examples": 1000, "batches_per_epoch": 32, "mean_length": 20.0}
        for setting, s in zip(finetune_speed.SETTINGS, secs):
            padded = 3.0 if setting.startswith("random") else 1.2
            row[setting] = {"s_per_step": s / 32, "s_per_epoch": s, "padded_per_real_token": padded}
        tasks[name] = row
    return {"cpu": "AMD EPYC", "tasks": tasks}


def benchmark_script(name, monkeypatch):
    """lab/benchmarks/<name>.py loaded as a module (the benchmarks are scripts, not a package)."""
    import importlib.util
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_speed_table_and_reading():
    b = bench(sst2=(100.0, 40.0, 80.0, 25.0), squad=(300.0, 250.0, 280.0, 240.0))
    table = finetune_speed.speed_table(b)
    assert "| SST-2 | 1,000 | 20 | 3.00 / 1.20 | 100 / 40 / 80 / 25 | 4.0x |" in table
    assert "| SQuAD | 1,000 | 20 | 3.00 / 1.20 | 300 / 250 / 280 / 240 | 1.2x |" in table
    assert all(line.count("|") == 7 for line in table.splitlines())  # six columns: it fits a page
    text = finetune_speed.speed_reading(b)
    assert "alone sped an epoch up by a factor of 1.20 (SQuAD) to 2.50 (SST-2):" in text
    assert (
        "AdamW alone changed it by a factor of 1.07 (SQuAD) to 1.25 (SST-2), -625 to -625 ms on steps of 3,125" in text
    )
    assert "Together, a factor of 1.25 (SQuAD) to 4.00 (SST-2);" in text
    assert "takes 265 s instead of 400 s (1.5 times faster)" in text
    one = finetune_speed.speed_reading(bench(rte=(10.0, 5.0, 8.0, 4.0)))
    assert "by a factor of 2.00:" in one


def test_load_benchmark_names_what_is_missing(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(bench(sst2=(4.0, 3.0, 2.0, 1.0))))
    assert set(finetune_speed.load_benchmark(good)["tasks"]) == {"sst2"}
    broken = bench(sst2=(4.0, 3.0, 2.0, 1.0))
    del broken["tasks"]["sst2"]["random, fused"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"lacks the settings \['random, fused'\]"):
        finetune_speed.load_benchmark(bad)
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(ValueError, match="no tasks"):
        finetune_speed.load_benchmark(tmp_path / "empty.json")
    with pytest.raises(ValueError, match="not a record"):
        finetune_speed.load_benchmark(tmp_path / "absent.json")


def test_last_layer_table_and_reading(tmp_path):
    def task(every, cls):
        return {
            "examples": 800,
            "batches_per_epoch": 25,
            "mean_length": 16.0,
            "last layer everywhere": {"s_per_step": every, "s_per_epoch": 25 * every},
            "last layer at [CLS]": {"s_per_step": cls, "s_per_epoch": 25 * cls},
        }

    b = {"tasks": {"sst2": task(0.06, 0.05), "rte": task(0.3, 0.2)}}
    table = finetune_speed.last_layer_table(b)
    assert "| SST-2 | 800 | 16 | 60 | 50 | 2 | 1 | 1.20x |" in table
    assert "| RTE | 800 | 16 | 300 | 200 | 8 | 5 | 1.50x |" in table
    text = finetune_speed.last_layer_reading(b, 4)
    assert "the last of the 4 layers" in text
    assert "ran 1.20 (SST-2) to 1.50 (RTE) times faster" in text
    assert "one epoch of SST-2 and RTE took 6 s in all instead of 9 s: 31% less time" in text
    assert "ran 1.50 times faster" in finetune_speed.last_layer_reading({"tasks": {"rte": task(0.3, 0.2)}}, 2)
    # the loader checks for this record's two settings, and says how to make it
    path = tmp_path / "cls.json"
    path.write_text(json.dumps(b))
    assert finetune_speed.load_benchmark(path, finetune_speed.LAST_LAYER) == b
    with pytest.raises(ValueError, match="lacks the settings"):
        finetune_speed.load_benchmark(path)  # not a record of the four levers
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(ValueError, match="--last-layer"):
        finetune_speed.load_benchmark(tmp_path / "empty.json", finetune_speed.LAST_LAYER)


def test_batching_pairs_table_and_reading():
    def row(task, init, grouped, scores, n=None):
        median = sorted(scores)[len(scores) // 2]
        return dict(task=task, train_examples=n, init=init, group_by_length=grouped, median=median, scores=scores)

    rows = [
        row("sst2", "pretrained", False, [71.0, 72.0, 73.0], n=2000),
        row("sst2", "pretrained", True, [71.5, 72.5, 74.0], n=2000),
        row("sst2", "scratch", False, [69.0, 70.0, 70.5], n=2000),
        row("sst2", "scratch", True, [68.0, 69.5, 70.0], n=2000),
        row("conll2003", "pretrained", True, [80.0, 81.0, 82.0]),  # no random twin: left out
        row("conll2003", "scratch", False, [60.0, 61.0, 62.0]),
        row("conll2003", "scratch", True, [66.0, 66.5, 67.0]),
    ]
    pairs = finetune_speed.batching_pairs(rows)
    assert [(p.task, p.init) for p in pairs] == [("sst2", "pretrained"), ("sst2", "scratch"), ("conll2003", "scratch")]
    sst, _, ner = pairs
    assert sst.change == pytest.approx(0.5) and sst.seed_spread == pytest.approx(2.5)  # grouped: 71.5..74.0
    assert ner.change == pytest.approx(5.5) and ner.seed_spread == 2.0
    table = finetune_speed.batching_table(pairs)
    assert "| SST-2, 2,000 sentences, pre-trained | 71.0, 72.0, 73.0 | 71.5, 72.5, 74.0 | 72.0 | 72.5 | +0.5 |" in table
    assert "| CoNLL-2003, from scratch | 60.0, 61.0, 62.0 | 66.0, 66.5, 67.0 | 61.0 | 66.5 | +5.5 |" in table
    assert finetune_speed.pretraining_gains(pairs) == [
        ("SST-2, 2,000 sentences", pytest.approx(2.0), pytest.approx(3.0))
    ]
    text = finetune_speed.batching_reading(pairs)
    assert "Over three settings, batches of similar lengths moved the median score by -0.5 to +5.5 points" in text
    assert "one change larger than the seeds' own spread: CoNLL-2003, from scratch (+5.5, seeds 2.0 apart)" in text
    assert "SST-2, 2,000 sentences +2.0 points with random batches, +3.0 with similar lengths" in text
    calm = finetune_speed.batching_reading(pairs[:1])
    assert "Over one setting, batches of similar lengths moved the median score by +0.5 points;" in calm
    assert "noise" in calm and "over scratch" not in calm
    assert finetune_speed.batching_pairs(rows[4:5]) == []
    assert "No fine-tuning setting" in finetune_speed.batching_reading([])


def test_batching_pairs_of_a_token_task_weighed_by_tokens():
    """CoNLL-2003's grouped batches both ways (plain means; weighed by tokens, balance_tokens):
    each is paired with the random arm, and the gains are read per kind of grouped batch."""

    def row(init, grouped, scores, balanced=None):
        r = dict(task="conll2003", train_examples=None, init=init, group_by_length=grouped, scores=scores)
        r["median"] = sorted(scores)[1]
        if balanced is not None:
            r["balance_tokens"] = balanced
        return r

    rows = [
        row("pretrained", True, [80.0, 80.1, 80.7]),  # written before balance_tokens: plain
        row("pretrained", False, [81.7, 82.0, 82.3], balanced=False),
        row("pretrained", True, [81.5, 81.9, 82.4], balanced=True),
        row("scratch", False, [66.0, 66.2, 67.0], balanced=False),
        row("scratch", True, [65.0, 66.4, 66.9], balanced=True),
    ]
    pairs = finetune_speed.batching_pairs(rows)
    assert [(p.init, p.balanced, p.grouped["median"]) for p in pairs] == [
        ("pretrained", False, 80.1),
        ("pretrained", True, 81.9),
        ("scratch", True, 66.4),
    ]
    assert [p.random["median"] for p in pairs] == [82.0, 82.0, 66.2]
    table = finetune_speed.batching_table(pairs)
    assert (
        "| CoNLL-2003, pre-trained, tokens weighed | 81.7, 82.0, 82.3 | 81.5, 81.9, 82.4 | 82.0 | 81.9 | -0.1 |"
        in table
    )
    assert "| CoNLL-2003, pre-trained | 81.7, 82.0, 82.3 | 80.0, 80.1, 80.7 | 82.0 | 80.1 | -1.9 |" in table
    gains = finetune_speed.pretraining_gains(pairs)
    assert gains == [("CoNLL-2003, tokens weighed", pytest.approx(82.0 - 66.2), pytest.approx(81.9 - 66.4))]


def test_the_benchmark_times_the_four_settings_on_a_real_task(mirror, one_thread, tmp_path, monkeypatch):
    """lab/benchmarks/finetune_step.py on RTE, one step per setting: a record load_benchmark accepts,
    batches of similar lengths computing fewer padded tokens than random ones."""
    module = benchmark_script("finetune_step", monkeypatch)
    out = tmp_path / "bench.json"
    args = ["--tasks", "rte", "--steps", "2", "--rounds", "1", "--batch-size", "8", "--json", str(out)]
    assert module.main([*args, "--precision", "fp32"]) == 0
    bench = finetune_speed.load_benchmark(out)
    rte = bench["tasks"]["rte"]
    assert rte["examples"] == 2490 and rte["batches_per_epoch"] == 312  # ceil(2,490 / 8)
    for setting in finetune_speed.SETTINGS:
        assert rte[setting]["s_per_step"] > 0 and len(rte[setting]["s_per_step_rounds"]) == 1
        assert rte[setting]["s_per_epoch"] == pytest.approx(312 * rte[setting]["s_per_step"])
    similar, random = (rte[s]["padded_per_real_token"] for s in ("similar lengths, fused", "random, fused"))
    assert 1.0 <= similar < random
    assert bench["precision"] == "fp32" and bench["batch_size"] == 8
    with pytest.raises(SystemExit):
        module.main(["--steps", "0"])
    # --last-layer: the two settings of a classifier's last layer, on the tasks that read [CLS] only
    assert module.main([*args, "--precision", "fp32", "--last-layer"]) == 0
    rte = finetune_speed.load_benchmark(out, finetune_speed.LAST_LAYER)["tasks"]["rte"]
    for setting in finetune_speed.LAST_LAYER:
        assert rte[setting]["s_per_step"] > 0
        assert rte[setting]["padded_per_real_token"] == pytest.approx(similar)  # grouped batches, same seed
    with pytest.raises(SystemExit):
        module.main(["--tasks", "conll2003", "--last-layer"])  # reads every position: refused


def test_short_sentence_weight_by_hand():
    """Two batches: one of four 1-token lines, one of two 10-token sentences (24 tokens). Plain
    batch means give the four short lines half the gradient for a sixth of the tokens."""
    labelled = [1, 1, 1, 1, 10, 10]
    short = [n <= 2 for n in labelled]
    tokens, plain = finetune_speed.short_sentence_weight(labelled, [[0, 1, 2, 3], [4, 5]], short)
    assert tokens == pytest.approx(4 / 24) and plain == pytest.approx(0.5)
    # mixed batches: each batch holds 12 tokens, so the plain mean weighs every token the same
    tokens, plain = finetune_speed.short_sentence_weight(labelled, [[0, 1, 4], [2, 3, 5]], short)
    assert plain == pytest.approx(tokens)


def test_short_sentence_weights_of_a_mixed_set():
    """A quarter of the items are 2-word lines, the rest 20-word sentences: grouped batches give
    the short lines far more than their tokens' share, random batches about their share."""
    labelled = [2] * 256 + [20] * 768
    lengths = [n + 2 for n in labelled]
    w = finetune_speed.short_sentence_weights(labelled, lengths, batch_size=32, short=5)
    assert w.sentences == 1024 and w.sentence_share == pytest.approx(0.25)
    assert w.token_share == pytest.approx(512 / (512 + 768 * 20))
    assert abs(w.random_share - w.token_share) < 0.02
    assert w.grouped_share > 0.2  # whole batches of short lines: 8 of 32 batches, a quarter
    text = w.reading()
    assert text.startswith("Sentences of at most 5 labelled words are 25% of CoNLL-2003's 1,024 training")
    assert f"and {w.grouped_share:.0%} in batches of similar lengths; weighed by their tokens, 3% in both." in text


def workers_bench(threads=2, workers=2, **seconds):
    """A record of lab/benchmarks/finetune_workers.py: {task: (seconds one process, side by side)}."""
    tasks = {}
    for name, (one, two) in seconds.items():
        scores = {"pretrained": [80.0, 81.0], "scratch": [60.0, 61.5]}
        moved = {"pretrained": [80.0, 81.25], "scratch": [60.0, 61.5]}
        tasks[name] = {
            "examples": 1000,
            "one process": {"s": one, "scores": scores},
            "side by side": {"s": two, "scores": moved if name == "conll2003" else scores},
        }
    return {"cpu": "AMD EPYC", "threads": threads, "workers": workers, "tasks": tasks}


def test_workers_table_and_reading(tmp_path):
    b = workers_bench(conll2003=(60.0, 45.0), squad=(100.0, 95.0))
    table = finetune_speed.workers_table(b)
    assert "| s in one process, 2 threads | s in 2 processes side by side |" in table
    assert "| CoNLL-2003 | 1,000 | 60.0 | 45.0 | 1.33x | 0.25 |" in table
    assert "| SQuAD | 1,000 | 100.0 | 95.0 | 1.05x | 0.00 |" in table
    text = finetune_speed.workers_reading(b)
    assert text.startswith("The same seeds fine-tuned in two processes of one thread side by side ran 1.05 (SQuAD)")
    assert "to 1.33 (CoNLL-2003) times as fast as one after another" in text
    assert "both tasks took 140 s instead of 160 s, 12% less time." in text
    assert "scores within 0.25 points of each other, the rounding of one thread against two." in text
    slower = finetune_speed.workers_reading(workers_bench(threads=4, sst2=(10.0, 12.0)))
    assert "in two processes of two threads" in slower and "20% more time: on this machine" in slower
    same = finetune_speed.workers_reading(workers_bench(rte=(10.0, 8.0)))
    assert same.endswith("Both settings gave the same scores to the digit.")
    path = tmp_path / "w.json"
    path.write_text(json.dumps(b))
    assert finetune_speed.load_workers(path) == b
    del b["tasks"]["squad"]["side by side"]
    path.write_text(json.dumps(b))
    with pytest.raises(ValueError, match=r"squad lacks the settings \['side by side'\]"):
        finetune_speed.load_workers(path)
    path.write_text("{}")
    with pytest.raises(ValueError, match="make it with python lab/benchmarks/finetune_workers.py"):
        finetune_speed.load_workers(path)


def test_the_workers_benchmark_runs_a_real_task(mirror, one_thread, tmp_path, monkeypatch):
    """lab/benchmarks/finetune_workers.py on RTE's first examples: a record load_workers accepts, the
    two settings training the same seeds to the same scores (one thread in every process)."""
    module = benchmark_script("finetune_workers", monkeypatch)
    out = tmp_path / "workers.json"
    assert module.main(["--tasks", "rte", "--examples", "64", "--eval-examples", "32", "--json", str(out)]) == 0
    bench = finetune_speed.load_workers(out)
    rte = bench["tasks"]["rte"]
    assert rte["examples"] == 64 and bench["workers"] == 2 and bench["threads"] == 1
    for setting in finetune_speed.WORKERS:
        assert rte[setting]["s"] > 0 and len(rte[setting]["seed_seconds"]) == 4
    assert rte["one process"]["scores"] == rte["side by side"]["scores"]
    assert "| RTE | 64 |" in finetune_speed.workers_table(bench)
    with pytest.raises(SystemExit):
        module.main(["--workers", "1"])
