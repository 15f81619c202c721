"""The scores BERT's fine-tuning results are reported in, written out so they can be read.

    accuracy, binary F1     SST-2, RTE; MRPC (F1 of the positive class "equivalent")
    Matthews correlation    CoLA; 0 for constant predictions, which a majority guess cannot inflate
    Pearson, Spearman       STS-B: correlation of predicted and gold scores, and of their ranks
    SQuAD EM and F1         the official v1.1 evaluation over normalised answers
    entity-level F1         CoNLL-2003: exact entities read from IOB2 tags, as conlleval counts
    standard error          how far an accuracy on n examples may move by the luck of the sample

Every score is a percentage (0-100), as the paper reports them; the correlations are times 100,
as GLUE reports them (CoLA 60.5 is a Matthews correlation of 0.605).
"""

from __future__ import annotations

import collections
import math
import re
import string
from typing import Any, Iterable, Sequence

import torch

from bertlab.verdict import CLEAR, Reading


def _flat(x: Any) -> torch.Tensor:
    return torch.as_tensor(x).reshape(-1)


def _pair(predictions: Any, labels: Any) -> tuple[torch.Tensor, torch.Tensor]:
    p, y = _flat(predictions), _flat(labels)
    if p.shape != y.shape:
        raise ValueError(f"{p.numel()} predictions but {y.numel()} labels")
    return p, y


# --- Classification ---
def accuracy(predictions: Any, labels: Any) -> float:
    """Percentage of predictions equal to the label."""
    p, y = _pair(predictions, labels)
    if y.numel() == 0:
        raise ValueError("accuracy of an empty set is undefined")
    return 100.0 * (p == y).float().mean().item()


def standard_error(accuracy: float, n: int) -> float:
    """The standard error, in points, of an accuracy (%) measured on `n` examples:
    100 sqrt(p (1 - p) / n), p = accuracy / 100."""
    if n < 1:
        raise ValueError(f"standard_error needs at least one example, got n={n}")
    if not 0.0 <= accuracy <= 100.0:
        raise ValueError(f"accuracy is a percentage in [0, 100], got {accuracy}")
    p = accuracy / 100.0
    return 100.0 * math.sqrt(p * (1.0 - p) / n)


def difference_standard_error(a: float, b: float, n: int) -> float:
    """The standard error of a - b, two accuracies (%) on the same `n` examples, taken as
    independent: sqrt(se(a)^2 + se(b)^2) (cautious: two models on one dev set are correlated)."""
    return math.hypot(standard_error(a, n), standard_error(b, n))


def against_baseline(score: float, baseline: float, n: int, sigmas: float = 2.0) -> Reading:
    """`score` - `baseline` (% on `n` examples) against `sigmas` standard errors of the baseline."""
    se = standard_error(baseline, n)
    how = f"{_sigmas_words(sigmas)} of {se:.1f} points on {n:,} examples"
    return Reading.from_noise(score - baseline, se, how, sigmas)


def against_each_other(a: float, b: float, n: int, sigmas: float = 2.0) -> Reading:
    """`a` - `b` (% on the same `n` examples) against `sigmas` standard errors of the difference."""
    se = difference_standard_error(a, b, n)
    how = f"{_sigmas_words(sigmas)} of a difference on {n:,} examples, {se:.1f} points each"
    return Reading.from_noise(a - b, se, how, sigmas)


def _sigmas_words(sigmas: float) -> str:
    words = {1.0: "one standard error", 2.0: "two standard errors", 3.0: "three standard errors"}
    return words.get(float(sigmas), f"{sigmas:g} standard errors")


def clears(score: float, baseline: float, n: int, sigmas: float = 2.0) -> bool:
    """Whether `score` lies more than `sigmas` standard errors above `baseline`."""
    return against_baseline(score, baseline, n, sigmas).words == CLEAR


def binary_f1(predictions: Any, labels: Any, positive: int = 1) -> dict[str, float]:
    """Precision, recall and F1 = 2PR / (P + R) of the `positive` class (percentages)."""
    p, y = _pair(predictions, labels)
    tp = ((p == positive) & (y == positive)).sum().item()
    fp = ((p == positive) & (y != positive)).sum().item()
    fn = ((p != positive) & (y == positive)).sum().item()
    return _prf(tp, tp + fp, tp + fn)


def _prf(correct: int, predicted: int, gold: int) -> dict[str, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": 100.0 * precision, "recall": 100.0 * recall, "f1": 100.0 * f1}


# --- CoLA and STS-B: correlations (times 100) ---
def confusion_matrix(predictions: Any, labels: Any, num_labels: int) -> list[list[int]]:
    """Counts of (gold i, predicted j) at row i, column j: [[TN, FP], [FN, TP]] for two classes."""
    p, y = _pair(predictions, labels)
    if p.is_floating_point() or y.is_floating_point():
        raise ValueError("confusion_matrix takes class labels (integers); take the argmax of the logits first")
    for name, t in (("prediction", p), ("label", y)):
        if t.numel() and (t.min() < 0 or t.max() >= num_labels):
            raise ValueError(f"a {name} outside 0..{num_labels - 1}; is num_labels={num_labels} right?")
    counts = torch.bincount(y.long() * num_labels + p.long(), minlength=num_labels * num_labels)
    return counts.reshape(num_labels, num_labels).tolist()


def matthews_corrcoef(predictions: Any, labels: Any) -> float:
    """Matthews correlation coefficient times 100 (CoLA). For two classes

        MCC = (TP TN - FP FN) / sqrt((TP + FP)(TP + FN)(TN + FP)(TN + FN)),

    for K classes Gorodkin's R_K (as sklearn): with gold counts t_k, predicted counts p_k, c
    correct of s, MCC = (c s - sum p_k t_k) / sqrt((s^2 - sum p_k^2) (s^2 - sum t_k^2)).
    A zero denominator (constant predictions or labels) gives 0, as in sklearn."""
    p, y = _pair(predictions, labels)
    if y.numel() == 0:
        raise ValueError("the Matthews correlation of an empty set is undefined")
    if p.is_floating_point() or y.is_floating_point():
        if not (torch.equal(p, p.round()) and torch.equal(y, y.round())):
            raise ValueError(
                "matthews_corrcoef takes class labels (integers), not scores; take the argmax of the logits first"
            )
    classes, index = torch.unique(torch.cat([y, p]).long(), return_inverse=True)
    K, n = len(classes), y.numel()
    confusion = torch.bincount(index[:n] * K + index[n:], minlength=K * K).reshape(K, K).double()
    t, q = confusion.sum(1), confusion.sum(0)  # gold and predicted counts per class
    c, s = confusion.trace(), float(n)
    denominator = ((s * s - (q * q).sum()) * (s * s - (t * t).sum())).sqrt()
    if denominator == 0:
        return 0.0
    return 100.0 * float((c * s - (q * t).sum()) / denominator)


def _correlation_inputs(predictions: Any, labels: Any, undefined: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Finite float64 vectors of one shape, at least two, neither constant: else ValueError."""
    x, y = _flat(predictions).double(), _flat(labels).double()
    for v, name in ((x, "predictions"), (y, "labels")):
        if not torch.isfinite(v).all():
            raise ValueError(f"{name} contain NaN or infinite values")
    if x.shape != y.shape:
        raise ValueError(f"{x.numel()} predictions but {y.numel()} labels")
    if x.numel() < 2:
        raise ValueError(f"a correlation needs at least 2 pairs, got {x.numel()}")
    for v, name in ((x, "predictions"), (y, "labels")):
        if bool((v == v[0]).all()):
            raise ValueError(f"the {name} are constant (all {float(v[0]):g}): {undefined}")
    return x, y


def pearson(predictions: Any, labels: Any) -> float:
    """Pearson correlation times 100 (STS-B):

        r = sum_i (x_i - mx)(y_i - my) / sqrt(sum_i (x_i - mx)^2 sum_i (y_i - my)^2).

    A constant input has no variance, so r is undefined: ValueError."""
    x, y = _correlation_inputs(predictions, labels, "a correlation with a constant is undefined (zero variance)")
    dx, dy = x - x.mean(), y - y.mean()
    return 100.0 * float((dx * dy).sum() / ((dx * dx).sum() * (dy * dy).sum()).sqrt())


def average_ranks(x: Any) -> torch.Tensor:
    """Ranks 1..n of x (float64), ties sharing their average: [10, 20, 20, 30] -> [1, 2.5, 2.5, 4]."""
    v = _flat(x).double()
    order = torch.argsort(v, stable=True)
    sorted_v = v[order]
    starts_group = torch.ones(v.numel(), dtype=torch.bool)
    starts_group[1:] = sorted_v[1:] != sorted_v[:-1]
    group = torch.cumsum(starts_group.long(), 0) - 1  # group index of each sorted position
    counts = torch.bincount(group).double()
    first = torch.cumsum(counts, 0) - counts  # 0-based sorted position where each group starts
    ranks = torch.empty_like(v)
    ranks[order] = (first + (counts + 1) / 2)[group]  # mean of the ranks first+1 .. first+count
    return ranks


def spearman(predictions: Any, labels: Any) -> float:
    """Spearman's rank correlation times 100 (STS-B): the Pearson correlation of `average_ranks`."""
    x, y = _correlation_inputs(predictions, labels, "a rank correlation with a constant is undefined (every rank ties)")
    return pearson(average_ranks(x), average_ranks(y))


# --- SQuAD v1.1: exact match and F1 over normalised answers ---
_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """The official SQuAD normalisation: lowercase, no punctuation, no a/an/the, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 if the normalised texts are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def span_f1(prediction: str, gold: str) -> float:
    """F1 (0-1) of the bags of normalised tokens of the two answers."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    common = sum((collections.Counter(pred_tokens) & collections.Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions: dict[str, str], gold_answers: dict[str, Sequence[str]]) -> dict[str, float]:
    """Exact match and F1 (percentages) over the questions of `gold_answers` (id -> texts), each
    against its best gold answer; a question without prediction scores 0 ("missing")."""
    if not gold_answers:
        raise ValueError("no questions to score")
    em = f1 = 0.0
    missing = 0
    for qid, golds in gold_answers.items():
        if not golds:
            raise ValueError(f"question {qid!r} has no gold answer; SQuAD v1.1 questions all have one")
        if qid not in predictions:
            missing += 1
            continue
        pred = predictions[qid]
        em += max(exact_match(pred, g) for g in golds)
        f1 += max(span_f1(pred, g) for g in golds)
    n = len(gold_answers)
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n, "questions": n, "missing": missing}


# --- Entity-level F1 for IOB2 tags (CoNLL-2003) ---
def _split_tag(tag: str) -> tuple[str, str]:
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', '')."""
    if tag == "O":
        return "O", ""
    prefix, sep, kind = tag.partition("-")
    if not sep or prefix not in ("B", "I") or not kind:
        raise ValueError(f"tag {tag!r} is not IOB2: expected 'O', 'B-TYPE' or 'I-TYPE'")
    return prefix, kind


def get_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The entities of one tagged sentence as (type, first, last) word indices, inclusive. An I-X
    that continues no X entity starts one (conlleval's lenient reading of invalid IOB2)."""
    entities = []
    start, kind = None, ""
    for i, tag in enumerate(tags):
        prefix, t = _split_tag(tag)
        continues = prefix == "I" and start is not None and t == kind
        if start is not None and not continues:  # the open entity ends before i
            entities.append((kind, start, i - 1))
            start = None
        if prefix == "B" or (prefix == "I" and not continues):
            start, kind = i, t
    if start is not None:
        entities.append((kind, start, len(tags) - 1))
    return entities


def entity_f1(
    gold_tags: Iterable[Sequence[str]], predicted_tags: Iterable[Sequence[str]], by_type: bool = False
) -> dict[str, Any]:
    """Micro-averaged precision, recall and F1 (percentages) over exact entities (type, first and
    last word); with by_type, "types": {type: {precision, recall, f1, support}}."""
    gold_set, pred_set = set(), set()
    n_sentences = 0
    for s, (gold, pred) in enumerate(zip(gold_tags, predicted_tags, strict=True)):
        if len(gold) != len(pred):
            raise ValueError(f"sentence {s}: {len(gold)} gold tags but {len(pred)} predicted tags")
        gold_set.update((s, *e) for e in get_entities(gold))
        pred_set.update((s, *e) for e in get_entities(pred))
        n_sentences += 1
    scores: dict[str, Any] = _prf(len(gold_set & pred_set), len(pred_set), len(gold_set))
    scores.update(gold_entities=len(gold_set), predicted_entities=len(pred_set), sentences=n_sentences)
    if by_type:
        types = sorted({e[1] for e in gold_set | pred_set})
        scores["types"] = {}
        for t in types:
            g = {e for e in gold_set if e[1] == t}
            p = {e for e in pred_set if e[1] == t}
            scores["types"][t] = {**_prf(len(g & p), len(p), len(g)), "support": len(g)}
    return scores


ERROR_KINDS = ("correct", "wrong_type", "wrong_span", "wrong_type_and_span", "spurious", "missed")


def entity_errors(gold_tags: Iterable[Sequence[str]], predicted_tags: Iterable[Sequence[str]]) -> dict[str, int]:
    """Where entity-level F1 loses its points: every predicted entity is counted once as

        correct              a gold entity has the same type, first and last word
        wrong_type           a gold entity has the same words but another type
        wrong_span           it overlaps a gold entity of its type, with other boundaries
        wrong_type_and_span  it overlaps only gold entities of other types and boundaries
        spurious             it overlaps no gold entity

    and every gold entity that no predicted entity overlaps is "missed"."""
    counts = dict.fromkeys(ERROR_KINDS, 0)
    for s, (gold, pred) in enumerate(zip(gold_tags, predicted_tags, strict=True)):
        if len(gold) != len(pred):
            raise ValueError(f"sentence {s}: {len(gold)} gold tags but {len(pred)} predicted tags")
        g, p = get_entities(gold), get_entities(pred)
        gold_set = set(g)
        for kind, a, b in p:
            overlapping = [(k, c, d) for k, c, d in g if c <= b and a <= d]
            if (kind, a, b) in gold_set:
                counts["correct"] += 1
            elif any((c, d) == (a, b) for _, c, d in overlapping):
                counts["wrong_type"] += 1
            elif any(k == kind for k, _, _ in overlapping):
                counts["wrong_span"] += 1
            elif overlapping:
                counts["wrong_type_and_span"] += 1
            else:
                counts["spurious"] += 1
        counts["missed"] += sum(not any(c <= b and a <= d for _, a, b in p) for _, c, d in g)
    return counts
