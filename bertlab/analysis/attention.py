"""What the attention heads of a trained BERT do, measured over real text (chapter 16), after
Clark, Khandelwal, Levy and Manning (2019), "What Does BERT Look At?": per-head measures (mass on
[CLS], [SEP] and punctuation, fixed offsets, entropy) averaged over many sequences, word-level
maps, and a probe of word relations taken from CoNLL-2003 chunks.

An attention tensor is (..., T, T) indexed [query, key], each row summing to 1; one sequence's maps
are (L, A, T, T) without padding. Layers and heads count from 0 (Clark et al. count from 1).
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


# Getting the maps
def load_encoder(folder: str | Path):
    """A BertModel (eval mode, CPU) from a Hugging Face or bertlab folder, whatever head class saved it."""
    folder = Path(folder)
    if is_hf_folder(folder):  # transformers' layout and names
        return BertModel.from_hf(folder).eval()
    model = ckpt.load_model(folder)  # the class recorded in the folder
    return getattr(model, "bert", model).eval()


def sentence_pairs(documents: Sequence[Any], n: int, seed: int = 0, min_words: int = 3) -> list[tuple[str, str]]:
    """`n` seeded pairs (A, B) of consecutive sentences of one document, each of at least
    `min_words` words, in document order. Pass held-out documents."""
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
    """Each sequence's maps ({"input_ids", optional "token_type_ids"}, specials included), in
    order, as one (L, A, T, T) CPU tensor with the padding cut off. Padded keys get zero weight,
    so every row still sums to 1."""
    model.eval()
    for start in range(0, len(sequences), batch_size):
        chunk = sequences[start : start + batch_size]
        T = max(len(s["input_ids"]) for s in chunk)
        ids, types, mask = (torch.zeros(len(chunk), T, dtype=torch.long) for _ in range(3))  # (B, T) each
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


# Measures of one sequence: one value per query
def is_punctuation(token: str) -> bool:
    """A token made only of punctuation characters ('.', ',', '"', '--'), not a special token."""
    return bool(token) and token not in SPECIAL_TOKENS and all(unicodedata.category(ch).startswith("P") for ch in token)


def key_mass(att: torch.Tensor, keys: torch.Tensor | Sequence[bool]) -> torch.Tensor:
    """For every query, the total attention on the keys where `keys` (T,) is True: (..., T)."""
    keys = torch.as_tensor(keys, dtype=torch.bool, device=att.device)
    if keys.shape != att.shape[-1:]:
        raise ValueError(f"keys must have one entry per key position ({att.shape[-1]}), got shape {tuple(keys.shape)}")
    return (att * keys).sum(-1)


def offset_mass(att: torch.Tensor, offset: int) -> torch.Tensor:
    """Attention from each token i to token i + offset (-1 previous, 0 itself, +1 next):
    (..., T - |offset|), one value per query that has such a neighbour."""
    return att.diagonal(offset=offset, dim1=-2, dim2=-1)  # att[..., i, i + offset]


def attention_entropy(att: torch.Tensor) -> torch.Tensor:
    """The entropy in nats of every query's attention, (..., T): 0 on one key, log T when even."""
    return -torch.special.xlogy(att, att).sum(-1)


def sequence_measures(att: torch.Tensor, tokens: Sequence[str]) -> dict[str, torch.Tensor]:
    """Every per-query measure of one sequence's maps (L, A, T, T), each (L, A, n): mass on cls,
    sep, punct; attention to prev, self, next; entropy, and uniform_entropy (log T, the baseline)."""
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
    """Running per-head means of `sequence_measures` over many sequences, every query weighing
    the same (as Clark et al. average over all tokens): `avg.add(measures)`, then
    `avg.means()["prev"]`, an (L, A) table."""

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
    """The k heads with the largest (or smallest) score in an (L, A) table: (layer, head, score)."""
    L, A = scores.shape
    values, flat = scores.flatten().topk(min(k, L * A), largest=largest)
    return [(int(i) // A, int(i) % A, float(v)) for v, i in zip(values, flat)]


SINK_FACTOR, SINK_FLOOR = 3, 0.1  # a sink head: three times a token's share of the tokens, and 10%


def sink_heads(share: torch.Tensor, expected: float) -> list[tuple[int, int, float]]:
    """The heads whose attention on a token (`share`, (L, A)) reaches SINK_FACTOR times its share of
    the tokens (`expected`) and SINK_FLOOR, heaviest first: (layer, head, share)."""
    bar = max(SINK_FACTOR * expected, SINK_FLOOR)
    return [t for t in top_heads(share, share.numel()) if t[2] >= bar]


def sink_reading(shares: dict[str, torch.Tensor], expected: dict[str, float]) -> str:
    """A sentence or two on which always-present tokens (the keys of `shares`) some heads use as
    a sink (`sink_heads`), and how many heads do."""
    found = {label: sink_heads(share, expected[label]) for label, share in shares.items()}
    times = number(SINK_FACTOR)  # "three times"
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
    return f"Some heads of this model use a sink, giving a token at least {times} times its share: {'; '.join(parts)}."


# From word pieces to words
def word_groups(word_ids: Sequence[int | None]) -> list[list[int]]:
    """Token positions grouped into words, each special token (word id None) on its own:
    [None, 0, 0, 1, None] -> [[0], [1, 2], [3], [4]]. Only neighbours join, so a pair's second
    text, whose word ids restart at 0, gets units of its own."""
    groups: list[list[int]] = []
    for pos, w in enumerate(word_ids):
        if w is not None and pos > 0 and word_ids[pos - 1] == w:
            groups[-1].append(pos)
        else:
            groups.append([pos])
    return groups


def word_level_attention(att: torch.Tensor, groups: Sequence[Sequence[int]]) -> torch.Tensor:
    """Token maps (..., T, T) -> word maps (..., W, W): attention TO a word sums over its pieces,
    attention FROM a word averages over them (Clark et al. 2019, section 4.1)."""
    T, W = att.shape[-1], len(groups)
    member = torch.zeros(W, T, dtype=att.dtype, device=att.device)  # member[u, t] = 1: t in unit u
    for u, positions in enumerate(groups):
        member[u, list(positions)] = 1.0
    to_words = att @ member.T  # (..., T, W): sum over the pieces of the attended word
    mean_rows = member / member.sum(-1, keepdim=True)  # (W, T): average over the attending pieces
    return mean_rows @ to_words  # (..., W, W)


# Syntax from CoNLL-2003 chunks: which word should a word attend to?
def chunk_spans(chunk_tags: Sequence[str], kind: str = "NP") -> list[tuple[int, int]]:
    """(start, end) spans, end exclusive, of the `kind` chunks in IOB1 tags (a chunk starts at
    B-X, or at I-X after another type)."""
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
    """(dependent, target) word pairs for each of RELATIONS from one CoNLL-2003 sentence's tags.
    An English noun phrase's last word is mostly its head noun, so these stand in for Clark et
    al.'s dependency relations without a parser."""
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
    """For every unit i, the candidate j != i that i attends to most (the head's guess of the
    word i relates to): (..., W) long."""
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
    """Score every head on word relations as Clark et al. (2019) do: it is right when the word a
    dependent attends to most is the target; the baseline takes the word at a fixed offset.
    Per sentence: its maps, its word ids, its `chunk_relations`."""
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
