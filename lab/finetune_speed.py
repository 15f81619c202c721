"""What fine-tuning's speed levers buy and cost: batches of similar lengths
(`FinetuneConfig.group_by_length`), PyTorch's fused AdamW, and a classifier's last layer run at
[CLS] alone (`BertForSequenceClassification.last_layer_at_cls`).

Three records answer three questions:

- data/benchmarks/finetune_cpu.json (`lab/benchmarks/finetune_step.py`): how long an epoch of each
  task of the reference run takes with each lever on or off, timed in one run on one machine, the
  settings taking turns (`load_benchmark`, `speed_table`, `speed_reading`);
- data/pilots/finetune_batching.jsonl (`scripts/record_finetune_batching.py`): whether batches of
  similar lengths change the scores, the reference run's recipe run both ways with its seeds
  (`batching_pairs`, `batching_table`, `batching_reading`);
- data/benchmarks/finetune_cls_cpu.json (`lab/benchmarks/finetune_step.py --last-layer`): how much
  faster a classifier's step is with its last layer at [CLS] alone (`last_layer_table`,
  `last_layer_reading`). Its logits are the same up to rounding (tests/test_model.py checks it);
- data/benchmarks/finetune_workers_cpu.json (`lab/benchmarks/finetune_workers.py`): how much sooner the
  seeds are done side by side in one-thread processes than one after another on every thread
  (`FinetuneConfig.workers`; `workers_table`, `workers_reading`).

The fused AdamW makes the same updates to within rounding (tests/test_pretrain.py checks it), so
only the order of the batches needs the second record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from bertlab.prose import count, number
from bertlab.tasks.inputs import length_grouped_batches

TASK_NAMES = {"sst2": "SST-2", "conll2003": "CoNLL-2003", "mrpc": "MRPC", "rte": "RTE", "squad": "SQuAD"}
SETTINGS = ("random, foreach", "similar lengths, foreach", "random, fused", "similar lengths, fused")
BEFORE, AFTER = SETTINGS[0], SETTINGS[-1]  # the fifth record's fine-tuning, and the default now
LAST_LAYER = ("last layer everywhere", "last layer at [CLS]")  # lab/benchmarks/finetune_step.py --last-layer
WORKERS = ("one process", "side by side")  # lab/benchmarks/finetune_workers.py: FinetuneConfig.workers 1, 2


def _span(ratios: Sequence[tuple[float, str]]) -> str:
    """Sorted (ratio, task) pairs as words: "1.20 (SQuAD) to 2.50 (SST-2)", or the one ratio."""
    (lo, lo_task), (hi, hi_task) = ratios[0], ratios[-1]
    if len(ratios) == 1:
        return f"{lo:.2f}"
    return f"{lo:.2f} ({TASK_NAMES.get(lo_task, lo_task)}) to {hi:.2f} ({TASK_NAMES.get(hi_task, hi_task)})"


def _load(path: str | Path, command: str, settings: Sequence[str]) -> dict[str, Any]:
    """A benchmark record written by `command` (a script and its flags), checked: it has tasks,
    and every task has every one of `settings`."""
    path = Path(path)
    try:
        bench = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a record of {command} ({e})") from e
    tasks = bench.get("tasks") if isinstance(bench, dict) else None
    if not tasks:
        raise ValueError(f"{path}: no tasks; make it with python {command} --json {path}")
    for name, row in tasks.items():
        missing = [s for s in settings if s not in row]
        if missing:
            raise ValueError(f"{path}: task {name} lacks the settings {missing}; run the benchmark again")
    return bench


def load_benchmark(path: str | Path, settings: Sequence[str] = SETTINGS) -> dict[str, Any]:
    """A record of lab/benchmarks/finetune_step.py, checked: every task has the settings (the four
    levers by default; LAST_LAYER for a record of --last-layer)."""
    flag = " --last-layer" if tuple(settings) == LAST_LAYER else ""
    return _load(path, f"lab/benchmarks/finetune_step.py{flag}", settings)


def speed_table(bench: dict[str, Any]) -> str:
    """Markdown: per task, tokens computed per real token in each kind of batch, seconds per epoch
    in each setting, and how much faster the levers together make an epoch."""
    rows = [  # the four settings' seconds share one column, so that the table fits a page
        "| task | examples | mean length | computed per real token, random / similar "
        "| s per epoch: random, foreach / similar, foreach / random, fused / similar, fused | faster |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in bench["tasks"].items():
        rows.append(
            f"| {TASK_NAMES.get(name, name)} | {r['examples']:,} | {r['mean_length']:.0f} | "
            f"{r[BEFORE]['padded_per_real_token']:.2f} / {r[AFTER]['padded_per_real_token']:.2f} | "
            + " / ".join(f"{r[s]['s_per_epoch']:,.0f}" for s in SETTINGS)
            + f" | {r[BEFORE]['s_per_epoch'] / r[AFTER]['s_per_epoch']:.1f}x |"
        )
    return "\n".join(rows)


def speed_reading(bench: dict[str, Any]) -> str:
    """One paragraph: what each lever alone and both together did to the time of an epoch."""
    tasks = bench["tasks"]

    def ratios(a: str, b: str) -> list[tuple[float, str]]:
        return sorted((t[a]["s_per_epoch"] / t[b]["s_per_epoch"], n) for n, t in tasks.items())

    both = ratios(BEFORE, AFTER)
    ms = {s: [1000 * t[s]["s_per_step"] for t in tasks.values()] for s in (BEFORE, SETTINGS[2])}
    saved = sorted(after - before for before, after in zip(ms[BEFORE], ms[SETTINGS[2]]))
    steps = sorted(ms[BEFORE])
    total_before = sum(t[BEFORE]["s_per_epoch"] for t in tasks.values())
    total_after = sum(t[AFTER]["s_per_epoch"] for t in tasks.values())
    return (
        f"Batches of similar lengths alone sped an epoch up by a factor of {_span(ratios(BEFORE, SETTINGS[1]))}: the "
        f"shorter and the more varied a task's sequences, the more a random batch pads. The fused AdamW "
        f"alone changed it by a factor of {_span(ratios(BEFORE, SETTINGS[2]))}, {saved[0]:+.0f} to {saved[-1]:+.0f} ms "
        f"on steps of {steps[0]:,.0f} to {steps[-1]:,.0f} ms: at these batch sizes the update is a small "
        f"part of a step. Together, a factor of {_span(both)}; one "
        f"epoch of every task takes {total_after:,.0f} s instead of {total_before:,.0f} s "
        f"({total_before / total_after:.1f} times faster)."
    )


def last_layer_table(bench: dict[str, Any]) -> str:
    """Markdown: per classification task, seconds per step and per epoch with the last layer
    everywhere and at [CLS] alone, and the ratio."""
    every, cls = LAST_LAYER
    rows = [
        "| task | examples | mean length | ms per step: last layer everywhere | at [CLS] "
        "| s per epoch: everywhere | at [CLS] | faster |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in bench["tasks"].items():
        rows.append(
            f"| {TASK_NAMES.get(name, name)} | {r['examples']:,} | {r['mean_length']:.0f} | "
            f"{1000 * r[every]['s_per_step']:,.0f} | {1000 * r[cls]['s_per_step']:,.0f} | "
            f"{r[every]['s_per_epoch']:,.0f} | {r[cls]['s_per_epoch']:,.0f} | "
            f"{r[every]['s_per_step'] / r[cls]['s_per_step']:.2f}x |"
        )
    return "\n".join(rows)


def last_layer_reading(bench: dict[str, Any], num_layers: int) -> str:
    """One sentence: how much faster a classifier's step and an epoch of every task got with the
    last of `num_layers` layers run at [CLS] alone."""
    every, cls = LAST_LAYER
    tasks = bench["tasks"]
    span = _span(sorted((t[every]["s_per_step"] / t[cls]["s_per_step"], n) for n, t in tasks.items()))
    before = sum(t[every]["s_per_epoch"] for t in tasks.values())
    after = sum(t[cls]["s_per_epoch"] for t in tasks.values())
    names = [TASK_NAMES.get(n, n) for n in tasks]
    names = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (
        f"With the last of the {num_layers} layers computed at [CLS] alone, a fine-tuning step ran "
        f"{span} times faster, and one epoch of {names} took {after:,.0f} s in all instead "
        f"of {before:,.0f} s: {100 * (1 - after / before):.0f}% less time for the same logits, up to rounding."
    )


def load_workers(path: str | Path) -> dict[str, Any]:
    """A record of lab/benchmarks/finetune_workers.py, checked: every task has both settings."""
    return _load(path, "lab/benchmarks/finetune_workers.py", WORKERS)


def _score_gap(row: dict[str, Any]) -> float:
    """The widest difference between the two settings' scores of one seed and arm, in points."""
    one, two = (row[s]["scores"] for s in WORKERS)
    return max(abs(a - b) for arm in one for a, b in zip(one[arm], two[arm]))


def workers_table(bench: dict[str, Any]) -> str:
    """Markdown: per task, the wall seconds of the same fine-tuning in one process and side by
    side in worker processes, the speed-up, and how far the two settings' scores moved apart."""
    one, two = WORKERS
    rows = [
        f"| task | examples | s in one process, {bench['threads']} threads "
        f"| s in {bench['workers']} processes side by side | faster | scores apart by |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in bench["tasks"].items():
        rows.append(
            f"| {TASK_NAMES.get(name, name)} | {r['examples']:,} | {r[one]['s']:,.1f} | {r[two]['s']:,.1f} | "
            f"{r[one]['s'] / r[two]['s']:.2f}x | {_score_gap(r):.2f} |"
        )
    return "\n".join(rows)


def workers_reading(bench: dict[str, Any]) -> str:
    """One paragraph: how much sooner the seeds were done side by side, task by task and in all,
    and whether the scores stayed those of the same seeds."""
    one, two = WORKERS
    tasks = bench["tasks"]
    span = _span(sorted((t[one]["s"] / t[two]["s"], n) for n, t in tasks.items()))
    before = sum(t[one]["s"] for t in tasks.values())
    after = sum(t[two]["s"] for t in tasks.values())
    gap = max(_score_gap(t) for t in tasks.values())
    n, threads = bench["workers"], bench["threads"]
    per = threads // n if threads >= n else 1
    every = "both tasks" if len(tasks) == 2 else f"all {count(len(tasks), 'task')}"
    verdict = (
        f"{100 * (1 - after / before):.0f}% less time"
        if after < before
        else f"{100 * (after / before - 1):.0f}% more time: on this machine one process keeps its cores busy"
    )
    agree = (
        "the same scores to the digit"
        if gap == 0
        else f"scores within {gap:.2f} points of each other, the rounding of {count(per, 'thread')} "
        f"against {number(threads)}"
    )
    return (
        f"The same seeds fine-tuned in {count(n, 'process')} of {count(per, 'thread')} side by side "
        f"ran {span} times as fast as one after another in one process on {count(threads, 'thread')}, "
        f"start-up of the workers included; {every} took {after:,.0f} s instead of "
        f"{before:,.0f} s, "
        f"{verdict}. Both settings gave {agree}."
    )


@dataclass(frozen=True)
class BatchingPair:
    """One fine-tuning setting run with plain random batches and with batches of similar lengths
    (data/pilots/finetune_batching.jsonl): the two rows, and what grouping changed."""

    task: str
    train_examples: int | None
    init: str  # "pretrained" or "scratch"
    random: dict[str, Any]
    grouped: dict[str, Any]
    balanced: bool = False  # the grouped arm weighed each batch by its labelled tokens (balance_tokens)

    @property
    def change(self) -> float:
        """Grouped median minus random median, in points of the task's main metric."""
        return self.grouped["median"] - self.random["median"]

    @property
    def seed_spread(self) -> float:
        """The widest distance between two seeds of one arm, in points: the noise to compare with."""
        return max(max(r["scores"]) - min(r["scores"]) for r in (self.random, self.grouped))


def batching_pairs(rows: Sequence[dict[str, Any]]) -> list[BatchingPair]:
    """The rows of finetune_batching.jsonl (read with `pilots.finetune_sweeps`) matched into pairs:
    for each (task, train_examples, init), its random arm against each grouped arm (plain, and for
    a token-level task weighed by tokens, `balance_tokens`) that ran, in the file's order. Rows
    without balance_tokens were made before it existed: not weighed."""
    arms: dict[tuple, dict[tuple[bool, bool], dict[str, Any]]] = {}
    for r in rows:
        kind = (bool(r["group_by_length"]), bool(r["group_by_length"] and r.get("balance_tokens", False)))
        arms.setdefault((r["task"], r["train_examples"], r["init"]), {})[kind] = r
    return [
        BatchingPair(task, n, init, random=both[(False, False)], grouped=both[(True, balanced)], balanced=balanced)
        for (task, n, init), both in arms.items()
        if (False, False) in both
        for balanced in (False, True)
        if (True, balanced) in both
    ]


def short_sentence_weight(
    labelled: Sequence[int] | np.ndarray, batches: Sequence[Sequence[int]], short: Sequence[bool] | np.ndarray
) -> tuple[float, float]:
    """What a token-level task's loss gives the `short` items: (their share of the labelled
    tokens, their share of an epoch's gradient when each batch's loss is the plain mean over its
    tokens). `labelled`: labelled tokens per item (`tasks.inputs.labelled_tokens`); `batches`: the
    epoch's batches of indices. With a plain mean every batch weighs the same, so an item weighs its
    tokens over its batch's; weighed by tokens (`FinetuneConfig.balance_tokens`) its share is the
    first number, as in random batches on average."""
    labelled = np.asarray(labelled, dtype=np.float64)
    short = np.asarray(short, dtype=bool)
    weight = np.zeros_like(labelled)
    for b in batches:
        b = np.asarray(b, dtype=np.int64)
        weight[b] = labelled[b] / max(labelled[b].sum(), 1.0)
    return float(labelled[short].sum() / labelled.sum()), float(weight[short].sum() / weight.sum())


@dataclass(frozen=True)
class ShortSentenceWeight:
    """How much of an epoch's gradient a token-level task's short sentences carry (see
    `short_sentence_weights`): shares of the whole, from 0 to 1."""

    short: int  # at most this many labelled tokens
    sentences: int  # items in the training set
    sentence_share: float  # the short ones among them
    token_share: float  # their labelled tokens among all: also their weight when weighed by tokens
    random_share: float  # their weight with plain batch means, random batches
    grouped_share: float  # ... batches of similar lengths

    def reading(self, task: str = "conll2003") -> str:
        return (
            f"Sentences of at most {self.short} labelled words are {self.sentence_share:.0%} of "
            f"{TASK_NAMES.get(task, task)}'s {self.sentences:,} training sentences and hold "
            f"{self.token_share:.0%} of its labelled tokens. With each batch's plain mean they carry "
            f"{self.random_share:.0%} of an epoch's gradient in random batches and {self.grouped_share:.0%} "
            f"in batches of similar lengths; weighed by their tokens, {self.token_share:.0%} in both."
        )


def short_sentence_weights(
    labelled: Sequence[int] | np.ndarray,
    lengths: Sequence[int] | np.ndarray,
    batch_size: int = 32,
    short: int = 10,
    seed: int = 0,
) -> ShortSentenceWeight:
    """`short_sentence_weight` for one epoch of random batches and one of batches of similar
    lengths (`tasks.inputs.length_grouped_batches`), both drawn with `seed`. `labelled`: labelled
    tokens per item (`tasks.inputs.labelled_tokens`); `lengths`: their sequence lengths."""
    labelled = np.asarray(labelled)
    is_short = labelled <= short
    random_batches = torch.randperm(len(labelled), generator=torch.Generator().manual_seed(seed)).split(batch_size)
    grouped = length_grouped_batches(lengths, batch_size, torch.Generator().manual_seed(seed))
    token_share, random_share = short_sentence_weight(labelled, random_batches, is_short)
    _, grouped_share = short_sentence_weight(labelled, grouped, is_short)
    return ShortSentenceWeight(short, len(labelled), float(is_short.mean()), token_share, random_share, grouped_share)


def _task(p: BatchingPair) -> str:
    size = f", {p.train_examples:,} sentences" if p.train_examples else ""
    return f"{TASK_NAMES.get(p.task, p.task)}{size}"


def _setting(p: BatchingPair) -> str:
    weighed = ", tokens weighed" if p.balanced else ""
    return f"{_task(p)}, {'from scratch' if p.init == 'scratch' else 'pre-trained'}{weighed}"


def batching_table(pairs: Sequence[BatchingPair]) -> str:
    """Markdown: per setting, every seed's score and the median with each kind of batch."""
    rows = [
        "| setting | seeds, random batches | seeds, similar lengths | median, random | median, similar | change |",
        "|---|---|---|---|---|---|",
    ]
    for p in pairs:
        seeds = [", ".join(f"{x:.1f}" for x in arm["scores"]) for arm in (p.random, p.grouped)]
        rows.append(
            f"| {_setting(p)} | {seeds[0]} | {seeds[1]} | {p.random['median']:.1f} | "
            f"{p.grouped['median']:.1f} | {p.change:+.1f} |"
        )
    return "\n".join(rows)


def pretraining_gains(pairs: Sequence[BatchingPair]) -> list[tuple[str, float, float]]:
    """(task, pre-trained minus scratch with random batches, the same with similar lengths), in
    points, for each task whose two inits were both run both ways."""
    by_task: dict[tuple, dict[str, BatchingPair]] = {}
    for p in pairs:
        by_task.setdefault((p.task, p.train_examples, p.balanced), {})[p.init] = p
    return [
        (
            _task(both["pretrained"]) + (", tokens weighed" if both["pretrained"].balanced else ""),
            both["pretrained"].random["median"] - both["scratch"].random["median"],
            both["pretrained"].grouped["median"] - both["scratch"].grouped["median"],
        )
        for both in by_task.values()
        if {"pretrained", "scratch"} <= set(both)
    ]


def batching_reading(pairs: Sequence[BatchingPair]) -> str:
    """One paragraph on what batches of similar lengths did to the scores, from the pairs."""
    if not pairs:
        return "No fine-tuning setting has been run both ways yet."
    changes = [p.change for p in pairs]
    inside = [p for p in pairs if abs(p.change) <= p.seed_spread]
    moved = f"{changes[0]:+.1f}" if len(changes) == 1 else f"{min(changes):+.1f} to {max(changes):+.1f}"
    text = f"Over {count(len(pairs), 'setting')}, batches of similar lengths moved the median score by {moved} points; "
    if len(inside) == len(pairs):
        text += (
            "every change is smaller than the distance between two seeds of the same arm: next to the "
            "seeds, the order of the batches is noise."
        )
    else:
        out = ", ".join(
            f"{_setting(p)} ({p.change:+.1f}, seeds {p.seed_spread:.1f} apart)" for p in pairs if p not in inside
        )
        text += f"{count(len(pairs) - len(inside), 'change')} larger than the seeds' own spread: {out}."
    gains = pretraining_gains(pairs)
    if gains:
        text += (
            " What pre-training buys over scratch: "
            + "; ".join(
                f"{task} {random:+.1f} points with random batches, {grouped:+.1f} with similar lengths"
                for task, random, grouped in gains
            )
            + "."
        )
    return text
