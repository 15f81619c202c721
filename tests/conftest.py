"""What every test shares: the offline environment, the data mirror, and CPU thread settings.

The datasets come from a local mirror laid out like the team's shared/data folder:
$BERTLAB_DATA_MIRROR if set, else ../shared/data beside this repository (as in CI). Tests that
need it skip with a message when neither exists.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MIRROR = REPO.parent / "shared" / "data"

if not os.environ.get("BERTLAB_DATA_MIRROR") and (DEFAULT_MIRROR / "SHA256SUMS").is_file():
    os.environ["BERTLAB_DATA_MIRROR"] = str(DEFAULT_MIRROR)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MIRROR = Path(os.environ.get("BERTLAB_DATA_MIRROR", DEFAULT_MIRROR))

# Under pytest-xdist (`make test` runs `pytest -n 2 --dist loadscope`) each worker is one of two
# processes on two cores: one intra-op thread each, for the worker and for what its tests start (CLI
# runs, notebook kernels, torchrun), so two workers keep two cores busy without four threads
# fighting over them. (--dist loadscope sends all the tests of a module to one worker, so a
# module-scoped fixture, such as the Colab venv or a featurized dev set, is built once, as in a
# serial run; --dist loadgroup would be finer, but pytest-xdist 3.8 cannot group on pytest 9.2:
# pytest-dev/pytest-xdist#1386.)
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


@pytest.fixture
def mirror(monkeypatch) -> Path:
    """The real mirror (skips the test when there is none)."""
    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}: set BERTLAB_DATA_MIRROR")
    monkeypatch.setenv("BERTLAB_DATA_MIRROR", str(MIRROR))
    return MIRROR


@pytest.fixture
def one_thread():
    """2 shared cores: one intra-op thread is several times faster than two fighting."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def bert_tokenizer():
    """The bert-base-uncased WordPiece vocabulary (offline, from the MiniLM package)."""
    from bertlab.data.tokenizer import bert_uncased_tokenizer

    return bert_uncased_tokenizer()


@pytest.fixture(scope="session")
def load_script():
    """A loader for the repository's scripts (scripts/, lab/benchmarks/), which are files, not modules of
    the package: load_script("scripts/record_squad_epochs.py") returns it imported, its `main` ready
    to call. It is registered in sys.modules under its file name (dataclasses look it up there)."""

    def load(relative: str):
        path = REPO / relative
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def record(tmp_path, bert_tokenizer):
    """A record folder as the reference pipeline (lab.reference_run) writes it, for a tiny random
    model: (folder, model). Shared by the package's reading tests and the lab's making tests."""
    from bertlab import BertConfig, BertForPreTraining, files
    from bertlab import checkpoint as ckpt
    from bertlab.experiments import reference

    torch.manual_seed(0)
    cfg = BertConfig.preset("tiny", vocab_size=bert_tokenizer.vocab_size)
    model = BertForPreTraining(cfg).eval()
    out = tmp_path / "reference_run"
    saved = ckpt.save_model(tmp_path / "fp16", model, dtype=torch.float16)
    out.mkdir()
    (saved / "model.safetensors").rename(out / reference.WEIGHTS)
    (saved / "config.json").rename(out / "config.json")
    bert_tokenizer.save(tmp_path / "tok")
    (tmp_path / "tok" / "tokenizer.json").rename(out / "tokenizer.json")
    files.write_json(
        out / "provenance.json",
        {
            "device": "NVIDIA H100 80GB HBM3",
            "git_commit": "0123456789abcdef",
            "wall_time_s": 840.0,
            "smoke": False,
            "weights": {"sha256": files.sha256_file(out / reference.WEIGHTS)},
        },
    )
    (out / "metrics.jsonl").write_text('{"step": 50, "loss": 7.5}\n{"step": 100, "loss": 6.0}\n')
    return out, model


@pytest.fixture
def no_checkout(tmp_path, monkeypatch):
    """bertlab as a reader on Colab has it: no data/ beside the package or the working directory."""
    from bertlab.data import download, records

    monkeypatch.delenv(records.ENV_VAR, raising=False)
    monkeypatch.delenv(records.URL_ENV, raising=False)
    monkeypatch.setattr(records, "_candidates", lambda: [tmp_path / "site" / "data", tmp_path / "work" / "data"])
    monkeypatch.setenv(download.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(records, "unavailable", {})
    return tmp_path
