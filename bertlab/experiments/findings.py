"""The sentence each Part II chapter opens with: its finding, generated from the book's record, the
pilot runs or the page's own run, so that the first screen states a result with the numbers the page
shows later.

    pretraining_finding(run, levers)        # chapter 10
    norm_position_reading(single, post, pre)  # chapter 10, under the one-change figure
    sst2_finding(run, sst2_seeds(2000))      # chapter 11
    pairs_finding(run, dev)                  # chapter 12
    squad_finding(run, seeds)                # chapter 13
    features_finding(study, who)             # chapter 15, from its own feature_based.feature_study
    features_reading(study, who)             # chapter 15, Table 7's usual comparisons in words
    heads_finding(heads, expected, n, who)   # chapter 16, from the heads it measures first
    ablations_finding(record, run)           # chapter 17
    ner_finding(run)                         # chapter 14

Each takes what the chapter has already read or measured (a `reference.ReferenceRun`, pilot levers,
seed gains, a feature study, head tables), so the same numbers feed the opening and the tables below
it.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import torch

from bertlab.analysis import attention as aa
from bertlab.experiments import ablations
from bertlab.experiments.finetune_comparison import record_readings
from bertlab.experiments.finetune_seeds import SQUAD_SETTINGS, seed_gains, squad_seed_gains
from bertlab.experiments.pilots import PILOTS_DIR, accuracy_at, finetune_sweeps, same_phase
from bertlab.model import BertModel
from bertlab.prose import TASK_TITLES, count, number, verb_agreeing
from bertlab.tasks import feature_based as fb
from bertlab.tasks import metrics
from bertlab.verdict import BELOW, CLEAR, WITHIN, Reading

# The one-change pilots the opening of chapter 10 names, and how its sentence says them.
PLATEAU_LEVERS = {
    "mask-30": "masking 30% of the pieces instead of the paper's 15%",
    "pairs": "two segments per sequence",
    "phases-64-128": "short sequences first",
}
# BERT-Base as the paper reports it: SST-2 and RTE test accuracy and MRPC test F1 (Table 1), SQuAD
# v1.1 and CoNLL-2003 dev F1 (Tables 2 and 3)
BERT_BASE_QUOTED = {"sst2": 93.5, "mrpc": 88.9, "rte": 66.4, "squad": 88.5, "conll2003": 96.4}


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def pretraining_finding(run: Any, levers: Sequence[Any]) -> str:
    """Chapter 10: what the record reached, and which one-change pilots (`pilots.lever_effects`
    of the series the chapter shows) got short runs off the frequent-word plateau."""
    by_label = {x.label: x for x in levers}
    missing = [k for k in (*PLATEAU_LEVERS, "nsp") if k not in by_label]
    if missing:
        raise ValueError(f"the pilot series has no lever {missing}; pilots.lever_effects gives {sorted(by_label)}")
    pt = run.provenance["pretraining"]
    n_params = _encoder_parameters(run)
    gains = [f"{what} ({by_label[k].points:+.1f})" for k, what in PLATEAU_LEVERS.items()]
    tokens = by_label["mask-30"].tokens
    nsp = by_label["nsp"].points
    return (
        "**In short.** Pretraining turned unlabelled books and Wikipedia into a model that fills in "
        f"hidden words from their context: the book's own BERT ({n_params / 1e6:.1f}M parameters) gets "
        f"{pt['final_heldout']['mlm_acc']:.1%} of its held-out predictions right after "
        f"{pt['train_seconds'] / 60:.0f} minutes on {run.machine()}. A short run first stalls on a "
        "plateau, guessing frequent pieces whatever the context. What got it off, in points of held-out "
        f"accuracy after {tokens / 1e6:.1f}M tokens of one-change pilot runs (one run each): {_and(gains)}. "
        "The paper's "
        f"NSP loss {'cost' if nsp < 0 else 'added'} {abs(nsp):.1f} points there."
    )


def norm_position_reading(single: Any, post: dict[str, Any], pre: dict[str, Any]) -> str:
    """Chapter 10: post-LN against pre-LN twice, the one-change pilot (`single`, a lever) and two
    whole runs at the record's settings (`post`, `pre`: pilot records), compared at the last token
    count both reached in the same length phase (`pilots.same_phase`) and at the end of their
    equal time."""
    both = {q["tokens"] for q in post["heldout"]} & {q["tokens"] for q in pre["heldout"]}
    level_tokens = max(same_phase(both, [post, pre]), default=None)
    if level_tokens is None:
        raise ValueError(f"{post['name']} and {pre['name']} were never scored at the same tokens in one phase")
    acc = [accuracy_at(r["heldout"], level_tokens) for r in (post, pre)]
    end = [r["heldout"][-1] for r in (post, pre)]
    verdict = (
        "at these settings post-LN did not fall behind pre-LN, which is all the record needs"
        if end[0]["mlm_acc"] >= end[1]["mlm_acc"]
        else "at these settings post-LN ended behind pre-LN"
    )
    return (
        f"**Post-LN against pre-LN.** With the paper's 15% masked and one segment per sequence, post-LN was "
        f"{abs(single.points):.1f} points {'behind' if single.points < 0 else 'ahead'} at "
        f"{single.tokens / 1e6:.1f}M tokens. At the fifth record's settings (two segments, length phases, "
        f"30% masked) the two stood at {acc[0]:.1%} and {acc[1]:.1%} after {level_tokens / 1e6:.1f}M tokens, "
        f"the last count both reached in the same phase; in the same {post['minutes']:.0f} minutes post-LN "
        f"ended at {end[0]['mlm_acc']:.1%} against pre-LN's {end[1]['mlm_acc']:.1%}, in {end[0]['step']:,} "
        f"steps to pre-LN's {end[1]['step']:,}. One run of each: {verdict}."
    )


def sst2_seeds(train_examples: int = 2000) -> Any:
    """SST-2 at `train_examples` labelled sentences fine-tuned over more seeds than the record's three
    (`sst2_2000_seeds.jsonl`), as finetune_seeds.SeedGains; None without them."""
    _, rows = finetune_sweeps(PILOTS_DIR / "sst2_2000_seeds.jsonl")
    return seed_gains(rows, train_examples=train_examples) if rows else None


def sst2_finding(run: Any, many: Any = None) -> str:
    """Chapter 11: pre-training's gain on SST-2 at each training-set size the record measured, each
    read by bertlab.verdict against its seeds (the record's three; at `many.train_examples`, the
    many seeds of `many`, a SeedGains, with its bootstrap interval)."""
    # the largest size first: where the gain stands furthest from its noise
    rows = sorted((g for g in run.gains() if g["task"] == "sst2"), key=lambda g: -(g["train_examples"] or 1e9))
    if not rows:
        raise ValueError("the record holds no SST-2 results; python -m bertlab reference-run makes them")
    parts = []
    for g in rows:
        n = g["train_examples"]
        if many is not None and n == many.train_examples:
            r = many.reading()
        else:
            r = Reading.from_seeds(g["pretrained_scores"], g["scratch_scores"], gain=g["gain"])
        size = f"{n:,} labelled sentences" if n else "the whole training set"
        parts.append(f"with {size}, {r.phrase('scratch')}")
    sentence = "; ".join(parts[:-1]) + ("; and " if len(parts) > 1 else "") + parts[-1]
    sentence = sentence[0].upper() + sentence[1:]
    return (
        "**In short.** Fine-tuned to tell positive film reviews from negative ones, the book's own BERT "
        f"is set against the same network trained from random weights. {sentence}. BERT-Base reaches "
        f"{BERT_BASE_QUOTED['sst2']} (quoted, on the test set). The live run below fine-tunes on 2,000 "
        "sentences once, to show the mechanics; one run is read against its own noise."
    )


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
        raise ValueError(f"the record holds none of {sorted(dev)}; python -m bertlab reference-run makes them")
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


def squad_seeds(run: Any) -> Any:
    """The record's SQuAD fine-tuning run again over more seeds (`squad_record_seeds.jsonl`, rows
    made from this record with its settings), as finetune_seeds.SeedGains; None without them."""
    added = run.provenance.get("added_tasks", {}).get("squad")
    if added is None:
        return None
    meta, rows = finetune_sweeps(PILOTS_DIR / "squad_record_seeds.jsonl")
    settings = {k: added["settings"][k] for k in SQUAD_SETTINGS}
    return squad_seed_gains(rows, "data/reference_run", meta, run.provenance.get("git_commit"), **settings)


def squad_finding(run: Any, seeds: Any = None) -> str:
    """Chapter 13: the record's SQuAD v1.1 F1 from pre-trained and from random weights; with
    `seeds` (finetune_seeds.SeedGains of the same fine-tuning), the medians over its seeds."""
    one = _gain(run, "squad")
    if seeds is not None:
        pre, scr = statistics.median(seeds.pretrained), statistics.median(seeds.scratch)
        over = f"medians of {count(len(seeds.seeds), 'seed')}"
    else:
        pre, scr, over = one["pretrained"], one["scratch"], "one seed per arm"
    minutes = run.provenance["pretraining"]["train_seconds"] / 60
    return (
        "**In short.** Fine-tuned to point at the start and the end of an answer, the book's own BERT "
        f"reaches a held-out SQuAD v1.1 F1 of {pre:.1f}, against {scr:.1f} for the same network from "
        f"random weights ({over}): {pre - scr:+.1f} points from pre-training. BERT-Base reaches "
        f"{BERT_BASE_QUOTED['squad']} (quoted); a model of this size, pretrained for {minutes:.0f} minutes, "
        "is far from reading a paragraph that well, and the examples at the end show what it has and has "
        "not learned. The span machinery is the paper's, and is checked by hand below."
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
        else f"behind {_and([TASK_TITLES[t] for t in ranked[: ranked.index('conll2003')]])} among the tasks"
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
        raise ValueError(f"the record holds no {task} results; python -m bertlab reference-run --add {task} adds them")
    return max(rows, key=lambda g: g.get("train_examples") or 0)


def _encoder_parameters(run: Any) -> int:
    return BertModel(run.config()).num_parameters()


def ablations_finding(record: dict[str, Any], run: Any) -> str:
    """Chapter 17: the ablation study's three results (`ablations.results_summary`, the chapter's own
    summary), with the book's record at the study's SST-2 size read over its many seeds."""
    beside = ablations.beside_reference(record, run) if run is not None else None
    n = beside.train_examples if beside is not None else 2000
    many = sst2_seeds(n)
    bullets = ablations.results_summary(
        ablations.compare_with_paper(record), many.reading() if many is not None else None, n
    )
    return "**In short.** " + " ".join(bullets)


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
    """Chapter 15: what its own study (`feature_based.feature_study` of the encoder `who`) found:
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
            groups.append(f"{many} {verb_agreeing(k, 'is')} {words} {target} ({_and(names)})")
            target = "it"
    paper_k = len(r.paper_mixed_beat)
    paper_many = f"all {number(paper_k)}" if paper_k == len(r.mixed) else number(paper_k)
    same_sum = " (With four layers, `sum_all` and `sum_last_four` are the same sum.)" if study.num_layers == 4 else ""
    second, tuned = study.reading("second_to_last", "last_hidden"), study.reading(r.best, fb.FINETUNED)
    return (
        f"For {who}, the best combination is `{r.best}` ({f[r.best]:.1f}; the paper's is `{r.paper_best}`, "
        f"{P[r.paper_best]}) and the worst `{r.worst}` ({f[r.worst]:.1f}; the paper's is `{r.paper_worst}`, "
        f"{P[r.paper_worst]}). Of the {number(len(r.mixed))} combinations that mix several layers, "
        f"{_and(groups)}; in the paper {paper_many} score above it.{same_sum} The second-to-last layer is "
        f"{second.phrase('the last')}; in the paper it is {r.paper_second_minus_last:+.1f} points from the "
        "last, a difference section 5.3 reports without explaining it. The best frozen combination is "
        f"{tuned.phrase('fine-tuning on the same sentences')}; in the paper it is "
        f"{r.paper_best_minus_finetuned:+.1f} points from fine-tuning.{_budget(study, tuned)}"
    )
