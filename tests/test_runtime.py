"""bertlab.runtime: the precision chosen for each kind of GPU (faked: this machine has none)."""

import os
import platform
import subprocess
import sys
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
    assert m["cpu_allocator"] == ("kept" if runtime.freed_memory_kept() else "default")
    assert "precision" not in machine()  # no runtime given: nothing about how a run was made
    p = provenance(rt, steps=3)
    assert p["machine"] == m and p["steps"] == 3 and "git_commit" in p


# A step's worth of allocations after keep_freed_memory(): two blocks of 48 MB (above glibc's
# 32 MiB mmap ceiling) made and freed, ten rounds to settle the heap, then ten counted. Prints
# whether freed memory is kept, the page faults of the counted rounds and the fewest bytes the
# two blocks added to what malloc maps apart from its heap.
FAULTS = """
import ctypes, resource, torch
from bertlab.runtime import keep_freed_memory
kept = keep_freed_memory()
class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Mallinfo2
mapped = []
def step():
    before = libc.mallinfo2().hblkhd  # bytes in blocks mapped apart from the heap
    x = torch.ones(12 * 2**20)
    y = x * 2
    mapped.append(libc.mallinfo2().hblkhd - before)  # what the two blocks added to them
    del x, y
for _ in range(10):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, min(mapped))
"""


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_a_cpu_runtime_keeps_freed_memory_for_the_next_step():
    def run(allocator: str) -> tuple[str, int, int]:
        env = {**os.environ, "BERTLAB_CPU_ALLOCATOR": allocator}
        out = subprocess.run([sys.executable, "-c", FAULTS], env=env, capture_output=True, text=True, check=True)
        kept, faults, mapped = out.stdout.split()
        return kept, int(faults), int(mapped)

    kept, kept_faults, kept_mapped = run("kept")
    plain, plain_faults, plain_mapped = run("default")
    assert (kept, plain) == ("True", "False")
    # malloc as it is maps both 48 MiB blocks apart from its heap; kept, they come from the heap
    assert plain_mapped >= 2 * 48 * 2**20 and kept_mapped == 0
    # ... and faults them in afresh each round: 2 x 12,288 pages of 4 KB
    assert plain_faults > 10 * 2 * 10_000
    # kept, the heap's pages stay; a host that pages cold memory out (DAMON's pageout, seen on CI
    # machines) can still take some back between rounds, so the fewest faults of three runs counts
    kept_faults = min([kept_faults] + [run("kept")[1] for _ in range(2)])
    assert kept_faults < plain_faults / 20


def test_an_unknown_allocator_setting_says_which_exist(monkeypatch):
    monkeypatch.setenv("BERTLAB_CPU_ALLOCATOR", "jemalloc")
    with pytest.raises(ValueError, match="BERTLAB_CPU_ALLOCATOR='jemalloc' is not a setting; use one of kept, default"):
        runtime.keep_freed_memory()
