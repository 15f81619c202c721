"""The pilot study behind the `cpu` recipe, read from its records (`data/pilots/`, through
`bertlab.experiments.reference.pilots`): which change to a baseline run moved held-out MLM accuracy, by how
much, compared at the same number of training tokens.

A *series* is a baseline run and the pilots that each change one thing of it (same data,
vocabulary, seed and learning-rate schedule). Runs of a series are compared at the most tokens
every one of them was scored at: a pilot with twice the batch takes half the steps, so steps would
not compare. A series under a time budget (`minutes`) is also read by where each run ended.

    series = pilot_series()                 # every series, baselines first by name
    lever_effects(series)                   # each change's effect in points, largest first
    series_table(s), series_reading(s)      # Markdown for the book

A pilot trained on shorter sequences is scored on held-out windows of its own length; where it was
also scored on the baseline's length (`cross_eval`), that score is the one compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from bertlab.experiments import reference
from bertlab.prose import count

Pilot = dict[str, Any]


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
        pilots = reference.pilots()
    by_name = {p["name"]: p for p in pilots}
    grouped: dict[str, list[Pilot]] = {}
    for p in pilots:
        if p.get("baseline") in by_name and p["name"] != p["baseline"]:
            grouped.setdefault(p["baseline"], []).append(p)
    out = []
    for base_name in sorted(grouped):
        base, same = by_name[base_name], tuple(grouped[base_name])
        common = set.intersection(*({q["tokens"] for q in r["heldout"]} for r in (base, *same)))
        if not common:
            raise ValueError(f"the runs of series {base_name} were never scored at the same number of tokens")
        out.append(Series(base, same, max(common), same[0].get("minutes")))
    return out


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
            levers.append(Lever(s.name, p["name"], short_label(p["name"], s.name), p["change"],
                                round(100 * (a - b_here), 1), s.tokens, scored_on))
    return sorted(levers, key=lambda lv: -lv.points)


def series_rows(s: Series) -> list[dict[str, Any]]:
    """One row per run of a series: name, change, accuracy at the common tokens, points against the
    baseline (None for the baseline), and where the run ended (accuracy, step, tokens)."""
    b = accuracy_at(s.baseline["heldout"], s.tokens)
    rows = []
    for r in s.runs:
        a, end = accuracy_at(r["heldout"], s.tokens), r["heldout"][-1]
        rows.append({"name": r["name"], "change": "none (the baseline)" if r is s.baseline else r["change"],
                     "accuracy": a, "points": None if r is s.baseline else round(100 * (a - b), 1),
                     "end_accuracy": end["mlm_acc"], "end_step": end["step"], "end_tokens": end["tokens"]})
    return rows


def series_table(s: Series) -> str:
    """The series as a Markdown table (for display(Markdown(...)))."""
    head = f"| run | change | held-out accuracy at {tokens_text(s.tokens)} | vs the baseline |"
    if s.minutes:
        head += f" after {s.minutes:g} minutes (steps) |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in series_rows(s):
        vs = "" if r["points"] is None else f"{r['points']:+.1f} points"
        line = f"| {r['name']} | {r['change']} | {r['accuracy']:.1%} | {vs} |"
        if s.minutes:
            line += f" {r['end_accuracy']:.1%} ({r['end_step']:,}) |"
        lines.append(line)
    return "\n".join(lines)


def series_reading(s: Series, level: float = 0.5) -> str:
    """A few sentences on a series: who led and who trailed the baseline at the common tokens
    (within `level` points counts as level), where each run of a timed series ended, which run
    never rose above its first score, and cross-length scores."""
    rows = series_rows(s)[1:]
    order = sorted(rows, key=lambda r: -r["points"])
    ahead = [f"`{r['name']}` ({r['points']:+.1f})" for r in order if r["points"] >= level]
    behind = [f"`{r['name']}` ({r['points']:+.1f})" for r in order if r["points"] <= -level]
    even = [f"`{r['name']}`" for r in order if abs(r["points"]) < level]
    parts = [f"{label}: {', '.join(x)}" for label, x in
             (("ahead of the baseline", ahead), ("behind it", behind), (f"within {level:g} of a point", even)) if x]
    text = f"At {tokens_text(s.tokens)}, in points of held-out accuracy, " + "; ".join(parts) + "."
    if s.minutes:
        ends = sorted(s.runs, key=lambda r: -r["heldout"][-1]["mlm_acc"])
        ranked = ", ".join(f"`{r['name']}` {r['heldout'][-1]['mlm_acc']:.1%} "
                           f"({tokens_text(r['heldout'][-1]['tokens'])})" for r in ends)
        budget = count(int(s.minutes), "minute") if s.minutes == int(s.minutes) else f"{s.minutes:g} minutes"
        text += f" After the whole {budget}: {ranked}."
    for r in s.runs:
        first, end = r["heldout"][0]["mlm_acc"], r["heldout"][-1]["mlm_acc"]
        if end < first + 0.005:
            text += (f" `{r['name']}` never rose above its first held-out score ({first:.1%}): it stalled or "
                     f"diverged in its first steps.")
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
    up = [f"{lv.label} ({lv.points:+.1f})" for lv in levers if lv.points >= level]
    down = [f"{lv.label} ({lv.points:+.1f})" for lv in levers if lv.points <= -level]
    even = [lv.label for lv in levers if abs(lv.points) < level]
    parts = [f"{label} {', '.join(x)}" for label, x in
             (("raised it:", up), ("lowered it:", down), (f"moved it less than {level:g} of a point:", even)) if x]
    return (f"Against `{levers[0].series}` at {tokens_text(levers[0].tokens)}, in points of held-out "
            f"accuracy, these changes " + "; ".join(parts) + ".")


def machines_table(pilots: Sequence[Pilot]) -> str:
    """Where and with what code each pilot ran, as a Markdown table: CPU, runtime (precision,
    compiled or not), median training tokens/s, and the commit of the code (timings compare only
    within one machine)."""
    lines = ["| run | CPU | runtime | median tokens/s | code |", "|---|---|---|---|---|"]
    for p in sorted(pilots, key=lambda p: p["name"]):
        m = p.get("machine") or {}
        speed = m.get("median_tokens_per_s")
        commit = p.get("git_commit")
        lines.append(f"| {p['name']} | {m.get('cpu') or 'not recorded'} | {m.get('runtime') or 'not recorded'} | "
                     f"{f'{speed:,.0f}' if speed else 'not recorded'} | {commit[:7] if commit else 'not recorded'} |")
    return "\n".join(lines)
