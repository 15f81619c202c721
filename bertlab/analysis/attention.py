"""What the attention heads of a trained BERT do, measured over real text.

Following Clark, Khandelwal, Levy and Manning (2019), "What Does BERT Look At?", every measure
here is computed per head from the attention maps a bertlab model returns with
`output_attentions=True`, and averaged over many sequences:

    load_encoder        a BertModel from any model folder (Hugging Face or bertlab)
    sentence_pairs      consecutive sentence pairs (A, B) to feed it, [CLS] A [SEP] B [SEP]
    attention_maps      each sequence's maps, (L, A, T, T), padding cut off
    key_mass            how much of each query's attention lands on chosen keys ([CLS], [SEP], ...)
    offset_mass         attention to the token at a fixed offset: previous (-1), self (0), next (+1)
    attention_entropy   how spread out each query's attention is (nats), against log T for uniform
    sequence_measures   all of the above for one sequence, one value per (layer, head, query)
    HeadAverages        running means of those values over a corpus: (L, A) tables
    word_level_attention  token-level maps -> word-level maps (sum over the attended word's
                        pieces, mean over the attending word's pieces), as Clark et al. do
    chunk_relations     word pairs from CoNLL-2003 chunk and POS tags (NP word -> last word ...)
    probe_relations     per head: how often the most-attended other word is the related word,
                        beside the best fixed-offset baseline

Conventions: an attention tensor is (..., T, T) indexed [query, key], one row per token being
encoded, each row summing to 1; a sequence's maps stacked over layers are (L, A, T, T) with no
padding. Layers and heads count from 0 (Clark et al. count from 1).
"""

from __future__ import annotations

import math
import random
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import torch

from bertlab import checkpoint as ckpt
from bertlab.hf import is_hf_folder
from bertlab.model import BertModel
from bertlab.prose import count, number

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")


# ------------------------------------------------------------------------------------------------
# Getting the maps
# ------------------------------------------------------------------------------------------------
def load_encoder(folder: str | Path):
    """A bertlab BertModel (eval mode, CPU) from a model folder: a Hugging Face folder such as
    all-MiniLM-L6-v2's, or a bertlab folder (the reference run's, a checkpoint) whatever head
    class it was saved with. `bertlab.experiments.reference.pretrained_encoder().folder` is either kind."""
    folder = Path(folder)
    if is_hf_folder(folder):  # transformers' layout and names
        return BertModel.from_hf(folder).eval()
    model = ckpt.load_model(folder)  # the class recorded in the folder
    return getattr(model, "bert", model).eval()


def sentence_pairs(documents: Sequence[Any], n: int, seed: int = 0, min_words: int = 3) -> list[tuple[str, str]]:
    """`n` random pairs (A, B) of consecutive sentences of one document, both with at least
    `min_words` words: BERT's input shape, [CLS] A [SEP] B [SEP], on text the model has not
    trained on (pass held-out documents, e.g. `load_corpus("books+wiki", "heldout")`). The
    same seed gives the same pairs, in the order of the documents."""
    usable = [
        (d, i)
        for d, doc in enumerate(documents)
        for i in range(len(doc.sentences) - 1)
        if len(doc.sentences[i].split()) >= min_words and len(doc.sentences[i + 1].split()) >= min_words
    ]
    if n > len(usable):
        raise ValueError(f"asked for {n} sentence pairs but the documents hold only {len(usable)}")
    chosen = sorted(random.Random(seed).sample(range(len(usable)), n))
    return [(documents[d].sentences[i], documents[d].sentences[i + 1]) for d, i in (usable[c] for c in chosen)]


@torch.no_grad()
def attention_maps(
    model, sequences: Sequence[dict[str, Sequence[int]]], batch_size: int = 16, device: str | torch.device = "cpu"
) -> Iterator[torch.Tensor]:
    """Run `model` (a BertModel, or any bertlab model taking output_attentions) over
    `sequences` and yield, in order, each one's maps as one (L, A, T, T) float tensor on the
    CPU, padding removed. A sequence is a dict with "input_ids" and optionally
    "token_type_ids" (lists of ints, [CLS] ... [SEP] included).

    Padded keys get exactly zero weight (they are masked before the softmax), so cutting the
    padding off leaves every row summing to 1."""
    model.eval()
    for start in range(0, len(sequences), batch_size):
        chunk = sequences[start : start + batch_size]
        T = max(len(s["input_ids"]) for s in chunk)
        ids = torch.zeros(len(chunk), T, dtype=torch.long)
        types = torch.zeros(len(chunk), T, dtype=torch.long)
        mask = torch.zeros(len(chunk), T, dtype=torch.long)
        for b, s in enumerate(chunk):
            n = len(s["input_ids"])
            ids[b, :n] = torch.as_tensor(s["input_ids"])
            if s.get("token_type_ids") is not None:
                types[b, :n] = torch.as_tensor(s["token_type_ids"])
            mask[b, :n] = 1
        out = model(
            ids.to(device), token_type_ids=types.to(device), attention_mask=mask.to(device), output_attentions=True
        )
        att = torch.stack(out.attentions, dim=1).float().cpu()  # (B, L, A, T, T)
        for b, s in enumerate(chunk):
            n = len(s["input_ids"])
            yield att[b, :, :, :n, :n]


# ------------------------------------------------------------------------------------------------
# Measures of one sequence: one value per query
# ------------------------------------------------------------------------------------------------
def is_punctuation(token: str) -> bool:
    """A token made only of punctuation characters ('.', ',', '"', '--'), not a special token."""
    return bool(token) and token not in SPECIAL_TOKENS and all(unicodedata.category(ch).startswith("P") for ch in token)


def key_mass(att: torch.Tensor, keys: torch.Tensor | Sequence[bool]) -> torch.Tensor:
    """For every query, the total attention on the keys where `keys` is True.

    att: (..., T, T); keys: (T,) booleans. Returns (..., T): entry i is sum_j att[..., i, j]
    over the selected j (1.0 when a query looks only at selected keys)."""
    keys = torch.as_tensor(keys, dtype=torch.bool, device=att.device)
    if keys.shape != att.shape[-1:]:
        raise ValueError(f"keys must have one entry per key position ({att.shape[-1]}), got shape {tuple(keys.shape)}")
    return (att * keys).sum(-1)


def offset_mass(att: torch.Tensor, offset: int) -> torch.Tensor:
    """Attention from each token i to the token at i + offset: offset -1 is the previous token,
    0 the token itself, +1 the next one. att: (..., T, T). Returns (..., T - |offset|), one value
    per query that HAS such a neighbour (the first token has no previous token)."""
    return att.diagonal(offset=offset, dim1=-2, dim2=-1)  # att[..., i, i + offset]


def attention_entropy(att: torch.Tensor) -> torch.Tensor:
    """The entropy, in nats, of every query's attention distribution: -sum_j p_j log p_j.
    att: (..., T, T) -> (..., T). 0 for a head that looks at one key; log T when it spreads
    evenly over all T keys. Zero weights contribute 0 (the limit of p log p)."""
    return -torch.special.xlogy(att, att).sum(-1)


def sequence_measures(att: torch.Tensor, tokens: Sequence[str]) -> dict[str, torch.Tensor]:
    """Every per-query measure of one sequence's maps att (L, A, T, T), as (L, A, n) tensors:

    cls, sep, punct   attention mass on [CLS], on [SEP], on punctuation tokens (n = T)
    prev, self, next  attention to the previous token, the token itself, the next (n = T - 1, T, T - 1)
    entropy           entropy of the attention distribution (nats, n = T)
    uniform_entropy   log T, the entropy of a head that spreads evenly (the baseline, n = T)"""
    T = att.shape[-1]
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens for attention maps over {T} positions")
    entropy = attention_entropy(att)
    return {
        "cls": key_mass(att, [t == "[CLS]" for t in tokens]),
        "sep": key_mass(att, [t == "[SEP]" for t in tokens]),
        "punct": key_mass(att, [is_punctuation(t) for t in tokens]),
        "prev": offset_mass(att, -1),
        "self": offset_mass(att, 0),
        "next": offset_mass(att, +1),
        "entropy": entropy,
        "uniform_entropy": torch.full_like(entropy, math.log(T)),
    }


@dataclass
class HeadAverages:
    """Running per-head means of per-query values over many sequences: every query of every
    sequence weighs the same, as when Clark et al. average over all tokens of their corpus.

        avg = HeadAverages()
        for att, tokens in zip(maps, token_lists):
            avg.add(sequence_measures(att, tokens))
        avg.means()["prev"]  # (L, A)
    """

    sums: dict[str, torch.Tensor] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    sequences: int = 0

    def add(self, measures: dict[str, torch.Tensor]) -> None:
        for name, values in measures.items():  # values (L, A, n)
            total = values.double().sum(-1)
            self.sums[name] = self.sums[name] + total if name in self.sums else total
            self.counts[name] = self.counts.get(name, 0) + values.shape[-1]
        self.sequences += 1

    def means(self) -> dict[str, torch.Tensor]:
        """Each measure's mean per head, (L, A) float tensors."""
        return {name: (s / self.counts[name]).float() for name, s in self.sums.items()}


def top_heads(scores: torch.Tensor, k: int = 5, largest: bool = True) -> list[tuple[int, int, float]]:
    """The k heads with the largest (or smallest) score in an (L, A) table, best first, as
    (layer, head, score)."""
    L, A = scores.shape
    values, flat = scores.flatten().topk(min(k, L * A), largest=largest)
    return [(int(i) // A, int(i) % A, float(v)) for v, i in zip(values, flat)]


def sink_heads(
    share: torch.Tensor, expected: float, factor: float = 3.0, floor: float = 0.1
) -> list[tuple[int, int, float]]:
    """The heads that use a token as a sink: those whose average attention on it (`share`, an
    (L, A) table) is at least `factor` times what a head blind to token types would give it
    (`expected`, its share of the tokens) and at least `floor`; heaviest first, as (layer, head,
    share)."""
    bar = max(factor * expected, floor)
    return [t for t in top_heads(share, share.numel()) if t[2] >= bar]


def sink_reading(
    shares: dict[str, torch.Tensor], expected: dict[str, float], factor: float = 3.0, floor: float = 0.1
) -> str:
    """One or two sentences, from the numbers, on whether this model's heads park attention on
    always-present tokens: which of them (labels are the keys of `shares`) get at least `factor`
    times their share of the tokens (and `floor`) from some head, and from how many heads."""
    found = {label: sink_heads(share, expected[label], factor, floor) for label, share in shares.items()}
    times = number(int(factor)) if float(factor).is_integer() else f"{factor:g}"  # "three times"
    used = {label: heads for label, heads in found.items() if heads}
    if not used:
        heaviest = max(((label, top_heads(s, 1)[0][2]) for label, s in shares.items()), key=lambda x: x[1])
        return (
            f"No head of this model parks its attention on {' or '.join(shares)}: the "
            f"heaviest, on {heaviest[0]}, gives it {heaviest[1]:.0%} on average, less than {times} "
            f"times its share of the tokens. Sinks are learned, and in BERT-Base they are strong; a "
            f"model trained for minutes may not have needed one yet."
        )
    parts = [
        f"{count(len(heads), 'head')} on {label} (the heaviest {heads[0][2]:.0%}, against "
        f"{expected[label]:.0%} of the tokens)"
        for label, heads in used.items()
    ]
    return (
        f"Some heads of this model use a sink, giving a token at least {times} times its share: "
        + "; ".join(parts)
        + "."
    )


# ------------------------------------------------------------------------------------------------
# From word pieces to words
# ------------------------------------------------------------------------------------------------
def word_groups(word_ids: Sequence[int | None]) -> list[list[int]]:
    """Token positions grouped into units: every special token (word id None) is a unit of its
    own, and the consecutive pieces of one word form one unit, in order.
    [CLS] play ##ing ball [SEP] with word ids [None, 0, 0, 1, None] -> [[0], [1, 2], [3], [4]].
    Only neighbours are joined, so a pair's second text, whose word ids start again at 0,
    gets units of its own."""
    groups: list[list[int]] = []
    for pos, w in enumerate(word_ids):
        if w is not None and pos > 0 and word_ids[pos - 1] == w:
            groups[-1].append(pos)
        else:
            groups.append([pos])
    return groups


def word_level_attention(att: torch.Tensor, groups: Sequence[Sequence[int]]) -> torch.Tensor:
    """Token-level maps (..., T, T) -> word-level maps (..., W, W) for W = len(groups): the
    attention TO a word is the sum over its pieces, the attention FROM a word the mean over its
    pieces (Clark et al. 2019, section 4.1). Rows still sum to 1 when the groups cover every
    position once."""
    T, W = att.shape[-1], len(groups)
    member = torch.zeros(W, T, dtype=att.dtype, device=att.device)  # member[u, t] = 1: t in unit u
    for u, positions in enumerate(groups):
        member[u, list(positions)] = 1.0
    to_words = att @ member.T  # (..., T, W): sum over the pieces of the attended word
    mean_rows = member / member.sum(-1, keepdim=True)  # (W, T): average over the attending pieces
    return mean_rows @ to_words  # (..., W, W)


# ------------------------------------------------------------------------------------------------
# Syntax from CoNLL-2003 chunks: which word should a word attend to?
# ------------------------------------------------------------------------------------------------
def chunk_spans(chunk_tags: Sequence[str], kind: str = "NP") -> list[tuple[int, int]]:
    """(start, end) word spans, end exclusive, of the chunks of type `kind` in IOB chunk tags
    (B-NP I-NP O ...). A chunk starts at B-X, or at I-X after a tag of another type (IOB1)."""
    spans, start = [], None
    for i, tag in enumerate([*chunk_tags, "O"]):
        inside = tag[2:] == kind and tag[:2] in ("B-", "I-")
        begins = inside and (tag.startswith("B-") or start is None)
        if start is not None and (not inside or begins):
            spans.append((start, i))
            start = None
        if begins:
            start = i
    return spans


RELATIONS = {
    "np_head": "a word inside a noun phrase -> the phrase's last word (its head noun, as a rule)",
    "det_noun": "a determiner (POS DT) inside a noun phrase -> the phrase's last word",
    "prep_object": "a preposition (PP chunk) -> the last word of the noun phrase right after it",
}


def chunk_relations(pos: Sequence[str], chunks: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Word pairs (dependent, target) for each relation in RELATIONS, from one CoNLL-2003
    sentence's POS and chunk tags. The last word of an English noun phrase chunk is its head
    noun in most cases ("the new [car]"), so these are proxies for Clark et al.'s dependency
    relations (det, pobj) without a parser."""
    out: dict[str, list[tuple[int, int]]] = {name: [] for name in RELATIONS}
    nps = chunk_spans(chunks, "NP")
    np_starting_at = {a: b for a, b in nps}
    for a, b in nps:
        for i in range(a, b - 1):
            out["np_head"].append((i, b - 1))
            if pos[i] == "DT":
                out["det_noun"].append((i, b - 1))
    for a, b in chunk_spans(chunks, "PP"):
        if b - a == 1 and pos[a] == "IN" and b in np_starting_at:
            out["prep_object"].append((a, np_starting_at[b] - 1))
    return out


def most_attended_other(word_att: torch.Tensor, candidates: Sequence[int]) -> torch.Tensor:
    """For every unit i, the candidate unit j != i with the largest attention from i: the
    head's "prediction" of which word i relates to. word_att: (..., W, W); candidates: unit
    indices that may be predicted (the words, not [CLS]/[SEP]). Returns (..., W) long."""
    W = word_att.shape[-1]
    allowed = torch.zeros(W, W, dtype=torch.bool, device=word_att.device)
    allowed[:, list(candidates)] = True
    allowed.fill_diagonal_(False)
    return word_att.masked_fill(~allowed, -1.0).argmax(-1)


@dataclass
class ProbeResult:
    """Per-relation accuracy of every head and of every fixed-offset baseline."""

    relation: str
    n: int  # word pairs scored
    head_hits: torch.Tensor  # (L, A) pairs where the head's most-attended other word is the target
    offset_hits: dict[int, int]  # offset k -> pairs whose target is the word at dependent + k

    @property
    def head_accuracy(self) -> torch.Tensor:
        return self.head_hits.double() / max(self.n, 1)

    @property
    def best_offset(self) -> tuple[int, float]:
        """(offset, accuracy) of the best fixed-offset baseline."""
        k = max(self.offset_hits, key=lambda o: (self.offset_hits[o], -abs(o)))
        return k, self.offset_hits[k] / max(self.n, 1)

    def best_head(self) -> tuple[int, int, float]:
        return top_heads(self.head_accuracy, 1)[0]


def probe_relations(
    maps: Iterable[torch.Tensor],
    word_ids: Sequence[Sequence[int | None]],
    relations: Sequence[dict[str, list[tuple[int, int]]]],
    offsets: Sequence[int] = (-4, -3, -2, -1, 1, 2, 3, 4),
) -> dict[str, ProbeResult]:
    """Score every head on word relations, the way Clark et al. (2019) score dependency
    relations: a head predicts, for each dependent word, the other word it attends to most
    (word-level maps; [CLS] and [SEP] are not candidates), and is right when that word is the
    target. The baseline predicts the word at a fixed offset from the dependent.

    maps: each sentence's (L, A, T, T) maps; word_ids: each sentence's token -> word index
    (None for specials); relations: each sentence's `chunk_relations` (word indices)."""
    results: dict[str, ProbeResult] = {}
    for att, wids, rels in zip(maps, word_ids, relations):
        groups = word_groups(wids)
        unit = {wids[g[0]]: u for u, g in enumerate(groups) if wids[g[0]] is not None}
        wa = word_level_attention(att, groups)  # (L, A, W, W)
        pred = most_attended_other(wa, sorted(unit.values()))  # (L, A, W)
        for name, pairs in rels.items():
            r = results.setdefault(
                name, ProbeResult(name, 0, torch.zeros(att.shape[:2], dtype=torch.long), {k: 0 for k in offsets})
            )
            for dep, target in pairs:
                if dep not in unit or target not in unit:
                    continue  # a word with no word piece: nothing to score
                r.n += 1
                r.head_hits += pred[:, :, unit[dep]] == unit[target]
                for k in offsets:
                    r.offset_hits[k] += int(dep + k == target)
    return results
