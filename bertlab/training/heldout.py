"""Held-out evaluation of pretraining: the fixed batches every run is scored on (the same
documents, order and masks, drawn by EVAL_SEED at the paper's 15% whatever rate a run trains at),
the scores on them (`evaluate_pretraining`) and the same for a saved model (`evaluate_checkpoint`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import torch

from bertlab import checkpoint as ckpt
from bertlab.data.corpus import load_corpus
from bertlab.data.masking import make_collator
from bertlab.data.pretraining_data import PretrainingBatches, prepare_pretraining_data
from bertlab.data.tokenizer import load_tokenizer_for
from bertlab.model import IGNORE_INDEX, BertForPreTraining
from bertlab.runtime import Runtime, make_runtime
from bertlab.training.objective import OBJECTIVES, PretrainingObjective, target_labels

# Held-out MLM accuracy that counts as having left the frequent-word plateau: a model below it
# still answers mostly with frequent pieces whatever the context (chapter 10).
PLATEAU_EXIT_ACC = 0.20

EVAL_SEED = 1234  # the held-out batches' masks: the same in every run, so runs compare
HELDOUT_MLM_PROBABILITY = 0.15  # the paper's rate, whatever rate a run trains at


@torch.no_grad()
def evaluate_pretraining(
    model: BertForPreTraining, batches: list[dict[str, torch.Tensor]], rt: Runtime, mask_id: int | None = None
) -> dict[str, float]:
    """Held-out MLM and NSP loss and accuracy on fixed, already-masked batches (ltr_loss and
    next_token_acc for left-to-right batches). `mlm_acc` counts every chosen position, the 10% left
    unchanged included; given `mask_id`, `mlm_acc_mask` counts the [MASK] positions only."""
    loss_key, acc_key = OBJECTIVES["ltr" if batches and "lm_labels" in batches[0] else "mlm"]
    was_training = model.training
    model.eval()
    objective = PretrainingObjective(model)
    tot = torch.zeros(6, dtype=torch.float64, device=rt.device)
    at_mask = torch.zeros(2, dtype=torch.float64, device=rt.device)  # right at [MASK] positions, of how many
    for b in batches:
        b = rt.to_device(b)
        with rt.autocast():
            lm_sum, nsp_loss, lm_correct, nsp_correct = objective(**b)
            if mask_id is not None and "mlm_positions" in b:
                logits = model(
                    b["input_ids"], b["token_type_ids"], b["attention_mask"], mlm_positions=b["mlm_positions"]
                ).mlm_logits  # (b, P, V)
                shown = b["input_ids"].gather(1, b["mlm_positions"])  # what the model saw there
                masked = (shown == mask_id) & (b["mlm_labels"] != IGNORE_INDEX)
                right = (logits.argmax(-1) == b["mlm_labels"]) & masked
                at_mask += torch.stack([right.sum().double(), masked.sum().double()])
        n = (target_labels(b) != IGNORE_INDEX).sum()
        rows = b["input_ids"].shape[0] if "nsp_labels" in b else 0
        counts = (lm_sum, n, lm_correct, nsp_loss.double() * rows, nsp_correct, torch.tensor(float(rows)))
        tot += torch.stack([c.double().to(rt.device) for c in counts])
    model.train(was_training)
    lm_sum, n, correct, nsp_sum, nsp_correct, rows = tot.tolist()
    out = {loss_key: lm_sum / max(n, 1), acc_key: correct / max(n, 1)}
    if mask_id is not None and loss_key == "mlm_loss":
        right, masked = at_mask.tolist()
        out["mlm_acc_mask"] = right / max(masked, 1)
    if rows:
        out.update(nsp_loss=nsp_sum / rows, nsp_acc=nsp_correct / rows)
    out["loss"] = out[loss_key] + out.get("nsp_loss", 0.0)
    return out


def heldout_batches(
    dataset: Any, tokenizer: Any, objective: str, batch_size: int, batches: int
) -> list[dict[str, torch.Tensor]]:
    """The first `batches` batches of `batch_size` sequences of a held-out dataset, in the order and
    with the masks EVAL_SEED draws: every run and every later evaluation sees the same ones."""
    collator = make_collator(objective, tokenizer, HELDOUT_MLM_PROBABILITY, whole_word=False, seed=EVAL_SEED)
    stream = PretrainingBatches(dataset, min(batch_size, len(dataset)), collator, seed=EVAL_SEED)
    return [next(stream) for _ in range(min(batches, len(stream)))]


def evaluate_checkpoint(
    folder: str | Path,
    corpus: str = "books+wiki",
    seq_len: int = 128,
    nsp: bool | None = None,
    pairs: bool | None = None,
    batches: int = 20,
    batch_size: int = 64,
    device: str = "auto",
    precision: str = "auto",
    max_documents: int | None = None,
) -> dict[str, float]:
    """`evaluate_pretraining` of a pretrained model folder on `corpus`'s held-out documents, with
    the pretraining's fixed masks. The text is cut into NSP pairs, two segments or single windows
    as the run that wrote `folder` cut its own (`nsp` / `pairs` None: from its run.json)."""
    model = ckpt.load_model(folder, BertForPreTraining)
    tokenizer = load_tokenizer_for(folder)
    objective = "ltr" if model.config.causal else "mlm"
    recipe = run_recipe(folder)
    if nsp is None:
        nsp = bool(recipe.get("nsp", True)) and objective == "mlm"
    if pairs is None:
        pairs = bool(recipe.get("segment_pairs", False)) and objective == "mlm" and not nsp
    rt = make_runtime(device, precision, distributed=False)
    docs = load_corpus(corpus, "heldout")[:max_documents]
    with tempfile.TemporaryDirectory() as tmp:
        ds = prepare_pretraining_data(
            docs, tokenizer, Path(tmp) / "heldout", max_len=seq_len, nsp=nsp, pairs=pairs, seed=EVAL_SEED
        )
        eval_batches = heldout_batches(ds, tokenizer, objective, batch_size, batches)
    return evaluate_pretraining(model.to(rt.device), eval_batches, rt, tokenizer.mask_id)


def run_recipe(folder: str | Path) -> dict[str, Any]:
    """The resolved recipe in the run.json of the run that wrote `folder` ({} without one)."""
    for cand in (Path(folder).parent / "run.json", Path(folder).parent.parent / "run.json"):
        if cand.exists():
            return json.loads(cand.read_text())["recipe"]
    return {}
