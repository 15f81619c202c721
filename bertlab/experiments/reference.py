"""The book's recorded reference run: find it, describe it, load its model.

`scripts/reference_run.sh` pre-trains and fine-tunes the book's own BERT and writes a
self-describing record into data/reference_run/ (weights, metrics, results and provenance.json:
command, commit, machine, times, checksums). The part II chapters show it beside what they compute:

    run = reference.find()          # a ReferenceRun, or None before the run is recorded
    print(run.label())              # "RECORDED run on a 2-core CPU (...), commit ..., ..."
    model = run.load(BertForPreTraining)
    enc = reference.pretrained_encoder()  # the reference model if recorded, else a stand-in

Without a record, `pending()` is the notice the chapters print instead of its numbers.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from bertlab import checkpoint as ckpt
from bertlab.config import PRESETS, BertConfig
from bertlab.data import records
from bertlab.data.records import records_dir
from bertlab.data.tokenizer import WordPieceTokenizer, load_tokenizer_for
from bertlab.files import fsync_file, replace_dir, sha256_file
from bertlab.model import BertForPreTraining
from bertlab.notebook import minilm_path
from bertlab.training.recipes import RECIPES, parse_phases, phases_text

ENV_VAR = "BERTLAB_REFERENCE_RUN"
WEIGHTS = "model.fp16.safetensors"
REQUIRED = ("config.json", WEIGHTS, "tokenizer.json", "provenance.json")
REPRODUCE = "scripts/reference_run.sh"


# finetune_results.json stores a task's arms as "<task>_pretrained" / "<task>_scratch", except for
# these tasks, whose pair sits under the task's name ({"pretrained", "scratch"})
PAIRED_TASKS = ("conll2003",)
ARMS = ("pretrained", "scratch")


def stored_arm(results: dict[str, Any], task: str, arm: str) -> dict[str, Any]:
    """One arm ("pretrained" or "scratch") of `task` from finetune_results.json's contents."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; choose one of {', '.join(ARMS)}")
    return results[task][arm] if task in PAIRED_TASKS else results[f"{task}_{arm}"]


class IncompleteReferenceRun(FileNotFoundError):
    """A reference-run folder that lacks some of its files."""


def _default_places() -> list[Path]:
    return [records_dir("reference_run")]  # bertlab.data.records says where the records folder is


@dataclass(frozen=True)
class ReferenceRun:
    """One recorded reference run, in the folder `path`."""

    path: Path

    @cached_property
    def provenance(self) -> dict[str, Any]:
        return json.loads((self.path / "provenance.json").read_text())

    @property
    def smoke(self) -> bool:
        """True for a CPU-sized smoke run (reference_run.sh --smoke), not the real record."""
        return bool(self.provenance.get("smoke", False))

    def label(self) -> str:
        """One line saying what this record is (hardware, commit, time), never mistaken for a number
        computed while the page was built."""
        p = self.provenance
        kind = "SMOKE-TEST run (CPU size, not the real record)" if self.smoke else "RECORDED run"
        commit = str(p.get("git_commit") or "unknown")[:10]
        minutes = p.get("wall_time_s")
        took = f", {minutes / 60:.1f} min end to end" if isinstance(minutes, (int, float)) else ""
        return (
            f"{kind} on {self.machine()}, commit {commit}{took} "
            f"(not run while building this page; reproduce with {REPRODUCE})"
        )

    def machine(self) -> str:
        """Where the run was recorded, in words: "a 2-core CPU (Intel Xeon ...)" or the GPU's name."""
        p = self.provenance
        device = str(p.get("device", "an unknown device"))
        if device.startswith("cpu"):
            cores = device[device.find("(") + 1 : device.find(" cores")] if " cores" in device else "?"
            model = p.get("cpu_model")
            return f"a {cores}-core CPU" + (f" ({model})" if model else "")
        return device

    def short_label(self) -> str:
        """The short banner after chapter 10's `label()`: these numbers were recorded, not computed."""
        kind = "a smoke-test record (CPU size, not the real record)" if self.smoke else "the book's recorded run"
        return f"(read from {kind}, chapter 10; not computed while this page was built)"

    def describe(self) -> str:
        """What was trained, on what, where and for how long, in one sentence read from the record:
        "BERT-Mini (L=4, H=256, A=4; 7.4M parameters) with a WordPiece vocabulary of 8,192 pieces,
        pretrained with the `cpu` recipe (...) for 50 minutes (...) on a 2-core CPU (...) in bf16"."""
        p, c = self.provenance, self.config()
        names = {size: f"BERT-{name.capitalize()}" for name, size in PRESETS.items()}
        name = names.get((c.num_layers, c.hidden_size, c.num_heads), "a BERT")
        pre, st = p.get("pretraining", {}), p.get("settings", {})
        how = [p.get("precision", "fp32")] + (["compiled"] if st.get("compile") else [])
        held = (pre.get("final_heldout") or {}).get("mlm_acc")
        n = BertForPreTraining(c).num_parameters()
        recipe = st.get("recipe", "?")
        # the masking rate: the run's own setting, else (an older record) its recipe's
        rate = st.get("mlm_probability") or (RECIPES[recipe].mlm_probability if recipe in RECIPES else None)
        notes = [f"{c.norm_position}-LN layers"] + ([f"{rate:.0%} of the pieces masked"] if rate else [])
        if st.get("segment_pairs"):
            notes.append("two segments per sequence, without NSP")
        if st.get("phases"):
            notes.append(phases_text(parse_phases(st["phases"]), self.phase_plan()))
        return (
            f"{name} (L={c.num_layers}, H={c.hidden_size}, A={c.num_heads}; {n / 1e6:.1f}M "
            f"parameters) with a WordPiece vocabulary of {c.vocab_size:,} pieces, pretrained "
            f"with the `{recipe}` recipe ({'; '.join(notes)}) for {pre.get('train_seconds', 0) / 60:.0f} "
            f"minutes ({pre.get('steps', 0):,} steps, {pre.get('tokens', 0) / 1e6:.1f}M tokens) on "
            f"{self.machine()} in {', '.join(how)}"
            + (f"; held-out MLM accuracy {held:.1%}" if held is not None else "")
        )

    def phase_plan(self) -> str:
        """What the recorded run's phase fractions divided: "time" or "steps" (also for older records)."""
        return self.provenance.get("pretraining", {}).get("phase_plan", "steps")

    def trained_nsp(self) -> bool:
        """Whether the recorded pretraining had NSP (its recipe's; an older record without settings did)."""
        recipe = self.provenance.get("settings", {}).get("recipe")
        return RECIPES[recipe].nsp if recipe in RECIPES else True

    def trained_pairs(self) -> bool:
        """Whether the recorded pretraining read pairs of texts (NSP, or `segment_pairs`), so that both
        rows of the segment embedding trained."""
        return self.trained_nsp() or bool(self.provenance.get("settings", {}).get("segment_pairs"))

    def _json(self, name: str) -> Any:
        f = self.path / name
        return json.loads(f.read_text()) if f.exists() else None

    def sst2_curve(self) -> list[dict[str, Any]] | None:
        """SST-2 dev accuracy for each number of labelled training sentences: [{"train_examples": n,
        "epochs": e, "pretrained": results, "scratch": results}], or None if absent."""
        return self._json("sst2_curve.json")

    def fill_mask(self) -> dict[str, Any] | None:
        """The fill-mask probes asked of every checkpoint (texts, answers, steps, along), or None."""
        return self._json("fill_mask.json")

    def metrics(self) -> list[dict[str, Any]]:
        """The pretraining log, one dict per line of metrics.jsonl (empty if absent)."""
        f = self.path / "metrics.jsonl"
        if not f.exists():
            return []
        return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]

    def finetune_results(self) -> dict[str, Any] | None:
        """The fine-tuning results by task and arm (see PAIRED_TASKS), or None if absent."""
        return self._json("finetune_results.json")

    def gains(self) -> list[dict[str, Any]]:
        """What pretraining bought, one row per fine-tuning in the record (SST-2's curve first): task,
        metric, train_examples (None: the whole set), each arm's median, scores and seeds, and
        `gain` (pretrained minus scratch, in points)."""

        def seeds(arm):
            runs = arm.get("runs")
            return [r["seed"] for r in runs] if runs else None

        def row(task, n, pre, scr):
            return {
                "task": task,
                "metric": pre["main_metric"],
                "train_examples": n,
                "pretrained": pre["median"],
                "scratch": scr["median"],
                "pretrained_scores": pre["scores"],
                "scratch_scores": scr["scores"],
                "pretrained_seeds": seeds(pre),
                "scratch_seeds": seeds(scr),
                "gain": pre["median"] - scr["median"],
            }

        rows = [row("sst2", p["train_examples"], p["pretrained"], p["scratch"]) for p in self.sst2_curve() or []]
        results = self.finetune_results() or {}
        for key, value in results.items():
            if key in PAIRED_TASKS:  # stored as {"pretrained": ..., "scratch": ...}
                rows.append(row(key, None, value["pretrained"], value["scratch"]))
            elif key.endswith("_pretrained") and key.replace("_pretrained", "_scratch") in results:
                pre, scr = value, results[key.replace("_pretrained", "_scratch")]
                # SQuAD learns from a split of dev: it records how many questions
                n = pre.get("train_questions", pre["config"].get("max_train_examples"))
                rows.append(row(pre["task"], n, pre, scr))
        return rows

    def confusions(self, task: str) -> dict[str, dict[str, Any]] | None:
        """A classification task's confusion matrices by arm: {"seed", "score", "matrix"} of the
        median seed (rows gold, columns predicted), or None when the record has no counts."""
        results = self.finetune_results() or {}
        out = {}
        for arm in ("pretrained", "scratch"):
            entry = results.get(f"{task}_{arm}")
            if entry is None:
                return None
            metric = entry["main_metric"]
            runs = sorted(entry["runs"], key=lambda r: r["metrics"][metric])
            middle = runs[(len(runs) - 1) // 2]  # the median seed (the lower one of an even count)
            if middle.get("confusion") is None:
                return None
            out[arm] = {"seed": middle["seed"], "score": middle["metrics"][metric], "matrix": middle["confusion"]}
        return out

    def floors(self) -> dict[tuple[str, int | None], float]:
        """What a model that ignores its input scores on each of `gains()`'s rows, keyed by (task,
        train_examples) (bertlab.tasks.trivial_baseline; SQuAD has none)."""
        # local: the task table reads datasets; reading the record alone should not
        from bertlab.tasks import trivial_baseline

        out = {}
        for r in self.gains():
            n = r["train_examples"] if r["task"] == "sst2" else None  # SST-2's curve: the first n sentences
            floor = trivial_baseline(r["task"], n).get(r["metric"])
            if floor is not None:
                out[(r["task"], r["train_examples"])] = floor
        return out

    def config(self):
        return BertConfig.load(self.path / "config.json")

    def tokenizer(self):
        return WordPieceTokenizer.load(self.path / "tokenizer.json")

    def verify(self) -> None:
        """Check the weights against the sha256 in provenance.json (ValueError naming the file)."""
        want = (self.provenance.get("weights") or {}).get("sha256")
        if want is None:
            return
        got = sha256_file(self.path / WEIGHTS)
        if got != want:
            raise ValueError(
                f"{self.path / WEIGHTS} is corrupt: sha256 {got[:16]}..., provenance.json "
                f"says {want[:16]}...; restore it (git checkout -- {self.path}) or re-run "
                f"{REPRODUCE}"
            )

    def model_folder(self) -> Path:
        """A bertlab model folder (fp32 weights, config.json, tokenizer.json) of the reference model,
        for everything taking a folder; written once per weights file, atomically."""
        from safetensors.torch import load_file, save_file

        self.verify()
        key = sha256_file(self.path / WEIGHTS)[:16]
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        folder = base / "bertlab" / "reference_run" / key
        if (folder / "model.safetensors").exists():
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.with_name(f".tmp-{key}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        sd = {k: (v.float() if v.is_floating_point() else v) for k, v in load_file(str(self.path / WEIGHTS)).items()}
        save_file(sd, str(tmp / "model.safetensors"), metadata={"format": "pt", "bertlab_class": "BertForPreTraining"})
        fsync_file(tmp / "model.safetensors")
        for name in ("config.json", "tokenizer.json"):
            shutil.copyfile(self.path / name, tmp / name)
        replace_dir(tmp, folder)
        return folder

    def load(self, model_cls: type | None = None, **head_kwargs: Any):
        """The pretrained model in fp32 on the CPU, in eval mode (a fine-tuning class gets the encoder
        and a fresh task layer)."""
        return ckpt.load_model(self.model_folder(), model_cls or BertForPreTraining, **head_kwargs).eval()


ARM_TITLES = {"pretrained": "pre-trained", "scratch": "from scratch"}


def confusion_table(confusions: dict[str, dict[str, Any]], label_names: list[str]) -> str:
    """`ReferenceRun.confusions(task)` as a Markdown table: a row per arm and gold label, a column
    per predicted label, and the majority answer last."""
    head = "| model (median seed) | gold label | " + " | ".join(f"predicted {x}" for x in label_names) + " |"
    lines = [head, "|---|---|" + "---:|" * len(label_names)]
    for arm, c in confusions.items():
        for gold, row in zip(label_names, c["matrix"]):
            lines.append(
                f"| {ARM_TITLES.get(arm, arm)} (seed {c['seed']}) | {gold} | " + " | ".join(map(str, row)) + " |"
            )
    totals = [sum(row) for row in next(iter(confusions.values()))["matrix"]]
    majority = max(range(len(totals)), key=totals.__getitem__)
    for gold, n in zip(label_names, totals):
        cells = [str(n) if j == majority else "0" for j in range(len(label_names))]
        lines.append(f"| always {label_names[majority]} | {gold} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def confusion_reading(confusions: dict[str, dict[str, Any]], label_names: list[str]) -> str:
    """What the confusion matrices say that a score hides: each arm's right answers per gold label,
    beside the majority answer's."""
    totals = [sum(row) for row in next(iter(confusions.values()))["matrix"]]
    majority = max(range(len(totals)), key=totals.__getitem__)
    minority = [k for k in range(len(totals)) if k != majority]

    def right(matrix: list[list[int]]) -> str:
        return " and ".join(f"{matrix[k][k]:,} of the {totals[k]:,} {label_names[k]}" for k in range(len(totals)))

    parts = [
        f"{ARM_TITLES.get(arm, arm)}, the median seed labels {right(c['matrix'])} pairs correctly"
        for arm, c in confusions.items()
    ]
    text = "; ".join(parts)
    text = text[0].upper() + text[1:] + "."
    others = " or ".join(label_names[k] for k in minority)
    text += (
        f" Always answering {label_names[majority]} gets all {totals[majority]:,} {label_names[majority]} pairs "
        f"and none of the {sum(totals[k] for k in minority):,} {others} ones"
    )
    pre = confusions.get("pretrained")
    if pre is None:
        return text + "."
    found = sum(pre["matrix"][k][k] for k in minority)
    if not found:
        return text + f", and so does the pre-trained model: it never answers {others}."
    lost = totals[majority] - pre["matrix"][majority][majority]
    return text + (
        f". The pre-trained model trades between them: it finds {found:,} {others} pairs, which the "
        f"majority answer never does, and gives up {lost:,} {label_names[majority]} pairs that it gets."
    )


def find(path: str | Path | None = None) -> ReferenceRun | None:
    """The recorded reference run: `path`, else $BERTLAB_REFERENCE_RUN, else data/reference_run;
    None without a record, IncompleteReferenceRun for a folder that lacks some of the files."""
    explicit = path or os.environ.get(ENV_VAR)
    places = [Path(explicit)] if explicit else _default_places()
    for place in places:
        if not place.is_dir():
            if explicit:
                raise FileNotFoundError(
                    f"no reference run at {place} ({'argument' if path else ENV_VAR}); "
                    f"point it at the folder {REPRODUCE} wrote"
                )
            continue
        present = [f for f in REQUIRED if (place / f).exists()]
        if not present and not explicit:
            continue  # an empty data/reference_run/: not recorded
        missing = [f for f in REQUIRED if f not in present]
        if missing:
            raise IncompleteReferenceRun(
                f"{place} is an incomplete reference run: missing {', '.join(missing)}; "
                f"restore the folder from git or re-run {REPRODUCE}"
            )
        return ReferenceRun(place.resolve())
    return None


def pending(what: str = "its results") -> str:
    """The Markdown line a chapter shows where the recorded run would be: why it is missing here."""
    if records.published_files("reference_run"):
        return records.missing_note(what, "reference_run")
    return (
        f"> This copy of the book holds no recorded reference run, so {what} is not shown here; "
        f"`{REPRODUCE}` records one (it writes `data/reference_run/`)."
    )


@dataclass(frozen=True)
class PretrainedEncoder:
    """A pre-trained encoder for the chapters: a model folder, its tokenizer and what it is."""

    name: str
    folder: Path
    is_reference: bool
    description: str

    def tokenizer(self):
        return load_tokenizer_for(self.folder)


MINILM = (
    "all-MiniLM-L6-v2: a 6-layer BERT encoder (H=384, A=12, bert-base-uncased vocabulary) "
    "distilled from a larger model, not pre-trained with the masked LM"
)


def pretrained_encoder(
    min_layers: int = 0, needed_for: str = "this analysis", needs_pairs: bool = False
) -> PretrainedEncoder:
    """The book's own pre-trained model when it is recorded and suits the page (at least
    `min_layers` layers; with `needs_pairs`, pre-trained on pairs of texts), else all-MiniLM-L6-v2.
    `description` says which one and why, naming `needed_for`."""
    run = find()
    if run is not None and not run.smoke:
        c = run.config()
        if c.num_layers < min_layers:
            why = f"The book's own BERT has only {c.num_layers} layers and {needed_for} needs at least {min_layers}"
        elif needs_pairs and not run.trained_pairs():
            why = (
                f"The book's own BERT was pre-trained without sentence pairs (every pre-training "
                f"sequence was one text, so its segment-B embedding never trained), and {needed_for} "
                f"needs an encoder that has read two texts side by side"
            )
        else:
            return PretrainedEncoder(
                "bertlab reference",
                run.model_folder(),
                True,
                f"the book's own BERT (L={c.num_layers}, H={c.hidden_size}, A={c.num_heads}, "
                # two lines: printed, one would run past the page's width
                f"vocabulary {c.vocab_size:,}), pretrained in chapter 10:\nthe book's recorded run, "
                "not trained while this page was built",
            )
        return stand_in(f"{why}, so this page uses this larger, much longer-trained encoder instead")
    fetched = records.published_files("reference_run")
    absent = "could not be fetched here" if fetched else "is not recorded in this copy of the book"
    description = f"{MINILM}; the book's own BERT {absent}, so this page uses this encoder instead"
    return PretrainedEncoder("all-MiniLM-L6-v2", Path(minilm_path()), False, description)


def stand_in(why: str) -> PretrainedEncoder:
    """all-MiniLM-L6-v2, trained far longer than the book's own BERT, as a comparison beside it."""
    return PretrainedEncoder("all-MiniLM-L6-v2", Path(minilm_path()), False, f"{MINILM}. {why}")
