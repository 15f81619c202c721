"""lab/benchmarks/throughput.py's one-configuration (CPU) mode: the JSON line, its FLOP count, its errors."""

import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "throughput.py"
GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
TINY = [
    "--device",
    "cpu",
    "--precision",
    "fp32",
    "--layers",
    "1",
    "--hidden",
    "64",
    "--heads",
    "2",
    "--vocab-size",
    "512",
    "--batch-size",
    "4",
    "--seq-len",
    "32",
    "--steps",
    "2",
    "--warmup-steps",
    "1",
    "--matmul-size",
    "256",
    "--threads",
    "1",
    "--dropout",
    "0",
]
REQUIRED = [
    "bertlab_tokens_per_s",
    "transformers_tokens_per_s",
    "bertlab_gflops",
    "ceiling_gflops",
    "speedup",
    "fraction_of_ceiling",
    "precision",
    "compiled",
    "compile_s",
    "cpu",
    "threads",
    "layers",
    "hidden",
    "heads",
    "vocab_size",
    "seq_len",
    "batch_size",
]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("throughput_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # @dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def hand_count_flops(P: int = 5) -> int:
    """One training step of the TINY config, counted by hand: L=1, H=64, A=2, FFN I=256, V=512,
    B=4, T=32, P = round(0.15 * 32) = 5 predicted positions per sequence (by default); a
    multiply-add is 2 FLOPs, forward + backward = 3 x forward."""
    B, T, L, H, I, V = 4, 32, 1, 64, 256, 512
    qkvo = 4 * H * H  # 16,384 multiply-adds per token and layer
    ffn = 2 * H * I  # 32,768
    attention = 2 * T * H  # Q K^T and weights @ V: 4,096
    encoder = B * T * L * (qkvo + ffn + attention)  # 128 tokens x 53,248 = 6,815,744
    mlm_head = B * P * (H * H + H * V)  # transform + decoder at the 20 chosen positions: 737,280
    pooler_nsp = B * (H * H + H * 2)  # 16,896
    forward = 2 * (encoder + mlm_head + pooler_nsp)  # 15,139,840 at P = 5
    assert P != 5 or forward == 15_139_840
    return 3 * forward  # 45,419,520 at P = 5


def test_cpu_mode_prints_one_json_line_with_the_numbers():
    p = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, "--json"], env=ENV, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.strip().splitlines()
    assert "bertlab / transformers" in p.stdout  # the table comes before the JSON
    r = json.loads(lines[-1])
    assert all(k in r for k in REQUIRED), sorted(set(REQUIRED) - set(r))
    for k in (
        "bertlab_tokens_per_s",
        "transformers_tokens_per_s",
        "bertlab_gflops",
        "transformers_gflops",
        "ceiling_gflops",
        "speedup",
        "fraction_of_ceiling",
        "bertlab_s_per_step",
        "transformers_s_per_step",
    ):
        assert isinstance(r[k], float) and math.isfinite(r[k]) and r[k] > 0, (k, r[k])
    assert (r["layers"], r["hidden"], r["heads"], r["vocab_size"], r["seq_len"], r["batch_size"]) == (
        1,
        64,
        2,
        512,
        32,
        4,
    )
    assert (
        r["precision"],
        r["compiled"],
        r["compile_s"],
        r["threads"],
        r["steps"],
        r["warmup_steps"],
        r["dropout"],
    ) == ("fp32", False, None, 1, 2, 1, 0.0)
    assert isinstance(r["cpu"], str) and r["cpu"]
    assert r["cpu_allocator"] == ("kept" if GLIBC else "default")  # the runtime's setting, for both models
    assert r["mlm_predictions"] == 5 and r["ceiling_matmul"] == "256^3 float32"
    assert r["last_layer"] is True  # bertlab's step computes its last layer where the heads read it
    # the FLOP count against the hand count, and the rates derived from it. Every figure is printed to
    # 4 significant digits (relative error up to 5e-4 each), so a ratio of two printed figures, itself
    # printed, can be off by up to 1.5e-3 from the ratio recomputed here
    rounding = 2e-3
    assert r["model_flops_per_step"] == hand_count_flops()
    assert r["bertlab_tokens_per_s"] == pytest.approx(4 * 32 / r["bertlab_s_per_step"], rel=rounding)
    assert r["bertlab_gflops"] == pytest.approx(hand_count_flops() / r["bertlab_s_per_step"] / 1e9, rel=rounding)
    assert r["speedup"] == pytest.approx(r["bertlab_tokens_per_s"] / r["transformers_tokens_per_s"], rel=rounding)
    assert r["fraction_of_ceiling"] == pytest.approx(r["bertlab_gflops"] / r["ceiling_gflops"], rel=rounding)
    assert r["ceiling_gflops"] == max(r["ceiling_gflops_before_after"])
    # the model-shape ceiling: the step's own matmuls, timed alone, and bertlab's share of its speed
    assert r["model_shape_ceiling_tokens_per_s"] == pytest.approx(
        4 * 32 / r["model_shape_ceiling_s_per_step"], rel=rounding
    )
    assert r["model_shape_ceiling_gflops"] == pytest.approx(
        hand_count_flops() / r["model_shape_ceiling_s_per_step"] / 1e9, rel=rounding
    )
    assert r["fraction_of_model_shape_ceiling"] == pytest.approx(
        r["bertlab_tokens_per_s"] / r["model_shape_ceiling_tokens_per_s"], rel=rounding
    )
    assert r["fraction_of_model_shape_ceiling"] > 0
    assert r["speedup_at_model_shape_ceiling"] == pytest.approx(
        r["model_shape_ceiling_tokens_per_s"] / r["transformers_tokens_per_s"], rel=rounding
    )
    assert "at the model-shape ceiling bertlab would run" in p.stdout
    assert sum(r["model_shape_ceiling_s_by_matmul"].values()) == pytest.approx(
        r["model_shape_ceiling_s_per_step"], rel=1e-2
    )
    # transformers' MLM head runs at all 32 positions: 4 x 27 more predictions than bertlab's
    assert r["transformers_executed_flops_per_step"] - r["model_flops_per_step"] == 6 * 4 * 27 * (64 * 64 + 64 * 512)


def test_rounds_let_the_models_take_turns_and_keep_each_ones_least_disturbed_round():
    p = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, "--rounds", "3", "--json"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "taking turns" in p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["rounds"] == 3
    for impl in ("bertlab", "transformers"):
        secs = r[f"{impl}_s_per_step_rounds"]
        assert len(secs) == 3 and all(s > 0 for s in secs)
        assert r[f"{impl}_s_per_step"] == min(secs)  # the least disturbed round
        assert r[f"{impl}_tokens_per_s"] == pytest.approx(4 * 32 / min(secs), rel=2e-3)
    assert r["speedup"] == pytest.approx(r["bertlab_tokens_per_s"] / r["transformers_tokens_per_s"], rel=2e-3)
    assert r["last_layer"] is True and r["model_flops_per_step"] == hand_count_flops()
    one = subprocess.run([sys.executable, str(SCRIPT), *TINY, "--rounds", "0"], env=ENV, capture_output=True, text=True)
    assert one.returncode != 0 and "--rounds must be at least 1" in one.stderr


def test_the_masking_rate_sets_the_predictions_and_the_flops(monkeypatch):
    """--mlm-probability 0.4 (the CPU record's next rate): bertlab's sparse head predicts round(0.4 x 32)
    = 13 positions a sequence, and transformers is trained on the same 13 labels per row."""
    bench = load_benchmark()
    b = bench.random_batch(4, 32, 512, torch.Generator().manual_seed(0), 0.4)
    chosen = b["mlm_labels"] != -100
    assert chosen.sum(1).tolist() == [13] * 4 and (b["mlm_positions"][chosen] > 0).all()  # never [CLS]
    seen = []
    real = bench.random_batch
    monkeypatch.setattr(bench, "random_batch", lambda *a: seen.append(real(*a)) or seen[-1])
    p = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, "--mlm-probability", "0.4", "--json"],
        env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert (r["mlm_probability"], r["mlm_predictions"], r["mlm_slots"]) == (0.4, 13, 15)
    assert r["model_flops_per_step"] == hand_count_flops(13) != hand_count_flops()
    assert r["transformers_executed_flops_per_step"] - r["model_flops_per_step"] == 6 * 4 * 19 * (64 * 64 + 64 * 512)
    # in process: both implementations draw their batch at the rate asked for
    from bertlab.runtime import make_runtime

    rt = make_runtime("cpu", "fp32", distributed=False)
    for fn in (bench.bench_bertlab, bench.bench_transformers):
        fn("t", 1, 64, 2, 512, 32, 2, rt, 1, 1, False, 0.0, 0.4)
    assert [(x["mlm_labels"] != -100).sum(1).tolist() for x in seen] == [[13, 13]] * 2


@pytest.mark.parametrize("rate", ["0", "1", "0.01"])
def test_a_masking_rate_that_chooses_no_position_or_every_one_is_a_clear_error(rate, capsys):
    argv = ["--device", "cpu", "--preset", "tiny", "--seq-len", "32", "--mlm-probability", rate]
    assert load_benchmark().main(argv) == 2
    err = capsys.readouterr().err
    assert "--mlm-probability" in err and rate in err


@pytest.mark.parametrize(
    "mode", [["--attribution", "--seq-len", "32"], ["--quick"]], ids=["attribution", "named-configs"]
)
def test_every_mode_refuses_a_masking_rate_that_chooses_no_position(mode, capsys):
    """The attribution and the named-configs table draw the same batches: they refuse the same rates,
    before any model is built."""
    assert load_benchmark().main(["--device", "cpu", *mode, "--mlm-probability", "0.001"]) == 2
    err = capsys.readouterr().err
    assert "--mlm-probability 0.001 chooses 0" in err and "choose between 1 and" in err


def test_unknown_preset_is_a_clear_error(capsys):
    bench = load_benchmark()
    with pytest.raises(SystemExit) as e:
        bench.main(["--device", "cpu", "--preset", "enormous", "--json"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--preset" in err and "enormous" in err and "mini" in err


def test_bf16_on_a_cpu_without_native_bf16_is_resolve_precisions_error(monkeypatch, capsys):
    from bertlab import runtime

    monkeypatch.setattr(runtime, "cpu_bf16_feature", lambda: None)  # this CPU, whatever it is, lacks bf16
    with pytest.raises(ValueError) as expected:
        runtime.resolve_precision("bf16", torch.device("cpu"))
    bench = load_benchmark()
    assert bench.main(["--device", "cpu", "--preset", "tiny", "--precision", "bf16", "--json"]) == 2
    out = capsys.readouterr()
    assert str(expected.value) in out.err and out.out == ""


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_dropout_reaches_both_models(monkeypatch, dropout):
    import transformers

    from bertlab.runtime import make_runtime

    bench = load_benchmark()
    built = {}
    real = bench.BertForPreTraining
    monkeypatch.setattr(bench, "BertForPreTraining", lambda c: built.setdefault("bertlab", real(c)))
    real_hf = transformers.BertForPreTraining._from_config.__func__

    def spy(cls, config, **kw):
        return built.setdefault("transformers", real_hf(cls, config, **kw))

    monkeypatch.setattr(transformers.BertForPreTraining, "_from_config", classmethod(spy))
    rt = make_runtime("cpu", "fp32", distributed=False)
    for fn in (bench.bench_bertlab, bench.bench_transformers):
        fn("t", 1, 64, 2, 512, 16, 2, rt, 1, 1, False, dropout=dropout)
    for impl, model in built.items():
        rates = {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)}
        # transformers applies attention dropout inside SDPA (dropout_p), not as a module
        assert rates == {dropout} or (dropout == 0.0 and rates <= {0.0}), (impl, rates)
    assert set(built) == {"bertlab", "transformers"}
    assert built["transformers"].config.attention_probs_dropout_prob == dropout


def test_dropout_out_of_range_is_a_clear_error(capsys):
    assert load_benchmark().main(["--device", "cpu", "--preset", "tiny", "--dropout", "1.5"]) == 2
    assert "--dropout" in capsys.readouterr().err


def test_step_matmuls_add_up_to_the_model_flops():
    """The shapes the model-shape ceiling times are exactly the FLOPs the benchmark counts."""
    from bertlab import BertConfig
    from bertlab.training.flops import pretraining_flops

    step_matmuls = load_benchmark().step_matmuls
    for cfg, B, T, P in (
        (BertConfig.preset("mini", vocab_size=8192), 64, 128, 19),
        (BertConfig(vocab_size=1000, num_layers=3, hidden_size=96, num_heads=4), 8, 64, 10),
    ):
        shapes = step_matmuls(cfg, B, T, P)
        total = sum(2 * b * m * k * n * t for _, b, m, k, n, t in shapes)
        assert total == pretraining_flops(cfg, B, T, P)
        assert len(shapes) == 30 and all(min(s[1:]) >= 1 for s in shapes)


def test_every_position_batch_keeps_the_chosen_tokens_and_their_labels():
    bench = load_benchmark()
    b = bench.random_batch(3, 20, 100, torch.Generator().manual_seed(1))
    d = bench.every_position_batch(b)
    assert d["mlm_positions"].shape == d["mlm_labels"].shape == (3, 20)
    assert torch.equal(d["mlm_positions"][1], torch.arange(20))
    for row in range(3):
        chosen = b["mlm_labels"][row] != bench.IGNORE_INDEX
        dense = {int(p): int(t) for p, t in enumerate(d["mlm_labels"][row]) if t != bench.IGNORE_INDEX}
        sparse = {int(p): int(t) for p, t in zip(b["mlm_positions"][row][chosen], b["mlm_labels"][row][chosen])}
        assert dense == sparse and len(dense) == 3  # round(0.15 * 20)
    assert torch.equal(d["input_ids"], b["input_ids"])


def test_attribution_times_every_setting_and_the_loss_does_not_depend_on_the_levers(tmp_path):
    """--attribution: bertlab with no lever, each alone, all, all but each; transformers beside it.
    The levers change the speed, never the computation: the MLM loss is the same in every row."""
    from lab import speed

    LEVERS = ("sparse_head", "last_layer", "attention")
    args = [a for a in TINY if a not in ("--precision", "fp32", "--matmul-size", "256")]
    out = tmp_path / "attribution.json"
    p = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--attribution", "--levers", *LEVERS, "--json", out],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    record = speed.load_attribution(out)
    assert json.loads(p.stdout.strip().splitlines()[-1]) == record
    bertlab_rows = [r for r in record["rows"] if r["impl"] == "bertlab"]
    settings = [(), *((x,) for x in LEVERS), LEVERS, *(tuple(y for y in LEVERS if y != x) for x in LEVERS)]
    assert sorted(tuple(r["on"]) for r in bertlab_rows) == sorted(settings)  # in LEVERS' order
    assert [r["on"] for r in record["rows"] if r["impl"] == "transformers"] == [[]]
    losses = [r["mlm_loss"] for r in bertlab_rows]
    assert max(losses) - min(losses) < 1e-4 * max(losses), losses
    assert all(r["tokens_per_s"] > 0 and r["precision"] == "fp32" and not r["compiled"] for r in record["rows"])
    assert "attention written out" in speed.attribution_table(record)
    assert "last layer at the chosen positions only" in speed.attribution_table(record)
    assert record["rounds"] == 1 and all(len(r["s_per_step_rounds"]) == 1 for r in record["rows"])

    # --rounds 2: every setting built first, then they take turns; each keeps its least disturbed round
    turns = tmp_path / "turns.json"
    p = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--attribution", "--levers", *LEVERS, "--rounds", "2", "--json", turns],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "settings taking turns, 2 rounds" in p.stderr
    taking_turns = speed.load_attribution(turns)
    assert taking_turns["rounds"] == 2
    assert [(r["impl"], r["on"]) for r in taking_turns["rows"]] == [(r["impl"], r["on"]) for r in record["rows"]]
    for row in taking_turns["rows"]:
        assert len(row["s_per_step_rounds"]) == 2 and row["s_per_step"] == min(row["s_per_step_rounds"])
    again = [r["mlm_loss"] for r in taking_turns["rows"] if r["impl"] == "bertlab"]
    assert max(again) - min(again) < 1e-4 * max(again), again


def test_attribution_refuses_a_fixed_precision_or_compile(capsys):
    bench = load_benchmark()
    assert bench.main(["--device", "cpu", "--attribution", "--compile"]) == 2
    assert "--attribution measures every setting" in capsys.readouterr().err


@pytest.mark.skipif(not GLIBC, reason="keeping freed memory needs glibc's malloc")
def test_the_allocator_benchmark_alternates_processes_and_its_record_reads(tmp_path):
    from lab import speed

    script = SCRIPT.parent / "cpu_allocator.py"
    out = tmp_path / "allocator.json"
    args = ["--preset", "tiny", "--vocab-size", "512", "--batch-size", "4", "--seq-len", "32", "--no-compile"]
    args += ["--precision", "fp32", "--mlm-probability", "0.4"]
    p = subprocess.run(
        [sys.executable, str(script), *args, "--rounds", "2", "--steps", "1", "--json", str(out)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    r = speed.load_allocator(out)
    assert r == json.loads(p.stdout.strip().splitlines()[-1])
    # kept first in round 0, second in round 1: a drifting machine slows both alike
    order = [(b["round"], b["allocator"]) for b in r["blocks"]]
    assert order == [(0, "kept"), (0, "default"), (1, "default"), (1, "kept")]
    assert (r["layers"], r["hidden"], r["precision"], r["compiled"], r["dropout"]) == (2, 128, "fp32", False, 0.0)
    assert (r["mlm_probability"], r["mlm_slots"]) == (0.4, 15)  # ceil(0.4 x 32) + 2 slots
    assert r["speedup"] == pytest.approx(r["default_s_per_step"] / r["kept_s_per_step"], rel=2e-3)
    assert all(b["s_per_step"] > 0 and b["user_s_per_step"] >= 0 for b in r["blocks"])
    assert "alternating processes" in speed.allocator_reading(r)
