"""The optimiser BERT trains with and one update step, shared by pretraining and fine-tuning.

    opt = adamw(model, lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
    ... loss.backward() ...
    grad_norm = optimizer_step(opt, scaler, lr=lr_now, grad_clip=1.0)

As in Google's released BERT code: AdamW (weight decay decoupled from the update, Loshchilov &
Hutter), no decay on biases and LayerNorm parameters, the gradients' global norm clipped to 1.0.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bertlab.runtime import FUSED_ADAMW_DEVICES


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: decay on weight matrices and embeddings, none on biases and LayerNorm
    parameters; frozen parameters left out."""
    no_decay = set()
    for module in model.modules():
        if isinstance(module, nn.LayerNorm):
            no_decay.update(id(p) for p in module.parameters(recurse=False))
    decay, plain = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (plain if (id(p) in no_decay or name.endswith("bias")) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def adamw(
    model: nn.Module,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-6,
    weight_decay: float = 0.01,
    fused: bool | None = None,
) -> torch.optim.AdamW:
    """AdamW over `model`'s trainable parameters, in the groups of `parameter_groups`. fused:
    PyTorch's one-pass kernel (the same numbers to within rounding, several times faster on a
    CPU); None takes it wherever PyTorch has it."""
    if fused is None:
        fused = all(p.device.type in FUSED_ADAMW_DEVICES for p in model.parameters())
    return torch.optim.AdamW(
        parameter_groups(model, weight_decay), lr=lr, betas=betas, eps=eps, **({"fused": True} if fused else {})
    )


def optimizer_step(
    optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, lr: float, grad_clip: float | None = 1.0
) -> torch.Tensor:
    """One update from the accumulated gradients: unscale (fp16), clip the global norm to
    `grad_clip` (None: no clipping), set the lr, step, clear. Returns the norm before clipping, a
    tensor on the device (not read here, so a GPU is not made to wait)."""
    scaler.unscale_(optimizer)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if grad_clip:
        norm = torch.nn.utils.clip_grad_norm_(params, grad_clip)
    else:
        norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params if p.grad is not None]))
    for g in optimizer.param_groups:
        g["lr"] = lr
    scaler.step(optimizer)  # skipped by the scaler when an fp16 gradient overflowed
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return norm
