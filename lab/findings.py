"""The openings the lab writes for the chapters whose finding rests on the book's record and its
studies: chapter 10's (the record and the one-change pilots), 11's and 13's (the record and its
fine-tunings over more seeds), 12's and 14's (the record alone) and 17's (the ablations and the
ten-seed SST-2 reading), and chapter 10's post-LN against pre-LN sentence. `lab.publish` puts them
in data/results/, and the chapters show them from there.

    pretraining_finding(run, levers)          # chapter 10
    norm_position_reading(single, post, pre)  # chapter 10, under the one-change figure
    sst2_finding(run, sst2_seeds(2000))       # chapter 11
    pairs_finding(run, dev)                   # chapter 12
    squad_finding(run, squad_seeds(run))      # chapter 13
    ner_finding(run)                          # chapter 14
    ablations_finding(study, run)             # chapter 17

The openings that rest on what the page measures (chapters 15 and 16) are the package's
(`bertlab.experiments.findings`).
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import torch

from bertlab.experiments.finetune_comparison import record_readings
from bertlab.model import BertModel
from bertlab.prose import and_list, count
from bertlab.tasks import metrics
from bertlab.verdict import Reading
from lab import ablations_reading as ablations
from lab.finetune_seeds import SQUAD_SETTINGS, seed_gains, squad_seed_gains
from lab.pilots import PILOTS_DIR, accuracy_at, finetune_sweeps, same_phase
from lab.record_gains import TASK_TITLES

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


# The one-change pilots the opening of chapter 10 names, and how its sentence says them.
PLATEAU_LEVERS = {
    "mask-30": "masking 30% of the pieces instead of the paper's 15%",
    "pairs": "two segments per sequence",
    "phases-64-128": "short sequences first",
}


def pretraining_finding(run: Any, levers: Sequence[Any]) -> str:
    """Chapter 10: what the record reached, and which one-change pilots (`pilots.lever_effects`
    of the series the chapter shows) got short runs off the frequent-word plateau."""
    by_label = {x.label: x for x in levers}
    missing = [k for k in (*PLATEAU_LEVERS, "nsp") if k not in by_label]
    if missing:
        raise ValueError(f"the pilot series has no lever {missing}; pilots.lever_effects gives {sorted(by_label)}")
    pt = run.provenance["pretraining"]
    n_params = BertModel(run.config()).num_parameters()
    gains = [f"{what} ({by_label[k].points:+.1f})" for k, what in PLATEAU_LEVERS.items()]
    tokens = by_label["mask-30"].tokens
    nsp = by_label["nsp"].points
    return (
        "**In short.** Pretraining turned unlabelled books and Wikipedia into a model that fills in "
        f"hidden words from their context: the book's own BERT ({n_params / 1e6:.1f}M parameters) gets "
        f"{pt['final_heldout']['mlm_acc']:.1%} of its held-out predictions right after "
        f"{pt['train_seconds'] / 60:.0f} minutes on {run.machine()}. A short run first stalls on a "
        "plateau, guessing frequent pieces whatever the context. What got it off, in points of held-out "
        f"accuracy after {tokens / 1e6:.1f}M tokens of one-change pilot runs (one run each): "
        f"{and_list(gains)}. The paper's "
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
        raise ValueError("the record holds no SST-2 results; python -m lab.reference_run makes them")
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
    rows = [g for g in run.gains() if g["task"] == "squad"]
    if not rows:
        raise ValueError("the record holds no squad results; python -m lab.reference_run --add squad adds them")
    one = max(rows, key=lambda g: g.get("train_examples") or 0)
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
