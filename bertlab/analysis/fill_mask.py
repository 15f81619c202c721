"""Fill in the blanks: a masked LM's top guesses at each [MASK] of a text.

    fill_mask(model, tokenizer, "the man went to the [MASK] .")   # [[("store", 0.21), ...]]

Also: seeded held-out probes (one whole word masked) to ask every checkpoint alike, a masked LM
against the unigram baseline, and scoring a text's possible endings (SWAG's task) with no training.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from bertlab import checkpoint as ckpt
from bertlab.data.pretraining_data import PretrainingDataset
from bertlab.data.tokenizer import WordPieceTokenizer
from bertlab.model import IGNORE_INDEX, BertForPreTraining
from bertlab.prose import and_list, number, verb_agreeing


def _mlm_logits(model, **inputs: torch.Tensor) -> torch.Tensor:
    """`model(**inputs).mlm_logits` in eval mode (the mode restored), on the model's device."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    logits = model(**{name: t.to(device) for name, t in inputs.items()}).mlm_logits
    model.train(was_training)
    return logits


@torch.no_grad()
def fill_mask(model, tokenizer, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """For each [MASK] in `text`, left to right, the k most probable pieces and their probabilities."""
    enc = tokenizer.encode(text, return_tensors="pt")
    where = (enc.input_ids[0] == tokenizer.mask_id).nonzero().flatten()
    if len(where) == 0:
        raise ValueError(f"no [MASK] in {text!r}: write [MASK] where the model should fill in a word")
    logits = _mlm_logits(model, **enc.model_inputs(), mlm_positions=where[None])[0]  # (P, V)
    probs, top = logits.float().softmax(-1).topk(k)
    return [
        [(tokenizer.id_to_token(int(i)), float(p)) for i, p in zip(ti, pi)]
        for ti, pi in zip(top.tolist(), probs.tolist())
    ]


@torch.no_grad()
def continuation_log_probs(model, tokenizer, context: str | None, continuation: str) -> torch.Tensor:
    """The log-probability of each piece of `continuation` with that piece alone masked, (pieces,),
    after `[CLS] context [SEP]` (or alone when `context` is None)."""
    texts = (continuation,) if context is None else (context, continuation)
    enc = tokenizer.encode(*texts, return_tensors="pt")
    ids, segments = enc.input_ids[0], enc.token_type_ids[0]
    # the continuation's pieces: all but [CLS] and [SEP] alone, segment B after a context
    inside = (ids != tokenizer.sep_id) & ((ids != tokenizer.cls_id) if context is None else (segments == 1))
    where = inside.nonzero().flatten()
    if len(where) == 0:
        raise ValueError(f"continuation {continuation!r} has no pieces to score")
    n = len(where)
    batch = ids.repeat(n, 1)
    batch[torch.arange(n), where] = tokenizer.mask_id  # row k hides piece k only
    logits = _mlm_logits(
        model,
        input_ids=batch,
        token_type_ids=segments.repeat(n, 1),
        attention_mask=enc.attention_mask.repeat(n, 1),
        mlm_positions=where[:, None],
    )
    log_probs = logits[:, 0].float().log_softmax(-1)  # (n, V)
    return log_probs[torch.arange(n), ids[where].to(log_probs.device)].cpu()


def continuation_score(model, tokenizer, context: str, continuation: str, reduce: str = "mean") -> float:
    """How well a masked LM thinks `continuation` follows `context`: the pseudo-log-likelihood of
    its pieces (Salazar et al. 2020), averaged so that long and short continuations compare
    (reduce="mean") or summed. Higher is more plausible."""
    if reduce not in ("mean", "sum"):
        raise ValueError(f"reduce must be 'mean' or 'sum', got {reduce!r}")
    logs = continuation_log_probs(model, tokenizer, context, continuation)
    return float(logs.mean() if reduce == "mean" else logs.sum())


def continuation_pmi(model, tokenizer, context: str, continuation: str) -> float:
    """How much `context` raises a masked LM's belief in `continuation`, an estimate of the PMI
    log P(cont | context) - log P(cont): what makes an ending probable on its own cancels."""
    with_context = continuation_log_probs(model, tokenizer, context, continuation)
    alone = continuation_log_probs(model, tokenizer, None, continuation)
    return float(with_context.sum() - alone.sum())


def zero_shot_reading(
    endings: Sequence[Sequence[str]], picks: dict[str, Sequence[int]], baseline: str, remedy: str, answer: int = 0
) -> str:
    """Sentences on a masked LM choosing endings untrained: how many each scoring in `picks`
    ({name as the prose says it: chosen index per question}) gets right against guessing, what
    `remedy` changes of `baseline`'s choices, and how likely the best count is by chance."""
    n = len(endings)
    q = float(np.mean([1 / len(e) for e in endings]))
    right = {name: sum(k == answer for k in ks) for name, ks in picks.items()}
    before, after = picks[baseline], picks[remedy]
    gained = sum(a != answer and b == answer for a, b in zip(before, after))
    lost = sum(a == answer and b != answer for a, b in zip(before, after))
    swapped = [
        f"*{ends[a].rstrip('.')}* gives way to *{ends[b].rstrip('.')}*"
        for ends, a, b in zip(endings, before, after)
        if answer != a != b != answer
    ]
    first, *others = right
    parts = [f"{number(right[first])} of the {number(n)} questions {first}"]
    parts += [f"{number(right[name])} {name}" for name in others]
    text = f"Without a single training question, the masked LM picks the real ending in {and_list(parts)}"
    text += f", where guessing gets {n * q:.1f} right on average. "
    text += (
        f"Scored {remedy}, {number(gained)} of the wrong choices made {baseline} {verb_agreeing(gained, 'becomes')} "
        f"the real ending and {number(lost)} of the right ones {verb_agreeing(lost, 'is')} lost"
    )
    text += "; elsewhere one wrong ending gives way to another: " + "; ".join(swapped) + ". " if swapped else ". "
    best = max(right.values())
    luck = sum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(best, n + 1))
    text += f"Getting {number(best)} or more right by guessing has a probability of {luck:.2f}"
    text += (
        f", so on {number(n)} questions no scoring is shown to beat chance."
        if luck > 0.05
        else f": the best scoring beats chance, if on only {number(n)} questions."
    )
    return text


def probe_sentences(documents: Iterable[Any], tokenizer, n: int = 8, seed: int = 1) -> list[dict[str, str]]:
    """n seeded sentences of 10 to 18 words, one whole word of 3+ letters masked:
    [{"text": "... [MASK] ...", "answer": "word", "original": "..."}]."""
    rng = np.random.default_rng(seed)
    sentences = [s for d in documents for s in d.sentences if 10 <= len(s.split()) <= 18]
    probes = []
    for i in rng.permutation(len(sentences)):
        pieces = tokenizer.encode(sentences[i]).tokens  # [CLS] ... [SEP]
        # a whole word: one piece of 3+ letters (so not a "##" continuation) with no "##" piece after it
        cands = [j for j in range(2, len(pieces) - 2) if pieces[j].isalpha() and len(pieces[j]) > 2]
        cands = [j for j in cands if not pieces[j + 1].startswith("##")]
        if not cands:
            continue
        j = int(rng.choice(cands))
        masked = pieces[1:j] + ["[MASK]"] + pieces[j + 1 : -1]
        probes.append({"text": " ".join(masked).replace(" ##", ""), "answer": pieces[j], "original": sentences[i]})
        if len(probes) == n:
            break
    return probes


def fill_mask_along(folders: Sequence[str | Path], tokenizer, texts: Sequence[str]) -> list[dict[str, Any]]:
    """Every model folder's `fill_mask` of the same texts: [{"model": name, "fills": [...]}]."""
    out = []
    for folder in folders:
        model = ckpt.load_model(folder, BertForPreTraining)
        out.append({"model": Path(folder).name, "fills": [fill_mask(model, tokenizer, t) for t in texts]})
    return out


@dataclass
class UnigramComparison:
    """A masked LM against the unigram baseline on the same masked held-out tokens."""

    n_tokens: int  # masked held-out tokens scored
    uniform_ce: float  # ln V: a uniform guess
    uniform_acc: float  # 1 / V
    unigram_ce: float  # each token predicted with its training-text frequency
    unigram_acc: float  # always the most frequent token
    unigram_top: str  # that token
    model_ce: float
    model_acc: float
    guesses: list[tuple[str, int, float, float]]  # the model's most frequent guesses: token, times, right, base rate

    @property
    def learned(self) -> bool:
        """Better than the unigram baseline on both measures."""
        return self.model_ce < self.unigram_ce and self.model_acc > self.unigram_acc

    def context_tokens(self) -> list[str]:
        """Frequent guesses right over twice their base rate: where the model uses the context."""
        return [token for token, _, right, base in self.guesses if right > 2 * base]


@torch.no_grad()
def unigram_comparison(
    model, tokenizer: WordPieceTokenizer, train_set: PretrainingDataset, held_batches, smoothing: float = 0.0
) -> UnigramComparison:
    """A masked LM on the chosen positions of `held_batches` (cross-entropy in nats, accuracy) beside
    a uniform guess and the unigram baseline of `train_set`, and its 6 most frequent guesses.
    Add-one `smoothing` (1.0) keeps a piece never seen in training from costing an infinite loss."""
    counts = np.bincount(np.asarray(train_set.input_ids).ravel(), minlength=tokenizer.vocab_size).astype(float)
    counts += smoothing
    counts[tokenizer.special_ids] = 0
    unigram = counts / counts.sum()
    labels = torch.cat([b["mlm_labels"][b["mlm_labels"] != IGNORE_INDEX] for b in held_batches])
    logits = torch.cat([model(**b).mlm_logits[b["mlm_labels"] != IGNORE_INDEX] for b in held_batches])
    guesses = logits.argmax(-1)
    table = [
        (
            tokenizer.id_to_token(t),
            n,
            (labels[guesses == t] == t).float().mean().item(),
            (labels == t).float().mean().item(),
        )
        for t, n in collections.Counter(guesses.tolist()).most_common(6)
    ]
    return UnigramComparison(
        n_tokens=len(labels),
        uniform_ce=math.log(tokenizer.vocab_size),
        uniform_acc=1 / tokenizer.vocab_size,
        unigram_ce=float(-np.log(unigram[labels.numpy()]).mean()),
        unigram_acc=(labels == int(unigram.argmax())).float().mean().item(),
        unigram_top=tokenizer.id_to_token(int(unigram.argmax())),
        model_ce=F.cross_entropy(logits, labels).item(),
        model_acc=(guesses == labels).float().mean().item(),
        guesses=table,
    )
