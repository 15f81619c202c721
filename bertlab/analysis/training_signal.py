"""Where a pretraining objective puts its loss, counted on a batch (chapter 18): BERT's masked LM
at ~15% of the tokens, most of them `[MASK]` in the input; ELECTRA's discriminator (Clark et al.,
2020) at every token, with no `[MASK]`. Shares are of the real tokens (specials, padding left out).

    bert = signal("BERT masked LM", n_real, loss_at, masks, changed)   # each (B,): counts per sequence
    signal_table([bert, electra])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch


@dataclass(frozen=True)
class Signal:
    """One objective on one batch: positions with a loss per sequence and in all (`positions`),
    and as shares of the real tokens: the positions with a loss, the `[MASK]`s, the changed tokens."""

    name: str
    per_sequence: float
    positions: float
    loss_share: float
    mask_share: float
    changed_share: float


def signal(
    name: str, n_real: torch.Tensor, loss_at: torch.Tensor, masks: torch.Tensor, changed: torch.Tensor
) -> Signal:
    """What a batch gives an objective, from counts per sequence (B,): real tokens, positions with
    a loss, `[MASK]`s in the input, input tokens that differ from the text."""
    if not n_real.sum() > 0:
        raise ValueError("the batch has no real token")
    return Signal(
        name=name,
        per_sequence=float(loss_at.float().mean()),
        positions=float(loss_at.sum()),
        loss_share=float(loss_at.sum() / n_real.sum()),
        mask_share=float(masks.sum() / n_real.sum()),
        changed_share=float(changed.sum() / n_real.sum()),
    )


def signal_table(signals: Sequence[Signal]) -> str:
    """Objectives side by side, as a Markdown table."""
    lines = [
        "| objective | positions with a loss, per sequence | as a share of the real tokens "
        "| `[MASK]` in the input, share | input tokens that differ from the text, share |",
        "|---|---|---|---|---|",
    ]
    for s in signals:
        lines.append(
            f"| {s.name} | {s.per_sequence:.1f} | {s.loss_share:.1%} | {s.mask_share:.1%} | {s.changed_share:.1%} |"
        )
    return "\n".join(lines)
