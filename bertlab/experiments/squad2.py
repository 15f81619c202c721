"""SQuAD 2.0's answer-or-abstain rule on the book's own BERT: its record (data/squad2/) and fine-tuned
model, which chapter 13b's demo loads, and the sentences under that demo. The record is made and
read by the lab (lab/squad2.py; scripts/record_squad2.py runs it), which publishes what the chapter
shows of it as data/results/squad2.json.

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
from bertlab.prose import number

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
