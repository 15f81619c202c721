"""The checks of assignment 08_ablation: check_ablation_plan (chapter 17)."""

from __future__ import annotations

import dataclasses as dc
import re
from typing import Callable

from bertlab.config import PRESETS
from bertlab.prose import count
from bertlab.training.recipes import RECIPES, Recipe, get_recipe

from .framework import Parts, call_student

PLAN_FIELDS = {
    "question": str,
    "hypothesis": str,
    "control": dict,
    "change": dict,
    "metric": str,
    "seeds": (list, tuple),
    "minutes_per_run": (int, float),
    "decision": str,
}
METRICS = (
    "held-out MLM accuracy",
    "held-out MLM loss",
    "SST-2 dev accuracy",
    "MRPC dev F1",
    "CoNLL-2003 dev F1",
    "SQuAD dev F1",
)
CPU_HOURS = 4  # the budget an ablation plan may spend, both arms and every seed together
DIRECTION_WORDS = (  # a hypothesis must use one: which way it expects the metric to move
    *"higher lower better worse faster slower more less increase decrease".split(),
    *"improve hurt raise reduce same".split(),
    "no difference",
    "unchanged",
)


def check_ablation_plan(ablation_plan: Callable) -> None:
    """ablation_plan() -> dict with: question, hypothesis (what you expect and why), control
    ({"recipe": name, "preset": name, and any recipe fields it overrides}), change ({knob: value},
    one knob), metric (one of METRICS), seeds (>= 3), minutes_per_run, decision (the rule, with
    its threshold, that says which result supports the hypothesis)."""
    __tracebackhide__ = True
    name = "ablation_plan"
    knobs = {f.name for f in dc.fields(Recipe)} - {"name", "notes", "steps"} | {"preset"}
    parts = Parts(name)
    plan: dict = {}

    def need_plan():
        if not plan:
            parts.fail("not checked: ablation_plan() did not return a dict with every field")

    def resolve(cfg: dict, what: str):
        cfg = dict(cfg)
        recipe, preset = cfg.pop("recipe", None), cfg.pop("preset", None)
        if recipe not in RECIPES:
            parts.fail(f"{what}: 'recipe' must be one of {sorted(RECIPES)}, got {recipe!r}")
        if preset not in PRESETS:
            parts.fail(f"{what}: 'preset' must be one of {sorted(PRESETS)}, got {preset!r}")
        unknown = sorted(set(cfg) - knobs)
        if unknown:
            parts.fail(f"{what}: {unknown} are not settings of a pretraining run; the settings are {sorted(knobs)}")
        try:
            r = get_recipe(recipe, **cfg)
        except (ValueError, TypeError) as err:
            parts.fail(f"{what}: not a valid run: {err}")
        return {**dc.asdict(r), "preset": preset}

    with parts("the plan has every field, with the right types"):
        got = call_student(name, ablation_plan)
        if not isinstance(got, dict):
            parts.fail(f"return a dict, got {type(got).__name__}")
        for key, typ in PLAN_FIELDS.items():
            if key not in got:
                parts.fail(f"the plan has no {key!r}; it needs {', '.join(PLAN_FIELDS)}")
            if not isinstance(got[key], typ) or isinstance(got[key], bool):
                parts.fail(
                    f"plan[{key!r}] should be a {getattr(typ, '__name__', 'list or number')}, got "
                    f"{type(got[key]).__name__}"
                )
            if isinstance(got[key], str) and not got[key].strip():
                parts.fail(f"plan[{key!r}] is empty")
        plan = got
    with parts("the control is a run bertlab can make"):
        need_plan()
        resolve(plan["control"], "the control")
    with parts("exactly one change, to a real setting, to a new value"):
        need_plan()
        change = plan["change"]
        if len(change) != 1:
            parts.fail(
                f"change {sorted(change)} settings; an ablation changes exactly ONE thing, so that any "
                "difference can be put down to it"
            )
        knob, value = next(iter(change.items()))
        if knob not in knobs:
            parts.fail(f"{knob!r} is not a setting of a pretraining run; the settings are {sorted(knobs)}")
        control = resolve(plan["control"], "the control")
        treatment = resolve({**plan["control"], knob: value}, "the control with the change")
        if control[knob] == treatment[knob]:
            parts.fail(
                f"the change sets {knob} to {value!r}, which is already the control's value: the two arms "
                "would be the same run"
            )
    with parts("at least 3 seeds, each used by both arms"):
        need_plan()
        seeds = list(plan["seeds"])
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds) or len(set(seeds)) != len(seeds):
            parts.fail(f"seeds should be distinct ints, got {seeds}")
        if len(seeds) < 3:
            parts.fail(
                f"{count(len(seeds), 'seed')}: with fewer than three per arm there is no way to tell a "
                "difference from seed-to-seed noise"
            )
    with parts(f"the budget fits in {CPU_HOURS} CPU-hours (2 arms x seeds x minutes per run)"):
        need_plan()
        minutes = float(plan["minutes_per_run"])
        total = 2 * len(plan["seeds"]) * minutes
        if minutes <= 0:
            parts.fail(f"minutes_per_run must be positive, got {minutes:g}")
        if total > CPU_HOURS * 60:
            parts.fail(
                f"2 arms x {len(plan['seeds'])} seeds x {minutes:g} minutes = {total:g} minutes, more than "
                f"the {CPU_HOURS * 60} minutes available: fewer minutes per run (or a smaller model)"
            )
    with parts("a metric measured on held-out data"):
        need_plan()
        if plan["metric"] not in METRICS:
            parts.fail(
                f"metric {plan['metric']!r}: choose one of {list(METRICS)} (measured on data the runs did not train on)"
            )
    with parts("a hypothesis that names the setting and predicts a direction"):
        need_plan()
        text = plan["hypothesis"].lower()
        knob = next(iter(plan["change"]), "")
        names = {knob.lower(), knob.lower().replace("_", " "), knob.lower().replace("_", "-")}
        if not any(n and n in text for n in names):
            parts.fail(f"the hypothesis does not name the setting it is about ({knob!r})")
        if not any(w in text for w in DIRECTION_WORDS):
            parts.fail(
                "the hypothesis predicts no direction: say what you expect the change to do to the metric "
                "(higher, lower, no difference, ...)"
            )
        if len(text.split()) < 12:
            parts.fail("the hypothesis is under 12 words: say what you expect AND why")
    with parts("a decision rule with a threshold, fixed before the runs"):
        need_plan()
        rule = plan["decision"]
        if not re.search(r"\d", rule):
            parts.fail(
                "the decision rule has no number: state the threshold (e.g. a difference of medians of at "
                "least 1 point, larger than the spread between seeds)"
            )
        if len(rule.split()) < 8:
            parts.fail(
                "the decision rule is under 8 words: say which result supports the hypothesis and which does not"
            )
    parts.done(
        "every field; a runnable control; one change to a real setting; >= 3 seeds; the budget within "
        f"{CPU_HOURS} CPU-hours; a held-out metric; a directional hypothesis; a decision rule with a threshold"
    )
