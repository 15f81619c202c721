"""The pretraining pilots behind the `cpu` recipe: recording one (`record_pilot`), reading them
all (`load`, from `data/pilots/`), and which change to a baseline run moved held-out MLM accuracy,
by how much, compared at the same number of training tokens.

A *series* is a baseline run and the pilots that each change one thing of it (same data,
vocabulary, seed and learning-rate schedule). Runs of a series are compared at the most tokens
every one of them was scored at: a pilot with twice the batch takes half the steps, so steps would
not compare. A series under a time budget (`minutes`) is also read by where each run ended; when
its runs share a plan of sequence-length phases, they are compared only where all are in the same
phase (each run reaches the boundaries after its own number of steps).

    record_pilot(run_dir, name, change)     # a finished pretraining run -> data/pilots/<name>.json
    load()                                  # every recorded pilot
    series = pilot_series()                 # every series, baselines first by name
    lever_effects(series)                   # each change's effect in points, largest first
    series_table(s), series_reading(s)      # Markdown for the book
    size_check(rows, pilots)                # does the size that won on held-out accuracy fine-tune best?
    whole_run_rows(earlier_runs(...), run)  # whole runs and the record: tokens, end, plateau exit
    same_tokens_reading(rows)               # runs that ended at the record's tokens, against it

A pilot trained on shorter sequences is scored on held-out windows of its own length; where it was
also scored on the baseline's length (`cross_eval`), that score is the one compared.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from bertlab.data.records import records_dir
from bertlab.files import write_json
from bertlab.prose import count
from bertlab.runtime import machine
from bertlab.training.heldout import PLATEAU_EXIT_ACC
from bertlab.training.logs import read_metrics
from bertlab.training.recipes import Phase, parse_phases, phase_ends, phases_text

Pilot = dict[str, Any]

PILOTS_DIR = records_dir("pilots")


def record_pilot(
    run_dir: str | Path, name: str, change: str, out_dir: str | Path = PILOTS_DIR, baseline: str | None = None
) -> Path:
    """Write one pretraining run's settings and held-out curve to <out_dir>/<name>.json: the model
    size, the resolved recipe, the machine, and every held-out evaluation (step, tokens, seconds,
    MLM loss and accuracy, and the sequence length the run was training on there). `change` says
    in words what this pilot changes from its baseline, and `baseline` names that baseline's pilot
    file (chapter 10 compares the two step by step)."""
    run_dir = Path(run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    records = read_metrics(run_dir / "metrics.jsonl")
    tokens_at = {r["step"]: r.get("tokens") for r in records if r.get("split") == "train"}
    per_step = run["recipe"]["batch_size"] * run["recipe"]["seq_len"]
    evals = [r for r in records if r.get("split") == "eval" and "mlm_acc" in r]
    curve = [
        {
            "step": r["step"],
            "tokens": tokens_at.get(r["step"]) or r["step"] * per_step,
            "elapsed_s": round(r.get("elapsed_s", 0.0), 1),
            "mlm_loss": round(r["mlm_loss"], 4),
            "mlm_acc": round(r["mlm_acc"], 4),
            **({"seq_len": n} if n is not None else {}),
        }
        for r, n in zip(evals, training_seq_lens(records, [r["step"] for r in evals]))
    ]
    if not curve:
        raise ValueError(
            f"{run_dir}/metrics.jsonl has no held-out MLM evaluation; run with eval_every "
            f"smaller than the number of steps"
        )
    train = [r for r in records if r.get("split") == "train"]
    mc = run["model_config"]
    out = Path(out_dir) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(
        out,
        {
            "name": name,
            "change": change,
            "model": {
                "L": mc["num_layers"],
                "H": mc["hidden_size"],
                "A": mc["num_heads"],
                "vocab_size": mc["vocab_size"],
                "norm_position": mc.get("norm_position", "post"),
                "parameters": run["parameters"],
            },
            "recipe": run["recipe"],
            "minutes": run["config"]["minutes"],
            "steps": run["config"]["steps"],
            "corpus": run["config"]["corpus"],
            "seed": run["config"]["seed"],
            "machine": {
                **machine(),
                "runtime": run["runtime"],
                "torch": run["torch"],
                "median_tokens_per_s": round(sorted(r["tokens_per_s"] for r in train)[len(train) // 2])
                if train
                else None,
            },
            "git_commit": run.get("git_commit"),
            "heldout": curve,
            "plateau_exit": plateau_exit(curve),
            **({"baseline": baseline} if baseline else {}),
        },
    )
    return out


def training_seq_lens(records: Sequence[dict[str, Any]], steps: Sequence[int]) -> list[int | None]:
    """The sequence length a run was training on at each of `steps`: that of its last training log
    line (metrics.jsonl records with split "train" and a seq_len) at or before the step; None where
    no such line came before it, or the log has no sequence lengths."""
    logged = sorted((r["step"], r["seq_len"]) for r in records if r.get("split") == "train" and r.get("seq_len"))
    out: list[int | None] = []
    for step in steps:
        before = [n for s, n in logged if s <= step]
        out.append(before[-1] if before else None)
    return out


def plateau_exit(curve: list[dict[str, Any]], threshold: float = PLATEAU_EXIT_ACC) -> dict[str, Any] | None:
    """The first held-out evaluation at or above `threshold` accuracy, or None if never reached."""
    for point in curve:
        if point["mlm_acc"] >= threshold:
            return point
    return None


def cpu_lr_study(
    path: str | Path = PILOTS_DIR / "cpu_lr_study.json",
) -> tuple[str, dict[tuple[float, int], tuple[float, float]]]:
    """The CPU learning-rate study behind the cpu recipe (measured on a shared 2-core CPU with the
    CLI; the file holds the command): (its setup in words, {(peak lr, steps): (held-out MLM loss,
    MLM accuracy)} at the end of each run)."""
    study = json.loads(Path(path).read_text())
    return study["setup"], {(r["lr"], r["steps"]): (r["mlm_loss"], r["mlm_acc"]) for r in study["runs"]}


def append_json_line(path: str | Path, obj: Any, fsync: bool = True) -> None:
    """Append `obj` as one JSON line to `path` (a JSONL record that grows one finished run at a
    time, as the record scripts write the tables `finetune_sweeps` reads), flushed to disk before
    returning, so that a run stopped later keeps every line written."""
    with Path(path).open("a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")
        f.flush()
        if fsync:
            os.fsync(f.fileno())


def finetune_sweeps(path: str | Path = PILOTS_DIR / "finetune_lr.jsonl") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The fine-tuning sweeps (learning rate, pooling, size) that chose the reference run's
    fine-tuning recipe: (shared settings and machine, one row per setting: task, train_examples,
    lr, pooling, init, seeds, scores, median). Empty when the file is absent."""
    path = Path(path)
    if not path.exists():
        return {}, []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    meta = lines[0]["meta"] if lines and "meta" in lines[0] else {}
    return meta, [r for r in lines if "meta" not in r]


def sweep_pairs(rows: Sequence[dict[str, Any]]) -> dict[tuple, dict[str, dict[str, Any]]]:
    """The rows of a fine-tuning sweep (finetune_sweeps) grouped into matched arms: {(task,
    train_examples, lr, pooling): {"pretrained": row, "scratch": row}}, only where both arms ran."""
    grouped: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in rows:
        key = (r["task"], r["train_examples"], r["lr"], r.get("pooling"))
        grouped.setdefault(key, {})[r["init"]] = r
    return {k: v for k, v in grouped.items() if {"pretrained", "scratch"} <= set(v)}


def pooling_effect(pairs: dict[tuple, dict[str, dict[str, Any]]]) -> list[tuple[float, float, float]]:
    """What reading the mean of the token vectors instead of `[CLS]` did to pre-training's gain:
    one (gain with mean pooling, gain with `[CLS]`, lr) per setting (task, size, lr) swept both
    ways, where gain = pretrained median - scratch median, in points."""

    def gain(pair: dict[str, dict[str, Any]]) -> float:
        return pair["pretrained"]["median"] - pair["scratch"]["median"]

    return [
        (gain(pair), gain(pairs[(task, n, lr, "cls")]), lr)
        for (task, n, lr, pooling), pair in pairs.items()
        if pooling == "mean" and (task, n, lr, "cls") in pairs
    ]


def load(folder: str | Path = PILOTS_DIR) -> list[dict[str, Any]]:
    """Every recorded pilot (the data/pilots/*.json files with a held-out curve; the folder also
    holds other checks), sorted by name."""
    folder = Path(folder)
    found = [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return [p for p in found if "heldout" in p and "name" in p]


@dataclass(frozen=True)
class Series:
    """A baseline run and its one-change pilots, compared at `tokens` training tokens."""

    baseline: Pilot
    pilots: tuple[Pilot, ...]
    tokens: int  # the most tokens every run of the series was scored at
    minutes: float | None  # a time budget (runs of a whole schedule each), or None (a fixed schedule)

    @property
    def name(self) -> str:
        return self.baseline["name"]

    @property
    def runs(self) -> tuple[Pilot, ...]:
        return (self.baseline, *self.pilots)


@dataclass(frozen=True)
class Lever:
    """One pilot's change and what it did to held-out accuracy at the series' common tokens."""

    series: str  # the baseline's name
    name: str  # the pilot's name
    label: str  # short: the pilot's name without the series prefix ("mask-30", "post-ln")
    change: str  # the pilot's own description
    points: float  # held-out accuracy minus the baseline's, in percentage points
    tokens: int
    scored_on: str | None = None  # the baseline's held-out windows, when the pilot was scored again on them


def tokens_text(n: int) -> str:
    """A token count for prose: "10.2M tokens", or "20,000 tokens" under a million."""
    return f"{n / 1e6:.1f}M tokens" if n >= 1_000_000 else f"{n:,} tokens"


def accuracy_at(curve: Sequence[dict[str, Any]], tokens: int) -> float:
    """The held-out accuracy of a curve at exactly `tokens` training tokens."""
    for point in curve:
        if point["tokens"] == tokens:
            return point["mlm_acc"]
    have = ", ".join(f"{p['tokens']:,}" for p in curve)
    raise KeyError(f"no held-out evaluation at {tokens:,} tokens; the curve has {have}")


def pilot_series(pilots: Sequence[Pilot] | None = None) -> list[Series]:
    """The series among `pilots` (default: every recorded one): each baseline that some pilot
    names, with those pilots, in the order of the baselines' names."""
    if pilots is None:
        pilots = load()
    by_name = {p["name"]: p for p in pilots}
    grouped: dict[str, list[Pilot]] = {}
    for p in pilots:
        if p.get("baseline") in by_name and p["name"] != p["baseline"]:
            grouped.setdefault(p["baseline"], []).append(p)
    out = []
    for base_name in sorted(grouped):
        base, same = by_name[base_name], tuple(grouped[base_name])
        common = set.intersection(*({q["tokens"] for q in r["heldout"]} for r in (base, *same)))
        common = same_phase(common, (base, *same))
        if not common:
            raise ValueError(f"the runs of series {base_name} were never scored at the same number of tokens")
        out.append(Series(base, same, max(common), same[0].get("minutes")))
    return out


def phase_index(run: Pilot, step: int) -> int:
    """Which of `run`'s sequence-length phases (recipe.phases) the optimiser step `step` belongs
    to, the run's last evaluation taken as its length (0 for a run without phases)."""
    phases = [Phase(**ph) for ph in (run.get("recipe") or {}).get("phases") or ()]
    if not phases:
        return 0
    ends = phase_ends(phases, run["heldout"][-1]["step"])
    return next((k for k, end in enumerate(ends) if step <= end), len(ends) - 1)


def shared_phase_plan(runs: Sequence[Pilot]) -> bool:
    """Whether all `runs` follow one plan of sequence-length phases (recipe.phases), and it has phases."""
    plans = {json.dumps((r.get("recipe") or {}).get("phases") or [], sort_keys=True) for r in runs}
    return len(plans) == 1 and plans != {"[]"}


def same_phase(tokens: set[int], runs: Sequence[Pilot]) -> set[int]:
    """Of the token counts every run of a series was scored at, those where every run was in the
    same phase, when all the runs share one plan of phases (runs of a time budget reach the phase
    boundaries after different numbers of tokens: past the first boundary, equal tokens would set
    one run's longer sequences against another's shorter ones). Runs without phases, or with
    different plans (the plan is then the change a pilot makes), keep every count.

    Where every run's held-out points say which sequence length it was training on (`seq_len`,
    written by `record_pilot`), those are compared: a run's phases can move away from its plan.
    Otherwise each run's phase is worked out from its plan (`phase_index`)."""
    if not shared_phase_plan(runs):
        return tokens
    if all("seq_len" in q for r in runs for q in r["heldout"]):
        lengths = [{q["tokens"]: q["seq_len"] for q in r["heldout"]} for r in runs]
        return {t for t in tokens if len({at[t] for at in lengths}) == 1}
    steps = [{q["tokens"]: q["step"] for q in r["heldout"]} for r in runs]
    return {t for t in tokens if len({phase_index(r, at[t]) for r, at in zip(runs, steps)}) == 1}


def short_label(pilot_name: str, baseline_name: str) -> str:
    """A pilot's name without the leading parts it shares with its baseline's: "cpu-mini-mask-30"
    under "cpu-mini-8k" is "mask-30", "cpu-post-ln" under "cpu-tiny-16k" is "post-ln"."""
    mine, base = pilot_name.split("-"), baseline_name.split("-")
    k = 0
    while k < min(len(mine) - 1, len(base)) and mine[k] == base[k]:
        k += 1
    return "-".join(mine[k:])


def lever_effects(series: Sequence[Series]) -> list[Lever]:
    """Every pilot's effect on held-out accuracy at its series' common tokens, largest first. A
    pilot scored again on the baseline's window length (cross_eval) is compared on that length."""
    levers = []
    for s in series:
        base_len = s.baseline.get("recipe", {}).get("seq_len")
        b = accuracy_at(s.baseline["heldout"], s.tokens)
        for p in s.pilots:
            a, scored_on = accuracy_at(p["heldout"], s.tokens), None
            rows = p.get("cross_eval", {}).get("rows", [])
            mine = {r["seq_len"]: r for r in rows if r["run"] == p["name"]}
            theirs = {r["seq_len"]: r for r in rows if r["run"] == s.name}
            if base_len in mine and base_len in theirs:  # the same windows for both
                a, b_here = mine[base_len]["mlm_acc"], theirs[base_len]["mlm_acc"]
                scored_on = mine[base_len].get("windows") or f"{base_len}-token windows"
            else:
                b_here = b
            levers.append(
                Lever(
                    s.name,
                    p["name"],
                    short_label(p["name"], s.name),
                    p["change"],
                    round(100 * (a - b_here), 1),
                    s.tokens,
                    scored_on,
                )
            )
    return sorted(levers, key=lambda lv: -lv.points)


def series_rows(s: Series) -> list[dict[str, Any]]:
    """One row per run of a series: name, change, accuracy at the common tokens, points against the
    baseline (None for the baseline), and where the run ended (accuracy, step, tokens)."""
    b = accuracy_at(s.baseline["heldout"], s.tokens)
    rows = []
    for r in s.runs:
        a, end = accuracy_at(r["heldout"], s.tokens), r["heldout"][-1]
        rows.append(
            {
                "name": r["name"],
                "change": "none (the baseline)" if r is s.baseline else r["change"],
                "accuracy": a,
                "points": None if r is s.baseline else round(100 * (a - b), 1),
                "end_accuracy": end["mlm_acc"],
                "end_step": end["step"],
                "end_tokens": end["tokens"],
            }
        )
    return rows


def series_table(s: Series) -> str:
    """The series as a Markdown table (for display(Markdown(...)))."""
    head = f"| run | change | held-out accuracy at {tokens_text(s.tokens)} | vs the baseline |"
    if s.minutes:
        head += f" after {s.minutes:g} minutes (steps) |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    again = {lv.name: lv for lv in lever_effects([s]) if lv.scored_on}  # scored again on the baseline's windows
    for r in series_rows(s):
        vs = "" if r["points"] is None else f"{r['points']:+.1f} points"
        if r["name"] in again:  # one lever, two windows: say which number is which
            vs += f" on its own windows, {again[r['name']].points:+.1f} on {again[r['name']].scored_on}"
        line = f"| {r['name']} | {r['change']} | {r['accuracy']:.1%} | {vs} |"
        if s.minutes:
            line += f" {r['end_accuracy']:.1%} ({r['end_step']:,}) |"
        lines.append(line)
    return "\n".join(lines)


def past_common_text(s: Series) -> str:
    """A sentence on the pilots of a fixed-schedule series that trained past its common tokens (two
    layers for the CPU time of four, say): where each ended, beside the baseline at the common
    tokens. "" when no pilot did. (No seconds: a series' runs may have run on other machines or
    other code, and the `change` of such a pilot says what its length stands for.)"""
    longer = [r for r in s.pilots if r["heldout"][-1]["tokens"] > s.tokens]
    if not longer:
        return ""
    base = accuracy_at(s.baseline["heldout"], s.tokens)
    ends = "; ".join(
        f"`{r['name']}` {r['heldout'][-1]['mlm_acc']:.1%} after {tokens_text(r['heldout'][-1]['tokens'])}"
        for r in longer
    )
    return f" Past those tokens: {ends}; the baseline had {base:.1%} after {tokens_text(s.tokens)}."


def series_reading(s: Series, level: float = 0.5) -> str:
    """A few sentences on a series: who led and who trailed the baseline at the common tokens
    (within `level` points counts as level), where each run of a timed series ended, which run
    never rose above its first score, and cross-length scores."""
    rows = series_rows(s)[1:]
    order = sorted(rows, key=lambda r: -r["points"])
    ahead = [f"`{r['name']}` ({r['points']:+.1f})" for r in order if r["points"] >= level]
    behind = [f"`{r['name']}` ({r['points']:+.1f})" for r in order if r["points"] <= -level]
    even = [f"`{r['name']}`" for r in order if abs(r["points"]) < level]
    parts = [
        f"{label}: {', '.join(x)}"
        for label, x in (
            ("ahead of the baseline", ahead),
            ("behind it", behind),
            (f"within {level:g} of a point", even),
        )
        if x
    ]
    where = ", where every run was still in the same phase of sequence lengths," if shared_phase_plan(s.runs) else ""
    text = f"At {tokens_text(s.tokens)}{where or ','} in points of held-out accuracy, " + "; ".join(parts) + "."
    if s.minutes:
        ends = sorted(s.runs, key=lambda r: -r["heldout"][-1]["mlm_acc"])
        ranked = ", ".join(
            f"`{r['name']}` {r['heldout'][-1]['mlm_acc']:.1%} ({tokens_text(r['heldout'][-1]['tokens'])})" for r in ends
        )
        budget = count(int(s.minutes), "minute") if s.minutes == int(s.minutes) else f"{s.minutes:g} minutes"
        text += f" After the whole {budget}: {ranked}."
    if not s.minutes:
        text += past_common_text(s)
    for r in s.runs:
        first, end = r["heldout"][0]["mlm_acc"], r["heldout"][-1]["mlm_acc"]
        if end < first + 0.005:
            text += (
                f" `{r['name']}` never rose above its first held-out score ({first:.1%}): it stalled or "
                f"diverged in its first steps."
            )
    for r in s.pilots:
        cross = r.get("cross_eval", {}).get("rows", [])
        if cross:
            scores = "; ".join(f"`{c['run']}` on {c['seq_len']} tokens, {c['mlm_acc']:.1%}" for c in cross)
            text += f" Scored again on held-out windows of both lengths, at the end: {scores}."
    return text


def levers_reading(levers: Sequence[Lever], level: float = 0.5) -> str:
    """One sentence: the changes of a series in order of their measured effect."""
    if not levers:
        return "No one-change pilot is recorded."

    def shown(lv: Lever) -> str:  # a pilot scored again on the baseline's windows says so
        return f"{lv.label} ({lv.points:+.1f}" + (f" on {lv.scored_on})" if lv.scored_on else ")")

    up = [shown(lv) for lv in levers if lv.points >= level]
    down = [shown(lv) for lv in levers if lv.points <= -level]
    even = [lv.label for lv in levers if abs(lv.points) < level]
    parts = [
        f"{label} {', '.join(x)}"
        for label, x in (("raised it:", up), ("lowered it:", down), (f"moved it less than {level:g} of a point:", even))
        if x
    ]
    return (
        f"Against `{levers[0].series}` at {tokens_text(levers[0].tokens)}, in points of held-out "
        f"accuracy, these changes " + "; ".join(parts) + ". One run each: no repeat measures how far "
        "chance alone moves a pilot, so a difference of a point or two is a lead to follow, not a result."
    )


def machines_table(pilots: Sequence[Pilot]) -> str:
    """Where and with what code each pilot ran, as a Markdown table: CPU, runtime (precision,
    compiled or not), median training tokens/s, and the commit of the code (timings compare only
    within one machine)."""
    lines = ["| run | CPU | runtime | median tokens/s | code |", "|---|---|---|---|---|"]
    for p in sorted(pilots, key=lambda p: p["name"]):
        m = p.get("machine") or {}
        speed = m.get("median_tokens_per_s")
        commit = p.get("git_commit")
        lines.append(
            f"| {p['name']} | {m.get('cpu') or 'not recorded'} | {m.get('runtime') or 'not recorded'} | "
            f"{f'{speed:,.0f}' if speed else 'not recorded'} | {commit[:7] if commit else 'not recorded'} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class SizeCheck:
    """Whether the size that won on held-out accuracy also fine-tunes best: the fine-tuning medians
    of the record ("record") and the other size (`challenger`), from their pretrained weights and
    from scratch, per task."""

    models: list[str]  # "record" first
    tasks: list[tuple[str, int | None]]  # (task, labelled examples; None: the whole training set)
    scores: dict[tuple[str, str, int | None, str], float]  # (model, task, examples, init) -> median
    challenger: str  # the size set against the record
    behind: list[tuple[str, int | None]]  # the tasks where the challenger, pretrained, trails the record
    heldout: float  # the challenger's last held-out MLM accuracy as a pilot (nan if not recorded)


def size_check(rows: Sequence[dict[str, Any]], pilots: Sequence[Pilot]) -> SizeCheck | None:
    """The fine-tuning check of a size series (`rows` as finetune_sweeps returns them from
    data/pilots/finetune_size_50min.jsonl: model, task, train_examples, init, median), with the
    challenger's held-out accuracy read from `pilots`. None when nothing is recorded."""
    if not rows:
        return None
    scores = {(r["model"], r["task"], r["train_examples"], r["init"]): r["median"] for r in rows}
    models = sorted({r["model"] for r in rows}, key=lambda m: m != "record")
    tasks = sorted({(r["task"], r["train_examples"]) for r in rows}, key=lambda t: (t[0], t[1] or 0))
    challenger = models[1]
    behind = [
        (t, n) for t, n in tasks if scores[(challenger, t, n, "pretrained")] < scores[("record", t, n, "pretrained")]
    ]
    held = {p["name"]: p["heldout"][-1]["mlm_acc"] for p in pilots}
    return SizeCheck(models, tasks, scores, challenger, behind, held.get(challenger, math.nan))


def size_check_table(check: SizeCheck) -> str:
    """The size check as a Markdown table: one row per task, each model's median from its
    pretrained weights and, in brackets, from scratch."""
    lines = [
        "| task | " + " | ".join(f"{m}: pre-trained (scratch)" for m in check.models) + " |",
        "|---" * (len(check.models) + 1) + "|",
    ]
    for task, n in check.tasks:
        name = f"{task}, {n:,} sentences" if n else f"{task}, all (entity F1)"
        cells = [
            f"{check.scores[(m, task, n, 'pretrained')]:.1f} ({check.scores[(m, task, n, 'scratch')]:.1f})"
            for m in check.models
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def earlier_runs(pilots: Sequence[Pilot], series: Sequence[Series]) -> list[Pilot]:
    """The pilots that compared whole recipes and sizes, and the earlier records: every run with a
    time budget, and every run that is neither a one-change pilot nor a series' baseline; the
    `cpu-size-*` series are left out (they have their own tables)."""
    baselines = {s.name for s in series}
    return [
        p
        for p in pilots
        if not p["name"].startswith("cpu-size-")
        and (p.get("minutes") or (not p.get("baseline") and p["name"] not in baselines))
    ]


def recorded_curve(run: Any) -> list[dict[str, Any]]:
    """The held-out curve of a recorded run (a bertlab.experiments.reference ReferenceRun): its
    eval records, each with the training tokens seen at its step (0 where the log has no training
    record at that step). Empty when the run logged no evaluation."""
    records = run.metrics()
    at = {r["step"]: r["tokens"] for r in records if r.get("split") == "train"}
    return [dict(r, tokens=at.get(r["step"], 0)) for r in records if r.get("split") == "eval"]


def recorded_settings_text(settings: dict[str, Any], phase_plan: str = "steps") -> str:
    """What a recorded run's settings (its provenance's `settings`) changed of its recipe, in words:
    "the `cpu` recipe with post-LN layers, two segments per sequence, 80% of the steps on 128
    sequences of 64 tokens, then 10% on 64 of 128 and 10% on 32 of 256, 30% masked" (with
    phase_plan "time", what a time budget's phases divide: "80% of the time on ...")."""
    parts = []
    if settings.get("norm_position"):
        parts.append(f"{settings['norm_position']}-LN layers")
    if settings.get("segment_pairs"):
        parts.append("two segments per sequence")
    if settings.get("phases"):
        parts.append(phases_text(parse_phases(settings["phases"]), phase_plan))
    if settings.get("mlm_probability"):
        parts.append(f"{settings['mlm_probability']:.0%} masked")
    recipe = f"the `{settings.get('recipe', 'cpu')}` recipe"
    return recipe + (" with " + ", ".join(parts) if parts else "")


def whole_run_rows(pilots: Sequence[Pilot], run: Any = None) -> list[dict[str, Any]]:
    """One row per whole run: each of `pilots`, then the recorded run `run` (a ReferenceRun, if
    given and it logged evaluations): name, size ("L/H/A"), vocabulary size, batch size, what it
    is, its held-out curve (`points`: step, tokens, mlm_acc) and where it left the frequent-word
    plateau (`exit`: plateau_exit, or None)."""
    points = recorded_curve(run) if run is not None else []
    rows = []
    for p in pilots:
        if points and [(q["step"], round(q["mlm_acc"], 4)) for q in p["heldout"]] == [
            (q["step"], round(q["mlm_acc"], 4)) for q in points
        ]:
            continue  # the recorded run's own pilot file: its row is the recorded run's, below
        m = p["model"]
        rows.append(
            {
                "name": p["name"],
                "size": f"{m['L']}/{m['H']}/{m['A']}",
                "vocab_size": m["vocab_size"],
                "batch": p["recipe"]["batch_size"],
                "what": p["change"],
                "points": p["heldout"],
            }
        )
    if points:
        c, settings = run.config(), run.provenance["settings"]
        rows.append(
            {
                "name": "recorded run",
                "size": f"{c.L}/{c.H}/{c.A}",
                "vocab_size": c.vocab_size,
                "batch": settings["batch_size"],
                "what": recorded_settings_text(settings, run.phase_plan()),
                "points": points,
            }
        )
    return [dict(r, exit=plateau_exit(r["points"])) for r in rows]


def whole_runs_table(rows: Sequence[dict[str, Any]]) -> str:
    """`whole_run_rows` as a Markdown table: the tokens each run saw, its held-out accuracy at the
    end, and the tokens after which it first reached PLATEAU_EXIT_ACC ("never" if it did not)."""
    lines = [
        "| run | L/H/A | V | batch | what | tokens | held-out accuracy at the end "
        f"| reached {PLATEAU_EXIT_ACC:.0%} after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        end, ex = r["points"][-1], r["exit"]
        lines.append(
            f"| {r['name']} | {r['size']} | {r['vocab_size']:,} | {r['batch']} | {r['what']} | "
            f"{end['tokens'] / 1e6:.1f}M | {end['mlm_acc']:.1%} | "
            + (f"{ex['tokens'] / 1e6:.1f}M tokens |" if ex else "never |")
        )
    return "\n".join(lines)


def same_tokens_reading(rows: Sequence[dict[str, Any]]) -> str:
    """A sentence on the whole runs that ended after exactly as many training tokens as the
    recorded run (the last of `rows`, as `whole_run_rows` orders them): each one's held-out
    accuracy at the end against the recorded run's, in points. A run of a fixed schedule over the
    record's own steps is the one fair comparison with it when the two differ in more than one
    thing. Empty when there is no recorded run among the rows or no other run ended there."""
    if not rows or rows[-1]["name"] != "recorded run":
        return ""
    rec = rows[-1]["points"][-1]
    same = [r for r in rows[:-1] if r["points"][-1]["tokens"] == rec["tokens"]]
    if not same:
        return ""
    parts = [
        f"`{r['name']}` ended at {r['points'][-1]['mlm_acc']:.1%} "
        f"({100 * (r['points'][-1]['mlm_acc'] - rec['mlm_acc']):+.1f} points)"
        for r in same
    ]
    return (
        f"After the same {tokens_text(rec['tokens'])} as the recorded run, which ended at "
        f"{rec['mlm_acc']:.1%} held-out accuracy: " + "; ".join(parts) + "."
    )


# ------------------------------------------------------------------------------------------------
# A sweep of the recipe on a GPU, and the CPU pilot that checked it
# ------------------------------------------------------------------------------------------------
GPU_SWEEP = ("gpu_runs", "h100-2026-11-27", "recipe_sweep.json")
_SWEEP_IGNORED = ("out", "resume", "log_every", "eval_every", "checkpoint_every", "progress", "keep_last")


def sweep_change(base: dict[str, Any], config: dict[str, Any]) -> str:
    """What a sweep run's `pretrain` settings change of the base run's, as "setting value" pairs
    ("mlm_probability 0.4; phases 0.5:32:256,..."); "" for the base run itself."""
    keys = [k for k in dict.fromkeys([*base, *config]) if k not in _SWEEP_IGNORED]
    return "; ".join(f"{k} {config.get(k)}" for k in keys if base.get(k) != config.get(k))


def sweep_rows(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The runs of a recipe sweep (a `recipe_sweep.json` of data/gpu_runs: {name: {"eval": [...],
    "run": run.json}}), the base run first, then by held-out accuracy: name, what it changes of the
    base (`sweep_change`), steps and held-out accuracy at its last evaluation, and the difference
    from the base in points."""
    sweep = json.loads(Path(path or records_dir(*GPU_SWEEP)).read_text())
    if "base" not in sweep:
        raise ValueError(f"{path or records_dir(*GPU_SWEEP)}: a recipe sweep needs a run named 'base' to compare with")
    base_cfg = sweep["base"]["run"]["config"]
    rows = []
    for name, run in sweep.items():
        end = run["eval"][-1]
        rows.append(
            {
                "name": name,
                "change": sweep_change(base_cfg, run["run"]["config"]),
                "steps": end["step"],
                "mlm_acc": end["mlm_acc"],
            }
        )
    base = next(r for r in rows if r["name"] == "base")
    rows = [dict(r, points=100 * (r["mlm_acc"] - base["mlm_acc"])) for r in rows]
    return sorted(rows, key=lambda r: (r["name"] != "base", -r["mlm_acc"]))


def sweep_table(rows: Sequence[dict[str, Any]]) -> str:
    """`sweep_rows` as a Markdown table."""
    lines = ["| run | what it changes | steps | held-out accuracy | vs base |", "|---|---|---|---|---|"]
    for r in rows:
        vs = "" if r["name"] == "base" else f"{r['points']:+.1f}"
        lines.append(f"| {r['name']} | {r['change'] or 'the recipe'} | {r['steps']:,} | {r['mlm_acc']:.1%} | {vs} |")
    return "\n".join(lines)


def sweep_check(
    rows: Sequence[dict[str, Any]],
    parts: Sequence[str],
    pilot: Pilot,
    control: dict[str, Any],
    same: str = "tokens",
) -> dict[str, Any]:
    """Did the sweep's changes `parts` (names of its runs), made together in `pilot`, pay on the
    pilot's machine? `control` is the run the pilot changes (a whole_run_rows row: "name" and its
    held-out "points"). `same` says what the two must share at their ends: "tokens" (the default),
    or "steps ratio" for one part that ran another number of steps on the GPU (two layers for the
    CPU time of four, say): the pilot must then have run that part's steps over the sweep base's
    times the control's steps (within 1%). Returns the predicted gain (the sum of the parts' gains
    on the GPU), the measured one (pilot's end minus control's, in points), both ends, what they
    shared, and the ratio of the pilot's steps to the control's (None where a point has no step)."""
    by_name = {r["name"]: r for r in rows}
    missing = [p for p in parts if p not in by_name]
    if missing:
        raise ValueError(f"no run named {missing} in the sweep; it has {', '.join(by_name)}")
    end, ref = pilot["heldout"][-1], control["points"][-1]
    ratio = end["step"] / ref["step"] if end.get("step") and ref.get("step") else None
    if same == "tokens":
        if end["tokens"] != ref["tokens"]:
            raise ValueError(
                f"{pilot['name']} ended after {end['tokens']:,} tokens and {control['name']} after "
                f"{ref['tokens']:,}: compare runs that saw the same tokens"
            )
    elif same == "steps ratio":
        if len(parts) != 1:
            raise ValueError(f"a check by the ratio of steps takes one part of the sweep, not {len(parts)}")
        want = by_name[parts[0]]["steps"] / next(r for r in rows if r["name"] == "base")["steps"]
        if ratio is None or abs(ratio / want - 1) > 0.01:
            raise ValueError(
                f"{pilot['name']} ran {ratio or 0:.3f} times the steps of {control['name']}, where the "
                f"sweep's {parts[0]} ran {want:.3f} times its base's: run it for "
                f"{round(ref['step'] * want):,} steps"
            )
    else:
        raise ValueError(f"same must be 'tokens' or 'steps ratio', not {same!r}")
    return {
        "parts": {p: by_name[p]["points"] for p in parts},
        "predicted": sum(by_name[p]["points"] for p in parts),
        "measured": 100 * (end["mlm_acc"] - ref["mlm_acc"]),
        "pilot": pilot["name"],
        "pilot_acc": end["mlm_acc"],
        "control": control["name"],
        "control_acc": ref["mlm_acc"],
        "same": same,
        "steps_ratio": ratio,
    }


def sweep_check_reading(check: dict[str, Any], same_machine: bool) -> str:
    """A sentence for `sweep_check`: the GPU's gains of each part, what they add up to, and what
    the pilot measured against its control. `same_machine`: whether the control ran on the pilot's
    kind of machine and schedule; if not, the sentence says the difference is not the changes' alone."""
    parts = " and ".join(f"`{name}` {pts:+.1f}" for name, pts in check["parts"].items())
    control = "the recorded run" if check["control"] == "recorded run" else f"`{check['control']}`"
    if len(check["parts"]) > 1:
        predicted = f"points over the recipe: together, if they added up, {check['predicted']:+.1f}"
        made = "made these changes together"
    else:
        predicted, made = "points over the recipe", "made this change"
    text = (
        f"On the GPU, {parts} {predicted}. On the CPU, `{check['pilot']}` {made} and ended at "
        f"{check['pilot_acc']:.1%}, {check['measured']:+.1f} points against {control} "
        f"({check['control_acc']:.1%}) "
        + (
            f"after {check['steps_ratio']:.2f} times its steps, as on the GPU."
            if check.get("same") == "steps ratio"
            else "after the same tokens."
        )
    )
    if not same_machine:
        text += (
            " That control ran on another machine and schedule, so the difference is not the"
            " changes' alone; the same settings without them on the pilot's own machine would tell."
        )
    return text
