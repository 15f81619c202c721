"""Data parallelism: `torchrun --nproc_per_node 2` (gloo, CPU) trains the same model as one process
with the same global batch; gradient accumulation likewise. Only rank 0 writes."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import conftest
from bertlab.training.pretrain import PretrainConfig, pretrain

MIRROR = str(conftest.MIRROR)


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory):
    os.environ.setdefault("BERTLAB_DATA_MIRROR", MIRROR)
    from bertlab.data.corpus import load_corpus
    from bertlab.data.tokenizer import train_wordpiece

    docs = load_corpus("books", "train")[:2]
    tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=1000)
    return str(tok.save(tmp_path_factory.mktemp("tok")) / "tokenizer.json")


def cli_args(tokenizer_file, out):
    return [
        "pretrain",
        "--preset",
        "tiny",
        "--corpus",
        "books",
        "--max-documents",
        "2",
        "--tokenizer",
        tokenizer_file,
        "--seq-len",
        "32",
        "--batch-size",
        "8",
        "--steps",
        "4",
        "--lr",
        "1e-3",
        "--warmup",
        "0.25",
        "--dropout",
        "0",
        "--nsp",
        "--log-every",
        "1",
        "--eval-every",
        "2",
        "--eval-batches",
        "2",
        "--checkpoint-every",
        "2",
        "--device",
        "cpu",
        "--precision",
        "fp32",  # auto is bf16 on some CPUs
        "--no-progress",
        "--out",
        str(out),
    ]


def free_port() -> int:
    """A loopback port nothing listens on now: a fixed one would collide with a second test run."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, **kw):
    env = {
        **os.environ,
        "BERTLAB_DATA_MIRROR": MIRROR,
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


@pytest.mark.slow
def test_torchrun_two_processes_equal_one(tmp_path, tokenizer_file):
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    assert torchrun, "torchrun (installed with torch) not found"
    run([sys.executable, "-m", "bertlab"] + cli_args(tokenizer_file, tmp_path / "one"))
    p = run(
        [torchrun, "--nproc_per_node", "2", "--master_port", str(free_port()), "-m", "bertlab"]
        + cli_args(tokenizer_file, tmp_path / "two")
    )
    assert p.stdout.count("held-out:") == 1  # only rank 0 reports

    a = load_file(str(tmp_path / "one" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "two" / "final" / "model.safetensors"))
    assert a.keys() == b.keys()
    start = load_file(str(tmp_path / "two" / "checkpoints" / "step-0000002" / "model.safetensors"))
    moved = max((a[k] - start[k]).abs().max().item() for k in a)
    diff = max((a[k] - b[k]).abs().max().item() for k in a)
    assert moved > 1e-4  # the weights really changed between step 2 and 4...
    assert diff < 1e-5, diff  # ...identically in both runs
    la = [json.loads(x) for x in (tmp_path / "one" / "metrics.jsonl").read_text().splitlines()]
    lb = [json.loads(x) for x in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert len(la) == len(lb) == 6  # 4 train + 2 eval lines: written once, by rank 0
    for x, y in zip(la, lb):
        assert x["step"] == y["step"] and abs(x["loss"] - y["loss"]) < 1e-4
        if x["split"] == "train":
            assert "nsp_acc" in x and abs(x["mlm_acc"] - y["mlm_acc"]) < 1e-9


def test_gradient_accumulation_equals_the_whole_batch(tmp_path, tokenizer_file):
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        base = dict(
            preset="tiny",
            corpus="books",
            max_documents=2,
            tokenizer=tokenizer_file,
            seq_len=32,
            batch_size=8,
            steps=3,
            lr=1e-3,
            warmup=0.3,
            dropout=0.0,
            log_every=1,
            eval_every=100,
            eval_batches=1,
            checkpoint_every=100,
            progress=False,
            device="cpu",
            precision="fp32",
        )  # auto is bf16 on CPUs with avx512_bf16
        whole = pretrain(PretrainConfig(**base, out=str(tmp_path / "w")))
        parts = pretrain(PretrainConfig(**base, grad_accum=4, out=str(tmp_path / "p")))
    finally:
        torch.set_num_threads(n)
    for (k, v), (k2, v2) in zip(whole.model.state_dict().items(), parts.model.state_dict().items()):
        assert k == k2 and torch.allclose(v, v2, atol=1e-5), k
    for x, y in zip(whole.train_history, parts.train_history):
        assert abs(x["loss"] - y["loss"]) < 1e-4
