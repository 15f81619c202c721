"""bertlab.runtime: the precision chosen for each kind of GPU (faked: this machine has none)."""

import pytest
import torch

from bertlab import runtime


@pytest.mark.parametrize("capability, name, expected", [
    ((7, 5), "Tesla T4", "fp16"),        # Colab's free GPU: bf16 only emulated
    ((7, 0), "Tesla V100", "fp16"),
    ((8, 0), "NVIDIA A100", "bf16"),
    ((9, 0), "NVIDIA H100 80GB HBM3", "bf16"),
])
def test_auto_precision_follows_native_bf16(monkeypatch, capability, name, expected):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    # what torch answers on a T4 when emulation counts: it must not decide
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    gpu = torch.device("cuda", 0)
    assert runtime.resolve_precision("auto", gpu) == expected
    assert runtime.resolve_precision("fp16", gpu) == "fp16"
    if expected == "fp16":
        with pytest.raises(ValueError, match=f"{name} does not support bf16"):
            runtime.resolve_precision("bf16", gpu)
    else:
        assert runtime.resolve_precision("bf16", gpu) == "bf16"
