"""The sentence a Part II chapter opens with, where it rests on the book's record alone or on what
the page measures, so that the first screen states a result with the numbers the page shows later.

    pairs_finding(run, dev)                  # chapter 12
    ner_finding(run)                         # chapter 14
    features_finding(study, who)             # chapter 15, from its own experiments.feature_study
    features_reading(study, who)             # chapter 15, Table 7's usual comparisons in words
    heads_finding(heads, expected, n, who)   # chapter 16, from the heads it measures first

Each takes what the chapter has already read or measured (a `reference.ReferenceRun`, a feature
study, head tables), so the same numbers feed the opening and the tables below it. The openings
that rest on the lab's studies as well (chapters 10, 11, 13 and 17) the lab writes and publishes
(lab/findings.py, data/results/); the chapters read them as data.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from bertlab.analysis import attention as aa
from bertlab.experiments.finetune_comparison import record_readings
from bertlab.prose import TASK_TITLES, and_list, count, number, verb_agreeing
from bertlab.tasks import feature_based as fb
from bertlab.tasks import metrics
from bertlab.verdict import BELOW, CLEAR, WITHIN, Reading

# BERT-Base as the paper reports it: SST-2 and RTE test accuracy and MRPC test F1 (Table 1), SQuAD
# v1.1 and CoNLL-2003 dev F1 (Tables 2 and 3)
BERT_BASE_QUOTED = {"sst2": 93.5, "mrpc": 88.9, "rte": 66.4, "squad": 88.5, "conll2003": 96.4}


def majority_score(dev: Sequence[Any], metric: str) -> float:
    """What always answering the most frequent dev label scores (`metric`: accuracy or f1, in %)."""
    gold = torch.tensor([ex.label for ex in dev])
    guess = torch.full_like(gold, int(gold.float().mean() >= 0.5))
    return metrics.accuracy(guess, gold) if metric == "accuracy" else metrics.binary_f1(guess, gold)["f1"]


def pairs_finding(run: Any, dev: dict[str, Sequence[Any]]) -> str:
    """Chapter 12: the record's MRPC and RTE, each read against its twin from scratch and against
    always answering the majority label (finetune_comparison.record_readings); `dev`: each task's
    dev examples, for the majority label's score and the noise of one dev set."""
    parts, clear = [], 0
    for g in (g for g in run.gains() if g["task"] in dev):
        base = majority_score(dev[g["task"]], g["metric"])
        twin, floor = record_readings(g, base, len(dev[g["task"]]))
        clear += twin.clear
        metric = "F1" if g["metric"] == "f1" else g["metric"]
        parts.append(
            f"on {TASK_TITLES[g['task']]}, {metric} {g['pretrained']:.1f} against {g['scratch']:.1f} from scratch, "
            f"{twin.phrase('it')}, and {floor.gain:+.1f} from always answering the majority label "
            f"({floor.words} it)"
        )
    if not parts:
        raise ValueError(f"the record holds none of {sorted(dev)}; python -m lab.reference_run makes them")
    lead = (
        "pre-training does not separate the book's own BERT from the same network trained from scratch"
        if clear == 0
        else f"pre-training separates the book's own BERT from its twin from scratch on {count(clear, 'task')}"
    )
    quoted = " and ".join(f"{BERT_BASE_QUOTED[t]} on {TASK_TITLES[t]}" for t in dev if t in BERT_BASE_QUOTED)
    small = (
        " The book's model is too small to show the paper's effect on these tasks; BERT-Base's scores "
        "are what would show it."
        if clear == 0
        else ""
    )
    return (
        f"**In short.** On sentence pairs {lead}: {'; '.join(parts)}. BERT-Base reaches {quoted} (quoted, "
        f"test sets).{small}"
    )


def ner_finding(run: Any) -> str:
    """Chapter 14: the record's CoNLL-2003 entity F1 from pre-trained and from random weights, and
    where its gain ranks among the tasks the record fine-tuned (each task at its largest gain)."""
    ner = _gain(run, "conll2003")
    best: dict[str, float] = {}
    for g in run.gains():
        best[g["task"]] = max(best.get(g["task"], g["gain"]), g["gain"])
    ranked = sorted(best, key=best.get, reverse=True)
    rank = (
        "the largest gain of any task the book's BERT was fine-tuned on"
        if ranked[0] == "conll2003"
        else f"behind {and_list([TASK_TITLES[t] for t in ranked[: ranked.index('conll2003')]])} among the tasks"
    )
    n = len(ner["pretrained_seeds"])
    return (
        "**In short.** Tagging every word of Reuters news with its entity type, the book's own BERT "
        f"reaches a dev entity F1 of {ner['pretrained']:.1f} from its pre-trained weights, against "
        f"{ner['scratch']:.1f} for the same network from random weights: {ner['gain']:+.1f} points from "
        f"pre-training ({'one seed per arm' if n == 1 else count(n, 'seed') + ' per arm, medians'}), "
        f"{rank}. BERT-Base reaches {BERT_BASE_QUOTED['conll2003']} on the same dev set (quoted)."
    )


def _gain(run: Any, task: str) -> dict[str, Any]:
    rows = [g for g in run.gains() if g["task"] == task]
    if not rows:
        raise ValueError(f"the record holds no {task} results; python -m lab.reference_run --add {task} adds them")
    return max(rows, key=lambda g: g.get("train_examples") or 0)


def heads_finding(
    heads: dict[str, torch.Tensor], expected: dict[str, float], segments: int, who: str = "the book's own BERT"
) -> str:
    """Chapter 16: what the measured heads do (`heads`: attention_analysis's (L, A) tables, "cls",
    "sep", "punct", "prev", "self", "next", "entropy", "uniform_entropy"; `expected`: the share of
    the tokens that are `[CLS]` and `[SEP]`, what a head blind to token types gives them), over
    `segments` held-out segments of the encoder `who`: the sinks (`attention.sink_reading`), the heads
    fixed on one neighbour, and the spread of the heads' entropy against a uniform head's."""
    L, A = heads["entropy"].shape
    shares = {"`[CLS]`": heads["cls"], "`[SEP]`": heads["sep"]}
    sinks = aa.sink_reading(shares, {"`[CLS]`": expected["cls"], "`[SEP]`": expected["sep"]})
    pos = torch.stack([heads["prev"], heads["self"], heads["next"]]).max(0).values
    fixed = int((pos > 0.5).sum())
    ent, uniform = heads["entropy"], float(heads["uniform_entropy"].mean())
    return (
        f"**In short.** This page measures the heads of {who} over {segments:,} held-out "
        f"segments, as Clark et al. measured BERT-Base's 144. {sinks} {number(fixed).capitalize()} of its "
        f"{number(L * A)} heads "
        f"{verb_agreeing(fixed, 'puts')} more than half of {'its' if fixed == 1 else 'their'} attention on one fixed "
        f"neighbour, and the heads' entropy runs from {float(ent.min()):.2f} to {float(ent.max()):.2f} "
        f"nats, against {uniform:.2f} for a head that spreads evenly."
    )


def _epochs(n: float, noun: str = "pass") -> str:
    return count(int(n), noun) if float(n).is_integer() else f"{n:g} {noun}es"


def _budget(study: Any, frozen_vs_tuned: Reading) -> str:
    """Where fine-tuning had fewer passes over the sentences than each tagger and still did not
    come out ahead: a sentence saying that the comparison is one of budgets."""
    ft, tg = study.settings["finetune"].get("epochs", 1), study.settings["tagger"].get("epochs", 4)
    if frozen_vs_tuned.words == BELOW or ft >= tg:
        return ""
    return (
        f" Fine-tuning had the smaller budget here: {_epochs(ft)} of the whole encoder over the training "
        f"sentences, against {_epochs(tg)} of each tagger over stored vectors, so this compares budgets, "
        "not the two approaches."
    )


def features_finding(study: Any, who: str) -> str:
    """Chapter 15: what its own study (`experiments.feature_study` of the encoder `who`) found:
    the best and the worst of Table 7's six combinations, the best read against the runner-up and
    against fine-tuning the same encoder on the same sentences, each by bertlab.verdict over the
    dev sentences' bootstrap noise; the paper's gap, quoted."""
    rank, f = study.ranking(), study.f1
    best, runner, worst = rank[0], rank[1], rank[-1]
    top, tuned = study.reading(best, runner), study.reading(best, fb.FINETUNED)
    p_best = max(fb.PAPER_DEV_F1, key=fb.PAPER_DEV_F1.get)
    p_gap = fb.PAPER_FINETUNE_DEV_F1 - fb.PAPER_DEV_F1[p_best]
    return (
        f"**In short.** On the frozen hidden states of {who}, a tagger trained on "
        f"{count(study.n_train, 'CoNLL-2003 sentence')} reaches a dev entity F1 of {f[best]:.1f} with "
        f"`{best}`, the best of Table 7's {number(len(f))} combinations, and {f[worst]:.1f} with `{worst}`, "
        f"the worst; the best is {top.phrase(f'the runner-up, `{runner}`')}. Fine-tuning the whole encoder "
        f"on the same sentences reaches {study.finetuned:.1f}: the best frozen combination is "
        f"{tuned.phrase('it')}.{_budget(study, tuned)} In the paper, BERT-Base's best frozen combination "
        f"comes within {p_gap:.1f} of fine-tuning ({fb.PAPER_DEV_F1[p_best]} against "
        f"{fb.PAPER_FINETUNE_DEV_F1}, quoted)."
    )


def features_reading(study: Any, who: str) -> str:
    """Chapter 15: Table 7's usual comparisons for one study, in words: the best and the worst
    combination beside the paper's, how the combinations that mix several layers and the
    second-to-last layer stand against the last layer alone, and the best frozen combination
    against fine-tuning; every verdict by bertlab.verdict over the dev sentences' noise."""
    f, P = study.f1, fb.PAPER_DEV_F1
    r = fb.compare_with_table7(f, study.finetuned)
    mixed = {n: study.reading(n, "last_hidden").words for n in r.mixed}
    groups, target = [], "the last layer alone"
    for words in (CLEAR, WITHIN, BELOW):
        names = [f"`{n}`" for n in r.mixed if mixed[n] == words]
        if names:
            k = len(names)
            many = f"all {number(k)}" if k == len(r.mixed) and k > 1 else number(k)
            groups.append(f"{many} {verb_agreeing(k, 'is')} {words} {target} ({and_list(names)})")
            target = "it"
    paper_k = len(r.paper_mixed_beat)
    paper_many = f"all {number(paper_k)}" if paper_k == len(r.mixed) else number(paper_k)
    same_sum = " (With four layers, `sum_all` and `sum_last_four` are the same sum.)" if study.num_layers == 4 else ""
    second, tuned = study.reading("second_to_last", "last_hidden"), study.reading(r.best, fb.FINETUNED)
    return (
        f"For {who}, the best combination is `{r.best}` ({f[r.best]:.1f}; the paper's is `{r.paper_best}`, "
        f"{P[r.paper_best]}) and the worst `{r.worst}` ({f[r.worst]:.1f}; the paper's is `{r.paper_worst}`, "
        f"{P[r.paper_worst]}). Of the {number(len(r.mixed))} combinations that mix several layers, "
        f"{and_list(groups)}; in the paper {paper_many} score above it.{same_sum} The second-to-last layer is "
        f"{second.phrase('the last')}; in the paper it is {r.paper_second_minus_last:+.1f} points from the "
        "last, a difference section 5.3 reports without explaining it. The best frozen combination is "
        f"{tuned.phrase('fine-tuning on the same sentences')}; in the paper it is "
        f"{r.paper_best_minus_finetuned:+.1f} points from fine-tuning.{_budget(study, tuned)}"
    )
