"""Reference runs side by side: the same settings made twice or more, or one setting changed.

The record's table of gains comes from one run of `scripts/reference_run.sh`. Run the pipeline
again with the same settings on the same kind of machine and the pretraining takes a slightly
different number of steps in its 50 minutes, so its weights differ, and so does every fine-tuned
score built on them. Set side by side, two such runs say how big a difference between two records
of *different* settings must be before it says something about the settings.

    first, again = ReferenceRun(path_a), ReferenceRun(path_b)
    rows = rerun_rows(first, again)      # one row per measure: first, again, difference
    print(rerun_table(rows))             # Markdown
    print(rerun_reading(rows))           # the sentence the appendix keeps

More runs of the same settings make a better ruler: `spread_rows` sets them all side by side,
each measure with its spread from the lowest run to the highest.

    spread = spread_rows(first, [again, third])
    print(spread_table(spread, ("the record", "again", "third")))
    print(spread_reading(spread))

A run that changed one setting (`reference-run --layers 2`) is set beside the record the same way,
naming the setting it changed, and read against the same settings made twice or more (`noise`:
`rerun_rows` of a pair, or `spread_rows`):

    rows = rerun_rows(first, two_layers, changed=("layers",))
    print(lever_reading(rows, "two layers instead of four", noise=spread))

The runs need not have fine-tuned the same seeds, nor in as many processes: a gain is compared over
the seeds both runs ran (the measure names them: "seed 0 alone").

The appendix "How the CPU recipe was found" reads the book's record against the earlier runs of its
settings (`data/pilots/record7/`, the previous record, `record7-again/` and `record7-third/`:
`find_runs_again`) and against its settings with two layers (`data/pilots/record7-2-layers/`).
Runs of the record's settings with other pretraining budgets are read along a time axis by
`lab.time_budget`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bertlab.data.records import records_dir
from bertlab.experiments.reference import ReferenceRun
from bertlab.prose import number
from bertlab.verdict import WITHIN, verdict
from lab.record_gains import TASK_TITLES

# The earlier runs of the record's pretraining settings, under the records folder: the book's
# previous record, whose fine-tuning ran its seeds one at a time and CoNLL-2003 with three seeds
PREVIOUS = ("pilots", "record7")
AGAIN = ("pilots", "record7-again")  # the previous record's settings made again
THIRD = ("pilots", "record7-third")  # the previous record's settings a third time
TWO_LAYERS = ("pilots", "record7-2-layers")  # the record's settings with two layers instead of four
TWICE_THE_TIME = ("pilots", "record8-100min")  # the record's settings, 100 minutes of pretraining

# Settings that say where a run wrote, which fine-tunings it ran (the rows compare only those both
# runs hold), which seeds they ran (a row compares the seeds both runs ran, `_shared_seeds`), or how
# many processes trained those seeds side by side (the same numbers: FinetuneConfig.workers), not
# how it trained
_NOT_A_SETTING = ("out", "resume", "squad", "ft_tasks", "seeds", "ft_tasks_seeds", "squad_seeds", "ft_workers")
# the same for the settings a task added later was fine-tuned with (reference_run.SQUAD_CPU)
_NOT_AN_ADDED_SETTING = ("seeds", "workers")

# The pipeline's stages, grouped as the appendix reports them: (label, stage keys of
# provenance["stage_times_s"]); the classifiers read only [CLS], CoNLL-2003 and SQuAD every position
_METRICS = {"f1": "F1", "exact_match": "exact match"}

STAGES = (
    ("pretraining, with its data", ("pretrain_with_data_s",)),
    ("SST-2, MRPC and RTE", ("sst2_500_s", "sst2_2000_s", "sst2_8000_s", "mrpc_s", "rte_s")),
    ("CoNLL-2003", ("conll2003_s",)),
    ("SQuAD v1.1", ("squad_s",)),
)


def settings_differences(first: ReferenceRun, again: ReferenceRun) -> list[str]:
    """The settings (provenance["settings"]) on which two runs differ, as "name: a -> b"; empty
    when they ran the same pipeline."""
    a, b = first.provenance.get("settings", {}), again.provenance.get("settings", {})
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in _NOT_A_SETTING]
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]


def find_again(run: ReferenceRun | None, folder: str | Path | None = None) -> ReferenceRun | None:
    """The second run of `run`'s settings (in `folder`, by default AGAIN in the records folder), or
    None when there is no record, no second run, or one made with other settings (a record made
    again with new settings has no second run until one is made)."""
    where = Path(folder) if folder is not None else records_dir(*AGAIN)
    if run is None or not (where / "provenance.json").is_file():
        return None
    again = ReferenceRun(where)
    return None if settings_differences(run, again) else again


def find_runs_again(run: ReferenceRun | None) -> list[ReferenceRun]:
    """Every other recorded run of `run`'s settings (PREVIOUS, AGAIN, then THIRD, in the records
    folder), oldest first; those made with other settings, and `run` itself, are left out
    (`find_again`)."""
    places = [records_dir(*where) for where in (PREVIOUS, AGAIN, THIRD)]
    if run is not None:
        places = [p for p in places if p.resolve() != run.path.resolve()]
    found = (find_again(run, where) for where in places)
    return [r for r in found if r is not None]


def find_changed(
    run: ReferenceRun | None, changed: Sequence[str], folder: str | Path | None = None
) -> ReferenceRun | None:
    """A run of `run`'s settings with the settings `changed` changed (in `folder`; by default, in
    the records folder, TWO_LAYERS for changed=("layers",) and TWICE_THE_TIME for ("minutes",)),
    or None when there is no record, no such run, or one that also differs in another setting or
    not in those named."""
    if folder is None:
        recorded = {("layers",): TWO_LAYERS, ("minutes",): TWICE_THE_TIME}
        if tuple(changed) not in recorded:
            raise ValueError(f"name the folder of the run that changed {', '.join(changed)}")
        folder = records_dir(*recorded[tuple(changed)])
    where = Path(folder)
    if run is None or not (where / "provenance.json").is_file():
        return None
    other = ReferenceRun(where)
    try:
        check_same_settings(run, other, changed)
    except ValueError:
        return None
    return other


def check_same_settings(first: ReferenceRun, again: ReferenceRun, changed: Sequence[str] = ()) -> None:
    """Raise ValueError naming the differences when two runs did not share their settings, except
    the ones named in `changed`: a comparison would then measure settings nobody named, not chance
    (use the pilots' tables for those). A setting named in `changed` must differ."""
    diff = [d for d in settings_differences(first, again) if d.split(":")[0] not in changed]
    if diff:
        named = f" besides {', '.join(changed)}" if changed else ""
        raise ValueError(
            f"{first.path} and {again.path} were not made with the same settings{named} ({'; '.join(diff)}); "
            "a comparison of two runs of the pipeline needs every other setting alike: compare "
            "different settings with lab.pilots instead"
        )
    a, b = first.provenance.get("settings", {}), again.provenance.get("settings", {})
    same = [k for k in changed if a.get(k) == b.get(k)]
    if same:
        raise ValueError(
            f"{first.path} and {again.path} have the same {', '.join(same)} ({a.get(same[0])!r}); "
            "name in `changed` only the settings the second run changed"
        )


def median_tokens_per_s(run: ReferenceRun) -> float | None:
    """The median tokens/s of a run's pretraining log lines (None without any): how fast its
    machine trained, the reason a time budget buys one run more steps than another."""
    speeds = sorted(r["tokens_per_s"] for r in run.metrics() if r.get("split") == "train" and r.get("tokens_per_s"))
    return speeds[len(speeds) // 2] if speeds else None


def steps_by_length(run: ReferenceRun) -> dict[int, int]:
    """How many optimiser steps a run's pretraining took at each sequence length, read off its log:
    the steps between two training lines count for the length of the earlier one, the phase taken
    to change at the first line that shows the new length (so to within the log's interval at each
    change). Empty for a log without lengths."""
    steps: dict[int, int] = {}
    last, length = 0, None
    for line in run.metrics():
        if line.get("split") == "train" and line.get("seq_len") and line.get("step"):
            length = length or line["seq_len"]
            steps[length] = steps.get(length, 0) + line["step"] - last
            last, length = line["step"], line["seq_len"]
    return steps


def stage_seconds(run: ReferenceRun) -> dict[str, float]:
    """A run's seconds by stage: provenance["stage_times_s"], and a task added to the record after
    it was made (`reference-run --add`, under provenance["added_tasks"]) as the stage "<task>_s"
    with the wall time of its fine-tuning, unless the pipeline timed that stage itself."""
    times = dict(run.provenance.get("stage_times_s") or {})
    for task, added in (run.provenance.get("added_tasks") or {}).items():
        if f"{task}_s" not in times and added.get("wall_time_s") is not None:
            times[f"{task}_s"] = added["wall_time_s"]
    return times


def wall_seconds(run: ReferenceRun) -> float | None:
    """A run's seconds end to end: its pipeline's wall time and that of every task added to it
    later (stage_seconds), or None when the pipeline recorded none."""
    wall = run.provenance.get("wall_time_s")
    if wall is None:
        return None
    timed = run.provenance.get("stage_times_s") or {}
    return wall + sum(s for k, s in stage_seconds(run).items() if k not in timed)


def _stage_minutes(first: ReferenceRun, again: ReferenceRun, keys: Sequence[str]) -> tuple[float, float] | None:
    """Both runs' minutes in the stages `keys` that either recorded, or None unless both recorded
    the same ones (at least one)."""
    ta, tb = (stage_seconds(r) for r in (first, again))
    have = [k for k in keys if k in ta]
    if not have or have != [k for k in keys if k in tb]:
        return None
    return sum(ta[k] for k in have) / 60, sum(tb[k] for k in have) / 60


def _signed(x: float, digits: int = 1) -> str:
    """A difference with its sign, never "-0.0": what rounds to zero is "0.0"."""
    return f"{0.0:.{digits}f}" if round(x, digits) == 0 else f"{x:+.{digits}f}"


def _row(measure: str, kind: str, first: float | None, again: float | None, **extra: Any) -> dict[str, Any]:
    change = None if first is None or again is None else again - first
    values = [first] if again is None else [first, again]
    return {
        "measure": measure,
        "kind": kind,
        "first": first,
        "again": again,
        "change": change,
        "values": values,
        **extra,
    }


def rerun_rows(first: ReferenceRun, again: ReferenceRun, changed: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per measure both runs recorded: {"measure", "kind", "first", "again", "change"}.

    kind "heldout" (held-out MLM accuracy in %, over every chosen position and at the [MASK]
    positions only), "pretraining" (steps; tokens in millions; the median tokens/s of the log; the
    steps at each sequence length both logged, `steps_by_length`, with its "length"),
    "gain" (pre-training's gain in points on each fine-tuning the runs share, matched by task and
    number of labelled examples; such a row also holds "task", "train_examples" and "title", the
    task in words; kind "not run again", with `again` None, for a fine-tuning of the record the
    second run did not make, and "other settings" for a task added to both records later with
    different settings), "minutes" (each group of STAGES, and the whole run end to end, less any
    stage only one of them ran: "without" names those; a task added to a run later counts as one of
    its stages, `stage_seconds`). A measure one of the runs lacks is left out.
    Raises ValueError when the runs' settings differ other than in `changed`
    (`check_same_settings`)."""
    check_same_settings(first, again, changed)
    rows: list[dict[str, Any]] = []
    pa, pb = first.provenance.get("pretraining", {}), again.provenance.get("pretraining", {})
    ha, hb = pa.get("final_heldout") or {}, pb.get("final_heldout") or {}
    for key, label in (("mlm_acc", "every chosen position"), ("mlm_acc_mask", "[MASK] positions only")):
        if key in ha and key in hb:
            rows.append(_row(f"held-out MLM accuracy, {label} (%)", "heldout", 100 * ha[key], 100 * hb[key]))
    if "steps" in pa and "steps" in pb:
        rows.append(_row("pretraining steps", "pretraining", pa["steps"], pb["steps"]))
    if "tokens" in pa and "tokens" in pb:
        rows.append(_row("pretraining tokens (millions)", "pretraining", pa["tokens"] / 1e6, pb["tokens"] / 1e6))
    speeds = [median_tokens_per_s(r) for r in (first, again)]
    if None not in speeds:
        rows.append(_row("pretraining tokens/s (median of the log)", "pretraining", *speeds))
    la, lb = steps_by_length(first), steps_by_length(again)
    for length in sorted(set(la) & set(lb)):
        rows.append(
            _row(f"pretraining steps on {length}-token sequences", "pretraining", la[length], lb[length], length=length)
        )
    theirs = {(g["task"], g["train_examples"]): g for g in again.gains()}
    for g in first.gains():
        other = theirs.get((g["task"], g["train_examples"]))
        n = g["train_examples"]
        title = TASK_TITLES.get(g["task"], g["task"])
        if g["task"] == "sst2" and n:  # SST-2's learning curve: one row per number of sentences
            title += f" with {n:,} sentences"
        # a task added to the records later has its own settings (SQuAD's windows): both must agree
        added = [_added_settings(r, g["task"]) for r in (first, again)]
        kind = "gain" if other is not None else "not run again"  # the second run stopped before it
        first_gain, again_gain = g["gain"], other["gain"] if other is not None else None
        shared = _shared_seeds(g, other) if other is not None else None
        label, extra = "", {}
        if other is not None and (added[0] != added[1] or shared == []):
            kind = "other settings"
        elif shared:  # the runs ran other seeds: each gain over the seeds both ran
            first_gain, again_gain = _gain_on(g, shared), _gain_on(other, shared)
            label, extra = f"; {_seeds_words(shared)}", {"seeds": shared}
        rows.append(
            _row(
                f"gain on {title} ({_METRICS.get(g['metric'], g['metric'])}, points{label})",
                kind,
                first_gain,
                again_gain,
                task=g["task"],
                train_examples=n,
                title=title,
                **extra,
            )
        )
    for label, keys in STAGES:
        both = _stage_minutes(first, again, keys)
        if both is not None:
            rows.append(_row(f"minutes: {label}", "minutes", *both))
    wa, wb = wall_seconds(first), wall_seconds(again)
    if wa is not None and wb is not None:
        ta, tb = (stage_seconds(r) for r in (first, again))
        # a stage only one run ran (a run stopped before SQuAD) leaves that run's wall time
        # without it, so that both ends measure the same pipeline
        only_a, only_b = [k for k in ta if k not in tb], [k for k in tb if k not in ta]
        wa, wb = wa - sum(ta[k] for k in only_a), wb - sum(tb[k] for k in only_b)
        left_out = [label for label, keys in STAGES if any(k in only_a + only_b for k in keys)]
        others = [k for k in only_a + only_b if not any(k in keys for _, keys in STAGES)]
        measure = "minutes: end to end" + (f", without {' and '.join(left_out + others)}" if only_a + only_b else "")
        rows.append(_row(measure, "minutes", wa / 60, wb / 60, end_to_end=True, without=left_out + others))
    return rows


def _added_settings(run: ReferenceRun, task: str) -> dict[str, Any] | None:
    """The settings `task` was added to `run` with (provenance["added_tasks"]), less those that do
    not change what it trains (_NOT_AN_ADDED_SETTING); None for a task the pipeline ran itself."""
    settings = (run.provenance.get("added_tasks") or {}).get(task, {}).get("settings")
    if settings is None:
        return None
    return {k: v for k, v in settings.items() if k not in _NOT_AN_ADDED_SETTING}


def _seed_scores(gain: dict[str, Any], arm: str) -> dict[int, float] | None:
    """One arm's scores by seed in a row of `ReferenceRun.gains()`, or None when it does not list
    its seeds."""
    seeds = gain.get(f"{arm}_seeds")
    return dict(zip(seeds, gain[f"{arm}_scores"], strict=True)) if seeds else None


def _shared_seeds(first: dict[str, Any], again: dict[str, Any]) -> list[int] | None:
    """The seeds both arms of both runs' gains (rows of `ReferenceRun.gains()`) ran, where the runs
    did not run the same seeds (so that each gain can be taken over those alone, `_gain_on`); an
    empty list when they share none; None when they ran the same seeds or a row does not list them."""
    runs = [_seed_scores(g, arm) for g in (first, again) for arm in ("pretrained", "scratch")]
    if any(r is None for r in runs):
        return None
    seeds = [set(r) for r in runs]
    if all(s == seeds[0] for s in seeds):
        return None
    return sorted(set.intersection(*seeds))


def _gain_on(gain: dict[str, Any], seeds: Sequence[int]) -> float:
    """A gain (a row of `ReferenceRun.gains()`) over `seeds` alone: the median of the pre-trained
    arm's scores on those seeds less the scratch arm's."""
    pre, scr = _seed_scores(gain, "pretrained"), _seed_scores(gain, "scratch")
    return statistics.median(pre[s] for s in seeds) - statistics.median(scr[s] for s in seeds)


def _seeds_words(seeds: Sequence[int]) -> str:
    """ "seed 0 alone", "seeds 0 and 1", "seeds 0, 1 and 2"."""
    if len(seeds) == 1:
        return f"seed {seeds[0]} alone"
    return f"seeds {', '.join(map(str, seeds[:-1]))} and {seeds[-1]}"


def _counted(row: dict[str, Any]) -> bool:
    """Whether a row's figures are whole counts (steps, tokens/s), written without decimals."""
    return row["measure"].startswith(("pretraining steps", "pretraining tokens/s"))


def _figure(row: dict[str, Any], value: float | None) -> str:
    if value is None:
        return "not run"
    if _counted(row):
        return f"{value:,.0f}"
    if row["kind"] in ("gain", "not run again", "other settings"):
        return _signed(value)
    return f"{value:.1f}"


def rerun_table(rows: Sequence[dict[str, Any]], names: tuple[str, str] = ("the record", "run again")) -> str:
    """`rerun_rows` as a Markdown table: the measure, each run's figure and the difference."""
    lines = [f"| measure | {names[0]} | {names[1]} | difference |", "|---|---:|---:|---:|"]
    for r in rows:
        diff = "" if r["change"] is None else (f"{r['change']:+,.0f}" if _counted(r) else _signed(r["change"]))
        lines.append(f"| {r['measure']} | {_figure(r, r['first'])} | {_figure(r, r['again'])} | {diff} |")
    return "\n".join(lines)


def spread_rows(first: ReferenceRun, others: Sequence[ReferenceRun]) -> list[dict[str, Any]]:
    """The record and every run of its settings made again, measure by measure: one row per measure
    that each pair (`rerun_rows(first, other)`) holds alike, with the runs' figures in "values"
    (the record's first), "low", "high" and "spread" (high less low). "change" is the spread too, so
    that `beyond_chance` and `lever_reading` take these rows as their noise, and "first" is the
    record's figure. A gain one of the runs did not make, or made with other settings, is left out.
    Raises ValueError without another run, or for one made with other settings."""
    if not others:
        raise ValueError("spread_rows needs the record and at least one run of its settings made again")
    pairs = [{r["measure"]: r for r in rerun_rows(first, other)} for other in others]
    rows = []
    for measure, row in pairs[0].items():
        twins = [pair.get(measure) for pair in pairs]
        if row["kind"] in ("not run again", "other settings") or any(
            t is None or t["kind"] != row["kind"] for t in twins
        ):
            continue
        values = [row["first"], *(t["again"] for t in twins)]
        low, high = min(values), max(values)
        rows.append(
            {
                **row,
                "again": None,
                "values": values,
                "low": low,
                "high": high,
                "spread": high - low,
                "change": high - low,
            }
        )
    return rows


def spread_table(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    """`spread_rows` as a Markdown table: the measure, each run's figure (named by `names`, the
    record's first) and the spread from lowest to highest."""
    runs = len(rows[0]["values"]) if rows else len(names)
    if len(names) != runs:
        raise ValueError(f"name each of the {runs} runs (got {len(names)} names)")
    lines = [f"| measure | {' | '.join(names)} | spread |", "|---|" + "---:|" * (runs + 1)]
    for r in rows:
        spread = f"{r['spread']:,.0f}" if _counted(r) else f"{r['spread']:.1f}"
        lines.append(f"| {r['measure']} | {' | '.join(_figure(r, v) for v in r['values'])} | {spread} |")
    return "\n".join(lines)


def spread_reading(rows: Sequence[dict[str, Any]], limit_minutes: float | None = None) -> str:
    """What several runs of the same settings say, in words generated from `spread_rows`: the range
    of held-out accuracy and of steps, how far the gains spread (in the median task and at most,
    and whether each kept its sign), and the record's end-to-end minutes beside the others' (the
    record's held to `limit_minutes`, if given and every run ran every stage). Empty without rows."""
    if not rows:
        return ""
    runs = number(len(rows[0]["values"]))
    parts = []
    held = next((r for r in rows if r["kind"] == "heldout"), None)
    if held is not None:
        text = (
            f"Over {runs} runs of the record's settings, pretraining ended between {held['low']:.1f}% "
            f"and {held['high']:.1f}% held-out MLM accuracy"
        )
        steps = next((r for r in rows if r["measure"] == "pretraining steps"), None)
        if steps is not None:
            text += f", after {steps['low']:,} to {steps['high']:,} steps"
        parts.append(text)
    big = largest_gain_move(rows)
    if big is not None:
        parts.append(f"pre-training's gains spread by {_moves_words(rows, big)}")
    text = "; ".join(parts) + "." if parts else ""
    if big is not None:
        flips = sign_flips(rows)
        if flips:
            text += (
                f" On {' and '.join(r['title'] for r in flips)} some runs find pre-training ahead and "
                "others behind; every other gain kept its sign."
            )
        else:
            text += f" Every gain kept its sign in all {runs} runs."
    end = next((r for r in rows if r.get("end_to_end")), None)
    if end is not None:
        without = f" without {' and '.join(end['without'])}" if end["without"] else ""
        others = [f"{v:.1f}" for v in end["values"][1:]]
        rest = f"runs {', '.join(others[:-1])} and {others[-1]}" if len(others) > 1 else f"run {others[0]}"
        text += f" End to end{without} the record took {end['values'][0]:.1f} minutes, the other {rest}"
        text += _limit_words(end["values"][0], end, limit_minutes) + "."
    return text.strip()


def largest_gain_move(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The gain row whose figure moved most between the two runs (None without gain rows)."""
    gains = [r for r in rows if r["kind"] == "gain"]
    return max(gains, key=lambda r: abs(r["change"])) if gains else None


def median_gain_move(rows: Sequence[dict[str, Any]]) -> float | None:
    """The median (the lower one of an even count) of how far each gain moved, in points."""
    moves = [abs(r["change"]) for r in rows if r["kind"] == "gain"]
    return statistics.median_low(moves) if moves else None


def _moves_words(rows: Sequence[dict[str, Any]], big: dict[str, Any]) -> str:
    """ "0.7 points in the median task and by up to 1.9 (MRPC: +1.2 then -0.8)"; with more runs
    (`spread_rows`), "(SQuAD v1.1: +10.1, +2.8 then +5.0)"."""
    figures = [_signed(v) for v in big["values"]]
    return (
        f"{median_gain_move(rows):.1f} points in the median task and by up to {abs(big['change']):.1f} "
        f"({big['title']}: {', '.join(figures[:-1])} then {figures[-1]})"
    )


def sign_flips(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gain rows where one run found pre-training ahead and another behind."""
    return [r for r in rows if r["kind"] == "gain" and len({v > 0 for v in r["values"]}) > 1]


def _pretraining_end(rows: Sequence[dict[str, Any]], opening: str) -> tuple[str, dict[str, Any] | None]:
    """The start of a reading's first sentence, `opening` then where the second run's pretraining
    ended against the record's ("" without a held-out row), and the row of pretraining steps."""
    held = next((r for r in rows if r["kind"] == "heldout"), None)
    steps = next((r for r in rows if r["measure"] == "pretraining steps"), None)
    if held is None:
        return "", steps
    text = (
        f"{opening}, the pipeline ends its pretraining at {held['again']:.1f}% held-out MLM accuracy "
        f"against the record's {held['first']:.1f}% ({_signed(held['change'])} points)"
    )
    return text, steps


def _end_to_end_words(rows: Sequence[dict[str, Any]], who: str, limit_minutes: float | None) -> str:
    """The sentence on the two runs' end-to-end minutes (`who` names the second run), held to
    `limit_minutes` only where both ran every stage; empty without an end-to-end row."""
    end = next((r for r in rows if r.get("end_to_end")), None)
    if end is None:
        return ""
    without = f" without {' and '.join(end['without'])}" if end["without"] else ""
    text = f" End to end{without} {who} took {end['again']:.1f} minutes, the record {end['first']:.1f}"
    return text + _limit_words(end["again"], end, limit_minutes) + "."


def _limit_words(minutes: float, end: dict[str, Any], limit_minutes: float | None) -> str:
    """ " (within the 100 minutes the pipeline is meant to fit)", or "" without a limit or when the
    end-to-end row `end` left a stage out: only a whole run is held to the limit."""
    if limit_minutes is None or end["without"]:
        return ""
    verdict = "within" if minutes <= limit_minutes else "over"
    return f" ({verdict} the {limit_minutes:.0f} minutes the pipeline is meant to fit)"


def rerun_reading(rows: Sequence[dict[str, Any]], limit_minutes: float | None = None) -> str:
    """What running the same settings again changed, in words generated from `rerun_rows`: the
    held-out accuracy, how far the gains moved (the largest move, and any gain whose sign flipped),
    and the end-to-end time (against `limit_minutes`, if given and both runs ran every stage).
    Empty without rows."""
    if not rows:
        return ""
    parts = []
    text, steps = _pretraining_end(rows, "Made again with the same settings")
    if text:
        if steps is not None and steps["change"]:  # a time budget buys what the machine's speed allows
            text += f", after {steps['again']:,} steps against {steps['first']:,}"
            speed = next((r for r in rows if r["measure"].startswith("pretraining tokens/s")), None)
            if speed is not None:
                text += (
                    f" (its machine trained at {speed['again'] / 1e3:.1f}k tokens/s against "
                    f"{speed['first'] / 1e3:.1f}k: a time budget buys as many steps as the machine's speed allows)"
                )
        parts.append(text)
    big = largest_gain_move(rows)
    if big is not None:
        parts.append(f"pre-training's gains move by {_moves_words(rows, big)}")
    flips = sign_flips(rows)
    if flips:
        names = " and ".join(r["title"] for r in flips)
        parts.append(f"on {names} one run finds pre-training ahead and the other behind")
    text = "; ".join(parts) + "." if parts else ""
    if big is not None:
        text += (
            f" A difference of {abs(big['change']):.1f} points between two records of different "
            "settings can therefore arise with no change of settings at all: a single run ranks "
            "settings only where they differ by more."
        )
    unlike = [r["title"] for r in rows if r["kind"] == "other settings"]
    if unlike:
        text += (
            f" {' and '.join(unlike)} was fine-tuned with other settings in each run, so its gains are not compared."
        )
    missing = [r["title"] for r in rows if r["kind"] == "not run again"]
    if missing:
        text += f" The second run stopped before {' and '.join(missing)}, which it does not compare."
    text += _end_to_end_words(rows, "the second run", limit_minutes)
    return text.strip()


def gains_note(rows: Sequence[dict[str, Any]]) -> str:
    """One sentence for under the record's table of gains: how far the same settings made again
    moved them (the median and the largest move), or "" without gain rows."""
    big = largest_gain_move(rows)
    if big is None:
        return ""
    flips = sign_flips(rows)
    runs = len(big["values"])
    if runs == 2:
        text = "Each gain is one run's. The same pipeline made again with the same settings moved them by "
    else:
        text = f"Each gain is one run's. Over {number(runs)} runs of the same settings the gains spread by "
    text += _moves_words(rows, big)
    if flips:
        text += f", and on {' and '.join(r['title'] for r in flips)} the sign of the gain turned"
    elif runs > 2:
        text += f", and every gain kept its sign in all {number(runs)}"
    return text + "."


def beyond_chance(rows: Sequence[dict[str, Any]], noise: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gain rows of a comparison (`rows`) that moved further than the same gain moved when the
    record's settings were made again (`noise`, that pair's `rerun_rows`, or `spread_rows`); a gain
    `noise` lacks is left out. The reading is bertlab.verdict's, with the move as the noise and one
    sigma: a change is beyond chance when change -/+ that move excludes zero."""
    moved = _chance_moves(noise)
    return [r for r in _compared(rows, moved) if change_verdict(r, moved) != WITHIN]


def change_verdict(row: dict[str, Any], moved: dict[tuple[str, int | None], float]) -> str:
    """bertlab.verdict's words for how far a gain row's `change` moved, against how far the same gain
    moved with no change of settings (`_chance_moves`)."""
    return verdict(row["change"], moved[(row["task"], row["train_examples"])], sigmas=1.0)


def _chance_moves(noise: Sequence[dict[str, Any]]) -> dict[tuple[str, int | None], float]:
    """How far each gain moved with no change of settings, by (task, labelled examples): between
    two runs (`rerun_rows`), or from the lowest to the highest of several (`spread_rows`)."""
    return {(r["task"], r["train_examples"]): abs(r["change"]) for r in noise if r["kind"] == "gain"}


def _compared(rows: Sequence[dict[str, Any]], moved: dict[tuple[str, int | None], float]) -> list[dict[str, Any]]:
    """The gain rows of `rows` whose gain the runs made with no change also hold (`_chance_moves`)."""
    return [r for r in rows if r["kind"] == "gain" and (r["task"], r["train_examples"]) in moved]


def _chance_words(noise: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """How a reading says how far chance moved one gain and several gains, for the runs of the
    record's settings that `noise` compares (two: `rerun_rows`; more: `spread_rows`)."""
    runs = max((len(r["values"]) for r in noise if r["kind"] == "gain"), default=2)
    if runs == 2:
        return "it moved when the record's settings were made again", "when the record's settings were made again"
    across = f"across the {number(runs)} runs of the record's settings"
    return f"it spread {across}", f"they spread {across}"


def lever_reading(
    rows: Sequence[dict[str, Any]],
    lever: str,
    noise: Sequence[dict[str, Any]] | None = None,
    limit_minutes: float | None = None,
) -> str:
    """What one changed setting did to the pipeline, in words generated from
    `rerun_rows(first, second, changed=...)`: the held-out accuracy and the steps its time budget
    bought, how far the gains moved, which of them moved further than the same settings made twice
    moved them (`noise`: that pair's rows, `beyond_chance`), and the end-to-end minutes (against
    `limit_minutes`, if given and both runs ran every stage). `lever` names the change in words
    ("two layers instead of four"). Empty without rows."""
    if not rows:
        return ""
    parts = []
    text, steps = _pretraining_end(rows, f"With {lever}")
    if text:
        if steps is not None and steps["first"]:
            text += (
                f", after {steps['again']:,} steps against {steps['first']:,} "
                f"({steps['again'] / steps['first']:.2f} times as many in its time budget)"
            )
        parts.append(text)
    big = largest_gain_move(rows)
    if big is not None:
        parts.append(f"pre-training's gains move by {_moves_words(rows, big)}")
    text = "; ".join(parts) + "." if parts else ""
    gains = [r for r in rows if r["kind"] == "gain"]
    if noise is not None and gains:
        compared = _compared(rows, _chance_moves(noise))
        far = beyond_chance(rows, noise)
        one, many = _chance_words(noise)
        if compared and not far:
            text += (
                f" None of the {len(compared)} gains moved further than {one}, so at this size "
                "the fine-tuned tasks do not tell the two apart."
            )
        elif far:
            named = ", ".join(f"{r['title']} ({_signed(r['change'])})" for r in far)
            count = f"All {len(far)}" if len(far) == len(compared) else f"{len(far)} of the {len(compared)}"
            text += f" {count} gains moved further than {many}: {named}."
    text += _end_to_end_words(rows, "it", limit_minutes)
    return text.strip()
