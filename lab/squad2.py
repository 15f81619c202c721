"""SQuAD 2.0's questions made from SQuAD v1.1, the scores of its record (data/squad2/;
scripts/record_squad2.py runs the fine-tuning), and what chapter 13b says of it: its table, the
verdict on whether the book's BERT can abstain, the reading and the summary line, published as
data/results/squad2.json (python -m lab.publish).

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

from bertlab.prose import count, rate
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


ROWS = {  # the record's scores, as the table names them
    "f1": "F1 at the chosen tau",
    "exact_match": "exact match at the chosen tau",
    "f1_at_tau_0": "F1 at tau = 0",
    "has_answer_f1": "F1 on the questions with an answer",
    "no_answer_abstained": "questions without an answer where it abstains (%)",
}


SEPARATION_ROWS = {  # separation (chance 0.5, perfect 1) of the answerable questions from ...
    "all": "separation from every question without an answer (0.5 = chance)",
    "same article": "... from those beside a paragraph of the same article",
    "other article": "... from those beside a paragraph of another article",
}


def scores_table(record_: dict[str, Any]) -> str:
    """A Markdown table: the span layer untrained and fine-tuned, on every score of ROWS, then the
    floor of abstaining everywhere."""
    before, after = record_["untrained_span_layer"], record_["fine_tuned"]
    lines = ["| held-out questions | span layer untrained | fine-tuned |", "|---|---:|---:|"]
    for key, label in ROWS.items():
        lines.append(f"| {label} | {before[key]:.1f} | {after[key]:.1f} |")
    lines.append(f"| tau chosen | {_tau(before['tau'])} | {_tau(after['tau'])} |")
    for kind, label in SEPARATION_ROWS.items():
        if kind in record_["separation"]["fine_tuned"]:
            b, a = record_["separation"]["untrained_span_layer"][kind], record_["separation"]["fine_tuned"][kind]
            lines.append(f"| {label} | {b:.2f} | {a:.2f} |")
    lines.append(f"| floor: abstain on every question (F1) | {before['abstain_everywhere_f1']:.1f} | |")
    return "\n".join(lines)


def _tau(tau: float | None) -> str:
    return "none (abstain everywhere)" if tau is None else f"{tau:+.2f}"


def reading(record_: dict[str, Any]) -> str:
    """What fine-tuning bought, generated from the record: the F1 against the abstain-everywhere
    floor, before and after, and how the fine-tuned model splits the two kinds of question."""
    s, before, after = record_["settings"], record_["untrained_span_layer"], record_["fine_tuned"]
    floor = after["abstain_everywhere_f1"]
    text = (
        f"On {s['eval_questions']:,} held-out questions ({s['eval_unanswerable']:,} of them without an answer), "
        f"abstaining on every question already scores an F1 of {floor:.1f}. With its span layer untrained the "
        f"book's BERT reaches {before['f1']:.1f} at its best tau"
    )
    text += (
        ": that best tau abstains everywhere, since no span it finds is worth answering."
        if before["tau"] is None or before["f1"] <= floor + 0.05
        else f", {before['f1'] - floor:+.1f} points above that floor."
    )
    gain = after["f1"] - floor
    text += first_stage_reading(record_)
    text += f" Fine-tuned on {s['train_questions']:,} questions ({s['train_unanswerable']:,} without an answer), "
    if after["tau"] is None:  # no threshold beat abstaining on every question
        text += (
            f"it still does best by abstaining everywhere ({after['f1']:.1f}): no tau that lets it answer "
            "scores more, so it answers none of the questions that have an answer."
        )
    else:
        text += (
            f"it reaches {after['f1']:.1f} ({gain:+.1f} over the floor): at its tau it answers questions that "
            f"have an answer with an F1 of {after['has_answer_f1']:.1f} and abstains on "
            f"{after['no_answer_abstained']:.0f}% of those without one."
        )
    sep = record_["separation"]["fine_tuned"]
    if "same article" in sep and "other article" in sep:
        text += (
            f" Its margins tell the questions with an answer from those beside another article's paragraph "
            f"with a separation of {sep['other article']:.2f} (0.5 is chance, 1 a perfect split), and from those "
            f"beside another paragraph of their own article with {sep['same article']:.2f}."
        )
    overall = sep["all"]
    text += (
        " That is close to chance: this small model has learned little of when a paragraph does not answer "
        "a question, and abstaining is still nearly its best answer."
        if overall < 0.6
        else " It has learned part of when a paragraph does not answer a question."
        if overall < 0.8
        else " It has learned, for the most part, when a paragraph does not answer a question."
    )
    return text


def settings_words(record_: dict[str, Any]) -> str:
    """How the record's model was fine-tuned, in one sentence (Markdown, italic)."""
    s = record_["settings"]
    first = s.get("v1_epochs_first") or 0
    stage = (
        f"first for {count(first, 'epoch')} on the training side's questions with an answer alone (SQuAD "
        "v1.1, as chapter 13 fine-tunes), then "
        if first
        else ""
    )
    return (
        f"*Fine-tuned {stage}for {count(s['epochs'], 'epoch')} on the mix, at learning rate {rate(s['lr'])}, "
        f"batch {s['batch_size']}, windows of {s['max_len']} tokens (stride {s['doc_stride']}); a copy without "
        f"an answer for {s['unanswerable_fraction']:.0%} of the training questions "
        f"({s.get('eval_unanswerable_fraction', s['unanswerable_fraction']):.0%} of the held-out ones), "
        f"{s['other_article_share']:.0%} of them beside another article's paragraph.*"
    )


def first_stage_reading(record_: dict[str, Any]) -> str:
    """Where the record fine-tuned on SQuAD v1.1 first: what that stage alone gave, on the same
    held-out questions (empty when it had no such stage)."""
    first = record_.get("after_v1_first")
    if not first:
        return ""
    sq, sep = first["squad2"], first["separation"]["all"]
    best = (
        "no more than abstaining everywhere"
        if sq["tau"] is None or sq["f1"] <= sq["abstain_everywhere_f1"] + 0.05
        else f"{sq['f1'] - sq['abstain_everywhere_f1']:+.1f} over abstaining everywhere"
    )
    return (
        f" After SQuAD v1.1 alone ({count(record_['settings']['v1_epochs_first'], 'epoch')}, answerable questions "
        f"only), it scores {first['v1_answerable_only']['f1']:.1f} F1 on the held-out questions with an answer, "
        f"its margins separate them from those without at {sep:.2f}, and its best tau there scores "
        f"{sq['f1']:.1f}, {best}."
    )


def summary(record_: dict[str, Any]) -> str:
    """Chapter 13b's summary line on SQuAD 2.0, from the same reading as its verdict (can_abstain)."""
    rule = (
        "SQuAD 2.0 needs no new parameters: the null score at `[CLS]` competes with the best span, and a "
        "threshold $\\tau$, chosen on dev, sets how readily the model answers."
    )
    sep = record_["separation"]["fine_tuned"]["all"]
    if can_abstain(record_):
        return (
            f"{rule} The book's own BERT, fine-tuned with unanswerable questions made from SQuAD v1.1, has "
            f"learned part of when to abstain: its margins separate the two kinds of question at {sep:.2f} "
            "(0.5 is chance), and its best threshold beats abstaining everywhere."
        )
    return (
        f"{rule} The book's own BERT, fine-tuned with unanswerable questions made from SQuAD v1.1, cannot yet "
        f"abstain: its margins separate the two kinds of question at only {sep:.2f} (0.5 is chance), because a "
        "model must find answers before it can tell when a paragraph holds none."
    )


# Quoted from Devlin et al. (2018): BERT-Large, a single model. Table 2: SQuAD v1.1 dev F1;
# Table 3: SQuAD 2.0 test F1.
PAPER_V1_DEV_F1 = 90.9
PAPER_SQUAD2_TEST_F1 = 83.1
SEPARATES = 0.6  # a separation (ROC area) below this is read as close to chance (0.5)


def can_abstain(record_: dict[str, Any]) -> bool:
    """Whether the fine-tuned model of the record has learned to abstain: a threshold that
    answers some questions beats abstaining everywhere, and its margins separate the questions with
    an answer from those without at SEPARATES or better."""
    return record_["fine_tuned"]["tau"] is not None and record_["separation"]["fine_tuned"]["all"] >= SEPARATES


def verdict(record_: dict[str, Any]) -> str:
    """One paragraph, generated from the record, saying first whether the book's BERT can abstain
    (can_abstain), with the numbers that show it, and why; then the paper's figure, quoted."""
    after, sep = record_["fine_tuned"], record_["separation"]["fine_tuned"]["all"]
    v1 = record_["v1_answerable_only"]["f1"]
    paper = (
        f"BERT-Large, which scores {PAPER_V1_DEV_F1} F1 on SQuAD v1.1's dev set, reaches "
        f"{PAPER_SQUAD2_TEST_F1} F1 on SQuAD 2.0's test set (both quoted from the paper, Tables 2 and 3)."
    )
    if not can_abstain(record_):
        best = (
            "abstains on every question"
            if after["tau"] is None
            else f"answers the questions with an answer with an F1 of only {after['has_answer_f1']:.1f}"
        )
        return (
            f"**The book's BERT cannot yet abstain.** Fine-tuned with unanswerable questions, its margins "
            f"separate the held-out questions with an answer from those without at {sep:.2f}, where 0.5 is "
            f"chance and 1 a perfect split, and its best threshold {best}. The reason is upstream of the "
            f"threshold: to tell that a paragraph holds no answer, a model must first find answers where "
            f"they are, and this one scores {v1:.1f} F1 on the answerable held-out questions. What follows "
            f"shows the rule and how its threshold is chosen, not a model that uses it well. " + paper
        )
    return (
        f"**The book's BERT has learned part of when to abstain.** Its margins separate the held-out "
        f"questions with an answer from those without at {sep:.2f} (0.5 is chance, 1 a perfect split), and "
        f"its best threshold scores {after['f1']:.1f} F1 against {after['abstain_everywhere_f1']:.1f} for "
        f"abstaining everywhere; it scores {v1:.1f} F1 on the answerable held-out questions. " + paper
    )
