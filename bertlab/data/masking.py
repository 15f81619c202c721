"""The masked language model's corruption, applied fresh to every batch.

BERT's first pretraining task (section 3.1, "Task #1: Masked LM") hides 15% of the input tokens
and asks the model to recover them. Of the chosen tokens,

    80% are replaced by [MASK]          my dog is hairy -> my dog is [MASK]
    10% by a random token               my dog is hairy -> my dog is apple
    10% are left unchanged              my dog is hairy -> my dog is hairy

because fine-tuning never shows [MASK]; special tokens are never chosen. As in the released BERT
code, exactly round(0.15 * n) of a row's n real tokens are chosen and their positions given in
P = `max_predictions` slots (unused: position 0, label -100), so the MLM head's shapes never change.
The ablation "LTR & No NSP" (section 5.1) predicts the next token instead (`NextTokenCollator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from bertlab.model import IGNORE_INDEX  # the label that F.cross_entropy skips


def default_max_predictions(max_len: int, mlm_probability: float = 0.15) -> int:
    """P for sequences of max_len tokens: ceil(p * max_len), plus 2 for whole-word masking finishing
    a word. 22 for max_len 128, 79 for 512."""
    return math.ceil(mlm_probability * max_len) + 2


@dataclass
class MaskedBatch:
    input_ids: torch.Tensor  # (B, T) the corrupted input
    mlm_positions: torch.Tensor  # (B, P) positions of the chosen tokens, 0 in unused slots
    mlm_labels: torch.Tensor  # (B, P) the original token there, IGNORE_INDEX in unused slots
    selected: torch.Tensor  # (B, T) bool, True at the chosen tokens (for inspection and tests)


def word_starts(input_ids: torch.Tensor, candidate: torch.Tensor, is_continuation: torch.Tensor) -> torch.Tensor:
    """(B, T) bool, True at the first piece of every word: a candidate (a token that may be chosen)
    that is not a "##" piece continuing a candidate. is_continuation: `tokenizer.is_continuation()`."""
    cont = is_continuation.to(input_ids.device)[input_ids.long()]
    prev_candidate = torch.nn.functional.pad(candidate[:, :-1], (1, 0), value=False)
    return candidate & ~(cont & prev_candidate)


def chosen_mask(mlm_positions: torch.Tensor, mlm_labels: torch.Tensor, length: int) -> torch.Tensor:
    """(B, length) bool, True at the tokens a collated batch asks the model to predict."""
    used = mlm_labels != IGNORE_INDEX
    chosen = torch.zeros(mlm_positions.shape[0], length, dtype=torch.bool, device=mlm_positions.device)
    rows = torch.arange(mlm_positions.shape[0], device=mlm_positions.device)[:, None].expand_as(mlm_positions)
    chosen[rows[used], mlm_positions[used]] = True
    return chosen


@dataclass
class WordCoverage:
    """How a masking treated whole words (`word_coverage`). Counts are over the batch."""

    words: int  # words (runs of a word-initial piece and its "##" pieces), special tokens excluded
    multi_piece: int  # of them, spelled with two or more pieces
    touched: int  # words with at least one chosen piece
    touched_multi_piece: int  # multi-piece words with at least one chosen piece
    partial: int  # words with some, but not all, of their pieces chosen
    partial_tokens: torch.Tensor  # (B, T) bool: the tokens of those half-chosen words


def word_coverage(
    input_ids: torch.Tensor,
    chosen: torch.Tensor,
    *,
    is_continuation: torch.Tensor,
    special_ids: Sequence[int] | torch.Tensor,
) -> WordCoverage:
    """Count the words of a batch (split as by `word_starts`) that a masking chose in full, in part
    or not at all. chosen: (B, T) bool, `MaskedBatch.selected` or `chosen_mask` of a batch."""
    ids = input_ids.long()
    B, T = ids.shape
    special = torch.as_tensor(special_ids, dtype=torch.long, device=ids.device)
    candidate = ~torch.isin(ids, special)
    start = word_starts(ids, candidate, is_continuation)
    unit = (torch.cumsum(start.long(), 1) - 1).clamp(min=0) + T * torch.arange(B, device=ids.device)[:, None]
    keys = unit[candidate]
    pieces = torch.bincount(keys, minlength=B * T)
    hit = torch.bincount(keys, weights=chosen[candidate].double(), minlength=B * T).long()
    exists, multi, touched = pieces > 0, pieces > 1, hit > 0
    partial = touched & (hit < pieces)
    return WordCoverage(
        words=int(exists.sum()),
        multi_piece=int(multi.sum()),
        touched=int(touched.sum()),
        touched_multi_piece=int((touched & multi).sum()),
        partial=int(partial.sum()),
        partial_tokens=candidate & partial[unit],
    )


def mask_tokens(
    input_ids: torch.Tensor,
    *,
    mask_id: int,
    special_ids: Sequence[int] | torch.Tensor,
    random_ids: torch.Tensor,
    max_predictions: int,
    mlm_probability: float = 0.15,
    mask_prob: float = 0.8,
    random_prob: float = 0.1,
    whole_word: bool = False,
    is_continuation: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> MaskedBatch:
    """Choose ~15% of the non-special tokens of each row of input_ids (B, T) and corrupt them 80/10/10.
    is_continuation (V,) bool is needed with whole_word; the generator must be on input_ids' device."""
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}")
    if not 0.0 < mlm_probability < 1.0:
        raise ValueError(f"mlm_probability must be in (0, 1), got {mlm_probability}")
    if mask_prob < 0 or random_prob < 0 or mask_prob + random_prob > 1:
        raise ValueError(
            f"mask_prob={mask_prob} and random_prob={random_prob} must be >= 0 and "
            f"sum to at most 1 (the rest is left unchanged)"
        )
    if max_predictions < 1:
        raise ValueError(f"max_predictions must be at least 1, got {max_predictions}")
    if whole_word and is_continuation is None:
        raise ValueError("whole_word=True needs is_continuation (tokenizer.is_continuation())")
    device, (B, T) = input_ids.device, input_ids.shape
    P, g = max_predictions, generator
    ids = input_ids.long()
    special = torch.as_tensor(special_ids, dtype=torch.long, device=device)
    candidate = ~torch.isin(ids, special)  # (B, T) tokens that may be chosen

    # How many to choose in each row: round(p * n_real), at least 1, at most P (and n_real).
    n_real = candidate.sum(1)
    n_target = torch.round(n_real * mlm_probability).long().clamp(min=1, max=P)
    n_target = torch.minimum(n_target, n_real)

    # Units of choice: every candidate token, or with whole_word every word.
    start = word_starts(ids, candidate, is_continuation) if whole_word else candidate
    unit = (torch.cumsum(start.long(), 1) - 1).clamp(min=0)  # (B, T) unit of each token (on candidates)

    # Visit the units in a random order: candidates sorted by (their unit's random rank, position),
    # so a unit's tokens stay together; places in that order count the tokens taken.
    perm = torch.rand(B, T, generator=g, device=device).argsort(1)  # distinct ranks per row
    rank = perm.gather(1, unit)
    key = torch.where(candidate, rank * T + torch.arange(T, device=device), torch.full_like(rank, T * T + T))
    order = key.argsort(1)  # candidates first, unit by unit
    pos_in_order = torch.empty_like(order).scatter_(1, order, torch.arange(T, device=device).expand(B, T))
    # per unit: tokens taken before it (first token's place) and including it (last's place + 1)
    big = torch.full((B, T), T, dtype=torch.long, device=device)
    before = big.scatter_reduce(1, unit, torch.where(candidate, pos_in_order, big), "amin", include_self=True)
    upto = torch.zeros_like(big).scatter_reduce(
        1, unit, torch.where(candidate, pos_in_order + 1, 0), "amax", include_self=True
    )
    before, upto = before.gather(1, unit), upto.gather(1, unit)  # back to tokens
    n = n_target[:, None]
    # Take whole units while they fit the target; the unit that crosses the target is taken if
    # that lands nearer to it (or if nothing was taken yet); never more than P tokens.
    take = (upto <= n) | ((before < n) & ((upto - n <= n - before) | (before == 0)))
    selected = candidate & take & (upto <= P)

    # 80% [MASK], 10% random token, 10% unchanged, decided token by token.
    u = torch.rand(B, T, generator=g, device=device)
    to_mask = selected & (u < mask_prob)
    to_random = selected & (u >= mask_prob) & (u < mask_prob + random_prob)
    random_ids = random_ids.to(device)
    draws = random_ids[torch.randint(len(random_ids), (B, T), generator=g, device=device)]
    corrupted = torch.where(to_mask, torch.full_like(ids, mask_id), ids)
    corrupted = torch.where(to_random, draws, corrupted)

    # Positions of the chosen tokens, ascending, in P slots.
    positions = torch.where(selected, torch.arange(T, device=device).expand(B, T), T).sort(1).values
    if T < P:
        positions = torch.nn.functional.pad(positions, (0, P - T), value=T)
    positions = positions[:, :P]
    used = positions < T
    positions = torch.where(used, positions, 0)
    labels = torch.where(used, ids.gather(1, positions), IGNORE_INDEX)
    return MaskedBatch(corrupted.to(input_ids.dtype), positions, labels, selected)


def stack_examples(examples: Sequence[Mapping[str, Any]] | Mapping[str, Any], pad_id: int) -> dict[str, torch.Tensor]:
    """A batch as a dict of tensors (a list of examples stacked, or a dict of batched arrays as it
    is), with long input_ids, token_type_ids (default 0) and attention_mask (default: not pad_id)."""
    if isinstance(examples, Mapping):
        batch = {k: torch.as_tensor(v) for k, v in examples.items()}
    elif len(examples) == 0:
        raise ValueError("cannot collate an empty list of examples")
    else:
        batch = {k: torch.stack([torch.as_tensor(e[k]) for e in examples]) for k in examples[0]}
    ids = batch["input_ids"] = batch["input_ids"].long()
    batch["token_type_ids"] = batch.get("token_type_ids", torch.zeros_like(ids)).long()
    batch["attention_mask"] = batch.get("attention_mask", ids != pad_id).long()
    return batch


class MaskedLMCollator:
    """Unmasked examples (`PretrainingDataset[i]`s, or a `get_batch` dict) to the pretraining batch:
    input_ids (B,T) masked, token_type_ids, attention_mask, mlm_positions and mlm_labels (B,P), and
    nsp_labels (B,) if given. Its `generator` goes into the stream's state_dict, so masks resume."""

    def __init__(
        self,
        tokenizer=None,
        *,
        max_predictions: int | None = None,
        mlm_probability: float = 0.15,
        mask_prob: float = 0.8,
        random_prob: float = 0.1,
        whole_word: bool = False,
        seed: int = 0,
        device: str | torch.device = "cpu",
    ):
        if tokenizer is None:
            raise ValueError("MaskedLMCollator needs a tokenizer (for mask_id, special_ids and random_ids)")
        self.pad_id = tokenizer.pad_id
        self.max_predictions, self.mlm_probability = max_predictions, mlm_probability
        self.masking = dict(  # the arguments of mask_tokens but the batch, P and the generator
            mask_id=int(tokenizer.mask_id),
            special_ids=torch.as_tensor(list(tokenizer.special_ids), dtype=torch.long),
            # the vocabulary minus special and unused ids
            random_ids=torch.tensor(sorted(set(range(tokenizer.vocab_size)) - set(tokenizer.reserved_ids))),
            mlm_probability=mlm_probability,
            mask_prob=mask_prob,
            random_prob=random_prob,
            whole_word=whole_word,
            is_continuation=tokenizer.is_continuation() if whole_word else None,
        )
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

    def __call__(self, examples: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> dict[str, torch.Tensor]:
        batch = stack_examples(examples, self.pad_id)
        ids = batch["input_ids"]
        T = ids.shape[1]
        P = self.max_predictions or default_max_predictions(T, self.mlm_probability)
        m = mask_tokens(ids.to(self.device), max_predictions=P, generator=self.generator, **self.masking)
        out = {
            "input_ids": m.input_ids.cpu(),
            "token_type_ids": batch["token_type_ids"],
            "attention_mask": batch["attention_mask"],
            "mlm_positions": m.mlm_positions.cpu(),
            "mlm_labels": m.mlm_labels.cpu(),
        }
        nsp = batch.get("nsp_labels", batch.get("nsp_label"))
        if nsp is not None:
            out["nsp_labels"] = nsp.long().reshape(-1)
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.generator.set_state(state["generator"])


# --- The left-to-right alternative: no corruption, the next token everywhere ---
def next_token_labels(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T) labels for a left-to-right LM: label[t] = input_ids[t+1] where t+1 is a real token,
    else IGNORE_INDEX. For [CLS] my dog [SEP] [PAD]: labels = my dog [SEP] -100 -100."""
    real = attention_mask.bool()
    nxt = torch.nn.functional.pad(input_ids[:, 1:], (0, 1), value=0)  # (B, T): the token after t
    has_next = torch.nn.functional.pad(real[:, 1:], (0, 1), value=False) & real
    return torch.where(has_next, nxt.long(), IGNORE_INDEX)


class NextTokenCollator:
    """The left-to-right LM's batches: input_ids unchanged, token_type_ids, attention_mask, and
    lm_labels (B,T), the next token at every position. No randomness, so an empty state_dict."""

    def __init__(self, tokenizer=None):
        self.pad_id = tokenizer.pad_id if tokenizer is not None else 0

    def __call__(self, examples: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> dict[str, torch.Tensor]:
        batch = stack_examples(examples, self.pad_id)
        if "nsp_labels" in batch or "nsp_label" in batch:
            raise ValueError(
                "the left-to-right LM has no next-sentence prediction (the paper's "
                "'LTR & No NSP'): build its examples with nsp=False"
            )
        labels = next_token_labels(batch["input_ids"], batch["attention_mask"])
        return {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask")} | {"lm_labels": labels}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        pass


def make_collator(
    objective: str, tokenizer: Any, mlm_probability: float = 0.15, whole_word: bool = False, seed: int = 0
):
    """The batch maker of an objective: masked (80/10/10) for "mlm", next-token labels for "ltr"."""
    if objective == "ltr":
        return NextTokenCollator(tokenizer)
    return MaskedLMCollator(tokenizer, mlm_probability=mlm_probability, whole_word=whole_word, seed=seed)
