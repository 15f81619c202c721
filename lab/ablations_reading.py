"""Reading the record of the paper's section 5 ablations, each run with one fixed budget.

Section 5.1 (Table 5) compares pre-training tasks: the masked LM with next-sentence prediction
(BERT), the masked LM alone, and a left-to-right LM ("LTR & No NSP"). Section 5.2 (Table 6)
compares model sizes under the same pre-training. In the record every model got the same data,
vocabulary, recipe, seed and number of optimizer steps over a complete schedule; then each was
fine-tuned with one recipe (SST-2 and CoNLL-2003 on 2,000 labelled sentences each) with three
seeds, beside the same architecture from random weights. The lab makes it (lab/ablations.py,
`python scripts/record_ablations.py`) and reads it here:

    from lab import ablations_reading as ablations; ablations.load()

What chapter 17 shows of it (and chapter 9's NSP accuracy) `lab.publish` writes to
data/results/ablations.json from these functions, and the chapters read that file: the tables
(`models_table`, `heldout_table`: each model on its own held-out task, `finetune_table`: every
seed and the trivial floor, `paper_table`, `beside_reference_table`: the masked-LM model beside
the book's reference run, the same size trained longer), the curves (`heldout_curves`) and the
sentences (`plan_reading`, `size_and_nsp_reading`, `comparisons_reading`, `results_summary`, ...).

The record is data/ablations/ablations.json: the settings, the machine, and per model its size,
steps, tokens, training time, held-out scores (the masked LM on the fixed held-out masks, the LTR
model on next-token prediction of the same sequences) and fine-tuning scores per seed with their
median.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertlab.data.records import records_dir
from bertlab.prose import count, number, verb_agreeing
from bertlab.verdict import CLEAR, WITHIN, Reading

ABLATIONS_DIR = records_dir("ablations")
RECORD_FILE = "ablations.json"
# An earlier run of the same pre-training plan on 2 CPU cores (fine-tuned on SST-2 only), kept to
# show that the machine does not change what the models learn (`same_plan_elsewhere`).
EARLIER_FILE = "ablations_cpu.json"

# The models of the plan, in its order: the first three are Table 5's rows (at the mini size), the
# sizes are Table 6's question ("MLM, no NSP" is the mini point of both). Their settings, and the
# plan's budget, are the lab's (lab/ablations.py); the record holds what each was made with.
MODELS = ("MLM + NSP", "MLM, no NSP", "LTR, no NSP", "2/128/2 (tiny)", "2/256/4")
TASK_MODELS = ("MLM + NSP", "MLM, no NSP", "LTR, no NSP")
SIZE_MODELS = ("2/128/2 (tiny)", "2/256/4", "MLM, no NSP")
SCRATCH = "scratch (no pre-training)"  # the mini architecture from random weights


def load(folder: str | Path = ABLATIONS_DIR) -> dict[str, Any] | None:
    """The recorded ablations (data/ablations/ablations.json), or None when there is no record."""
    path = Path(folder) / RECORD_FILE
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    missing = [m for m in MODELS if m not in record.get("models", {})]
    if missing:
        raise ValueError(
            f"{path} has no result for {', '.join(missing)}: it is incomplete; finish it with "
            f"`python scripts/record_ablations.py` (it resumes)"
        )
    return record


def load_earlier(folder: str | Path = ABLATIONS_DIR) -> dict[str, Any] | None:
    """The earlier run of the plan kept beside the record (EARLIER_FILE), or None."""
    path = Path(folder) / EARLIER_FILE
    return json.loads(path.read_text()) if path.exists() else None


def nsp_accuracy(record_: dict[str, Any], model: str = "MLM + NSP") -> dict[str, Any] | None:
    """The NSP accuracy a model of the record reached on held-out pairs at its last evaluation:
    {"nsp_acc", "step", "tokens"}; None if that model did not train NSP."""
    m = record_["models"].get(model)
    if m is None:
        raise KeyError(f"no model {model!r} in the ablation record; it has {', '.join(record_['models'])}")
    points = [c for c in m.get("curve", []) if c.get("nsp_acc") is not None]
    if not points:
        return None
    last = points[-1]
    tokens = m["tokens"] * last["step"] // m["steps"] if m.get("steps") else None
    return {"nsp_acc": last["nsp_acc"], "step": last["step"], "tokens": tokens}


def gap(record_: dict[str, Any], task: str, a: str, b: str) -> float:
    """Median fine-tuning score of model `a` minus model `b` on `task` (SCRATCH names the control)."""

    def median(name: str) -> float:
        return (record_["scratch"] if name == SCRATCH else record_["models"][name]["finetune"])[task]["median"]

    return median(a) - median(b)


# How the chapter's tables name the tasks and their metrics.
NAMES = {"sst2": "SST-2", "mrpc": "MRPC", "conll2003": "CoNLL-2003", "accuracy": "accuracy", "f1": "F1"}


def seeds_reading(a: dict[str, Any], b: dict[str, Any]) -> Reading:
    """`a`'s median less `b`'s (results with "median" and "scores"), read against the seeds' range
    (bertlab.verdict, Reading.from_seeds): "clear of" only when every seed of `a` is above every
    seed of `b`."""
    return Reading.from_seeds(a["scores"], b["scores"], gain=a["median"] - b["median"])


def seeds_apart(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two fine-tunings' seed scores do not overlap: every seed of one above every seed of
    the other (`a`, `b`: results with "scores"); `seeds_reading` says which way."""
    return Reading.from_seeds(a["scores"], b["scores"]).words != WITHIN


def heldout_rows(record_: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model, in the plan's order (MODELS), on its own held-out task: `task` ("masked
    LM", or "next token" for the left-to-right model), `loss` (mean cross-entropy), `accuracy` (a
    fraction) and `perplexity` (exp of the loss)."""
    rows = []
    for name in MODELS:
        h = record_["models"][name]["heldout"]
        ltr = "next_token_acc" in h
        loss = h["ltr_loss"] if ltr else h["mlm_loss"]
        acc = h["next_token_acc"] if ltr else h["mlm_acc"]
        task = "next token" if ltr else "masked LM"
        rows.append({"name": name, "task": task, "loss": loss, "accuracy": acc, "perplexity": math.exp(loss)})
    return rows


def same_plan_elsewhere(record_: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """The record beside another run of the same pre-training plan on another machine (say a GPU
    record beside an earlier one on CPU cores): per model the held-out accuracy of both (on its
    own task, in percent), and the largest gap in points. Raises if the two did not pre-train the
    same way (settings, steps), since then a gap says nothing about the machine."""
    mine, theirs_plan = record_["pretraining"], other["pretraining"]
    keys = sorted((set(mine) | set(theirs_plan)) - {"eval_every"})  # how often it was scored may differ
    differ = [k for k in keys if mine.get(k) != theirs_plan.get(k)]
    if differ:
        raise ValueError(f"the two records pre-trained differently ({', '.join(differ)}): not the same plan")
    theirs = {r["name"]: r for r in heldout_rows(other)}
    rows = [
        {
            "name": r["name"],
            "task": r["task"],
            "here": 100 * r["accuracy"],
            "there": 100 * theirs[r["name"]]["accuracy"],
        }
        for r in heldout_rows(record_)
    ]
    return {"rows": rows, "max_gap": max(abs(r["here"] - r["there"]) for r in rows), "machine": other["machine"]}


def same_plan_reading(check: dict[str, Any]) -> str:
    """One sentence on `same_plan_elsewhere`: where the other run was made and how close it came."""
    m = check["machine"]
    device = m["device"]
    where = f"{device.removeprefix('cpu').strip(' ()')} of an {m['cpu']}" if device.startswith("cpu") else device
    worst = max(check["rows"], key=lambda r: abs(r["here"] - r["there"]))
    return (
        f"The same pre-training plan, run earlier on {where} ({m['precision']}"
        f"{', compiled' if m.get('compile') else ''}), gave every model a held-out accuracy within "
        f"{check['max_gap']:.1f} points of this record's (the largest gap: {worst['name']}, "
        f"{worst['there']:.1f}% there against {worst['here']:.1f}% here)"
        + (": the machine moved no model by a whole point." if check["max_gap"] < 1 else ".")
    )


def heldout_table(record_: dict[str, Any]) -> str:
    """`heldout_rows` as a Markdown table (for display(Markdown(...)))."""
    lines = [
        "| model | task scored | held-out loss | held-out accuracy | perplexity |",
        "|---|---|---|---|---|",
    ]
    for r in heldout_rows(record_):
        lines.append(f"| {r['name']} | {r['task']} | {r['loss']:.3f} | {r['accuracy']:.1%} | {r['perplexity']:.1f} |")
    return "\n".join(lines)


def heldout_curves(record_: dict[str, Any]) -> dict[str, tuple[list[int], list[float]]]:
    """Each model's held-out accuracy during its run, on its own task: {name: (steps, accuracy in
    percent)}, in the plan's order."""
    out = {}
    for name in MODELS:
        curve = record_["models"][name]["curve"]
        key = "next_token_acc" if "next_token_acc" in curve[-1] else "mlm_acc"
        out[name] = ([q["step"] for q in curve], [100 * q[key] for q in curve])
    return out


def finetune_entries(record_: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every model's fine-tuning results ({task: {"median", "scores", ...}}; empty for a model
    that was not fine-tuned), in the plan's order, then the scratch control's (SCRATCH)."""
    entries = {name: record_["models"][name].get("finetune", {}) for name in MODELS}
    entries[SCRATCH] = record_["scratch"]
    return entries


def finetune_floors(record_: dict[str, Any]) -> dict[str, float]:
    """The trivial floor of each fine-tuning task of the record, in that task's metric: what a
    model that ignores its input scores on the dev set after the same labelled examples
    (bertlab.tasks.trivial_baseline: the majority class, or every pair a paraphrase for F1)."""
    # local: the task table reads datasets; reading the record alone should not
    from bertlab.tasks import trivial_baseline

    return {
        task: trivial_baseline(task, spec["max_train_examples"])[record_["scratch"][task]["metric"]]
        for task, spec in record_["finetuning"]["tasks"].items()
    }


def finetune_table(record_: dict[str, Any], floors: dict[str, float] | None = None) -> str:
    """Every model's fine-tuning scores as a Markdown table: per task, the median in bold and every
    seed's score, a dash where a model was not fine-tuned on the task, and the trivial floor
    (`floors`, {task: points}; default finetune_floors) as the last row."""
    tasks = record_["finetuning"]["tasks"]
    metric = {t: record_["scratch"][t]["metric"] for t in tasks}
    floors = finetune_floors(record_) if floors is None else floors
    what = {t: ("entity " if t == "conll2003" else "") + NAMES.get(metric[t], metric[t]) for t in tasks}
    heads = [f"{NAMES.get(t, t)} dev {what[t]}, median (seeds)" for t in tasks]
    lines = ["| model | " + " | ".join(heads) + " |", "|---|" + "---|" * len(tasks)]
    for name, res in finetune_entries(record_).items():
        cells = [
            f"**{res[t]['median']:.1f}** ({', '.join(f'{x:.1f}' for x in res[t]['scores'])})" if t in res else "–"
            for t in tasks
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    label = "floor: " + ", ".join(dict.fromkeys(_floor_rule(t, metric[t], len(tasks) > 1) for t in tasks))
    lines.append(f"| {label} | " + " | ".join(f"{floors[t]:.1f}" for t in tasks) + " |")
    return "\n".join(lines)


# The paper's differences that the study's comparisons are read against (quoted from Devlin et al.
# 2018, dev scores of Table 5, BERT-Base, and Table 6): {(task, model a, model b): a's score minus
# b's, or None where the paper has no figure}. CoNLL-2003 is not in either table; the paper's
# token-level task there is SQuAD v1.1, whose F1 gaps stand in for it.
PAPER_GAPS: dict[tuple[str, str, str], float | None] = {
    ("sst2", "MLM + NSP", "MLM, no NSP"): round(92.7 - 92.6, 1),
    ("sst2", "MLM, no NSP", "LTR, no NSP"): round(92.6 - 92.1, 1),
    ("sst2", "MLM, no NSP", "2/128/2 (tiny)"): round(93.7 - 88.4, 1),  # Table 6: largest - smallest
    ("sst2", "MLM, no NSP", SCRATCH): None,  # not in the paper: pre-training at all
    ("conll2003", "MLM + NSP", "MLM, no NSP"): round(88.5 - 87.9, 1),  # SQuAD F1, Table 5
    ("conll2003", "MLM, no NSP", "LTR, no NSP"): round(87.9 - 77.8, 1),  # SQuAD F1, Table 5
    ("conll2003", "MLM, no NSP", "2/128/2 (tiny)"): None,  # Table 6 has no token-level task
    ("conll2003", "MLM, no NSP", SCRATCH): None,
    ("mrpc", "MLM + NSP", "MLM, no NSP"): round(86.7 - 86.5, 1),
    ("mrpc", "MLM, no NSP", "LTR, no NSP"): round(86.5 - 77.5, 1),
    ("mrpc", "MLM, no NSP", SCRATCH): None,
}


def compare_with_paper(
    record_: dict[str, Any], paper: dict[tuple[str, str, str], float | None] | None = None
) -> list[dict[str, Any]]:
    """Each comparison of `paper` (default PAPER_GAPS) whose task the record fine-tuned: `task`,
    `a`, `b`, `paper` (the quoted gap or None), `ours` (the difference of the medians), `reading`
    (`seeds_reading`: the gain against the seeds' range), `apart` (the two models' seed scores do
    not overlap: the reading is not "within the noise of") and `same` (our gap has the paper's sign;
    True where the paper has no figure)."""
    entries = finetune_entries(record_)
    out = []
    for (task, a, b), paper_gap in (PAPER_GAPS if paper is None else paper).items():
        if task not in record_["finetuning"]["tasks"] or task not in entries[a] or task not in entries[b]:
            continue
        ours = gap(record_, task, a, b)
        reading = seeds_reading(entries[a][task], entries[b][task])
        out.append(
            {
                "task": task,
                "a": a,
                "b": b,
                "paper": paper_gap,
                "ours": ours,
                "reading": reading,
                "apart": reading.words != WITHIN,
                "same": paper_gap is None or (ours > 0) == (paper_gap > 0),
            }
        )
    return out


def _floor_rule(task: str, metric: str, name_it: bool) -> str:
    """How the trivial floor of `task` is made (bertlab.tasks.trivial_baseline), for a table's label."""
    rule = "majority class" if metric == "accuracy" else "all pairs 'paraphrase'"
    rule = "no entity" if task == "conll2003" else rule
    return f"{rule} ({NAMES.get(task, task)})" if name_it else rule


@dataclass(frozen=True)
class BesideReference:
    """The study's masked-LM-only BERT-Mini ("MLM, no NSP") beside the book's reference run, the
    same model pre-trained longer: token positions, held-out MLM accuracy (a fraction) and SST-2
    fine-tuned on the study's number of labelled sentences, from the pretrained weights and from
    scratch ({"median", "scores"}). The reference side is None where its record has no SST-2
    fine-tuning on that many sentences; `same_recipe`: it was fine-tuned with the study's learning
    rate and batch size; `best_gain`: the record's fine-tuning with the largest gain over scratch
    (a row of ReferenceRun.gains())."""

    train_examples: int
    study_tokens: int
    study_acc: float
    study_pretrained: dict[str, Any]
    study_scratch: dict[str, Any]
    ref_tokens: int
    ref_acc: float
    ref_pretrained: dict[str, Any] | None
    ref_scratch: dict[str, Any] | None
    same_recipe: bool
    best_gain: dict[str, Any] | None

    @property
    def study_gain(self) -> float:
        return self.study_pretrained["median"] - self.study_scratch["median"]

    @property
    def ref_gain(self) -> float | None:
        if self.ref_pretrained is None:
            return None
        return self.ref_pretrained["median"] - self.ref_scratch["median"]


def beside_reference(record_: dict[str, Any], ref: Any, model: str = "MLM, no NSP") -> BesideReference:
    """The study's `model` beside the reference run `ref` (a bertlab.experiments.reference
    ReferenceRun) on SST-2: see BesideReference."""
    study, ft = record_["models"][model], record_["finetuning"]
    n = ft["tasks"]["sst2"]["max_train_examples"]
    point = next((p for p in ref.sst2_curve() or [] if p["train_examples"] == n), None)
    prov = ref.provenance
    same = point is not None and all(
        prov["settings"][a] == ft[b] for a, b in (("ft_lr", "lr"), ("ft_batch", "batch_size"))
    )
    gains = ref.gains()
    return BesideReference(
        train_examples=n,
        study_tokens=study["tokens"],
        study_acc=study["heldout"]["mlm_acc"],
        study_pretrained=study["finetune"]["sst2"],
        study_scratch=record_["scratch"]["sst2"],
        ref_tokens=prov["pretraining"]["tokens"],
        ref_acc=prov["pretraining"]["final_heldout"]["mlm_acc"],
        ref_pretrained=point["pretrained"] if point else None,
        ref_scratch=point["scratch"] if point else None,
        same_recipe=same,
        best_gain=max(gains, key=lambda r: r["gain"]) if gains else None,
    )


def beside_reference_table(b: BesideReference) -> str:
    """`beside_reference` as a Markdown table: the study's row, and the reference run's where its
    record has the same fine-tuning."""
    n = f"{b.train_examples:,}"
    lines = [
        "| BERT-Mini, masked LM, no NSP | token positions | held-out MLM accuracy "
        f"| SST-2, {n} sentences: pre-trained | from scratch | gain |",
        "|---|---|---|---|---|---|",
        f"| this chapter's study | {b.study_tokens / 1e6:.1f}M | {b.study_acc:.1%} | "
        f"{b.study_pretrained['median']:.1f} | {b.study_scratch['median']:.1f} | {b.study_gain:+.1f} |",
    ]
    if b.ref_pretrained is not None:
        lines.append(
            f"| the reference run (its pipeline's {count(len(b.ref_pretrained['scores']), 'seed')}) "
            f"| {b.ref_tokens / 1e6:.1f}M | {b.ref_acc:.1%} | "
            f"{b.ref_pretrained['median']:.1f} | {b.ref_scratch['median']:.1f} | {b.ref_gain:+.1f} |"
        )
    return "\n".join(lines)


def reference_differences(record_: dict[str, Any], ref: Any, model: str = "MLM, no NSP") -> list[str]:
    """How the reference run `ref` pre-trained differently from the study's `model`, besides its
    length, in words read from both records' settings: the layers' norm position, segments per
    sequence, sequence lengths and the share of pieces masked. Empty when none of those differ."""
    # local: the recipes live in the training layer; reading the record alone should not need it
    from bertlab.training.recipes import get_recipe

    theirs = ref.provenance.get("settings", {})
    pt, ours = record_["pretraining"], record_["models"][model]["settings"]
    recipe = get_recipe(pt["recipe"])
    out = []
    norm = (ours.get("norm_position") or recipe.norm_position, theirs.get("norm_position"))
    if norm[1] is not None and norm[0] != norm[1]:
        out.append(f"{norm[1]}-LN layers where the study's are {norm[0]}-LN")
    pairs = (bool(ours.get("segment_pairs") or ours.get("nsp")), theirs.get("segment_pairs"))
    if pairs[1] is not None and pairs[0] != bool(pairs[1]):
        segments = ("one segment", "two segments")
        out.append(f"{segments[bool(pairs[1])]} per sequence where the study's have {segments[pairs[0]]}")
    if theirs.get("phases"):
        lengths = sorted({int(phase.split(":")[1]) for phase in theirs["phases"].split(",")})
        if lengths != [pt["seq_len"]]:
            out.append(
                f"sequences of {lengths[0]} to {lengths[-1]} tokens in {count(len(lengths), 'phase')} "
                f"where the study's are {pt['seq_len']} tokens throughout"
            )
    mask = (ours.get("mlm_probability", 0.15), theirs.get("mlm_probability"))
    if mask[1] is not None and mask[0] != mask[1]:
        out.append(f"{mask[1]:.0%} of the pieces masked where the study masks {mask[0]:.0%}")
    return out


def beside_reference_reading(b: BesideReference, differences: list[str], measured: Reading | None = None) -> str:
    """The paragraph under `beside_reference_table`: what the reference run is beside the study's
    model (the token positions, the `differences` in its settings: `reference_differences`), the
    study's gain and the reference run's on SST-2, each with its bertlab.verdict reading, and what
    follows. `measured` is the reference run's gain at the study's size read with more seeds
    (finetune_seeds.SeedGains.reading()): the number to quote; the pipeline's own seeds are shown
    as such."""
    study = seeds_reading(b.study_pretrained, b.study_scratch)
    text = (
        f"The reference run saw {b.ref_tokens / b.study_tokens:.1f} times the token positions of the study's "
        f"model and reached {b.ref_acc:.1%} held-out MLM accuracy against {b.study_acc:.1%}"
    )
    if differences:
        text += (
            f"; it is not the same model merely trained longer, for it also differs in "
            f"{count(len(differences), 'setting')}: " + "; ".join(differences)
        )
    text += (
        f". On SST-2 with {b.train_examples:,} labelled sentences the study's pre-training gains "
        f"{study.phrase('its scratch control')}."
    )
    ref = measured
    if b.ref_pretrained is not None:
        pipeline = seeds_reading(b.ref_pretrained, b.ref_scratch)
        if measured is None:
            ref = pipeline
            text += f" The reference run's gain there is {pipeline.phrase('scratch')}."
        else:
            text += (
                f" The reference run's gain there, measured with more seeds, is {measured.phrase('scratch')}; "
                f"its pipeline's own {number(len(b.ref_pretrained['scores']))} seeds gave "
                f"{signed_words(pipeline)}, too few to read a gain of this size."
            )
    elif measured is not None:
        text += f" The reference run's gain there, measured with more seeds, is {measured.phrase('scratch')}."
    if ref is None:
        return text
    if ref.words == CLEAR and not study.clear:
        text += (
            " So the study's null result on SST-2 is a statement about its budget and settings: with the "
            "reference run's pre-training the gain is clear of scratch."
        )
    elif ref.words != CLEAR:
        text += (
            f" So the null result is not only this study's budget: at BERT-Mini's size and up to "
            f"{b.ref_tokens / 1e6:.0f}M token positions, a judgement about a whole sentence from "
            f"{b.train_examples:,} labelled ones gains little from the masked LM."
        )
    return text


def signed_words(r: Reading) -> str:
    """'+0.6 (within the noise of scratch by the three seeds' range, -1.6 to +2.1)'."""
    return f"{r.gain:+.1f} ({r.words} scratch by {r.how}, {r.band_words()})"


def results_summary(
    verdicts: list[dict[str, Any]], measured: Reading | None = None, train_examples: int | None = None
) -> list[str]:
    """The chapter's three results as summary bullets, generated from `compare_with_paper`'s readings
    (the same ones its table shows): the pre-training tasks, the model sizes, and pre-training at all
    (the study's scratch comparisons, and the reference run's `measured` gain at `train_examples`)."""
    groups = (
        (
            "The pre-training tasks (Table 5's question, at BERT-Mini's size)",
            lambda v: v["a"] in TASK_MODELS and v["b"] in TASK_MODELS,
        ),
        ("Model size (Table 6's question)", lambda v: v["b"] in SIZE_MODELS[:-1]),
        ("Pre-training at all, against the scratch control", lambda v: v["b"] == SCRATCH),
    )
    bullets = []
    for title, chosen in groups:
        vs = [v for v in verdicts if chosen(v)]
        if not vs and not (measured is not None and title.startswith("Pre-training at all")):
            continue
        clear = [v for v in vs if v["reading"].words != WITHIN]
        parts = [
            f"{v['a']} {v['reading'].words} {v['b']} on {NAMES.get(v['task'], v['task'])} ({v['ours']:+.1f})"
            for v in clear
        ]
        rest = len(vs) - len(clear)
        if rest:
            if clear:
                which = "the other comparison stays" if rest == 1 else f"the other {count(rest, 'comparison')} stay"
            else:
                which = "the one comparison stays" if rest == 1 else f"all {count(rest, 'comparison')} stay"
            parts.append(f"{which} within the seeds' noise")
        text = f"{title}: " + ("; ".join(parts) if parts else "no comparison in the record")
        if measured is not None and title.startswith("Pre-training at all"):
            size = f" with {train_examples:,} labelled sentences" if train_examples else ""
            text += (
                f". The reference run, pre-trained longer and with other settings, gains on SST-2{size} "
                f"{measured.phrase('scratch')}"
            )
        bullets.append(text + ".")
    return bullets


# ----------------------------------------------------------------------------------------------
# What chapter 17 says of the record, sentence by sentence (lab.publish writes it to
# data/results/ablations.json, where the chapter reads it)
# ----------------------------------------------------------------------------------------------

# The paper's size table, as chapter 17 quotes it beside the study's perplexities.
TABLE_6 = "Table 6 (5.84 for 3/768/12 down to 3.23 for 24/1024/16, quoted)"


def plan_reading(record_: dict[str, Any]) -> str:
    """The plan every model followed (steps, sequences, token positions, recipe, seed), where the
    record was made and how long the pre-training took, against BERT-Base's token positions."""
    # local: the recipes live in the training layer; reading the record alone should not need it
    from bertlab.training.recipes import RECIPES, token_positions

    pt, machine = record_["pretraining"], record_["machine"]
    models = [record_["models"][name] for name in MODELS]
    tokens = record_["models"]["MLM, no NSP"]["tokens"]
    compiled = ", torch.compile" if machine["compile"] else ", eager"
    on_cpu = machine["device"].startswith("cpu")
    where = f"{machine['device']}, {machine['cpu']}" if on_cpu else machine["device"]
    minutes = sum(m["train_seconds"] for m in models) / 60
    return (
        f"Each model: **{pt['steps']:,} steps** of {pt['batch_size']} sequences of "
        f"{pt['seq_len']} tokens ({tokens / 1e6:.1f} million token positions) "
        f"from books and Wikipedia, the `{pt['recipe']}` recipe, seed {pt['seed']}. "
        f"Recorded on {where} ({machine['precision']}{compiled}): "
        f"{minutes:.0f} minutes of pre-training for the "
        f"{count(len(models), 'model')} together. BERT-Base saw "
        f"{token_positions(RECIPES['paper']) / tokens:,.0f} times as many token positions "
        "(1M steps of 256 sequences, 90% of 128 tokens and 10% of 512, quoted from the paper)."
    )


def mask_rate_reading(record_: dict[str, Any], pilot: dict[str, Any] | None) -> str | None:
    """Why the masked-LM models mask more than the paper's 15%: the `pilot` that masked 30% beside
    its baseline at one step ({"pilot", "step", "pilot_acc", "baseline_acc"}, chapter 10's pilots).
    None where the models mask 15%, or without the pilot."""
    rate = record_["models"]["MLM, no NSP"]["settings"].get("mlm_probability") or 0.15
    if rate == 0.15 or pilot is None:
        return None
    return (
        f"The masked-LM models mask **{rate:.0%}** of the pieces instead of the "
        f"paper's 15%. The reason is the pilot `{pilot['pilot']}` of chapter "
        f"10: on BERT-Mini, masking 30% reached {pilot['pilot_acc']:.1%} "
        f"held-out accuracy at step {pilot['step']:,}, where the same run "
        f"masking 15% stood at {pilot['baseline_acc']:.1%}, still near the "
        "frequent-word plateau; a model on the plateau has nothing to show in an "
        "ablation. Held-out accuracy is measured with 15% masked for every model."
    )


def models_table(record_: dict[str, Any], earlier: dict[str, Any] | None = None) -> str:
    """The models of the plan as a Markdown table: size, parameters (all, and the encoder's) and
    pre-training time; with `earlier` (the same plan run elsewhere: `load_earlier`), its time too."""
    head = "| model | L / H / A | parameters | of them, encoder | pre-training |"
    if earlier:  # how long the same model took on CPU cores
        head += f" earlier, {earlier['machine']['device'].replace('cpu', 'CPU')} |"
    rows = [head, "|---" * head.count(" | ") + "|---|"]
    for name in MODELS:
        m = record_["models"][name]
        row = (
            f"| {name} | {m['L']} / {m['H']} / {m['A']} "
            f"| {m['parameters'] / 1e6:.2f}M "
            f"| {m['encoder_parameters'] / 1e6:.2f}M "
            f"| {m['train_seconds'] / 60:.1f} min |"
        )
        if earlier:
            row += f" {earlier['models'][name]['train_seconds'] / 60:.1f} min |"
        rows.append(row)
    return "\n".join(rows)


def size_and_nsp_reading(record_: dict[str, Any]) -> str:
    """The held-out scores in words: does the masked-LM perplexity fall with every step up in size
    (SIZE_MODELS, at a fixed number of steps), as in the paper's Table 6, and how far training NSP
    beside the masked LM moved the held-out masked-LM accuracy."""
    nsp, mlm = (record_["models"][n] for n in TASK_MODELS[:2])
    ppl = [math.exp(record_["models"][n]["heldout"]["mlm_loss"]) for n in SIZE_MODELS]
    bigger_better = all(a > b for a, b in zip(ppl, ppl[1:]))
    nsp_gap = 100 * (nsp["heldout"]["mlm_acc"] - mlm["heldout"]["mlm_acc"])
    trend = (
        f"falling with every step up in size, the direction of {TABLE_6}."
        if bigger_better
        else f"not falling with every step up in size, unlike {TABLE_6}."
    )
    return (
        "Size, at a fixed number of steps: the held-out masked-LM perplexity goes "
        f"{' → '.join(f'{x:.1f}' for x in ppl)} from the smallest model to "
        f"BERT-Mini, {trend} Training NSP beside the masked LM moved the held-out "
        f"masked-LM accuracy by {nsp_gap:+.1f} points "
        f"({nsp['heldout']['mlm_acc']:.1%} with NSP, "
        f"{mlm['heldout']['mlm_acc']:.1%} without). Both runs saw the same number of "
        "sequences; the NSP run's loss also pays for the NSP head, and half of its "
        "second segments come from another document, so its masked pieces have less "
        "related context to be guessed from. One seed of each cannot say how much of "
        "a difference that makes in general; the curves above show when each run "
        "left the frequent-word plateau, if it did."
    )


def nsp_head_reading(record_: dict[str, Any]) -> str | None:
    """How well the NSP head learned its task (`nsp_accuracy`), against chance and the paper's
    figure; None where no model trained NSP."""
    reached = nsp_accuracy(record_)
    if not reached:
        return None
    return (
        f"The NSP head itself learned its task: {reached['nsp_acc']:.1%} of the "
        "held-out pairs right at the last evaluation (chance: 50%; the paper's "
        "BERT reaches 97-98%, quoted; chapter 9 sets the NSP accuracy beside a "
        "word-overlap rule)."
    )


def why_not_mrpc(record_: dict[str, Any], ref: Any, floor: float | None = None) -> str | None:
    """Why the study does not fine-tune MRPC: the reference run `ref` (a ReferenceRun) fine-tuned on
    all of it stayed near the floor of calling every pair a paraphrase (`floor`, F1; default
    bertlab.tasks.trivial_baseline's). None where the study fine-tunes MRPC or there is no `ref`."""
    if "mrpc" in record_["finetuning"]["tasks"] or ref is None:
        return None
    if floor is None:
        # local: the task table reads datasets; reading the record alone should not
        from bertlab.tasks import trivial_baseline

        floor = trivial_baseline("mrpc")["f1"]
    f1 = ref.provenance["other_tasks_median"]
    return (
        f"Why not MRPC: calling every dev pair a paraphrase scores an F1 of "
        f"{floor:.1f}, and the reference run, fine-tuned "
        f"on all of MRPC, reached {f1['mrpc from pretrained']:.1f} (from scratch: "
        f"{f1['mrpc from scratch']:.1f}). Scores under the floor cannot rank "
        "models."
    )


def paper_table(verdicts: list[dict[str, Any]]) -> str:
    """`compare_with_paper`'s comparisons as a Markdown table: the paper's gap (a dash where it has
    none), ours, and whether the two models' seeds are apart and our gap points the paper's way."""
    rows = ["| task | comparison | paper | ours | reading |", "|---|---|---:|---:|---|"]
    for v in verdicts:
        sign = "no paper figure" if v["paper"] is None else "same direction" if v["same"] else "opposite direction"
        reading = ("seeds apart, " if v["apart"] else "seeds overlap, ") + sign
        paper_txt = "–" if v["paper"] is None else f"{v['paper']:+.1f}"
        rows.append(f"| {NAMES[v['task']]} | {v['a']} vs {v['b']} | {paper_txt} | {v['ours']:+.1f} | {reading} |")
    return "\n".join(rows)


def comparisons_reading(verdicts: list[dict[str, Any]]) -> str:
    """`paper_table` in words: how many comparisons separate the seeds, which of those point the
    paper's way or against it, which are pre-training against the scratch control, and which stay
    within the seeds' noise, each with its reading's words (bertlab.verdict)."""

    def phrase(v):  # the reading's words: clear of, below, within the noise of
        return f"{v['a']} {v['reading'].words} {v['b']} on {NAMES[v['task']]} ({v['ours']:+.1f})"

    clear = [v for v in verdicts if v["apart"]]
    agree = [v for v in clear if v["paper"] is not None and v["same"]]
    against = [v for v in clear if v["paper"] is not None and not v["same"]]
    noise = [v for v in verdicts if not v["apart"]]
    n = len(verdicts)
    which = "none" if not clear else number(len(clear))
    text = [
        f"Of the {count(n, 'comparison')}, {which} {verb_agreeing(len(clear) or 2, 'separates')} the seeds."
        if n > 1
        else f"The one comparison {'separates' if clear else 'does not separate'} the seeds."
    ]
    if agree:
        text.append("Pointing the paper's way, clearly: " + "; ".join(map(phrase, agree)) + ".")
    if against:
        text.append("Clearly against the paper's direction: " + "; ".join(map(phrase, against)) + ".")
    pre = [v for v in clear if v["b"] == SCRATCH]
    if pre:
        text.append("Pre-training at all, against the scratch control: " + "; ".join(map(phrase, pre)) + ".")
    if noise:
        text.append("Within the seed noise, so not read either way: " + "; ".join(map(phrase, noise)) + ".")
    return " ".join(text)


def best_gain_reading(b: BesideReference) -> str:
    """Where the reference run's pre-training pays most (`b.best_gain`), one run's figure."""
    if b.best_gain is None:
        return ""
    task = b.best_gain["task"]
    label = {"conll2003": "CoNLL-2003 named entities", "squad": "SQuAD v1.1"}
    return (
        f"Where the record's pre-training pays most is "
        f"{label.get(task, task.upper())}: {b.best_gain['gain']:+.1f} points over "
        f"scratch, one run's figure (chapter 11 sets every task side by side)."
    )


__all__ = [
    "ABLATIONS_DIR",
    "RECORD_FILE",
    "MODELS",
    "TASK_MODELS",
    "SIZE_MODELS",
    "SCRATCH",
    "load",
    "load_earlier",
    "nsp_accuracy",
    "gap",
    "NAMES",
    "seeds_apart",
    "heldout_rows",
    "heldout_table",
    "heldout_curves",
    "finetune_entries",
    "finetune_floors",
    "finetune_table",
    "BesideReference",
    "beside_reference",
    "beside_reference_table",
    "beside_reference_reading",
    "reference_differences",
    "results_summary",
    "seeds_reading",
    "signed_words",
    "same_plan_elsewhere",
    "same_plan_reading",
    "compare_with_paper",
    "PAPER_GAPS",
    "plan_reading",
    "mask_rate_reading",
    "models_table",
    "size_and_nsp_reading",
    "nsp_head_reading",
    "why_not_mrpc",
    "paper_table",
    "comparisons_reading",
    "best_gain_reading",
]
