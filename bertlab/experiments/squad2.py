"""SQuAD 2.0's answer-or-abstain rule on the book's own BERT: the recorded study and fine-tuned
model (data/squad2/) that chapter 13b's demo loads, and the sentences under that demo.

The questions are built from SQuAD v1.1: one becomes unanswerable beside another paragraph of the
same article that holds none of its answers. As in the paper (section 4.3), such questions point
at [CLS], and a span is answered only when its score beats the null score by a threshold tau
chosen on held-out questions (bertlab.tasks.squad).
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
    """Chapter 13b's sentences under its demo: `margins` {"answerable": m, "no answer": m} of the
    model it ran, `record_` the record when that was the fine-tuned model (None: an untrained span
    layer), `n_spans` the spans s_hat was the best of, `cut_word` whether its best span cut a word."""
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
