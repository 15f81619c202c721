"""What more pretraining time buys: the record's settings run under several time budgets.

The record pretrains for 50 minutes. The same settings run for 25 or 100 minutes (`python -m
bertlab reference-run --minutes 25`) end at another held-out accuracy and fine-tune to other gains;
the runs of the 50-minute settings made again say how far chance alone moves each figure. Set
side by side by budget, they say how fast held-out accuracy grows with the time and roughly how
long a target accuracy would take on the same cores.

    budgets = find_budgets(run)                    # the runs that changed only the minutes
    rows = budget_rows(run, runs_again, budgets)   # one row per measure, one value per run
    fit = log_time_fit(*heldout_points(rows))      # points per doubling of the time
    print(budget_table(rows))                      # Markdown, one column per budget
    print(budget_reading(rows, fit, target=45.0))  # the sentences the appendix keeps

Held-out accuracy is fitted against the logarithm of the time (base 2, so the slope is in points
per doubling) by least squares over every run: the runs made again at one budget weigh in as
repeated measurements, and their spread gives the slope's standard error.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertlab.data.records import records_dir
from bertlab.experiments.reference import ReferenceRun
from bertlab.prose import number
from lab.rerun import TWICE_THE_TIME, find_changed, rerun_rows

# The runs of the record's settings with another pretraining budget, under the records folder
HALF_THE_TIME = ("pilots", "record8-25min")  # 25 minutes of pretraining
BUDGETS = (HALF_THE_TIME, TWICE_THE_TIME)

# the measures a budget row keeps: held-out accuracy, the steps and tokens the budget bought and
# every fine-tuned gain (not the minutes: the earlier runs of the record's settings fine-tuned their
# seeds one at a time, so their fine-tuning minutes measure another pipeline)
_KINDS = ("heldout", "pretraining", "gain")
_PRETRAINING = ("pretraining steps", "pretraining tokens (millions)")


def budget_minutes(run: ReferenceRun) -> float | None:
    """The pretraining time budget a run was given, in minutes (its settings' "minutes"), or None
    for a run of a fixed number of steps."""
    settings = run.provenance.get("settings", {})
    minutes = settings.get("minutes")
    return None if settings.get("steps") or minutes is None else float(minutes)


def find_budgets(run: ReferenceRun | None, folders: Sequence[str | Path] | None = None) -> list[ReferenceRun]:
    """The recorded runs of `run`'s settings that changed only the pretraining minutes (`folders`,
    by default BUDGETS in the records folder), shortest budget first; those missing or made with
    other settings are left out (`rerun.find_changed`)."""
    places = folders if folders is not None else [records_dir(*where) for where in BUDGETS]
    found = [find_changed(run, ("minutes",), where) for where in places]
    return sorted((r for r in found if r is not None), key=lambda r: budget_minutes(r) or 0.0)


def _key(row: dict[str, Any]) -> tuple:
    """What a measure is, whatever the seeds of one comparison named it: a gain by its task and
    number of examples, anything else by its words."""
    if row["kind"] == "gain":
        return ("gain", row["task"], row["train_examples"])
    return (row["measure"],)


def _wanted(row: dict[str, Any]) -> bool:
    if row["kind"] not in _KINDS:
        return False
    return row["kind"] != "pretraining" or row["measure"] in _PRETRAINING


def budget_rows(
    record: ReferenceRun, same: Sequence[ReferenceRun], budgets: Sequence[ReferenceRun]
) -> list[dict[str, Any]]:
    """The record, the runs of its settings made again (`same`, `rerun.find_runs_again`) and the
    runs that changed only the minutes (`budgets`, `find_budgets`), measure by measure: one row per
    measure that every comparison with the record holds (`rerun.rerun_rows`), with each run's
    figure in "values" (the record's first, then `same`, then `budgets`) and its budget in
    "minutes". Kept: held-out accuracy, pretraining steps and tokens, every gain. A gain that runs
    of other seeds name "seed 0 alone" is matched by its task. Raises ValueError for a run without
    a time budget, or one that changed more than the minutes."""
    runs = [record, *same, *budgets]
    minutes = [budget_minutes(r) for r in runs]
    if None in minutes:
        bad = runs[minutes.index(None)]
        raise ValueError(f"{bad.path} ran a fixed number of steps, not a time budget: it has no place on a time axis")
    pairs = [rerun_rows(record, r) for r in same] + [rerun_rows(record, r, changed=("minutes",)) for r in budgets]
    found = [{_key(row): row for row in pair if _wanted(row)} for pair in pairs]
    rows = []
    for key, row in (found[0] if found else {}).items():
        twins = [f.get(key) for f in found]
        if any(t is None for t in twins):
            continue
        # a gain taken over the seeds some runs share is named so in the row
        measure = next((t["measure"] for t in (row, *twins) if "seeds" in t), row["measure"])
        rows.append(
            {
                **{k: v for k, v in row.items() if k not in ("first", "again", "change", "values")},
                "measure": measure,
                "values": [row["first"], *(t["again"] for t in twins)],
                "minutes": minutes,
            }
        )
    return rows


def heldout_points(rows: Sequence[dict[str, Any]], mask_only: bool = False) -> tuple[list[float], list[float]]:
    """(minutes, held-out MLM accuracy in %) of every run in `budget_rows`: over every chosen
    position, or at the [MASK] positions only. Empty lists without a held-out row."""
    word = "[MASK] positions only" if mask_only else "every chosen position"
    row = next((r for r in rows if r["kind"] == "heldout" and word in r["measure"]), None)
    return ([], []) if row is None else (list(row["minutes"]), list(row["values"]))


@dataclass(frozen=True)
class LogTimeFit:
    """A straight line through (log2 minutes, value): `slope` per doubling of the time, `intercept`
    at one minute, `slope_se` its standard error and `residual_sd` the runs' scatter about the line
    (both None for two runs: nothing is left to measure the scatter with), `runs`, `budgets` (the
    distinct minutes, shortest first) and `centre` (the mean log2 minutes and mean value, through
    which every least-squares line passes)."""

    slope: float
    intercept: float
    slope_se: float | None
    residual_sd: float | None
    runs: int
    budgets: tuple[float, ...]
    centre: tuple[float, float]

    def at(self, minutes: float) -> float:
        """The line's value at `minutes`."""
        return self.intercept + self.slope * math.log2(minutes)

    def minutes_for(self, target: float, slope: float | None = None) -> float | None:
        """The minutes at which the line (or one of another `slope` through the same centre)
        reaches `target`; None when it never rises to it."""
        x, y = self.centre
        return Extension(self.slope if slope is None else slope, (2**x, y), "line").minutes_for(target)


def log_time_fit(minutes: Sequence[float], values: Sequence[float]) -> LogTimeFit:
    """Least squares of `values` on log2(`minutes`): how much a measure rises per doubling of the
    time. ValueError with fewer than two distinct budgets (no slope can be drawn) or lists of
    different lengths."""
    if len(minutes) != len(values):
        raise ValueError(f"{len(minutes)} budgets for {len(values)} values: give one budget per run")
    if any(m <= 0 for m in minutes):
        raise ValueError("budgets must be positive minutes")
    budgets = tuple(sorted(set(float(m) for m in minutes)))
    if len(budgets) < 2:
        raise ValueError(
            "a slope needs runs of at least two budgets (e.g. `reference-run --minutes 100` beside the record)"
        )
    x = [math.log2(m) for m in minutes]
    slope, intercept = statistics.linear_regression(x, values)
    mx, my = statistics.fmean(x), statistics.fmean(values)
    sxx = sum((xi - mx) ** 2 for xi in x)
    n = len(x)
    ssr = sum((yi - intercept - slope * xi) ** 2 for xi, yi in zip(x, values))
    sd = math.sqrt(ssr / (n - 2)) if n > 2 else None
    se = sd / math.sqrt(sxx) if sd is not None else None
    return LogTimeFit(slope, intercept, se, sd, n, budgets, (mx, my))


def by_budget(minutes: Sequence[float], values: Sequence[float]) -> dict[float, list[float]]:
    """The values of the runs at each budget, shortest budget first. ValueError for lists of
    different lengths."""
    groups: dict[float, list[float]] = {}
    for m, v in zip(minutes, values, strict=True):
        groups.setdefault(float(m), []).append(v)
    return dict(sorted(groups.items()))


def doublings_between(minutes: Sequence[float], values: Sequence[float]) -> list[tuple[float, float, float]]:
    """From each budget to the next longer one: (shorter, longer, points per doubling of the
    time), taken between the medians of the runs at each budget. A line in log time gives the same
    figure for every step; a figure that falls from one step to the next is a return that
    diminishes faster than the line assumes."""
    groups = by_budget(minutes, values)
    budgets = list(groups)
    medians = [statistics.median(v) for v in groups.values()]
    return [
        (a, b, (vb - va) / math.log2(b / a))
        for (a, va), (b, vb) in zip(zip(budgets, medians), zip(budgets[1:], medians[1:]))
    ]


def replicate_spread(minutes: Sequence[float], values: Sequence[float]) -> float | None:
    """The widest spread (highest less lowest) among the runs that share a budget: how far chance
    alone moved the measure. None when no budget holds two runs."""
    spreads = [max(v) - min(v) for v in by_budget(minutes, values).values() if len(v) > 1]
    return max(spreads) if spreads else None


def diminishing(minutes: Sequence[float], values: Sequence[float]) -> bool:
    """Whether the returns of more time fall: with three budgets or more, the last doubling
    (`doublings_between`) bought less than the first by more than the runs at one budget spread
    (`replicate_spread`; by any amount without such runs). Then a straight line in log time through
    every run overstates what a further doubling buys."""
    steps = doublings_between(minutes, values)
    if len(steps) < 2:
        return False
    return steps[0][2] - steps[-1][2] > (replicate_spread(minutes, values) or 0.0)


@dataclass(frozen=True)
class Extension:
    """How a reading draws the held-out accuracy on past the longest budget: `rate` points per
    doubling of the time from `start` (minutes, accuracy). `basis` "line": the least-squares line
    through every run; "last doubling": where the returns diminish, the rate of the last doubling
    from the median at the longest budget, which later doublings can only undercut."""

    rate: float
    start: tuple[float, float]
    basis: str

    def at(self, minutes: float) -> float:
        return self.start[1] + self.rate * math.log2(minutes / self.start[0])

    def minutes_for(self, target: float) -> float | None:
        """The minutes at which the drawn-on line reaches `target`; None when it does not rise."""
        if self.rate <= 0:
            return None
        return self.start[0] * 2 ** ((target - self.start[1]) / self.rate)


def extension(minutes: Sequence[float], values: Sequence[float], fit: LogTimeFit) -> Extension:
    """The `Extension` a reading and its chart draw on: the fitted line, or, where the returns
    diminish (`diminishing`), the last doubling's rate from the longest budget's median."""
    if diminishing(minutes, values):
        a, b, rate = doublings_between(minutes, values)[-1]
        last = statistics.median(v for m, v in zip(minutes, values) if float(m) == b)
        return Extension(rate, (b, last), "last doubling")
    x, y = fit.centre
    return Extension(fit.slope, (2**x, y), "line")  # the fitted line itself


def _by_budget(row: dict[str, Any]) -> dict[float, list[float]]:
    return by_budget(row["minutes"], row["values"])


def _figure(row: dict[str, Any], value: float) -> str:
    if row["kind"] == "gain":
        return "0.0" if round(value, 1) == 0 else f"{value:+.1f}"
    if row["measure"] == "pretraining steps":
        return f"{value:,.0f}"
    return f"{value:.1f}"


def budget_table(rows: Sequence[dict[str, Any]]) -> str:
    """`budget_rows` as a Markdown table with one column per budget, shortest first: a budget of
    one run shows its figure, one of several their median with the range in brackets."""
    if not rows:
        return ""
    groups = _by_budget(rows[0])
    heads = [f"{m:g} minutes" + (f" ({number(len(v))} runs)" if len(v) > 1 else "") for m, v in groups.items()]
    lines = [f"| measure | {' | '.join(heads)} |", "|---|" + "---:|" * len(heads)]
    for r in rows:
        cells = []
        for values in _by_budget(r).values():
            text = _figure(r, statistics.median(values))
            if len(values) > 1:
                text += f" ({_figure(r, min(values))} to {_figure(r, max(values))})"
            cells.append(text)
        lines.append(f"| {r['measure']} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _hours(minutes: float, unit: bool = True) -> str:
    hours = minutes / 60
    return (f"{hours:,.0f}" if hours >= 10 else f"{hours:.1f}") + (" hours" if unit else "")


def _list(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def rising_gains(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The gain rows of `budget_rows` whose median rose from each budget to the next longer one,
    and the others."""
    gains = [r for r in rows if r["kind"] == "gain"]
    rising = []
    for r in gains:
        medians = [statistics.median(v) for v in _by_budget(r).values()]
        if all(b > a for a, b in zip(medians, medians[1:])):
            rising.append(r)
    return rising, [r for r in gains if r not in rising]


def budget_reading(rows: Sequence[dict[str, Any]], fit: LogTimeFit, target: float = 45.0) -> str:
    """What the budgets say, in words generated from `budget_rows` and the `log_time_fit` of its
    held-out accuracy: what each doubling of the pretraining time bought, between the medians; the
    least-squares slope per doubling (with its standard error when the runs give one); the hours of
    pretraining `target` percent would take, drawn on as `extension` draws it (the line, with the
    range a slope one standard error either way gives, or, where the returns diminish, the last
    doubling's rate, a lower bound on the time); and which fine-tuned gains rose with every longer
    budget. Empty without rows."""
    if not rows:
        return ""
    minutes, values = heldout_points(rows)
    budgets = _list([f"{m:g}" for m in fit.budgets])
    se = f" (standard error {fit.slope_se:.1f})" if fit.slope_se is not None else ""
    line = f"{fit.slope:.1f} points per doubling of the pretraining time{se}"
    steps = doublings_between(minutes, values)
    ext = extension(minutes, values, fit)
    record = rows[0]["minutes"][0]
    text = f"Over {number(fit.runs)} runs at budgets of {budgets} minutes, "
    if ext.basis == "last doubling":
        each = _list([f"{p:.1f} points from {a:g} to {b:g} minutes" for a, b, p in steps])
        spread = replicate_spread(minutes, values)
        chance = f", a fall larger than the {spread:.1f} points the runs at one budget spread" if spread else ""
        text += (
            f"a doubling of the pretraining time bought {each}, between the medians at each budget"
            f"{chance}. The returns diminish, so the least-squares line through every run in the "
            f"logarithm of the time, {fit.slope:.1f} points per doubling{se}, overstates what later "
            "doublings buy."
        )
    else:
        text += f"held-out MLM accuracy rose {line}, fitted by least squares against the logarithm of the time."
        if len(steps) > 1:
            each = _list([f"{p:.1f} from {a:g} to {b:g} minutes" for a, b, p in steps])
            text += f" Step by step, between the medians at each budget, a doubling bought {each}."
    if max(values) >= target:
        text += f" The runs reach {target:g}% within the longest budget."
    else:
        needed = ext.minutes_for(target)
        if needed is None:
            text += f" The line does not rise, so more time alone gives no way to {target:g}% in these runs."
        elif ext.basis == "last doubling":
            text += (
                f" Even if every further doubling bought as much as the last, {target:g}% would take about "
                f"{_hours(needed)} of pretraining on the same cores, where the record pretrains for "
                f"{record:g} minutes; returns that keep diminishing would take longer still."
            )
        else:
            text += f" Were every further doubling to buy as much, {target:g}% would take about {_hours(needed)}"
            if fit.slope_se is not None:
                fast = fit.minutes_for(target, fit.slope + fit.slope_se)
                slow = fit.minutes_for(target, fit.slope - fit.slope_se)
                if slow is None:  # a slope one standard error lower does not rise at all
                    span = f"{_hours(fast)} or never"
                else:
                    span = f"{_hours(fast, unit=False)} to {_hours(slow)}"
                text += f" of pretraining on the same cores ({span} with the slope one standard error either way)"
            else:
                text += " of pretraining on the same cores"
            text += f", where the record pretrains for {record:g} minutes: a line drawn out, not a forecast."
    rising, others = rising_gains(rows)
    if rising:
        named = []
        for r in rising:
            medians = [_figure(r, statistics.median(v)) for v in _by_budget(r).values()]
            named.append(f"{r['title']} ({' to '.join(medians)})")
        if others:
            text += (
                f" Of the fine-tuned gains, {_list(named)} rose with every longer budget; "
                f"{_list([r['title'] for r in others])} did not."
            )
        else:
            text += f" Every fine-tuned gain rose with every longer budget: {_list(named)}."
    elif others:
        text += " None of the fine-tuned gains rose with every longer budget."
    return text
