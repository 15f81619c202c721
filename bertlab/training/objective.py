"""The pretraining objective: BertForPreTraining and its losses as sums and counts, so that
several processes (or micro-batches) add up to exactly the gradient of one batch. The training
loop compiles and wraps it; the held-out evaluation runs the same module.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bertlab.model import IGNORE_INDEX, BertForPreTraining

# objective: (the name its loss is logged under, the name its accuracy is logged under)
OBJECTIVES: dict[str, tuple[str, str]] = {
    "mlm": ("mlm_loss", "mlm_acc"),  # accuracy over the masked (chosen) tokens
    "ltr": ("ltr_loss", "next_token_acc"),  # accuracy of predicting the next token, at every position
}


def target_labels(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The labels of a batch's LM loss: mlm_labels (B, P), or the left-to-right LM's lm_labels (B, T)."""
    return batch["lm_labels"] if "lm_labels" in batch else batch["mlm_labels"]


class PretrainingObjective(nn.Module):
    """BertForPreTraining plus its two losses: (LM loss sum, NSP mean loss, LM correct, NSP correct).
    The masked LM scores the P chosen positions; with lm_labels (a causal model) every position t
    scores token t+1."""

    def __init__(self, model: BertForPreTraining):
        super().__init__()
        self.model = model

    def forward(
        self,
        input_ids,
        token_type_ids,
        attention_mask,
        mlm_positions=None,
        mlm_labels=None,
        nsp_labels=None,
        lm_labels=None,
    ):
        if lm_labels is not None:  # left to right: predictions at all T positions
            out = self.model(input_ids, token_type_ids, attention_mask)
            labels = lm_labels  # (b, T)
        else:  # masked LM: predictions at the P chosen positions only
            out = self.model(input_ids, token_type_ids, attention_mask, mlm_positions=mlm_positions)
            labels = mlm_labels  # (b, P)
        logits = out.mlm_logits.float()  # (b, P or T, V)
        valid = labels != IGNORE_INDEX
        lm_sum = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")
        lm_correct = ((logits.argmax(-1) == labels) & valid).sum()
        if nsp_labels is None:
            zero = lm_sum.new_zeros(())
            return lm_sum, zero, lm_correct, zero
        nsp_logits = out.nsp_logits.float()
        nsp_loss = F.cross_entropy(nsp_logits, nsp_labels)  # mean over this micro-batch's rows
        nsp_correct = (nsp_logits.argmax(-1) == nsp_labels).sum()
        return lm_sum, nsp_loss, lm_correct, nsp_correct
