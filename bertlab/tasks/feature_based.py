"""Feature-based BERT: a frozen encoder's hidden states as input features for a small tagger.

Section 5.3 of the paper freezes BERT-Base, extracts the activations of one or more layers for
every token of CoNLL-2003, and trains only a two-layer 768-dimensional BiLSTM and a classifier on
top. Table 7 compares six ways of turning the L + 1 hidden states (embedding output first) into
one vector per token (`COMBINATIONS`; the paper's "weighted sum" rows are plain sums here). The
encoder is frozen, so its states are computed once per sentence (one vector per word, at its
first piece, as in bertlab.tasks.ner) and each combination trains only its tagger:

    train_states = extract_word_states(encoder, task.featurize(train, tok), batch_size=64)
    dev_states = extract_word_states(encoder, task.featurize(dev, tok))
    result = train_tagger(train_states, dev_states, "concat_last_four", hidden=768, num_layers=2)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from bertlab.model import IGNORE_INDEX
from bertlab.prose import count
from bertlab.tasks.inputs import Features, collate, length_grouped_batches
from bertlab.tasks.metrics import entity_f1, get_entities
from bertlab.verdict import Reading

# --- The six combinations of Table 7 ---
# Each takes the L + 1 hidden states (..., H), embeddings first, and returns (..., H) or (..., 4H).
COMBINATIONS: dict[str, Callable[[Sequence[torch.Tensor]], torch.Tensor]] = {
    "first_layer": lambda hs: hs[0],
    "last_hidden": lambda hs: hs[-1],
    "sum_all": lambda hs: torch.stack(tuple(hs[1:])).sum(0),  # the L layers; not the embedding output
    "second_to_last": lambda hs: hs[-2],
    "sum_last_four": lambda hs: torch.stack(tuple(hs[-4:])).sum(0),
    "concat_last_four": lambda hs: torch.cat(tuple(hs[-4:]), dim=-1),  # layer L-3 first
}

# The paper's Table 7: CoNLL-2003 dev F1 of BERT-Base features under a BiLSTM, and fine-tuned.
PAPER_DEV_F1 = {
    "first_layer": 91.0,
    "last_hidden": 94.9,
    "sum_all": 95.5,
    "second_to_last": 95.6,
    "sum_last_four": 95.9,
    "concat_last_four": 96.1,
}
PAPER_FINETUNE_DEV_F1 = 96.4


def combine(hidden_states: Sequence[torch.Tensor] | torch.Tensor, combination: str) -> torch.Tensor:
    """One of Table 7's combinations of the L + 1 hidden states (a tuple or a stacked tensor
    (L+1, ..., H)): (..., H), or (..., 4H) for "concat_last_four"."""
    if combination not in COMBINATIONS:
        raise ValueError(f"unknown combination {combination!r}; choose one of {', '.join(COMBINATIONS)}")
    hs = tuple(hidden_states)
    need = 5 if combination.endswith("last_four") else 3 if combination == "second_to_last" else 2
    if len(hs) < need:
        raise ValueError(
            f"{len(hs)} hidden states: {combination} needs an encoder of at least "
            f"{need - 1} layers ({need} entries, the embedding output first)"
        )
    return COMBINATIONS[combination](hs)


def layers_used(combination: str, num_layers: int) -> list[int]:
    """The entries of hidden_states (0 = embedding output, k = layer k) a combination reads."""
    L = num_layers
    return {
        "first_layer": [0],
        "last_hidden": [L],
        "sum_all": list(range(1, L + 1)),
        "second_to_last": [L - 1],
        "sum_last_four": list(range(L - 3, L + 1)),
        "concat_last_four": list(range(L - 3, L + 1)),
    }[combination]


# The combinations that mix several layers, each compared with the last layer alone.
MIXED = ("sum_all", "sum_last_four", "concat_last_four")


@dataclass(frozen=True)
class Table7Comparison:
    """Table 7's usual comparisons on a run's F1 and (`paper_*`) on the paper's, in F1 points."""

    best: str  # the combination with the highest F1 (the first of a tie, in the given order)
    worst: str
    paper_best: str
    paper_worst: str
    mixed: tuple[str, ...]  # MIXED
    mixed_beat: list[str]  # the mixed combinations that scored above `last_hidden`
    paper_mixed_beat: list[str]
    second_minus_last: float  # second_to_last - last_hidden
    paper_second_minus_last: float
    best_minus_finetuned: float  # the best frozen combination - fine-tuning
    paper_best_minus_finetuned: float


def compare_with_table7(
    f1: dict[str, float],
    finetuned: float,
    paper: dict[str, float] = PAPER_DEV_F1,
    paper_finetuned: float = PAPER_FINETUNE_DEV_F1,
) -> Table7Comparison:
    """Table 7's usual comparisons for dev F1 per combination (all six) and of fine-tuning."""
    missing = sorted(set(COMBINATIONS) - set(f1))
    if missing:
        raise ValueError(f"no F1 for {', '.join(missing)}: the comparison needs all six combinations")
    rank = sorted(f1, key=lambda n: -f1[n])
    p_rank = sorted(paper, key=lambda n: -paper[n])
    return Table7Comparison(
        best=rank[0],
        worst=rank[-1],
        paper_best=p_rank[0],
        paper_worst=p_rank[-1],
        mixed=MIXED,
        mixed_beat=[n for n in MIXED if f1[n] > f1["last_hidden"]],
        paper_mixed_beat=[n for n in MIXED if paper[n] > paper["last_hidden"]],
        second_minus_last=f1["second_to_last"] - f1["last_hidden"],
        paper_second_minus_last=paper["second_to_last"] - paper["last_hidden"],
        best_minus_finetuned=f1[rank[0]] - finetuned,
        paper_best_minus_finetuned=paper[p_rank[0]] - paper_finetuned,
    )


# --- Extracting the hidden states once: one vector per word and per layer ---
@dataclass
class WordStates:
    """Every word's hidden states at every layer, read at its first WordPiece."""

    layers: torch.Tensor  # (L+1, N, H) for the N words of all sentences, in order
    lengths: torch.Tensor  # (S,) words per sentence, for the S sentences with words
    sentence_index: torch.Tensor  # (S,) each one's index among the examples
    tags: torch.Tensor | None  # (N,) gold label ids, None for unlabelled text
    label_names: tuple[str, ...]

    @property
    def num_layers(self) -> int:
        return self.layers.shape[0] - 1

    def features(self, combination: str) -> torch.Tensor:
        """(N, D): the combination applied to every word's L + 1 vectors, in float32."""
        return combine(self.layers.float(), combination)

    def gold_tags(self) -> list[list[str]]:
        """The gold tag names, one list per sentence."""
        if self.tags is None:
            raise ValueError("these word states carry no tags (unlabelled text)")
        names = self.label_names
        return [[names[t] for t in s] for s in self.tags.split(self.lengths.tolist())]


@torch.no_grad()
def extract_word_states(
    encoder: nn.Module,
    features: Features,
    batch_size: int = 64,
    dtype: torch.dtype = torch.float32,
) -> WordStates:
    """Run the frozen encoder (a BertModel, or a model holding one as `.bert`) once over
    featurized NER windows and keep every word's first-piece vector at each of the L + 1 hidden
    states, on the CPU in `dtype` (float16 halves the memory; combinations use float32)."""
    bert = getattr(encoder, "bert", encoder)
    device = next(bert.parameters()).device
    was_training = bert.training
    bert.eval()
    meta = features.meta
    firsts = meta["first_piece"]  # per window: the position of each word's first piece
    counts = np.array([len(f) for f in firsts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])  # window n's words: offsets[n]:offsets[n+1]
    L, H = bert.config.num_layers, bert.config.hidden_size
    out = torch.empty(L + 1, int(offsets[-1]), H, dtype=dtype)
    order = np.argsort(features.lengths(), kind="stable")
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = collate([features[int(i)] for i in idx], pad_id=meta.get("pad_id", 0))
        inputs = [batch[k].to(device) for k in ("input_ids", "token_type_ids", "attention_mask")]
        hs = bert(*inputs, output_hidden_states=True).hidden_states
        hs = torch.stack(hs).to("cpu", torch.float32)  # (L+1, B, T, H)
        for b, n in enumerate(idx):
            out[:, offsets[n] : offsets[n + 1]] = hs[:, b, torch.as_tensor(firsts[n])].to(dtype)
    bert.train(was_training)

    # windows of one sentence are consecutive and in word order
    sentences, first_window = np.unique(meta["sentence_index"], return_index=True)
    lengths = np.add.reduceat(counts, first_window) if len(counts) else counts
    tags = None
    if len(features) and "labels" in features[0]:
        tags = torch.from_numpy(
            np.concatenate([features[n]["labels"][firsts[n]] for n in range(len(features))]).astype(np.int64)
        )
        if (tags == IGNORE_INDEX).any():
            raise ValueError("a word's first piece carries no label: features and words disagree")
    lengths, sentences = (torch.as_tensor(a, dtype=torch.long) for a in (lengths, sentences))
    return WordStates(out, lengths, sentences, tags, tuple(meta["label_names"]))


# --- The small task model on top of the frozen features ---
class Tagger(nn.Module):
    """The trained part: an optional BiLSTM over a sentence's words, then a linear layer over the
    K labels. num_layers=2, hidden=768 (per direction) is the paper's; 0 is a linear probe."""

    def __init__(self, in_dim: int, num_labels: int, hidden: int = 768, num_layers: int = 2, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.lstm = None
        if num_layers > 0:
            between = dropout if num_layers > 1 else 0.0
            self.lstm = nn.LSTM(in_dim, hidden, num_layers, batch_first=True, bidirectional=True, dropout=between)
        width = 2 * hidden if num_layers > 0 else in_dim  # forward and backward states side by side
        self.classifier = nn.Linear(width, num_labels)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """x (B, W, D) padded word features, lengths (B,) -> logits (B, W, K); padding never
        reaches the LSTM (packed sequences)."""
        x = self.dropout(x)
        if self.lstm is not None:
            W = x.shape[1]
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            x, _ = self.lstm(packed)
            x, _ = pad_packed_sequence(x, batch_first=True, total_length=W)  # (B, W, 2 * hidden)
            x = self.dropout(x)
        return self.classifier(x)


@dataclass
class TaggerResult:
    combination: str
    f1: float  # entity-level, dev, after the last epoch
    precision: float
    recall: float
    types: dict[str, dict[str, float]]  # per entity type: precision, recall, f1, support
    history: list[dict[str, float]]  # per epoch: train loss, dev F1
    predictions: list[list[str]] = field(repr=False)  # dev tags, one list per sentence
    in_dim: int = 0
    parameters: int = 0
    seconds: float = 0.0


def _padded(x: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor):
    """The sentences `rows` of a word-feature stack x (N, D) as a padded (B, W, D) batch."""
    pieces = [x[starts[r] : starts[r] + lengths[r]] for r in rows.tolist()]
    return pad_sequence(pieces, batch_first=True), lengths[rows]


@torch.no_grad()
def predict_tags(
    tagger: Tagger, x: torch.Tensor, lengths: torch.Tensor, label_names: Sequence[str], batch_size: int = 256
) -> list[list[str]]:
    """The tagger's tags for every sentence of a word-feature stack x (N, D)."""
    was = tagger.training
    tagger.eval()
    device = tagger.classifier.weight.device
    starts = torch.cumsum(lengths, 0) - lengths
    out: list[list[str]] = []
    for lo in range(0, len(lengths), batch_size):
        rows = torch.arange(lo, min(lo + batch_size, len(lengths)))
        xb, lb = _padded(x, starts, lengths, rows)
        ids = tagger(xb.to(device), lb).argmax(-1).cpu()
        out += [[label_names[k] for k in ids[b, :n].tolist()] for b, n in enumerate(lb.tolist())]
    tagger.train(was)
    return out


def train_tagger(
    train: WordStates,
    dev: WordStates,
    combination: str,
    hidden: int = 768,
    num_layers: int = 2,
    epochs: int = 4,
    lr: float = 1e-3,
    batch_size: int = 32,
    dropout: float = 0.1,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> TaggerResult:
    """Train a Tagger on one combination of the frozen states; entity F1 on dev every epoch."""
    torch.manual_seed(seed)
    device = torch.device(device)
    x_train = train.features(combination).to(device)  # (N, D)
    x_dev = dev.features(combination).to(device)
    y_train = train.tags.to(device)
    tagger = Tagger(x_train.shape[-1], len(train.label_names), hidden, num_layers, dropout).to(device)
    opt = torch.optim.Adam(tagger.parameters(), lr=lr)
    starts = torch.cumsum(train.lengths, 0) - train.lengths
    gold = dev.gold_tags()
    g = torch.Generator().manual_seed(seed)
    # length-grouped batches hold very different numbers of words: dividing each batch's summed
    # loss by the epoch's mean words per batch weighs every word the same
    history = []
    t0 = time.perf_counter()
    for epoch in range(1, epochs + 1):
        tagger.train()
        total, n = 0.0, 0
        batches = length_grouped_batches(train.lengths, batch_size, g)  # a BiLSTM runs to its longest
        words_per_batch = float(train.lengths.sum()) / len(batches)
        for rows in batches:
            xb, lb = _padded(x_train, starts, train.lengths, rows)
            yb, _ = _padded(y_train, starts, train.lengths, rows)  # (B, W), 0 where padded
            mask = torch.arange(xb.shape[1])[None, :] < lb[:, None]  # (B, W) real words
            logits = tagger(xb, lb)
            summed = nn.functional.cross_entropy(logits[mask.to(device)], yb[mask.to(device)], reduction="sum")
            loss = summed / int(mask.sum())  # the batch's mean, for the history
            opt.zero_grad(set_to_none=True)
            (summed / words_per_batch).backward()
            opt.step()
            total += loss.item() * len(rows)
            n += len(rows)
        pred = predict_tags(tagger, x_dev, dev.lengths, dev.label_names)
        scores = entity_f1(gold, pred, by_type=True)
        history.append(
            {"epoch": epoch, "train_loss": total / n, "f1": scores["f1"], "elapsed_s": time.perf_counter() - t0}
        )
        if not math.isfinite(total):
            raise RuntimeError(f"{combination}: the training loss became {total} in epoch {epoch}; lower lr")
    f1, precision, recall, types = (scores[k] for k in ("f1", "precision", "recall", "types"))
    parameters, seconds = sum(p.numel() for p in tagger.parameters()), time.perf_counter() - t0
    return TaggerResult(
        combination, f1, precision, recall, types, history, pred, x_train.shape[-1], parameters, seconds
    )


# --- The noise of an entity F1 on one dev set: a bootstrap over its sentences ---
# Entity F1 is 2 correct / (predicted + gold), summed over sentences: resampling the sentences shows
# how much another dev set would move a score, or (paired) a difference between two systems.
Tags = Sequence[Sequence[str]]  # IOB2 tags, one sequence per sentence


def sentence_counts(gold: Tags, predicted: Tags, entity_type: str | None = None) -> np.ndarray:
    """(S, 3): each sentence's correct, predicted and gold entities (of `entity_type` if given),
    as `metrics.entity_f1` counts them."""
    rows = np.zeros((len(gold), 3), dtype=np.int64)
    for s, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {s}: {len(g)} gold tags but {len(p)} predicted tags")
        ge, pe = set(get_entities(g)), set(get_entities(p))
        if entity_type is not None:
            ge, pe = {e for e in ge if e[0] == entity_type}, {e for e in pe if e[0] == entity_type}
        rows[s] = len(ge & pe), len(pe), len(ge)
    return rows


def _f1(totals: np.ndarray) -> np.ndarray:
    """Entity F1 in points from summed (correct, predicted, gold) counts (..., 3); 0 with none."""
    denominator = totals[..., 1] + totals[..., 2]
    return 100.0 * 2.0 * totals[..., 0] / np.maximum(denominator, 1)


def f1_from_counts(counts: np.ndarray) -> float:
    """The entity F1 (points) of `sentence_counts`: equal to metrics.entity_f1's."""
    return float(_f1(counts.sum(0)))


def f1_standard_error(
    gold: Tags,
    predicted: Tags,
    other: Tags | None = None,
    entity_type: str | None = None,
    draws: int = 1000,
    seed: int = 0,
) -> float:
    """The bootstrap standard error (points) of an entity F1 on these dev sentences, or with
    `other` (another system's tags) of F1(predicted) - F1(other): the luck of the dev set."""
    if draws < 2:
        raise ValueError(f"a standard error needs at least two bootstrap draws, got {draws}")
    counts = sentence_counts(gold, predicted, entity_type)
    if other is not None:
        counts = np.concatenate([counts, sentence_counts(gold, other, entity_type)], axis=1)
    S = len(counts)
    if S == 0:
        raise ValueError("no sentences to resample")
    weights = np.random.default_rng(seed).multinomial(S, np.full(S, 1.0 / S), size=draws)  # (draws, S)
    totals = weights @ counts  # (draws, 3) or (draws, 6)
    f1 = _f1(totals[:, :3]) - (_f1(totals[:, 3:]) if other is not None else 0.0)
    return float(f1.std(ddof=1))


def f1_difference(
    gold: Tags, a: Tags, b: Tags, entity_type: str | None = None, draws: int = 1000, seed: int = 0
) -> Reading:
    """F1(a) - F1(b) on the same dev sentences against two paired bootstrap standard errors."""
    gain = f1_from_counts(sentence_counts(gold, a, entity_type)) - f1_from_counts(sentence_counts(gold, b, entity_type))
    se = f1_standard_error(gold, a, b, entity_type, draws, seed)
    return Reading.from_noise(gain, se, f"two bootstrap standard errors over {count(len(gold), 'dev sentence')}")


# --- The whole study: extraction, six taggers and a fine-tuning, for one encoder ---
FINETUNED = "fine-tuned"  # the name FeatureStudy's readings give fine-tuning the whole encoder


@dataclass
class FeatureStudy:
    """Table 7 for one encoder: six taggers on its frozen features, and fine-tuning it."""

    name: str  # the encoder's name
    encoder: nn.Module  # the frozen BertModel whose states the taggers read
    train_states: WordStates
    dev_states: WordStates
    taggers: dict[str, TaggerResult]  # one per combination, in COMBINATIONS' order
    finetuned_predictions: list[list[str]] = field(repr=False)  # the fine-tuned model's dev tags
    finetuned_scores: list[float]  # what fine-tuning reported, one F1 per seed
    settings: dict[str, dict]  # "tagger" and "finetune": the keyword arguments each was given
    seconds: dict[str, float]  # "extract", "taggers", "finetune"
    gold: list[list[str]] = field(init=False, repr=False)

    def __post_init__(self):
        self.gold = self.dev_states.gold_tags()

    @property
    def n_train(self) -> int:
        """Training sentences (with words)."""
        return len(self.train_states.lengths)

    @property
    def n_dev(self) -> int:
        """Dev sentences every system was scored on."""
        return len(self.gold)

    @property
    def num_layers(self) -> int:
        return self.train_states.num_layers

    @property
    def f1(self) -> dict[str, float]:
        """Dev entity F1 per combination."""
        return {n: r.f1 for n, r in self.taggers.items()}

    @property
    def finetuned(self) -> float:
        """Dev entity F1 of the fine-tuned encoder (its median seed's tags)."""
        return entity_f1(self.gold, self.finetuned_predictions)["f1"]

    def ranking(self) -> list[str]:
        """The combinations from the best F1 to the worst (a tie keeps COMBINATIONS' order)."""
        return sorted(self.taggers, key=lambda n: -self.taggers[n].f1)

    def predictions(self, name: str) -> list[list[str]]:
        """The dev tags of a combination's tagger, or of fine-tuning (FINETUNED)."""
        return self.finetuned_predictions if name == FINETUNED else self.taggers[name].predictions

    def reading(self, a: str, b: str, entity_type: str | None = None) -> Reading:
        """`f1_difference` of two combinations or FINETUNED (of one entity type if given)."""
        return f1_difference(self.gold, self.predictions(a), self.predictions(b), entity_type)
