"""Where and how the arithmetic runs: device, numeric precision, seeding, and several processes.

Training code asks one object, a `Runtime`, every hardware question:

    device       cpu, or cuda:<local rank>
    precision    fp32; bf16 autocast where it is native (Ampere+ GPUs, CPUs with AVX512-BF16 or
                 AMX); fp16 autocast with a gradient scaler on older GPUs (a T4)
    compile      torch.compile on or off
    distributed  rank / world size when launched by `torchrun` (DistributedDataParallel)

`precision="auto"` picks the fastest of these; asking for bf16 on a CPU that would emulate it, or
for fp16 on a CPU, is an error rather than a silent change. Several GPUs:
`torchrun --nproc_per_node N -m bertlab pretrain ...`; only rank 0 logs and saves.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import platform
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from bertlab.errors import ActionableError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")

# Dense (no sparsity) tensor-core peak of each GPU in FLOP/s for bf16/fp16 matrix multiplies, from
# the vendors' data sheets. MFU (model FLOPs utilisation) = achieved model FLOP/s / this number. The
# H100's is the SXM card's; the PCIe card's is lower (756e12, in peak_flops).
PEAK_FLOPS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L4": 121e12, "V100": 125e12, "T4": 65e12}


def peak_flops(device: torch.device | str) -> float | None:
    """Peak bf16/fp16 FLOP/s of the device, or None when unknown (CPUs, unlisted GPUs)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(device)
    if "H100" in name and "PCIe" in name:
        return 756e12
    return next((flops for key, flops in PEAK_FLOPS.items() if key in name), None)


def _cpuinfo() -> dict[str, str]:
    """The first CPU's fields in /proc/cpuinfo ("model name", "flags", ...); empty off Linux."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            found.setdefault(key.strip(), value.strip())
    return found


def cpu_model() -> str | None:
    """The CPU's model name ("AMD EPYC 9B14", "Intel(R) Xeon(R) ..."), for the record of a run."""
    return _cpuinfo().get("model name") or platform.processor() or None


def device_name(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({os.cpu_count()} cores)"


# --- Seeding --------------------------------------------------------------------------------------
def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's (CPU and every GPU) random generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


# --- Distributed (torchrun) -----------------------------------------------------------------------
@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device_type: str | None = None) -> DistInfo:
    """Join the process group when launched by torchrun (WORLD_SIZE > 1); otherwise one process.
    NCCL on GPUs, gloo on CPUs. Safe to call twice."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    device_type = device_type or ("cuda" if torch.cuda.is_available() else "cpu")
    if not dist.is_initialized():
        if device_type == "cuda":
            torch.cuda.set_device(local)
        dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo")
    return DistInfo(rank=rank, world_size=world, local_rank=local)


def shutdown_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


# --- The runtime ----------------------------------------------------------------------------------
FUSED_ADAMW_DEVICES = ("cpu", "cuda")  # where torch.optim.AdamW(fused=True) has a kernel


@dataclass
class Runtime:
    device: torch.device
    precision: str  # "fp32", "bf16" or "fp16" (resolved, never "auto")
    compile: bool = False
    fused_adamw: bool = False
    dist: DistInfo = field(default_factory=DistInfo)

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)

    @property
    def uses_grad_scaler(self) -> bool:
        """fp16 has a narrow exponent range: small gradients underflow unless the loss is scaled."""
        return self.precision == "fp16"

    def autocast(self):
        """The context to run forward passes in: autocast to bf16/fp16, or nothing for fp32."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    def grad_scaler(self) -> torch.amp.GradScaler:
        """A GradScaler that is active for fp16 and a no-op otherwise (same code path)."""
        return torch.amp.GradScaler(self.device.type, enabled=self.uses_grad_scaler)

    def to_device(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Move a batch of CPU tensors to the device, on a GPU asynchronously from pinned memory."""
        if self.device.type == "cpu":
            return batch
        return {
            k: (v if v.is_pinned() else v.pin_memory()).to(self.device, non_blocking=True) for k, v in batch.items()
        }

    @property
    def peak_flops(self) -> float | None:
        return peak_flops(self.device)

    def describe(self) -> str:
        precision = self.precision
        if self.device.type == "cpu" and precision == "bf16":
            precision = f"bf16 ({cpu_bf16_feature()})"
        parts = [device_name(self.device), precision, "compiled" if self.compile else "eager"]
        if self.dist.enabled:
            parts.append(f"{self.dist.world_size} processes")
        return ", ".join(parts)


def resolve_device(device: str, dist_info: DistInfo) -> torch.device:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ActionableError(
                f"device {device!r} was requested but no CUDA GPU is available; use --device cpu (or auto)"
            )
        if dev.index is None:
            dev = torch.device("cuda", dist_info.local_rank)
    elif dev.type != "cpu":
        raise ValueError(f"unsupported device {device!r}; use auto, cpu or cuda")
    return dev


def _cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where they cannot be read."""
    return set(_cpuinfo().get("flags", "").split())


def cpu_bf16_feature() -> str | None:
    """The instruction set that makes bf16 native on this CPU ("amx_bf16", "avx512_bf16"), or None."""
    flags = _cpu_flags()
    for feature in ("amx_bf16", "avx512_bf16"):
        if feature in flags:
            return feature
    if not flags:  # not Linux: ask oneDNN itself
        with contextlib.suppress(Exception):
            if torch.ops.mkldnn._is_mkldnn_bf16_supported():
                return "onednn_bf16"
    return None


def resolve_precision(precision: str, device: torch.device) -> str:
    """'auto' -> bf16 where it is native, fp16 on older GPUs, fp32 on other CPUs. bf16 on a CPU
    without native bf16, or fp16 on any CPU, is an error naming what to use instead."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if device.type == "cuda":
        # native bf16 from compute capability 8.0 (A100, L4, H100); torch.cuda.is_bf16_supported() also
        # says yes on a T4 (7.5), where bf16 is emulated and slow
        native, fallback = torch.cuda.get_device_capability(device)[0] >= 8, "fp16"
        if precision == "bf16" and not native:
            raise ValueError(
                f"{torch.cuda.get_device_name(device)} does not support bf16; use "
                f"--precision fp16 (autocast with loss scaling) or auto"
            )
    else:
        native, fallback = cpu_bf16_feature() is not None, "fp32"
        if precision == "fp16":
            raise ValueError(
                f"--precision fp16 needs a CUDA GPU, but this run is on {device}; use "
                f"--precision {'bf16' if native else 'fp32'} (or auto) on this CPU"
            )
        if precision == "bf16" and not native:
            raise ValueError(
                "--precision bf16 needs a CPU with native bf16 (AVX512-BF16 or AMX) or a CUDA GPU; this CPU "
                "has neither, so bf16 would be emulated and slower than fp32. Use --precision fp32 (or auto)"
            )
    if precision == "auto":
        return "bf16" if native else fallback
    return precision


CPU_ALLOCATORS = ("kept", "default")  # BERTLAB_CPU_ALLOCATOR: keep_freed_memory() or malloc as it is
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
KEPT_BYTES = 2**31 - 1  # the most mallopt takes: free memory beyond this at the heap's top goes back
_heap_kept = False


def cpu_allocator() -> str:
    """The CPU allocator setting asked for: BERTLAB_CPU_ALLOCATOR, "kept" unless set."""
    choice = os.environ.get("BERTLAB_CPU_ALLOCATOR", "kept")
    if choice not in CPU_ALLOCATORS:
        raise ValueError(
            f"BERTLAB_CPU_ALLOCATOR={choice!r} is not a setting; use one of {', '.join(CPU_ALLOCATORS)} "
            f"(kept: freed memory stays on the heap for the next step; default: malloc as it is)"
        )
    return choice


def freed_memory_kept() -> bool:
    """Whether keep_freed_memory() is in force in this process."""
    return _heap_kept


def keep_freed_memory() -> bool:
    """Have glibc's malloc serve every block from its heap (no mmap) and keep up to 2 GB of what is
    freed, for the rest of the process: otherwise glibc returns every block of 32 MiB or more, and the
    next training step faults it back in page by page, zeroed. Returns whether it is in force (False
    off glibc, or with BERTLAB_CPU_ALLOCATOR=default). Fine-tuning does not call it: its batches
    change shape, and a heap that keeps them only grows."""
    global _heap_kept
    choice = cpu_allocator()  # a misspelt setting is an error even where it would change nothing
    if _heap_kept:
        return True
    if choice == "default" or platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    # mallopt returns 1 on success; the trim threshold first, so no freed block goes back early
    _heap_kept = bool(libc.mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES)) and bool(libc.mallopt(_M_MMAP_MAX, 0))
    return _heap_kept


def make_runtime(
    device: str = "auto",
    precision: str = "auto",
    compile: bool = False,
    fused_adamw: bool | None = None,
    distributed: bool = True,
) -> Runtime:
    """Resolve every hardware choice once, with clear errors for impossible combinations.
    fused_adamw=None: PyTorch's fused AdamW kernel where it has one (CPU, CUDA)."""
    want = None if device == "auto" else torch.device(device).type
    info = init_distributed(want) if distributed else DistInfo()
    dev = resolve_device(device, info)
    prec = resolve_precision(precision, dev)
    if fused_adamw is None:
        fused_adamw = dev.type in FUSED_ADAMW_DEVICES
    elif fused_adamw and dev.type not in FUSED_ADAMW_DEVICES:
        raise ValueError(
            f"PyTorch has no fused AdamW kernel for {dev.type}; leave fused_adamw unset "
            f"(it is chosen where it exists: {', '.join(FUSED_ADAMW_DEVICES)})"
        )
    if dev.type == "cuda":
        # TF32: fp32 matmuls on tensor cores with a 10-bit mantissa (Ampere+); harmless elsewhere.
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return Runtime(device=dev, precision=prec, compile=compile, fused_adamw=fused_adamw, dist=info)


def git_commit() -> str | None:
    """The commit of the checkout bertlab runs from (None outside a git checkout)."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, cwd=here)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def cpu_family_model() -> str | None:
    """The CPU's family and model numbers ("25/17": AMD Zen 4 EPYC); None off Linux."""
    info = _cpuinfo()
    return f"{info['cpu family']}/{info['model']}" if "cpu family" in info and "model" in info else None


def machine(rt: Runtime | None = None) -> dict[str, Any]:
    """The machine a record was made on: CPU, device, torch, Python and, given the run's Runtime,
    its precision, compilation and CPU allocator."""
    out: dict[str, Any] = {
        "cpu": cpu_model(),
        "cpu_family_model": cpu_family_model(),
        "cores": os.cpu_count(),
        "cpu_bf16": cpu_bf16_feature(),
        "device": device_name(rt.device if rt is not None else "cpu"),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    if rt is not None:
        out.update(precision=rt.precision, compile=rt.compile)
        if rt.device.type == "cpu":
            out["cpu_allocator"] = "kept" if freed_memory_kept() else "default"
    return out


def provenance(rt: Runtime | None = None, **extra: Any) -> dict[str, Any]:
    """What every record starts with: the git commit and the machine, then `extra`, its own fields."""
    return {"git_commit": git_commit(), "machine": machine(rt), **extra}
