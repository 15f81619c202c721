"""lab.speed: reading the throughput benchmark's speed-up attribution."""

import json

import pytest

from lab import speed

LEVERS = ["sparse_head", "attention", "bf16", "compile"]
# tokens/s: each lever multiplies the speed by its factor; bf16 and compile together a further 1.25x
FACTOR = {"sparse_head": 1.5, "attention": 1.2, "bf16": 2.0, "compile": 1.1}


def tokens_per_s(on):
    v = 1000.0
    for x in on:
        v *= FACTOR[x]
    return v * (1.25 if {"bf16", "compile"} <= set(on) else 1.0)


def record(drop=None):
    settings = [[], *([x] for x in LEVERS), LEVERS, *([y for y in LEVERS if y != x] for x in LEVERS)]
    rows = [{"impl": "bertlab", "on": on, "tokens_per_s": tokens_per_s(on)} for on in settings if on != drop]
    rows += [
        {"impl": "transformers", "on": [], "tokens_per_s": 500.0},
        {"impl": "transformers", "on": ["bf16", "compile"], "tokens_per_s": 2000.0},
    ]
    return {"levers": {x: "" for x in LEVERS}, "rows": rows}


def test_lever_effects_alone_and_left_out():
    e = speed.lever_effects(record())
    assert e["sparse_head"] == {"alone": pytest.approx(1.5), "left_out": pytest.approx(1.5)}
    assert e["bf16"]["alone"] == pytest.approx(2.0)
    assert e["bf16"]["left_out"] == pytest.approx(2.0 * 1.25)  # it also unlocks the interaction
    assert e["compile"]["left_out"] == pytest.approx(1.1 * 1.25)


def test_reading_ranks_the_levers_and_compares_with_transformers():
    text = speed.attribution_reading(record())
    full = tokens_per_s(LEVERS)
    assert f"{1000 / 500:.2f} times transformers' in fp32" in text
    assert f"{full / 2000:.2f} times transformers with bf16 autocast and torch.compile on" in text
    assert "owes most to the bf16 autocast (it runs 2.50x" in text
    assert "least to the attention written out (1.20x)" in text
    assert "multiply to 3.96x; together they give 4.95x, more than that product, so they help each other" in text


def test_table_has_a_row_per_lever_and_the_transformers_rows():
    table = speed.attribution_table(record()).splitlines()
    assert len(table) == 2 + 4 + 2 + 2
    assert table[2].startswith("| MLM decoder at the chosen positions only | 1,500 | 1.50x |")
    assert table[-1] == "| transformers (bf16 autocast, torch.compile) | 2,000 | | | |"


def test_load_names_what_is_missing(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps(record(drop=["bf16"])))
    with pytest.raises(ValueError, match=r"no bertlab row with \['bf16'\] on"):
        speed.load_attribution(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not a record of lab/benchmarks/throughput.py --attribution"):
        speed.load_attribution(path)
    path.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="write it with lab/benchmarks/throughput.py --attribution --json"):
        speed.load_attribution(path)
    path.write_text(json.dumps(record()))
    assert speed.load_attribution(path)["levers"] == {x: "" for x in LEVERS}


def test_reading_names_a_lever_that_pays_only_with_the_others():
    rec = record()
    for row in rec["rows"]:
        if row["impl"] == "bertlab" and row["on"] == ["attention"]:
            row["tokens_per_s"] = 950.0  # slower alone; the full step still owes it 1.2x
    text = speed.attribution_reading(rec)
    assert "The attention written out slows the plain step down by itself (0.95x)" in text
    assert "full step owes it 1.20x: it pays only together with the others." in text
    assert "slows the plain step" not in speed.attribution_reading(record())


def allocator_record(kept_times, default_times, **over):
    blocks = [{"allocator": "kept", "s_per_step": t, "faults_per_step": 0} for t in kept_times]
    blocks += [{"allocator": "default", "s_per_step": t, "faults_per_step": 170_000} for t in default_times]
    r = {
        "cpu": "AMD EPYC",
        "cpu_family_model": "25/1",
        "threads": 2,
        "precision": "fp32",
        "compiled": True,
        "dropout": 0.0,
        "blocks": blocks,
        "kept_s_per_step": sorted(kept_times)[len(kept_times) // 2],
        "default_s_per_step": sorted(default_times)[len(default_times) // 2],
        "kept_faults_per_step": 0,
        "default_faults_per_step": 170_000,
        "kept_system_s_per_step": 0.0,
        "default_system_s_per_step": 0.35,
        "kept_peak_rss_mb": 1210,
        "default_peak_rss_mb": 1190,
    }
    return {**r, **over}


def test_allocator_reading_says_what_keeping_freed_memory_did(tmp_path):
    rec = allocator_record([1.70, 1.60, 1.80], [2.00, 1.90, 2.10])
    text = speed.allocator_reading(rec)
    assert "took 1.70 s against 2.00 s with `malloc` as it is (15% less time;" in text
    assert "medians of three alternating processes each, 1.60-1.80 s and 1.90-2.10 s" in text
    assert "fp32, compiled, dropout 0" in text and "AMD EPYC (family/model 25/1)" in text
    assert "faulted 0 pages in a step against 170,000 and spent 0.00 s of CPU time a step in the kernel" in text
    assert "page faults, against 0.35 s; the process's peak memory was 1,210 MiB against 1,190 MiB." in text
    slower = speed.allocator_reading(allocator_record([2.1], [2.0]))
    assert "(5% more time;" in slower and "medians of one alternating" in slower
    assert "the same time" in speed.allocator_reading(allocator_record([2.0], [2.001]))
    path = tmp_path / "a.json"
    path.write_text(json.dumps(rec) + "\n")
    assert speed.load_allocator(path) == rec
    path.write_text(json.dumps({**rec, "blocks": rec["blocks"][:3]}) + "\n")  # the kept blocks only
    with pytest.raises(ValueError, match="blocks of both settings"):
        speed.load_allocator(path)
    path.write_text("{}\n")
    with pytest.raises(ValueError, match="no blocks, kept_s_per_step"):
        speed.load_allocator(path)


def test_large_blocks_sizes_the_step_against_mallocs_threshold():
    rec = {**allocator_record([1.7], [2.0]), "preset": "mini", "hidden": 256, "vocab_size": 8192}
    rec.update(batch_size=64, seq_len=128)
    text = speed.large_blocks(rec)  # no mlm_slots: the benchmark's 15% of 128 tokens, 22 slots
    assert "8,192 tokens x 1,024 values x 4 bytes = 32.0 MiB" in text
    assert "64 sequences x 22 prediction slots x 8,192 pieces x 4 bytes = 44.0 MiB: both at or above the 32 MiB" in text
    half = speed.large_blocks({**rec, "precision": "bf16"})  # 2-byte activations: 16 and 22 MiB
    assert "x 2 bytes = 16.0 MiB" in half and "= 22.0 MiB: both below the 32 MiB" in half
    assert "x 30 prediction slots" in speed.large_blocks({**rec, "mlm_slots": 30})
    assert "the second at or above" in speed.large_blocks({**rec, "hidden": 128})  # 16 MiB, 44 MiB


def throughput_record(**over):
    r = {
        "cpu": "AMD EPYC",
        "preset": "mini",
        "layers": 4,
        "hidden": 256,
        "heads": 4,
        "vocab_size": 8192,
        "batch_size": 64,
        "seq_len": 128,
        "mlm_predictions": 19,
        "precision": "fp32",
        "compiled": True,
        "threads": 2,
        "torch": "2.13.0+cpu",
        "bertlab_tokens_per_s": 4544.2,
        "transformers_tokens_per_s": 2613.7,
        "speedup": 1.739,
        "bertlab_gflops": 102.4,
        "ceiling_gflops": 174.0,
        "fraction_of_ceiling": 0.5885,
    }
    return {**r, **over}


def test_dropout_reading_pairs_records_that_differ_only_in_dropout():
    common = dict(cpu_family_model="25/17", precision="bf16", mlm_probability=0.4, mlm_predictions=51)
    off = throughput_record(**common, dropout=0.0, bertlab_tokens_per_s=11111.0, transformers_tokens_per_s=7102.6)
    on = throughput_record(**common, dropout=0.1, bertlab_tokens_per_s=8882.5, transformers_tokens_per_s=5842.5)
    masked_less = throughput_record(cpu_family_model="25/17", precision="bf16", dropout=0.1)  # 15%: no partner
    text = speed.dropout_reading([masked_less, on, off])
    assert text.startswith("Dropout is not free.")
    assert (
        "on AMD EPYC (25/17), 40% masked (bf16, compiled), it costs bertlab 20% (11,111 to 8,882 tokens/s) "
        "and transformers 18%." in text
    )
    assert text.count("it costs bertlab") == 1  # the 15% record has no dropout-0 twin
    assert text.endswith("and transformers 18%. Each figure is one run.")
    in_turns = speed.dropout_reading([{**on, "rounds": 5}, {**off, "rounds": 5}])
    assert in_turns.endswith("Each figure is the least disturbed of 5 rounds of one run, the two models taking turns.")
    old = throughput_record(mlm_predictions=19)  # written before records named their dropout: 0.1
    both = speed.dropout_reading([off, on, old, {**old, "dropout": 0.0, "bertlab_tokens_per_s": 5000.0}])
    assert both.count("it costs bertlab") == 2 and "(25/17)" in both and "costs bertlab 9% (5,000 to 4,544" in both
    assert speed.dropout_reading([off, masked_less]) is None  # different masked shares do not pair
    assert speed.dropout_reading([on, {**off, "compiled": False}]) is None  # nor eager with compiled
    assert speed.dropout_reading([on, {**off, "last_layer": True}]) is None  # nor steps doing other work


def test_throughput_table_names_machine_step_and_both_ceilings(tmp_path):
    a = throughput_record(cpu_family_model="25/1", cpu_allocator="kept", fraction_of_model_shape_ceiling=0.7041)
    b = throughput_record(dropout=0.0, precision="bf16", compiled=False)  # an older record: fewer fields
    c = throughput_record(mlm_probability=0.4, mlm_predictions=51)  # the record's own masking rate
    (tmp_path / "cpu_a.json").write_text(json.dumps(a) + "\n")
    (tmp_path / "cpu_b.json").write_text(json.dumps(b) + "\n")
    (tmp_path / "cpu_c.json").write_text(json.dumps(c) + "\n")
    (tmp_path / "other.json").write_text("{}")  # not matched by the pattern
    records = speed.load_throughput(tmp_path)
    assert records == [a, b, c]
    head, rule, row_a, row_b, row_c = speed.throughput_table(records).splitlines()
    assert head.count("|") == rule.count("|") == row_a.count("|") == row_b.count("|") == 6
    assert row_a == (
        "| AMD EPYC (25/1) | mini 4/256/4, V 8,192, 64 x 128, 15% masked; dropout 0.1, fp32, compiled, memory kept "
        "| 4,544 / 2,614 | 1.74x | 59% / 70% |"
    )
    assert ", 64 x 128, 40% masked;" in row_c  # the rate the benchmark was given
    assert "last layer" not in row_a + row_b + row_c  # records from before the last-layer switch
    row_d = speed.throughput_table([{**c, "last_layer": True}]).splitlines()[-1]
    assert "; dropout 0.1, fp32, compiled, last layer where read |" in row_d
    row_e = speed.throughput_table([{**c, "last_layer": True, "rounds": 3}]).splitlines()[-1]
    assert "compiled, last layer where read, the best of 3 rounds in turns |" in row_e
    assert "rounds" not in speed.throughput_table([{**c, "rounds": 1}])  # one after the other: not said
    assert "| AMD EPYC | mini" in row_b and "; dropout 0, bf16 |" in row_b and row_b.endswith("| 59% / not measured |")
    assert speed.how_timed([{**c, "rounds": 3}, {**c, "rounds": 3}]).endswith(
        "of 3 rounds of one run, the two models taking turns"
    )
    assert speed.how_timed([{**c, "rounds": 3}, c]) == speed.how_timed([]) == "Each figure is one run"
    turns, once = speed.timed_in_turns([a, {**c, "rounds": 3}, {**b, "rounds": 1}, {**c, "rounds": None}])
    assert [t.get("rounds") for t in turns] == [3]  # only several rounds in turns count as turns
    assert [t.get("rounds") for t in once] == [None, 1, None]  # the others keep their order
    assert speed.timed_in_turns([]) == ([], [])
    assert speed.throughput_machines(records) == [
        "AMD EPYC (25/1), 2 threads, torch 2.13.0+cpu",
        "AMD EPYC, 2 threads, torch 2.13.0+cpu",
    ]
    (tmp_path / "cpu_d.json").write_text(json.dumps({"cpu": "x"}) + "\n")
    with pytest.raises(ValueError, match="cpu_d.json: no preset, bertlab_tokens_per_s"):
        speed.load_throughput(tmp_path)


def test_masking_reading_compares_records_that_differ_only_in_the_masked_share():
    common = dict(cpu_family_model="25/1", cpu_allocator="kept", dropout=0.0)
    low = throughput_record(**common, speedup=1.5, model_flops_per_step=183.3e9, speedup_at_model_shape_ceiling=2.2)
    high = throughput_record(
        **common, mlm_probability=0.4, mlm_predictions=51, speedup=1.31, model_flops_per_step=209.0e9,
        speedup_at_model_shape_ceiling=1.9,
    )  # fmt: skip
    other = throughput_record(cpu_family_model="25/17", dropout=0.0, mlm_probability=0.3, mlm_predictions=38)
    text = speed.masking_reading([other, high, low])
    assert text.startswith(
        "How much is masked changes the lead. On AMD EPYC (25/1), mini's step of 64 x 128 (dropout 0, fp32, compiled)"
    )
    assert (
        "15% masked (19 of 128 positions): 1.50x, at most 2.20x at its model-shape ceiling; "
        "40% masked (51 of 128 positions): 1.31x, at most 1.90x at its model-shape ceiling." in text
    )  # sorted by share, and the Zen 4 record (another machine) left out
    assert "going from 15% to 40% adds 14% to its FLOPs" in text
    assert text.endswith("would run 1.90x transformers' measured one: no tuning of what lies outside the matmuls "
                         "could take bertlab further than that on this machine.")  # fmt: skip
    assert "read the trend" not in text  # no transformers timings: nothing said about the drift
    drift = speed.masking_reading(
        [{**low, "transformers_s_per_step": 2.55}, {**high, "transformers_s_per_step": 2.83}, other]
    )
    assert drift.endswith("the same step of transformers took 2.55 to 2.83 s across them: read the trend, not the "
                          "second decimal.")  # fmt: skip
    assert "Each figure is one run, and the same step" in drift
    turns = speed.masking_reading(
        [{**low, "transformers_s_per_step": 2.55, "rounds": 3}, {**high, "transformers_s_per_step": 2.83, "rounds": 5}]
    )
    assert "Each figure is the least disturbed of 3 to 5 rounds of one run, the two models taking turns, and" in turns
    steady = speed.masking_reading(
        [{**low, "transformers_s_per_step": 2.55}, {**high, "transformers_s_per_step": 2.6}, other]
    )
    assert "read the trend" not in steady  # within 5%
    assert speed.masking_reading([low, other]) is None  # no two shares on one machine and step
    assert speed.masking_reading([low, {**high, "last_layer": True}]) is None  # nor one step against another
