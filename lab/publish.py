"""What the chapters show of the lab's studies, published as data: data/results/<name>.json.

The chapters never import the lab. Each file here is computed by the lab's study modules from the
committed records in data/ and read by a chapter through bertlab.data.results; a file records the
sha256 of every record it was computed from ("from"), so a stale one shows. Run from the
repository root:

    python -m lab.publish            # write every file
    python -m lab.publish --check    # exit 1, naming the files a fresh publish would change
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bertlab.data.records import records_dir
from bertlab.experiments import reference
from bertlab.experiments import squad2 as squad2_record
from bertlab.files import sha256_file
from bertlab.prose import count
from bertlab.tasks import get_task
from lab import ablations_reading as ablations
from lab import findings, finetune_seeds, pilots, rerun, squad2, time_budget
from lab.finetune_rates import recorded_on

RECORD_FILES = ("reference_run/*.json", "reference_run/*.jsonl")  # not the weights


def _reading(g: finetune_seeds.SeedGains) -> dict[str, Any]:
    r = g.reading()
    return {"gain": r.gain, "low": r.low, "high": r.high, "how": r.how}


def finetune_seeds_results() -> dict[str, Any]:
    """SST-2 at 2,000 sentences and SQuAD v1.1 over more seeds than the record's (chapters 11, 13
    and 17, and the lab's fine-tuning checks)."""
    run = reference.find()
    seed_file = pilots.PILOTS_DIR / "sst2_2000_seeds.jsonl"
    meta, rows = pilots.finetune_sweeps(seed_file)
    many = finetune_seeds.seed_gains(rows)
    shown = len(run.provenance["settings"]["seeds"])
    intro = (
        f"The curve's medians rest on {count(shown, 'seed')} per arm, few for a gain of a few "
        "points. The same fine-tuning was run with more seeds "
        f"(`scripts/record_finetune_lr.py`, `data/pilots/{seed_file.name}`). "
    )
    sizes = sorted({r["train_examples"] for r in rows if r.get("task") == "sst2" and r.get("train_examples")})
    readings = {str(n): _reading(g) for n in sizes if (g := finetune_seeds.seed_gains(rows, train_examples=n))}
    out = {
        "text": {
            "sst2_2000": intro + finetune_seeds.seeds_reading(many, shown=shown),
            "sst2_2000_recorded_on": recorded_on(meta),
        },
        "value": {"sst2_readings": readings, "sst2_train_examples": many.train_examples},
    }
    added = run.provenance.get("added_tasks", {}).get("squad")
    if added is not None:
        st = added["settings"]
        sq_file = pilots.PILOTS_DIR / "squad_record_seeds.jsonl"
        sq_meta, sq_rows = pilots.finetune_sweeps(sq_file)
        recipe = {k: st[k] for k in finetune_seeds.SQUAD_SETTINGS}
        made_by = run.provenance.get("git_commit")
        sq = finetune_seeds.squad_seed_gains(sq_rows, "data/reference_run", sq_meta, made_by, **recipe)
        if sq is not None:
            more = (
                "The same fine-tuning was run with more seeds, scored in F1 on the same held-out questions "
                f"(`scripts/record_squad_epochs.py`, `data/pilots/{sq_file.name}`). "
            )
            out["text"]["squad"] = more + finetune_seeds.seeds_reading(sq, shown=len(st["seeds"]))
            out["value"]["squad_seeds"] = len(sq.seeds)
    return out


def pilots_results() -> dict[str, Any]:
    """The one-change pilots: chapter 10's finding, its lever figure and readings, its post-LN
    against pre-LN sentence; chapter 17's reason for masking more than 15%."""
    run = reference.find()
    series = {s.name: s for s in pilots.pilot_series()}
    shown = [series[n] for n in ("cpu-mini-8k", "cpu-tiny-16k") if n in series]
    levers = [pilots.lever_effects([s]) for s in shown]
    figure = [
        {
            "name": s.name,
            "model": "{L}/{H}/{A}".format(**s.baseline["model"]),
            "tokens": s.tokens,
            "levers": [dataclasses.asdict(x) for x in lv],
            "reading": pilots.levers_reading(lv),
        }
        for s, lv in zip(shown, levers)
    ]
    out: dict[str, Any] = {
        "text": {
            "pretraining_finding": findings.pretraining_finding(run, levers[0]),
        },
        "series": {"levers": figure},
        "value": {},
    }
    recorded = {p["name"]: p for p in pilots.load()}
    post = recorded.get("cpu-mini-post-ln-pairs-phases-50min")
    pre = recorded.get("cpu-mini-pre-ln-pairs-phases-50min")
    single = next((x for x in levers[0] if x.label == "post-ln"), None)
    if post and pre and single:
        out["text"]["norm_position"] = findings.norm_position_reading(single, post, pre)
    mask_30 = _mask_pilot(recorded)
    if mask_30 is not None:
        out["value"]["mask_30"] = mask_30
    return out


def _mask_pilot(recorded: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The pilot that masked 30% beside its baseline, at the last step both were scored (chapter
    17's reason for masking more than 15%); None without it. `recorded`: pilots.load() by name."""
    pilot = recorded.get("cpu-mini-mask-30")
    if pilot is None:
        return None
    base = recorded[pilot["baseline"]]
    step = min(pilot["heldout"][-1]["step"], base["heldout"][-1]["step"])
    at = {p["name"]: next(q["mlm_acc"] for q in p["heldout"] if q["step"] == step) for p in (pilot, base)}
    return {"pilot": pilot["name"], "step": step, "pilot_acc": at[pilot["name"]], "baseline_acc": at[base["name"]]}


def time_budget_results() -> dict[str, Any]:
    """The record's settings under other pretraining budgets (chapter 10's figure and reading)."""
    run = reference.find()
    budgets = time_budget.find_budgets(run)
    if not budgets:
        return {}
    same = rerun.find_runs_again(run)
    rows = time_budget.budget_rows(run, same, budgets)
    minutes, held = time_budget.heldout_points(rows)
    fit = time_budget.log_time_fit(minutes, held)
    onward = time_budget.extension(minutes, held, fit)
    x, y = fit.centre  # the fitted line, in the same form as the line drawn on
    return {
        "series": {
            "budget": {
                "rows": rows,
                "budgets": list(fit.budgets),
                "fit": {"rate": fit.slope, "start": [2**x, y], "basis": "line"},
                "drawn_on": {"rate": onward.rate, "start": list(onward.start), "basis": onward.basis},
            }
        },
        "text": {"budget_reading": time_budget.budget_reading(rows, fit, target=45.0)},
    }


def findings_results() -> dict[str, Any]:
    """The openings of chapters 11 to 14 and 17: 11's, 13's and 17's rest on the lab's fine-tunings
    over more seeds, 12's and 14's on the record alone (12's reads the majority label of MRPC's and
    RTE's dev sets, from the data mirror); chapter 10's is in pilots.json, beside the levers it
    names."""
    run = reference.find()
    out: dict[str, Any] = {"text": {}}
    tasks = {g["task"] for g in run.gains()}
    if "sst2" in tasks:
        out["text"]["sst2"] = findings.sst2_finding(run, findings.sst2_seeds(2000))
    if tasks & {"mrpc", "rte"}:
        dev = {name: get_task(name).load("dev") for name in ("mrpc", "rte")}
        out["text"]["pairs"] = findings.pairs_finding(run, dev)
    if "conll2003" in tasks:
        out["text"]["ner"] = findings.ner_finding(run)
    if "squad" in tasks:
        out["text"]["squad"] = findings.squad_finding(run, findings.squad_seeds(run))
    study = ablations.load()
    if study is not None:
        out["text"]["ablations"] = findings.ablations_finding(study, run)
    return out


def ablations_results() -> dict[str, Any]:
    """The paper's section 5 ablations at one budget each: what chapter 17 shows of the record (its
    tables, the held-out curves, the sentences under them, the comparison with the paper, the study
    beside the book's record and its SST-2 gain over more seeds, the summary) and the NSP accuracy
    chapter 9 sets beside a word-overlap rule."""
    rec = ablations.load()
    if rec is None:
        return {}
    earlier = ablations.load_earlier()  # the same plan, run before on 2 CPU cores
    run = reference.find()
    verdicts = ablations.compare_with_paper(rec)
    curves = ablations.heldout_curves(rec)  # {model: (steps, held-out accuracy in %)}
    out: dict[str, Any] = {
        "table": {
            "models": ablations.models_table(rec, earlier),
            "heldout": ablations.heldout_table(rec),
            "finetune": ablations.finetune_table(rec),  # with each task's trivial floor
            "paper": ablations.paper_table(verdicts),
        },
        "series": {
            "heldout_curves": {
                group: [{"name": n, "step": curves[n][0], "accuracy": curves[n][1]} for n in names]
                for group, names in (("task", ablations.TASK_MODELS), ("size", ablations.SIZE_MODELS))
            }
        },
        "text": {
            "plan": ablations.plan_reading(rec),
            "size_and_nsp": ablations.size_and_nsp_reading(rec),
            "comparisons": ablations.comparisons_reading(verdicts),
        },
        "value": {"nsp_accuracy": ablations.nsp_accuracy(rec)},
    }
    optional = {
        "mask_rate": ablations.mask_rate_reading(rec, _mask_pilot({p["name"]: p for p in pilots.load()})),
        "same_plan": ablations.same_plan_reading(ablations.same_plan_elsewhere(rec, earlier)) if earlier else None,
        "nsp_head": ablations.nsp_head_reading(rec),
        "why_not_mrpc": ablations.why_not_mrpc(rec, run),
    }
    measured, n = None, None
    if run is not None:
        b = ablations.beside_reference(rec, run)  # the study's BERT-Mini and the record's
        n = b.train_examples
        many = findings.sst2_seeds(n)  # the record's SST-2 gain at the study's size, over many seeds
        measured = many.reading() if many is not None else None
        out["table"]["beside_reference"] = ablations.beside_reference_table(b)
        if b.same_recipe:
            differences = ablations.reference_differences(rec, run)
            paragraph = ablations.beside_reference_reading(b, differences, measured)
            optional["beside_reference"] = " ".join(filter(None, (paragraph, ablations.best_gain_reading(b))))
    bullets = ablations.results_summary(verdicts, measured, n)
    optional["summary"] = "\n".join(f"* {x}" for x in bullets)
    out["text"].update({k: v for k, v in optional.items() if v})
    return out


def squad2_results() -> dict[str, Any]:
    """SQuAD 2.0's record as chapter 13b shows it: whether the book's BERT can abstain (its opening),
    how the model was fine-tuned, the scores table, the reading under it and the summary line."""
    rec = squad2_record.load()  # data/squad2/results.json
    if rec is None:
        return {}
    return {
        "table": {"scores": squad2.scores_table(rec)},
        "text": {
            "verdict": squad2.verdict(rec),
            "settings": squad2.settings_words(rec),
            "reading": squad2.reading(rec),
            "summary": squad2.summary(rec),
        },
    }


# each published file: what computes it and the records (globs under data/) it reads
PUBLISHED: dict[str, tuple[Callable[[], dict[str, Any]], tuple[str, ...]]] = {
    "finetune_seeds": (
        finetune_seeds_results,
        (*RECORD_FILES, "pilots/sst2_2000_seeds.jsonl", "pilots/squad_record_seeds.jsonl"),
    ),
    "pilots": (pilots_results, (*RECORD_FILES, "pilots/*.json")),
    "findings": (
        findings_results,
        (*RECORD_FILES, "pilots/sst2_2000_seeds.jsonl", "pilots/squad_record_seeds.jsonl", "ablations/*.json"),
    ),
    "time_budget": (
        time_budget_results,
        (*RECORD_FILES, "pilots/record7*/*.json*", "pilots/record8-*/*.json*"),
    ),
    "squad2": (squad2_results, ("squad2/results.json",)),
    "ablations": (
        ablations_results,
        (
            "ablations/*.json",  # the record, and the earlier run of its plan
            *RECORD_FILES,  # the book's record beside the study
            "pilots/sst2_2000_seeds.jsonl",  # its SST-2 gain over many seeds (finetune_seeds.json's)
            "pilots/cpu-mini-mask-30.json",  # why 30% masked: the pilot and its baseline
            "pilots/cpu-mini-8k.json",
        ),
    ),
}


def sources(globs: tuple[str, ...], data: Path) -> dict[str, str]:
    """The sha256 of every record file `globs` match under `data`, by path relative to it."""
    found = {p for g in globs for p in data.glob(g) if p.is_file()}
    return {p.relative_to(data).as_posix(): sha256_file(p) for p in sorted(found)}


def render(name: str) -> str:
    """The bytes of data/results/<name>.json, as a fresh publish writes them."""
    compute, globs = PUBLISHED[name]
    body = {kind: entries for kind, entries in compute().items() if entries}
    body["from"] = sources(globs, records_dir())
    return json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def publish(out: Path) -> list[Path]:
    """Write every published file into `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in PUBLISHED:
        path = out / f"{name}.json"
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written


def stale(out: Path) -> list[str]:
    """The files in `out` that a fresh publish would change (or write for the first time)."""
    return [
        f"{name}.json"
        for name in PUBLISHED
        if not (out / f"{name}.json").is_file() or (out / f"{name}.json").read_text(encoding="utf-8") != render(name)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.publish", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="default: data/results/ of the records folder")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    out = args.out or records_dir("results")
    if args.check:
        differ = stale(out)
        if differ:
            print(f"stale in {out}: {', '.join(differ)}; run `python -m lab.publish` and commit them", file=sys.stderr)
            return 1
        print(f"{out}: every published file is up to date")
        return 0
    for path in publish(out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
