"""The chapters' GPU branch, rehearsed on a CPU, and the switch and time estimates behind it.

Chapters 10-16 have a `FULL` branch for readers with a GPU (Colab's T4). The book build runs their
CPU branch; with BERTLAB_GPU_BRANCH=1 a CPU takes the GPU branch instead, at tiny sizes
(bertlab.notebook.gpu_size) and in bf16 autocast where the CPU has native bf16, so that every
cell of that branch, and every check in it, runs here. Each chapter is executed as the book build
executes it (a fresh kernel, the data mirror, the hub offline), in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
import torch

from bertlab import notebook
from bertlab.config import BertConfig
from bertlab.training import flops

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = [
    "10_pretraining",
    "11_finetuning_sst2",
    "12_sentence_pairs",
    "13_question_answering",
    "14_named_entities",
    "15_features",
    "16_attention_heads",
]
CELL_TIMEOUT_S = 600


# ------------------------------------------------------------------------------------------------
# The switch
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, forced", [("1", True), ("true", True), ("0", False), ("", False), ("no", False)])
def test_the_variable_forces_the_gpu_branch_on_a_cpu(monkeypatch, value, forced):
    monkeypatch.setenv(notebook.GPU_BRANCH_ENV, value)
    cpu = torch.device("cpu")
    assert notebook.gpu_branch(cpu) is forced
    assert notebook.rehearsal(cpu) is forced
    assert notebook.gpu_size(cpu, 1000, 10) == (10 if forced else 1000)


def test_a_gpu_always_takes_the_full_sizes(monkeypatch):
    for value in ("1", "0"):
        monkeypatch.setenv(notebook.GPU_BRANCH_ENV, value)
        gpu = torch.device("cuda", 0)  # a device object needs no GPU
        assert notebook.gpu_branch(gpu) and not notebook.rehearsal(gpu)
        assert notebook.gpu_size("cuda", None, 48) is None
    monkeypatch.delenv(notebook.GPU_BRANCH_ENV)
    assert not notebook.gpu_branch("cpu")


# ------------------------------------------------------------------------------------------------
# The T4 estimate
# ------------------------------------------------------------------------------------------------
def _json(path: Path):
    import json

    return json.loads(path.read_text())


# what data/gpu_runs/h200-2026-11-26 measured: pretraining steps and seconds, the H200's bf16 peak,
# then one epoch of fine-tuning on CoNLL-2003 (steps, seconds)
H200_PRETRAIN_STEPS, H200_PRETRAIN_SECONDS, H200_PEAK = 3334, 90.0, 989e12
H200_FINETUNE_STEPS, H200_FINETUNE_SECONDS = 439, 24.06


def test_the_achieved_rate_and_step_cost_are_the_h200_records():
    """The constants are what data/gpu_runs/h200-2026-11-26 measured, recomputed from its files."""
    run = ROOT / "data" / "gpu_runs" / "h200-2026-11-26"
    log = (run / "log.txt").read_text()
    pre = _json(run / "pretrain_run.json")
    conf = BertConfig(**pre["model_config"])
    assert conf.num_layers == 8 and conf.hidden_size == 512
    step = flops.pretraining_flops(conf, pre["recipe"]["batch_size"], pre["recipe"]["seq_len"], 20)
    assert f"{H200_PRETRAIN_STEPS:,} steps" in (ROOT / "data" / "gpu_runs" / "README.md").read_text()
    fraction = H200_PRETRAIN_STEPS * step / H200_PRETRAIN_SECONDS / H200_PEAK
    assert fraction == pytest.approx(flops.ACHIEVED_FRACTION, abs=0.001)
    ft = _json(run / "finetune_pretrained.json")
    assert ft["runs"][0]["seconds"] == pytest.approx(H200_FINETUNE_SECONDS, abs=0.01)
    assert flops.STEP_OVERHEAD_S == H200_FINETUNE_SECONDS / H200_FINETUNE_STEPS
    # one epoch of CoNLL-2003's 14,041 training sentences in batches of 32
    assert flops.finetune_steps(14_041, ft["config"]["epochs"], ft["config"]["batch_size"]) == H200_FINETUNE_STEPS
    assert "conll2003" in log


def test_training_flops_are_six_per_parameter_and_token():
    conf = BertConfig.preset("mini", vocab_size=8192)
    L, H, inner = conf.num_layers, conf.hidden_size, conf.intermediate_size
    matmul_params = L * (4 * H * H + 2 * H * inner)
    assert flops.training_flops(conf, 1000) == 6 * matmul_params * 1000
    assert flops.training_flops(conf, 1000, passes=1) == 2 * matmul_params * 1000
    # the attention term scales with the length; more seeds, epochs or examples scale the whole
    short = flops.finetune_flops(conf, 100, 1, 32)
    assert flops.finetune_flops(conf, 100, 1, 64) > 2 * short
    assert flops.finetune_flops(conf, 100, 3, 32, seeds=2) == pytest.approx(6 * short)


def test_t4_time_is_compute_plus_steps_and_grows_with_the_run():
    conf = BertConfig.preset("mini", vocab_size=8192)
    one = flops.t4_finetune_seconds(conf, 10_000, 1, 32, 25)
    assert flops.t4_finetune_seconds(conf, 20_000, 1, 32, 25) == pytest.approx(2 * one, rel=0.01)
    steps = flops.finetune_steps(10_000, 1, 32)
    assert steps == 313
    # a small model is bound by the steps, not by its FLOPs
    assert one > steps * flops.STEP_OVERHEAD_S > 0.5 * one
    # a T4 at the achieved fraction of 65 TFLOP/s: 1e15 FLOPs take 1e15 / (0.203 * 65e12) s
    assert flops.t4_seconds(1e15) == pytest.approx(1e15 / (flops.ACHIEVED_FRACTION * 65e12))
    assert "over the 15-minute budget" in flops.t4_line("x", 16 * 60)
    assert "about 2.0 min for x" in flops.t4_line("x", 120)


def test_tagger_flops_count_both_directions_and_layers():
    one = flops.tagger_flops(1000, 256, 64, 1, 1)
    assert one == 3 * 1000 * 2 * 2 * 4 * 64 * (256 + 64)
    two = flops.tagger_flops(1000, 256, 64, 2, 1)
    assert two == one + 3 * 1000 * 2 * 2 * 4 * 64 * (128 + 64)


# ------------------------------------------------------------------------------------------------
# The chapters, in their GPU branch at tiny sizes
# ------------------------------------------------------------------------------------------------
def _mirror() -> Path | None:
    mirror = Path(os.environ.get("BERTLAB_DATA_MIRROR", ROOT.parent / "shared" / "data"))
    return mirror if (mirror / "SHA256SUMS").is_file() else None


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_its_gpu_branch(chapter, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    mirror = _mirror()
    if mirror is None:
        pytest.skip("no data mirror: set BERTLAB_DATA_MIRROR")
    monkeypatch.setenv("BERTLAB_DATA_MIRROR", str(mirror))
    monkeypatch.setenv(notebook.GPU_BRANCH_ENV, "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("BERTLAB_RECORDS", str(ROOT / "data"))  # the checkout's records, from any folder
    path = tmp_path / f"{chapter}.ipynb"
    shutil.copy(ROOT / "book" / f"{chapter}.ipynb", path)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell('print("branch:", "FULL" if FULL else "CPU")'))
    t0 = time.perf_counter()
    where = {"metadata": {"path": str(tmp_path)}}
    NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources=where).execute()
    seconds = time.perf_counter() - t0
    last = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert "branch: FULL" in last, last
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "expected on a T4" in printed  # each chapter says what its GPU branch costs there
    print(f"{chapter}: GPU branch at tiny sizes in {seconds:.0f} s")


# ------------------------------------------------------------------------------------------------
# What a T4 trains in: fp16 autocast with a loss scaler (it has no native bf16)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("capability, precision, scaled", [((7, 5), "fp16", True), ((8, 0), "bf16", False)])
def test_a_t4_trains_in_fp16_with_a_grad_scaler(monkeypatch, capability, precision, scaled):
    from bertlab import runtime

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # emulated on a T4
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        rt = runtime.make_runtime("auto", "auto", distributed=False)  # what finetune and pretrain ask for
    finally:  # make_runtime switches TF32 on for a GPU: this process has none
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    assert rt.device.type == "cuda" and rt.precision == precision
    assert rt.uses_grad_scaler is scaled
    assert rt.autocast_dtype == {"fp16": torch.float16, "bf16": torch.bfloat16}[precision]
    # the scaler finetune and pretrain step through (optim.optimizer_step): enabled only for fp16
    monkeypatch.setattr(torch.amp.GradScaler, "__init__", lambda self, device, enabled: setattr(self, "on", enabled))
    assert rt.grad_scaler().on is scaled
