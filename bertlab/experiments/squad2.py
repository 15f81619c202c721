"""SQuAD 2.0's answer-or-abstain rule on the book's own BERT: its record (data/squad2/), as chapter
13b reads it. The record is made by the lab (lab/squad2.py: the unanswerable questions, the margins,
the scores; scripts/record_squad2.py runs it).

SQuAD 2.0 (Rajpurkar et al. 2018) is not in the book's offline mirror, but its idea can be built
from v1.1: a question becomes *unanswerable* when it is set beside another paragraph of the same
article, one that holds none of its gold answers. The paragraph is on the same topic, so the
question still looks answerable there, which is the property SQuAD 2.0's crowd workers wrote their
questions for (theirs are harder: written against the very paragraph). BERT's recipe for such
questions needs no new parameters (the paper's section 4.3): they are trained to point at [CLS],
and at prediction time a span is answered only when its score beats the null score by a threshold
tau chosen on held-out questions (bertlab.tasks.squad: null_and_best_span, best_null_threshold).

    from bertlab.experiments import squad2; squad2.load()   # the record, as chapter 13b reads it
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bertlab.data.records import records_dir
from bertlab.prose import count, number, rate

SQUAD2_DIR = records_dir("squad2")
RECORD_FILE = "results.json"


def load(folder: str | Path = SQUAD2_DIR) -> dict[str, Any] | None:
    """The recorded SQuAD 2.0-style study (data/squad2/results.json), or None without a record."""
    path = Path(folder) / RECORD_FILE
    return json.loads(path.read_text()) if path.exists() else None


def model_folder(folder: str | Path = SQUAD2_DIR) -> Path:
    """The recorded fine-tuned model (a bertlab model folder: fp16 weights, config, tokenizer)."""
    path = Path(folder) / "model"
    if not (path / "model.safetensors").exists():
        raise FileNotFoundError(f"no SQuAD 2.0 model at {path}: record it with `python scripts/record_squad2.py`")
    return path


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


def demo_reading(margins: dict[str, float], record_: dict[str, Any] | None, n_spans: int, cut_word: bool) -> str:
    """Chapter 13b's sentences under its two-question demo: `margins` {"answerable": m, "no answer":
    m} of the model it ran, `record_` the SQuAD 2.0 record when that model was the fine-tuned one
    (None: an untrained span layer), `n_spans` how many spans the last question's s_hat was the
    best of, `cut_word` whether its best span cut a word in two."""
    text = (
        "For each question the decision flips at $\\tau = \\hat s - s_{\\text{null}}$: just below it the "
        "model answers, just above it abstains. "
    )
    if record_ is None:
        text += (
            f"At $\\tau = 0$ the untrained layer answers {number(sum(m > 0 for m in margins.values()))} of the "
            f"{number(len(margins))} questions. $\\hat s$ is the largest of {n_spans:,} span scores while "
            "$s_{\\text{null}}$ is a single score, and a maximum over many scores is large by chance alone: "
            "an untrained model leans towards answering. Training on unanswerable questions raises the null "
            "score where there is no answer, and $\\tau$ corrects what bias is left."
        )
    else:
        tau = record_["fine_tuned"]["tau"]
        text += (
            f"The fine-tuned model's margins are {margins['answerable']:+.2f} for the question the paragraph "
            f"answers and {margins['no answer']:+.2f} for the one it does not"
        )
        if margins["answerable"] <= margins["no answer"]:
            text += " (the wrong way round: the question without an answer looks no less answerable to it)"
        text += "; "
        if tau is None:
            text += "its held-out questions were best served by abstaining everywhere."
        else:
            first, second = margins["answerable"] > tau, margins["no answer"] > tau
            verb = {True: "answers", False: "abstains on"}
            what = (
                f"{verb[first]} both" if first == second else f"{verb[first]} the first and {verb[second]} the second"
            )
            text += f"with the $\\tau$ chosen on held-out questions ({tau:+.2f}) it {what}."
    if cut_word:
        text += (
            " The last best span cuts a word in two (its word pieces are printed above): the span layer has "
            "not learned where answers begin and end."
        )
    return text
