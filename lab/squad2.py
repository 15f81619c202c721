"""SQuAD 2.0's questions made from SQuAD v1.1, and the scores of its record (data/squad2/, read by
bertlab.experiments.squad2 for chapter 13b; scripts/record_squad2.py runs the fine-tuning).

A question becomes *unanswerable* when it is set beside another paragraph, one that holds none of
its gold answers: of the same article (same topic, the harder kind) or of another. Such questions
are trained to point at [CLS]; every held-out question gets its margin, the best span's score less
the null score, and tau is chosen to maximise SQuAD 2.0's F1 (bertlab.tasks.squad).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import torch

from bertlab.tasks import metrics
from bertlab.tasks.inputs import Features, example_field
from bertlab.tasks.squad import best_null_threshold, decode

UNANSWERABLE_SUFFIX = "-unanswerable"


def unanswerable_questions(
    examples: Sequence[Any], fraction: float = 0.5, seed: int = 0, other_article: float = 0.5
) -> list[Any]:
    """Questions without an answer, made from answerable ones: for a random `fraction` of the
    questions, a copy set beside another paragraph that contains none of its gold answers
    (compared in lower case), with no answers. For a random `other_article` share of them the
    paragraph comes from another article (a question on another topic: the easier kind, id
    `<id>-unanswerable-other`), for the rest from the same article (same topic, so the question
    still looks answerable there: id `<id>-unanswerable-same`). A question whose article has no
    such paragraph is skipped. The examples are dataclasses (as
    bertlab.data.task_data.SquadExample) or dicts with id, title, question, context and answers."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if not 0.0 <= other_article <= 1.0:
        raise ValueError(f"other_article must be in [0, 1], got {other_article}")
    paragraphs: dict[str, list[str]] = {}
    for ex in examples:
        contexts = paragraphs.setdefault(example_field(ex, "title"), [])
        if example_field(ex, "context") not in contexts:
            contexts.append(example_field(ex, "context"))
    rng = random.Random(seed)
    out = []
    for ex in examples:
        if rng.random() >= fraction:
            continue
        title, golds = example_field(ex, "title"), [text.lower() for text, _ in example_field(ex, "answers")]
        elsewhere = rng.random() < other_article and len(paragraphs) > 1
        if elsewhere:
            pool = paragraphs[rng.choice([t for t in paragraphs if t != title])]
        else:
            pool = [c for c in paragraphs[title] if c != example_field(ex, "context")]
        others = [c for c in pool if not any(g in c.lower() for g in golds)]
        if others:
            kind = "other" if elsewhere else "same"
            change = dict(
                id=f"{example_field(ex, 'id')}{UNANSWERABLE_SUFFIX}-{kind}", context=rng.choice(others), answers=[]
            )
            out.append({**ex, **change} if isinstance(ex, dict) else replace(ex, **change))
    return out


def with_unanswerable(
    examples: Sequence[Any], fraction: float = 0.5, seed: int = 0, other_article: float = 0.5
) -> list[Any]:
    """The answerable questions followed by `unanswerable_questions` made from them."""
    return list(examples) + unanswerable_questions(examples, fraction, seed, other_article)


def kind_of(example: Any) -> str:
    """ "answerable", "same article" or "other article": what kind of question `example` is."""
    qid = example_field(example, "id")
    if UNANSWERABLE_SUFFIX not in qid:
        return "answerable"
    return "other article" if qid.endswith("-other") else "same article"


def separation(margins: Any, has_answer: Any) -> float:
    """How well the margins tell questions with an answer from those without: the probability
    that a random question with an answer has a larger margin than a random one without (the area
    under the ROC curve; ties count a half). 0.5 is chance, 1 a perfect split."""
    m = np.asarray(margins, dtype=np.float64)
    has = np.asarray(has_answer, dtype=bool)
    pos, neg = m[has], m[~has]
    if not len(pos) or not len(neg):
        raise ValueError("separation needs questions both with and without an answer")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def separations(margins: Any, examples: Sequence[Any]) -> dict[str, float]:
    """`separation` of the answerable questions from all those without an answer, and from each
    kind of them (kind_of): {"all": ..., "same article": ..., "other article": ...} (a kind with
    no question is left out)."""
    m = np.asarray(margins, dtype=np.float64)
    kinds = np.array([kind_of(ex) for ex in examples])
    out = {"all": separation(m, kinds == "answerable")}
    for kind in ("same article", "other article"):
        keep = (kinds == "answerable") | (kinds == kind)
        if (kinds == kind).any():
            out[kind] = separation(m[keep], kinds[keep] == "answerable")
    return out


def question_margins(
    start_logits: torch.Tensor, end_logits: torch.Tensor, features: Features, max_answer_length: int = 30
) -> tuple[np.ndarray, dict[str, str]]:
    """Per question of `features` (in order): its margin s_hat - s_null, and its best span's text.

    s_hat is the score of the best span `decode` finds for the question over all its windows; s_null
    = start_logits[0] + end_logits[0] ([CLS]), the smallest over its windows (the window most sure
    there is an answer). A question without any allowed span has margin -inf and the text ""."""
    best = decode(start_logits, end_logits, features, max_answer_length, n_best=2)  # candidates, best first
    ids = [example_field(ex, "id") for ex in features.examples]
    s_hat = np.array([best[q][0]["score"] if best[q] else -np.inf for q in ids])
    null = (start_logits[:, 0] + end_logits[:, 0]).float().numpy()
    s_null = np.full(len(ids), np.inf)
    np.minimum.at(s_null, features.meta["example_index"], null)
    return s_hat - s_null, {q: best[q][0]["text"] if best[q] else "" for q in ids}


def answer_scores(answers: dict[str, str], examples: Sequence[Any], measure=metrics.span_f1) -> np.ndarray:
    """What answering scores on each question (0-1): `measure` (span F1, or exact match) of its
    best span (`answers`, id -> text) against its best gold answer; 0 for a question without one."""
    out = []
    for ex in examples:
        said = answers.get(example_field(ex, "id"), "")
        out.append(max((measure(said, t) for t, _ in example_field(ex, "answers")), default=0.0))
    return np.array(out)


def squad2_scores(margins: np.ndarray, answers: dict[str, str], examples: Sequence[Any]) -> dict[str, Any]:
    """SQuAD 2.0's scores of the answer-or-abstain rule on `examples` (with their margins and best
    spans from `question_margins`): tau chosen to maximise F1 on these very questions (as the
    paper chooses it on dev; None when abstaining on every question scores best), the F1 and
    exact match there, the F1 at tau = 0, the F1 of the questions with an answer (abstaining
    scores 0) and the share of those without one where the rule abstains, and the floor of
    abstaining everywhere (the share without an answer)."""
    has = np.array([bool(example_field(ex, "answers")) for ex in examples])
    if has.all() or not has.any():
        raise ValueError("SQuAD 2.0's scores need questions both with and without an answer")
    f1, em = answer_scores(answers, examples), answer_scores(answers, examples, metrics.exact_match)
    tau, best_f1 = best_null_threshold(margins, has, f1)
    answered = margins > tau

    def score(per_question: np.ndarray, at: float) -> float:  # answer where margin > at, else abstain
        return 100 * float(np.where(margins > at, np.where(has, per_question, 0.0), (~has).astype(float)).mean())

    return {
        "questions": int(len(has)),
        "unanswerable": int((~has).sum()),
        "tau": tau if np.isfinite(tau) else None,  # None: abstaining everywhere scored best
        "f1": best_f1,
        "exact_match": score(em, tau),
        "f1_at_tau_0": score(f1, 0.0),
        "has_answer_f1": 100 * float(np.where(answered, f1, 0.0)[has].mean()),
        "no_answer_abstained": 100 * float((~answered)[~has].mean()),
        "abstain_everywhere_f1": 100 * float((~has).mean()),
    }
