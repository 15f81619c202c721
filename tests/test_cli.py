"""The command line: pretrain / finetune / evaluate / plot, clear errors, SIGTERM saving a
checkpoint, and the reference run at CPU size."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import conftest
from bertlab.__main__ import field_help, main
from bertlab.training.finetune import FinetuneConfig
from bertlab.training.pretrain import PretrainConfig
from bertlab.training.recipes import RECIPES

MIRROR = str(conftest.MIRROR)
ENV = {
    **os.environ,
    "BERTLAB_DATA_MIRROR": MIRROR,
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "BERTLAB_PROGRESS": "0",
}


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("BERTLAB_DATA_MIRROR", MIRROR)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def tiny_args(out, *extra):
    return [
        "pretrain",
        "--preset",
        "tiny",
        "--corpus",
        "books",
        "--max-documents",
        "2",
        "--vocab-size",
        "1000",
        "--seq-len",
        "32",
        "--batch-size",
        "8",
        "--lr",
        "1e-3",
        "--warmup",
        "0.2",
        "--log-every",
        "1",
        "--eval-batches",
        "1",
        "--device",
        "cpu",
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]


def test_pretrain_finetune_evaluate_plot(tmp_path, capsys):
    assert main(tiny_args(tmp_path / "p", "--steps", "3", "--eval-every", "3")) == 0
    final = tmp_path / "p" / "final"
    assert {p.name for p in final.iterdir()} == {"config.json", "model.safetensors", "tokenizer.json"}
    assert "held-out:" in capsys.readouterr().out

    ft = tmp_path / "ft"
    assert (
        main(
            [
                "finetune",
                "--task",
                "sst2",
                "--init",
                str(final),
                "--seeds",
                "0",
                "1",
                "--epochs",
                "1",
                "--max-train-examples",
                "64",
                "--max-eval-examples",
                "64",
                "--batch-size",
                "16",
                "--no-progress",
                "--save-models",
                "--out",
                str(ft),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "sst2 accuracy" in out and "median" in out
    results = json.loads((ft / "results.json").read_text())
    assert [r["seed"] for r in results["runs"]] == [0, 1] and len(results["scores"]) == 2

    assert (
        main(["evaluate", "--task", "sst2", "--model", str(ft / "seed-1"), "--max-examples", "64", "--device", "cpu"])
        == 0
    )
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["accuracy"] == pytest.approx(results["runs"][1]["metrics"]["accuracy"])

    # held-out evaluation of the pretrained folder = the run's own final evaluation (same text, masks, model)
    from bertlab.training.heldout import evaluate_checkpoint
    from bertlab.training.logs import read_metrics

    final_eval = read_metrics(tmp_path / "p" / "metrics.jsonl", split="eval")[-1]
    again = evaluate_checkpoint(
        final, corpus="books", seq_len=32, batches=1, batch_size=8, max_documents=2, device="cpu"
    )
    assert again["mlm_loss"] == pytest.approx(final_eval["mlm_loss"], rel=1e-6)
    assert again["mlm_acc"] == pytest.approx(final_eval["mlm_acc"])
    assert (
        main(
            [
                "evaluate",
                "--task",
                "mlm",
                "--model",
                str(final),
                "--corpus",
                "books",
                "--max-examples",
                "2",
                "--seq-len",
                "32",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert "mlm_acc" in json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    assert main(["plot", str(tmp_path / "p"), "--out", str(tmp_path / "m.png")]) == 0
    assert (tmp_path / "m.png").stat().st_size > 10_000


def test_pretrain_left_to_right(tmp_path, capsys):
    assert main(tiny_args(tmp_path / "l", "--steps", "2", "--eval-every", "2", "--objective", "ltr")) == 0
    held_out = json.loads(capsys.readouterr().out.split("held-out:")[1].strip().splitlines()[0])
    assert set(held_out) == {"ltr_loss", "next_token_acc", "loss"}
    assert json.loads((tmp_path / "l" / "final" / "config.json").read_text())["causal"] is True
    assert (
        main(
            [
                "evaluate",
                "--task",
                "mlm",
                "--model",
                str(tmp_path / "l" / "final"),
                "--corpus",
                "books",
                "--max-examples",
                "2",
                "--seq-len",
                "32",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert "next_token_acc" in json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["finetune", "--task", "sst5"], "unknown task 'sst5'; choose one of sst2, mrpc, rte, squad, conll2003"),
        (["finetune", "--task", "squad"], "no 'train' split"),
        (["pretrain", "--precision", "fp16", "--device", "cpu", "--steps", "1"], "needs a CUDA GPU"),
        (["pretrain", "--steps", "5", "--minutes", "1"], "not both"),
        (["pretrain", "--recipe", "paper", "--steps", "100"], "warm-up of 10,000 steps is longer than the run"),
        (["pretrain", "--mlm-bias", "ones", "--steps", "1"], "mlm_bias must be one of zeros, unigram"),
        (["pretrain", "--norm-position", "middle", "--steps", "1"], "norm_position must be 'post' or 'pre'"),
        (["pretrain", "--preset", "giant", "--steps", "1"], "choose one of tiny, mini"),
        (["pretrain", "--recipe", "fast", "--steps", "1"], "choose one of paper, budget"),
        (["pretrain", "--objective", "ltr", "--nsp", "--steps", "1"], "'LTR & No NSP'"),
        (["pretrain", "--objective", "gpt", "--steps", "1"], "unknown objective 'gpt'"),
        (["evaluate", "--task", "sst2", "--model", "/nonexistent"], "not a bertlab model folder"),
    ],
)
def test_clear_errors(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_resume_continues(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "bertlab"] + tiny_args(
        out, "--steps", "100000", "--eval-every", "100000", "--checkpoint-every", "100000"
    )
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stdout.read()
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert "stopped (SIGTERM)" in output
    from bertlab.checkpoint import latest_checkpoint, load_checkpoint

    saved = latest_checkpoint(out / "checkpoints")
    c = load_checkpoint(saved)
    assert c.step >= 3 and c.state["trainer"]["step"] == c.step
    logged = [json.loads(x)["step"] for x in metrics.read_text().splitlines()]
    assert logged[-1] == c.step  # everything logged is in the checkpoint, nothing more

    p = subprocess.run(cmd + ["--resume", "--stop-after", "2"], env=ENV, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"resuming from {saved}" in p.stdout
    rows = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "train"] == list(range(1, c.step + 3))
    # SIGTERM leaves at once; --stop-after scores the model where it stops
    assert [r["step"] for r in rows if r["split"] == "eval"] == [c.step + 2]


def test_a_command_that_moved_to_the_lab_names_its_new_home():
    """The record's pipeline and the records' publishing left the package: each old command stops with
    the lab's command line, its arguments kept."""
    p = subprocess.run(
        [sys.executable, "-m", "bertlab", "reference-run", "--smoke", "--out", "x"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "python -m lab.reference_run --smoke --out x" in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "bertlab", "publish-records", "--out", "x"], env=ENV, capture_output=True, text=True
    )
    assert p.returncode == 2 and "python -m lab.publish_records --out x" in p.stderr


def test_throughput_benchmark_runs_quick(tmp_path):
    """lab/benchmarks/throughput.py --quick: both implementations, a table, the JSON (so it does not rot)."""
    script = Path(__file__).resolve().parents[1] / "lab" / "benchmarks" / "throughput.py"
    p = subprocess.run(
        [sys.executable, str(script), "--quick", "--steps", "2", "--json", str(tmp_path / "t.json")],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "bertlab / transformers" in p.stdout
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert {r["impl"] for r in rows} == {"bertlab", "transformers"}
    assert all(r["tokens_per_s"] > 0 and r["mfu"] is None for r in rows)  # no MFU without a known peak


def test_pretrain_help_states_each_recipes_defaults_from_the_recipes():
    """An option the recipe decides says so with every recipe's own value, read from RECIPES, so the
    help cannot drift from the code (it once said batch 256 and dropout 0.1 where `cpu` has 64 and 0)."""
    import argparse

    from bertlab.__main__ import build_parser
    from bertlab.training.recipes import RECIPES

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["pretrain"]
    helps = {a.dest: a.help for a in sub._actions}
    for name in ("batch_size", "dropout", "lr", "seq_len", "mlm_probability"):
        text = " ".join(helps[name].split())
        assert "default: the recipe's:" in text, (name, text)
        for key, recipe in RECIPES.items():
            value = getattr(recipe, name)
            shown = f"{value:g}" if isinstance(value, float) and name != "lr" else None
            if name == "lr":
                from bertlab.prose import rate

                shown = rate(value)
            assert f"{key} {shown if shown is not None else value}" in text, (name, key, text)
    assert "none" in " ".join(helps["phases"].split())  # a recipe without phases says so


def test_an_actionable_error_is_one_line_and_any_other_runtime_error_keeps_its_traceback(monkeypatch, capsys):
    """The command line tells the two apart by class (bertlab.errors), never by the message's words."""
    import bertlab.__main__ as cli
    from bertlab.errors import ActionableError

    def fails(error):
        def run(args):
            raise error

        return run

    monkeypatch.setattr(cli, "_run", fails(ActionableError("no CUDA GPU is available; use --device cpu")))
    assert cli.main(["pretrain", "--steps", "1"]) == 2
    assert capsys.readouterr().err.strip() == "error: no CUDA GPU is available; use --device cpu"
    monkeypatch.setattr(cli, "_run", fails(RuntimeError("CUDA --init: a fault, whatever its words")))
    with pytest.raises(RuntimeError, match="a fault"):
        cli.main(["pretrain", "--steps", "1"])


@dataclasses.dataclass
class _Documented:
    named: int = 1  # the comment that ends a field's line is its help
    # a comment line above a field is not its help
    bare: str = "x"
    spread: tuple = (
        1,
        2,
    )  # on the last line of a field written over several
    mark: str = "#"  # a hash inside the value is not the comment


def test_a_field_s_help_is_the_comment_that_ends_its_line():
    assert field_help(_Documented) == {
        "named": "the comment that ends a field's line is its help",
        "spread": "on the last line of a field written over several",
        "mark": "a hash inside the value is not the comment",
    }


@pytest.mark.parametrize("command, config", [("pretrain", PretrainConfig), ("finetune", FinetuneConfig)])
def test_every_option_s_help_is_its_config_field_s_comment(command, config, capsys, monkeypatch):
    """`--help` shows each config field's comment, so the help and the code's comments are one text; a
    field without a comment fails here. A recipe's defaults are read when the parser is built."""
    helps = field_help(config)
    missing = [f.name for f in dataclasses.fields(config) if not helps.get(f.name)]
    assert not missing, f"{config.__name__}: give each field a comment at the end of its line, its --help: {missing}"
    monkeypatch.setitem(RECIPES, "cpu", dataclasses.replace(RECIPES["cpu"], seq_len=96))
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    text = "".join(out.split())  # argparse wraps lines at the terminal's width, at spaces and hyphens
    for name, comment in helps.items():
        assert re.search(f"--{name.replace('_', '-')}[ ,]", out) and "".join(comment.split()) in text, (name, comment)
    if command == "pretrain":
        options = text[text.index("options:") :]
        seq_len = options[options.index("--seq-lenSEQ_LEN") : options.index("--batch-sizeBATCH_SIZE")]
        assert "(default:therecipe's:paper128,budget128,cpu96)" in seq_len, seq_len  # the live recipe, not a copy
