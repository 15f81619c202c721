"""A linear probe: what a frozen encoder's sentence vectors already say about a label.

Fine-tuning changes every weight, so a fine-tuned score mixes what pre-training put into the
encoder with what the task's examples taught it. A probe separates the two: the encoder stays
frozen, each sentence becomes one vector (the mean of its token vectors at one layer), and only a
logistic regression is trained on those vectors. A probe on the pre-trained encoder against the
same probe on a randomly initialised twin measures what pre-training stored, by itself (Conneau et
al. 2018 and Tenney et al. 2019 probe BERT-like encoders this way; Hewitt and Liang 2019 warn that
a probe flexible enough learns the task by itself, which is why this one is linear).

    x_train = sentence_vectors(encoder, tokenizer, train_texts)   # (L+1, N, H), frozen
    x_dev = sentence_vectors(encoder, tokenizer, dev_texts)
    result = linear_probe(x_train[-1], y_train, x_dev[-1], y_dev)  # the last layer's vectors
    result.accuracy, result.l2
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1)  # the ridge penalties tried on a split of the training vectors


@torch.no_grad()
def sentence_vectors(
    encoder: nn.Module, tokenizer, texts: Sequence[str], batch_size: int = 128, max_length: int = 128
) -> torch.Tensor:
    """(L + 1, N, H) float32: for each of the N texts, the mean of its token vectors (padding
    excluded) at every hidden state of the frozen encoder: [0] the embedding output, [l] the
    output of layer l, [-1] the last layer's.

    `encoder` is a BertModel or a model holding one as `.bert`; `tokenizer` a bertlab Tokenizer."""
    bert = getattr(encoder, "bert", encoder)
    device = next(bert.parameters()).device
    was_training = bert.training
    bert.eval()
    out = []
    for start in range(0, len(texts), batch_size):
        enc = tokenizer.encode_batch(
            list(texts[start : start + batch_size]), max_length=max_length, return_tensors="pt"
        )
        mask = enc.attention_mask.to(device)
        hs = torch.stack(
            bert(enc.input_ids.to(device), enc.token_type_ids.to(device), mask, output_hidden_states=True).hidden_states
        ).float()  # (L+1, B, T, H)
        weights = mask[None, :, :, None].float()  # (1, B, T, 1): 1 for real tokens
        out.append(((hs * weights).sum(2) / weights.sum(2)).cpu())  # (L+1, B, H)
    bert.train(was_training)
    if not out:
        return torch.empty(bert.config.num_layers + 1, 0, bert.config.hidden_size)
    return torch.cat(out, dim=1)


@dataclass
class ProbeResult:
    accuracy: float  # on the evaluation vectors, in percent
    l2: float  # the ridge penalty chosen on a split of the training vectors
    train_examples: int


def _fit(x: torch.Tensor, y: torch.Tensor, num_classes: int, l2: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Multinomial logistic regression with an L2 penalty on the weights, fitted by L-BFGS."""
    w = torch.zeros(x.size(1), num_classes, requires_grad=True)
    b = torch.zeros(num_classes, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(x @ w + b, y) + l2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


def _accuracy(w: torch.Tensor, b: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    return 100.0 * ((x @ w + b).argmax(1) == y).float().mean().item()


def linear_probe(
    x_train: torch.Tensor, y_train, x_eval: torch.Tensor, y_eval, l2_grid: Sequence[float] = L2_GRID, seed: int = 0
) -> ProbeResult:
    """Train a logistic regression on frozen vectors and score it on the evaluation vectors.

    The vectors are standardised with the training set's mean and spread. The penalty is chosen
    from `l2_grid` on a fifth of the training vectors held out (never on the evaluation set), then
    the probe is fitted again on all training vectors."""
    y_train, y_eval = torch.as_tensor(y_train, dtype=torch.long), torch.as_tensor(y_eval, dtype=torch.long)
    if x_train.ndim != 2 or len(x_train) != len(y_train) or len(x_eval) != len(y_eval):
        raise ValueError(
            f"x_train must be (N, D) with one label each: got {tuple(x_train.shape)} vectors, "
            f"{len(y_train)} labels; {len(x_eval)} evaluation vectors, {len(y_eval)} labels"
        )
    if len(x_train) < 10:
        raise ValueError(f"a probe needs at least 10 training vectors, got {len(x_train)}")
    num_classes = int(max(y_train.max(), y_eval.max())) + 1
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    x_train, x_eval = (x_train - mean) / std, (x_eval - mean) / std
    order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(seed))
    held, fit = order[: len(order) // 5], order[len(order) // 5 :]
    scores = {
        l2: _accuracy(*_fit(x_train[fit], y_train[fit], num_classes, l2), x_train[held], y_train[held])
        for l2 in l2_grid
    }
    best = max(l2_grid, key=lambda l2: (scores[l2], l2))  # ties: the stronger penalty
    w, b = _fit(x_train, y_train, num_classes, best)
    return ProbeResult(accuracy=_accuracy(w, b, x_eval, y_eval), l2=best, train_examples=len(x_train))


@dataclass(frozen=True)
class ProbeComparison:
    """Recorded probes of one pre-trained encoder against randomly initialised twins of its size:
    `pretrained[(layer, n)]` and `random[(layer, n)]` (the median over the twins) are dev
    accuracies in percent of a probe trained on the first n sentences at hidden state `layer`
    (0: the embedding output)."""

    layers: tuple[int, ...]
    sizes: tuple[int, ...]
    twins: int
    pretrained: dict[tuple[int, int], float]
    random: dict[tuple[int, int], float]

    def gain(self, layer: int, n: int) -> float:
        """What pre-training stored, by this probe: pre-trained minus the twins' median, in points."""
        return self.pretrained[(layer, n)] - self.random[(layer, n)]

    def best(self) -> tuple[int, int]:
        """The (layer, n) where the pre-trained encoder's probe scores highest (ties: the
        earlier layer, then fewer sentences)."""
        return max(sorted(self.pretrained), key=lambda k: (self.pretrained[k], -k[0], -k[1]))


def compare_probes(rows: Sequence[dict]) -> ProbeComparison:
    """Probe results as recorded (one dict per probe: `init` "pretrained" or "random", `seed`,
    `layer`, `train_examples`, `accuracy`) -> a ProbeComparison. Every (layer, n) must have a
    pre-trained probe and at least one random twin's."""
    pre: dict[tuple[int, int], float] = {}
    rand: dict[tuple[int, int], list[float]] = {}
    seeds = set()
    for r in rows:
        key = (int(r["layer"]), int(r["train_examples"]))
        if r["init"] == "pretrained":
            pre[key] = float(r["accuracy"])
        elif r["init"] == "random":
            rand.setdefault(key, []).append(float(r["accuracy"]))
            seeds.add(r.get("seed"))
        else:
            raise ValueError(f"a probe row's init is 'pretrained' or 'random', got {r['init']!r}")
    if not pre or set(pre) != set(rand):
        missing = sorted(set(pre) ^ set(rand))
        raise ValueError(
            f"every (layer, sentences) needs a pre-trained probe and a random twin's; unmatched: {missing}"
        )
    return ProbeComparison(
        layers=tuple(sorted({k[0] for k in pre})),
        sizes=tuple(sorted({k[1] for k in pre})),
        twins=len(seeds),
        pretrained=pre,
        random={k: statistics.median(v) for k, v in rand.items()},
    )
