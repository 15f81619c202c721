"""The sentences chapters 15 and 16 open with, from what the page itself measures, so that the
first screen states a result with the numbers shown later.

    features_finding(study, who)             # chapter 15, from its experiments.feature_study
    features_reading(study, who)             # chapter 15, Table 7's usual comparisons in words
    heads_finding(heads, expected, n, who)   # chapter 16, from the heads it measures first
"""

from __future__ import annotations

from typing import Any

import torch

from bertlab.analysis import attention as aa
from bertlab.prose import and_list, count, number, verb_agreeing
from bertlab.tasks import feature_based as fb
from bertlab.verdict import BELOW, CLEAR, WITHIN, Reading


def heads_finding(
    heads: dict[str, torch.Tensor], expected: dict[str, float], segments: int, who: str = "the book's own BERT"
) -> str:
    """Chapter 16: the sinks, the heads fixed on one neighbour and the spread of the heads' entropy,
    from attention_analysis's (L, A) tables `heads` over `segments` held-out segments of `who`;
    `expected`: the shares of `[CLS]` and `[SEP]` among the tokens, what a blind head gives them."""
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
    """A sentence saying the comparison is one of budgets, where fine-tuning had fewer passes than
    each tagger and did not come out ahead."""
    ft, tg = study.settings["finetune"].get("epochs", 1), study.settings["tagger"].get("epochs", 4)
    if frozen_vs_tuned.words == BELOW or ft >= tg:
        return ""
    return (
        f" Fine-tuning had the smaller budget here: {_epochs(ft)} of the whole encoder over the training "
        f"sentences, against {_epochs(tg)} of each tagger over stored vectors, so this compares budgets, "
        "not the two approaches."
    )


def features_finding(study: Any, who: str) -> str:
    """Chapter 15: the best and worst of Table 7's combinations in `study`, the best read against
    the runner-up and against fine-tuning (bertlab.verdict); the paper's gap, quoted."""
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
    """Chapter 15: Table 7's usual comparisons in words: best and worst beside the paper's, the
    mixed combinations and the second-to-last layer against the last, the best against fine-tuning."""
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
