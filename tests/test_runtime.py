"""bertlab.runtime: the precision chosen for each kind of GPU (faked: this machine has none)."""

import os
from pathlib import Path

import pytest
import torch

from bertlab import runtime


@pytest.mark.parametrize(
    "capability, name, expected",
    [
        ((7, 5), "Tesla T4", "fp16"),  # Colab's free GPU: bf16 only emulated
        ((7, 0), "Tesla V100", "fp16"),
        ((8, 0), "NVIDIA A100", "bf16"),
        ((9, 0), "NVIDIA H100 80GB HBM3", "bf16"),
    ],
)
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


# ------------------------------------------------------------------------------------------------
# CPUs: bf16 autocast only where the instructions are native (faked flags)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "flags, feature",
    [
        ({"avx512f", "avx512_bf16"}, "avx512_bf16"),  # AMD Zen 4, Intel Cooper Lake
        ({"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}, "amx_bf16"),  # Intel Sapphire Rapids
        ({"avx2", "avx512f"}, None),  # AVX-512 without bf16: oneDNN would emulate it
    ],
)
def test_cpu_bf16_follows_the_cpu_flags(monkeypatch, flags, feature):
    monkeypatch.setattr(runtime, "_cpu_flags", lambda: flags)
    cpu = torch.device("cpu")
    assert runtime.cpu_bf16_feature() == feature
    assert runtime.resolve_precision("fp32", cpu) == "fp32"
    if feature:
        assert runtime.resolve_precision("auto", cpu) == "bf16"
        assert runtime.resolve_precision("bf16", cpu) == "bf16"
        rt = runtime.make_runtime("cpu", "auto", distributed=False)
        assert feature in rt.describe()
        assert rt.autocast_dtype == torch.bfloat16 and not rt.uses_grad_scaler
    else:
        assert runtime.resolve_precision("auto", cpu) == "fp32"
        with pytest.raises(ValueError, match="needs a CPU with native bf16.*--precision fp32"):
            runtime.resolve_precision("bf16", cpu)
    with pytest.raises(ValueError, match="fp16 needs a CUDA GPU"):
        runtime.resolve_precision("fp16", cpu)


def test_cpu_flags_are_read_from_this_machine():
    flags = runtime._cpu_flags()
    import platform

    if platform.system() == "Linux":
        assert flags, "/proc/cpuinfo has a flags line on Linux"
    assert runtime.cpu_bf16_feature() in (None, "avx512_bf16", "amx_bf16", "onednn_bf16")


def test_every_record_describes_its_machine_alike():
    from bertlab.runtime import machine, make_runtime, provenance

    rt = make_runtime("cpu", "fp32", distributed=False)
    m = machine(rt)
    assert m["cores"] == os.cpu_count() and m["device"] == f"cpu ({os.cpu_count()} cores)"
    assert m["precision"] == "fp32" and m["compile"] is False and m["torch"] == torch.__version__
    if Path("/proc/cpuinfo").exists():  # Linux: the model name and the family/model numbers
        assert m["cpu"] and m["cpu_family_model"].count("/") == 1
    assert "precision" not in machine()  # no runtime given: nothing about how a run was made
    p = provenance(rt, steps=3)
    assert p["machine"] == m and p["steps"] == 3 and "git_commit" in p
