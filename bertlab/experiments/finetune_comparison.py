"""A fine-tuning comparison in words: the same architecture from pre-trained and from random weights
(chapters 11 and 12), with how far one dev set's luck can move the scores."""

from __future__ import annotations

import math

from bertlab.prose import count
from bertlab.tasks.metrics import against_baseline, against_each_other, standard_error
from bertlab.training.finetune import FinetuneResult
from bertlab.verdict import BELOW, CLEAR, Reading


def final_loss(result: FinetuneResult) -> float:
    """The median over seeds of the mean training loss of the last epoch."""
    losses = sorted(run.history[-1]["train_loss"] for run in result.runs)
    return losses[len(losses) // 2]


def against_majority(result: FinetuneResult, majority: float, n_dev: int) -> str:
    """'71.3%, 20.2 points above the majority' or '52.1%, within two standard errors of the
    majority class'."""
    above = against_baseline(result.median, majority, n_dev)
    if above.words == CLEAR:
        return f"{result.median:.1f}%, {above.gain:.1f} points above the majority"
    if above.words == BELOW:
        return f"{result.median:.1f}%, more than two standard errors below the majority class"
    return f"{result.median:.1f}%, within two standard errors of the majority class"


def loss_words(result: FinetuneResult) -> str:
    """Where the last epoch's training loss ends against ln 2, the loss of a coin flip."""
    loss = final_loss(result)
    where = "below" if loss < math.log(2) - 0.05 else "at about"
    return f"its training loss ends {where} ln 2 ({loss:.3f} against {math.log(2):.3f})"


def live_gain(pretrained: FinetuneResult, scratch: FinetuneResult, n_dev: int) -> Reading:
    """Pre-training's gain (medians) against two standard errors of a difference of accuracies."""
    return against_each_other(pretrained.median, scratch.median, n_dev)


def gap_words(pretrained: FinetuneResult, scratch: FinetuneResult, n_dev: int) -> str:
    """Pre-training's gain (medians) against its standard error, and what that lets one conclude."""
    r = live_gain(pretrained, scratch, n_dev)
    se = (r.high - r.gain) / 2
    seeds = len(pretrained.runs)
    runs = "one seed" if seeds == 1 else f"the median of {count(seeds, 'seed')}"
    head = (
        f"In this live run pre-training is worth {r.gain:+.1f} points ({runs} each; the difference "
        f"between two accuracies on {n_dev:,} sentences has a standard error of about {se:.1f} points)"
    )
    if r.words == CLEAR:
        return head + ": more than two standard errors, a gain the dev set's luck alone rarely makes."
    if r.words == BELOW:
        return head + ": the model from scratch is ahead by more than two standard errors."
    return (
        head + ": within two standard errors, so this run alone cannot tell the two apart. The "
        "record's learning curve further down, and the same fine-tuning run with more seeds, are "
        "the measurement to read."
    )


def reading(
    pretrained: FinetuneResult,
    scratch: FinetuneResult,
    comparison: FinetuneResult | None,
    majority: float,
    n_dev: int,
    n_train: int,
    pretrained_name: str = "the book's BERT",
) -> str:
    """The paragraph under chapter 11's live comparison: each arm against the majority class and
    ln 2, the gain against the noise, and `comparison` if given. `pretrained_name` names the
    pre-trained arm, so a page that fell back to another encoder never credits the book's BERT."""
    steps = len(pretrained.runs[0].step_losses)
    text = (
        f"{steps} optimizer steps on {n_train:,} labelled sentences. The pre-trained encoder reaches "
        f"{against_majority(pretrained, majority, n_dev)}, and {loss_words(pretrained)}. The randomly "
        f"initialised copy of the same network, given the same steps, reaches "
        f"{against_majority(scratch, majority, n_dev)}, and {loss_words(scratch)}: ln 2 is the loss "
        f"of a coin flip. {gap_words(pretrained, scratch, n_dev)} One dev sentence is "
        f"{100 / n_dev:.2f} points; one standard error of the majority baseline, "
        f"{standard_error(majority, n_dev):.1f}."
    )
    if comparison is not None:
        text += (
            f" MiniLM, pre-trained far longer, reaches {comparison.median:.1f}% on the same sentences, "
            f"{comparison.median - pretrained.median:+.1f} points from {pretrained_name}."
        )
    return text


def record_readings(row: dict, baseline: float, n_dev: int) -> tuple[Reading, Reading]:
    """A ReferenceRun.gains() row's two readings: the pre-trained arm against its twin from scratch
    (the seeds' range), and against the majority `baseline` (two standard errors of an accuracy on
    `n_dev` examples; for another metric, the seeds' range)."""
    twin = Reading.from_seeds(row["pretrained_scores"], row["scratch_scores"], gain=row["gain"])
    if row["metric"] == "accuracy":
        floor = against_baseline(row["pretrained"], baseline, n_dev)
    else:
        floor = Reading.from_seeds(row["pretrained_scores"], [baseline], gain=row["pretrained"] - baseline)
    return twin, floor


def record_reading(row: dict, baseline: float, n_dev: int, n_train: int, title: str) -> str:
    """Chapter 12's sentences on a recorded pair task: the score and its two readings
    (`record_readings`), and what they allow one to say."""
    twin, floor = record_readings(row, baseline, n_dev)
    text = (
        f"On {title} the book's own BERT scores {row['pretrained']:.1f} ({row['metric']}): "
        f"{twin.phrase('its from-scratch twin')}, and {floor.phrase('the majority label')}. "
    )
    if twin.clear and floor.clear:
        return text + "Pre-training lifts it clear of both."
    if floor.clear:
        return text + (
            "It is clear of the majority label but not of its twin from scratch, so the seeds do not "
            "credit pre-training with what it learned."
        )
    return text + (
        f"Learning this pair task from {n_train:,} labelled pairs is beyond what so small a model took "
        "from its pre-training; the paper's scores (quoted above) show what a full-size one does."
    )


def record_summary(readings: dict[str, tuple[Reading, Reading]]) -> str:
    """One summary bullet over recorded tasks ({title: `record_readings`}), in the readings' words."""
    parts = [
        f"{title} {twin.gain:+.1f} from scratch ({twin.words} it) and {floor.gain:+.1f} from the majority "
        f"label ({floor.words} it)"
        for title, (twin, floor) in readings.items()
    ]
    return "The book's own BERT, as recorded: " + "; ".join(parts) + "."


def curve_table(rows: list[dict], epochs: dict[int, int]) -> str:
    """Markdown: the record's SST-2 learning curve (gains() rows), the medians at each number of
    labelled sentences (with its `epochs`), and each gain read against the seeds' range."""
    lines = [
        f"Medians of the pipeline's {count(len(rows[0]['pretrained_scores']), 'seed')}, each gain read "
        "against their range:",
        "",
        "| labelled sentences | epochs | pre-trained | from scratch | gain | reading |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        n, a, b = r["train_examples"], r["pretrained"], r["scratch"]
        seen = Reading.from_seeds(r["pretrained_scores"], r["scratch_scores"], r["gain"])
        lines.append(f"| {n:,} | {epochs[n]} | {a:.1f} | {b:.1f} | {r['gain']:+.1f} | {seen.words} scratch |")
    return "\n".join(lines)
