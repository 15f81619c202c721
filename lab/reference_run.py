"""Making the book's record: the reference run's settings (`REFERENCE`: on a CPU, a GPU and as a
smoke test) and its pipeline (`reference_run`), and the tasks a record can gain after it was made
(`add_task`, `add_squad`). Reading the record is `bertlab.experiments.reference`, in the package.

From the repository root (lab/ is not installed with bertlab):

    python -m lab.reference_run --out data/reference_run        # 2 CPU cores, about 95 minutes
    python -m lab.reference_run --smoke --out /tmp/ref          # a CPU-sized version, a few minutes
    python -m lab.reference_run --resume --out data/reference_run
    python -m lab.reference_run --add squad --out data/reference_run
    scripts/reference_run.sh                                    # the same, choosing the python
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import shutil
import struct
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from bertlab import checkpoint as ckpt
from bertlab.data.tokenizer import WordPieceTokenizer
from bertlab.errors import ActionableError
from bertlab.experiments.reference import ARMS, PAIRED_TASKS, REPRODUCE, ReferenceRun, find, stored_arm
from bertlab.files import sha256_file, write_json
from bertlab.prose import count
from bertlab.runtime import cpu_model, device_name, git_commit, machine, make_runtime

REFERENCE = {
    # One H100, about 15 minutes end to end. Never run: no GPU was available to this project.
    "gpu": dict(
        preset="medium",
        recipe="budget",
        corpus="books+wiki",
        vocab_size=16384,
        seq_len=128,
        mlm_probability=0.15,
        batch_size=256,
        minutes=9.0,
        steps=None,
        max_documents=None,
        log_every=50,
        eval_every=500,
        eval_batches=20,
        checkpoint_every=2000,
        compile=True,
        ft_epochs=3,
        ft_lr=5e-5,
        ft_batch=64,
        ft_sizes=(None,),
        ft_min_steps=0,
        ft_max_eval=None,
        seeds=(0, 1, 2),
        ft_tasks=("mrpc", "conll2003"),
        ft_tasks_max_train=None,
        squad=False,
    ),
    # Two CPU cores: 50 minutes of pretraining on BERT-Mini, then the fine-tuning the chapters read.
    # Why each setting (lab/README.md, "The record's settings, and why").
    "cpu": dict(
        preset="mini",
        recipe="cpu",
        norm_position="post",
        corpus="books+wiki",
        vocab_size=8192,
        seq_len=128,
        segment_pairs=True,
        phases="0.5:32:256,0.3:64:128,0.1:128:64,0.1:256:32",
        mlm_probability=0.4,
        batch_size=64,
        minutes=50.0,
        steps=None,
        max_documents=None,
        log_every=50,
        eval_every=250,
        eval_batches=20,
        checkpoint_every=500,
        compile=True,
        ft_epochs=3,
        ft_lr=5e-4,
        ft_batch=32,
        ft_sizes=(500, 2000, 8000),
        ft_min_steps=300,
        ft_max_eval=None,
        seeds=(0, 1, 2),
        ft_tasks=("mrpc", "rte", "conll2003"),
        ft_tasks_max_train=None,
        squad=True,
        squad_seeds=(0,),
        # CoNLL-2003 with one seed per arm: its three seeds spread by at most 2.4 points
        # an arm in three records, against a gain of +17.5 to +18.2, and they took 18 of the
        # 114 minutes of the third run (data/pilots/record7-third). Every fine-tuning runs its
        # seeds in two one-thread processes side by side (FinetuneConfig.workers).
        ft_tasks_seeds={"conll2003": (0,)},
        ft_workers=2,
    ),
    # the CPU pipeline in a few minutes (how the command is tested)
    "smoke": dict(
        preset="tiny",
        recipe="cpu",
        norm_position="post",
        corpus="books+wiki",
        vocab_size=2000,
        seq_len=64,
        batch_size=16,
        mlm_probability=0.3,
        segment_pairs=True,
        phases="0.5:32:32,0.5:64:16",
        minutes=None,
        steps=40,
        max_documents=6,
        log_every=10,
        eval_every=20,
        eval_batches=2,
        checkpoint_every=20,
        compile=False,
        ft_epochs=1,
        ft_lr=1e-4,
        ft_batch=32,
        ft_sizes=(128, 256),
        ft_min_steps=0,
        ft_max_eval=128,
        seeds=(0, 1, 2),
        ft_tasks=("mrpc",),
        ft_tasks_max_train=128,
        squad=False,
        ft_workers=2,
    ),
}
WEIGHTS_BUDGET_MB = 20
# What the CPU settings are chosen to fit, end to end on 2 cores (pretraining at most 60 of it):
# vocabulary, pretraining, evaluation and every fine-tuning, SQuAD included
END_TO_END_MINUTES = 100


# The paper's own masked-LM examples (Devlin et al. 2018, section 3.1 and appendix A.1), which the
# record's fill_mask.json answers at every checkpoint before its held-out sentences.
PAPER_PROBES = [
    "the man went to the [MASK] . he bought a [MASK] of milk .",
    "my dog is [MASK] .",
]


def finetune_epochs(settings: dict[str, Any], train_examples: int | None) -> int:
    """The epochs the reference run fine-tunes for on `train_examples` labelled examples (None:
    all of them): its `ft_epochs`, or more on a small set, enough for `ft_min_steps` updates."""
    epochs = settings["ft_epochs"]
    if train_examples is not None and settings.get("ft_min_steps"):
        epochs = max(epochs, math.ceil(settings["ft_min_steps"] * settings["ft_batch"] / train_examples))
    return epochs


def task_seeds(settings: dict[str, Any], task: str) -> tuple[int, ...]:
    """The seeds a reference run with `settings` fine-tunes `task` (after SST-2) with: the run's
    `ft_tasks_seeds` for that task where it names them, else its `seeds`."""
    return tuple((settings.get("ft_tasks_seeds") or {}).get(task, settings["seeds"]))


def squad_plan(settings: dict[str, Any]) -> dict[str, Any]:
    """The SQuAD settings a reference run with `settings` fine-tunes with: SQUAD_CPU, with the
    run's own `squad_seeds` and `ft_workers` where it names them."""
    plan = dict(SQUAD_CPU)
    if settings.get("squad_seeds"):
        plan["seeds"] = tuple(settings["squad_seeds"])
    if settings.get("ft_workers"):
        plan["workers"] = settings["ft_workers"]
    return plan


def changes_since(run: ReferenceRun, kind: str = "cpu") -> list[tuple[str, Any, Any]]:
    """Where `reference-run` now (REFERENCE[kind] and its SQuAD plan) differs from what the
    recorded `run` was made with: (setting, recorded, now) for each setting, SQuAD's named
    "squad <setting>"; a setting one side lacks reads None there. Empty when a new run would
    repeat the record's settings."""
    if kind not in REFERENCE:
        raise ValueError(f"no reference settings {kind!r}; choose one of {', '.join(REFERENCE)}")

    # both sides as JSON reads them (the record's tuples were written as lists)
    recorded = run.provenance.get("settings") or {}
    now = json.loads(json.dumps(REFERENCE[kind]))
    changes = [
        (k, recorded.get(k), now.get(k))
        for k in dict.fromkeys([*recorded, *now])
        if recorded.get(k) != now.get(k) and k != "squad_seeds"
    ]
    added = (run.provenance.get("added_tasks") or {}).get("squad")
    if now.get("squad") and added:
        plan = json.loads(json.dumps(squad_plan(now)))
        changes += [
            (f"squad {k}", added["settings"].get(k), v) for k, v in plan.items() if added["settings"].get(k) != v
        ]
    return changes


def changes_text(changes: Sequence[tuple[str, Any, Any]]) -> str:
    """One sentence for `changes_since`: what a reference run made now would change."""
    if not changes:
        return "Made again now, the reference run would repeat the record's settings."
    parts = [f"{name} {old} → {new}" for name, old, new in changes]
    return (
        f"Made again now, the reference run would change {count(len(changes), 'setting')} "
        "of the record: " + "; ".join(parts) + "."
    )


def stored_arms(task: str, pretrained: dict[str, Any], scratch: dict[str, Any]) -> dict[str, Any]:
    """A task's two fine-tuning results (dicts) as finetune_results.json holds them (read back by
    `reference.stored_arm`)."""
    if task in PAIRED_TASKS:
        return {task: {"pretrained": pretrained, "scratch": scratch}}
    return {f"{task}_pretrained": pretrained, f"{task}_scratch": scratch}


def weights_digest(path: str | Path) -> str:
    """sha256 of what a safetensors file holds (the weights a stage starts from, in its
    `stage_key`): every tensor's name, dtype, shape and bytes, and its metadata. Unlike the file's
    own sha256 it does not change when the same weights are saved again: safetensors writes its
    header's metadata in no fixed order."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: too short to be a safetensors file; save the weights again")
        (n,) = struct.unpack("<Q", head)
        if n > os.path.getsize(path) - 8:
            raise ValueError(
                f"{path}: its header says {n:,} bytes, more than the file holds (not a safetensors file, "
                f"or a git-lfs pointer?); save the weights again"
            )
        try:
            header = json.loads(f.read(n))
        except ValueError as err:
            raise ValueError(f"{path}: its safetensors header is not JSON (a corrupt file?); save it again") from err
        h = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stage_key(stage: str, recipe: Any, weights: str | Path, **extra: Any) -> dict[str, Any]:
    """What a fine-tuning stage's result depends on: the stage, its recipe (a FinetuneConfig, less
    where it writes and whether it shows progress), the digest of the weights it starts from and
    anything else it was given (`extra`), as JSON reads it back (tuples become lists)."""
    settings = {k: v for k, v in dataclasses.asdict(recipe).items() if k not in ("out", "progress")}
    key = {"stage": stage, "recipe": settings, "weights": weights_digest(weights), **extra}
    return json.loads(json.dumps(key))


def kept_seconds(kept: dict[str, Any]) -> float:
    """The fine-tuning seconds of the stages `finetune_stage` kept from earlier sessions."""
    return sum(float(k.get("seconds") or 0.0) for k in kept.values())


def finetune_stage(
    stages: Path,
    key: dict[str, Any],
    resume: bool,
    run: Callable[[], Sequence[Any]],
    kept: dict[str, Any] | None = None,
) -> tuple[list[Any], float]:
    """One fine-tuning stage of the reference run, kept: `run()` returns its arms (FinetuneResults,
    pretrained then scratch), written to <stages>/<stage>.json as soon as it ends, with its wall
    time, code and machine. With `resume`, a stage already written with the same key (recipe and
    weights) is read back instead of run again, so an interrupted record loses at most the stage it
    was in; `kept`, if given, gains an entry per stage read back (its seconds, code and machine).
    Returns (arms, seconds)."""
    # local: the training stack; the chapters that only read the record stay light
    from bertlab.training.finetune import FinetuneResult

    path = stages / f"{key['stage']}.json"
    if resume and path.exists():
        try:
            saved = json.loads(path.read_text())
        except ValueError as err:
            raise ValueError(
                f"{path} is not JSON (a stage file cut off?); delete it to fine-tune that stage again"
            ) from err
        differ = [k for k in key if (saved.get("key") or {}).get(k) != key[k]]
        if not differ:
            try:
                arms = [FinetuneResult.from_dict(a) for a in saved["arms"]]
            except ValueError as err:
                raise ValueError(f"{path}: {err} (delete it to fine-tune that stage again)") from err
            print(f"{key['stage']}: finished in an earlier session, kept ({path})", flush=True)
            if kept is not None:
                kept[key["stage"]] = {k: saved.get(k) for k in ("seconds", "git_commit", "machine")}
            return arms, float(saved["seconds"])
        print(f"{key['stage']}: {path} differs in {', '.join(differ)}; running it again", flush=True)
    t = time.perf_counter()
    arms = list(run())
    seconds = time.perf_counter() - t
    stages.mkdir(parents=True, exist_ok=True)
    write_json(
        path,
        {
            "key": key,
            "seconds": round(seconds, 1),
            "git_commit": git_commit(),
            # where it ran, and the precision fine-tuning resolved to there
            "machine": machine(make_runtime("auto", "auto", distributed=False)),
            "arms": [a.to_dict() for a in arms],
        },
    )
    return arms, seconds


def reference_run(
    out: str = "data/reference_run",
    smoke: bool = False,
    minutes: float | None = None,
    preset: str | None = None,
    seeds: Sequence[int] | None = None,
    compile: bool | None = None,
    resume: bool = False,
    steps: int | None = None,
    ft_tasks: Sequence[str] | None = None,
    squad: bool | None = None,
    layers: int | None = None,
) -> dict[str, Any]:
    """WordPiece on the training corpus, pre-tokenizing, pretraining on books + Wikipedia (held-out
    books and articles for evaluation), then SST-2 fine-tuning with each seed from the pretrained
    weights and from scratch (same architecture, vocabulary and fine-tuning recipe). Writes into
    `out`: metrics.jsonl, config.json, tokenizer.json + vocab.txt, model.fp16.safetensors,
    finetune_results.json, provenance.json (command, git commit, device, wall times, corpus
    checksums, versions), and the full pretraining run folder under pretrain/.

    `minutes` or `steps` replace the settings' pretraining budget (`steps`: a fixed number of
    steps, the same tokens on any machine). `layers` replaces the preset's number of layers (the
    scratch twins of the fine-tuning take the pretrained model's size, so they follow). `resume`
    continues an interrupted run: pretraining from its newest checkpoint, and every fine-tuning
    stage that finished (stages/<stage>.json, with the same recipe and weights) is kept instead of
    run again. `ft_tasks` (a subset of ADDABLE_CLASSIFICATION + conll2003, in any order) and
    `squad` replace the settings' tasks after SST-2: a record whose session runs short can be
    finished with the tasks done so far (kept stages) and gain the others later with `add_task` /
    `add_squad` (`--add`)."""
    import torch

    # local: the training stack (corpus, pretraining data, tasks); `import bertlab.experiments.reference`
    # stays light for the chapters that only read the record
    from bertlab.analysis.fill_mask import fill_mask_along, probe_sentences
    from bertlab.data.corpus import load_corpus
    from bertlab.training.finetune import FinetuneConfig, compare_with_scratch
    from bertlab.training.heldout import evaluate_checkpoint
    from bertlab.training.pretrain import PretrainConfig, pretrain

    rt = make_runtime("auto", "auto", distributed=False)
    kind = "smoke" if smoke else rt.device.type if rt.device.type in REFERENCE else "gpu"
    if kind == "gpu":
        print(
            "note: the GPU settings of the reference run have never been run (no GPU was available); "
            "report what you see",
            flush=True,
        )
    s = dict(REFERENCE[kind])
    if minutes is not None and steps is not None:
        raise ValueError("give the pretraining a time budget (minutes) or a number of steps, not both")
    if minutes is not None:
        s.update(minutes=minutes, steps=None)
    if steps is not None:
        if steps < 1:
            raise ValueError(f"steps={steps}: pretraining needs at least one step")
        s.update(steps=steps, minutes=None)
    if preset is not None:
        s["preset"] = preset
    if layers is not None:
        if layers < 1:
            raise ValueError(f"layers={layers}: the encoder needs at least one layer")
        s["layers"] = layers  # absent from the settings otherwise: the preset's
    if seeds is not None:
        s["seeds"] = tuple(seeds)
    if compile is not None:
        s["compile"] = compile
    if ft_tasks is not None:
        unknown = sorted(set(ft_tasks) - set(ADDABLE))
        if unknown:
            raise ValueError(
                f"ft_tasks: {', '.join(unknown)} is not a task the record fine-tunes after SST-2; "
                f"choose from {', '.join(ADDABLE)}"
            )
        s["ft_tasks"] = tuple(ft_tasks)
    if squad is not None:
        s["squad"] = squad
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    times: dict[str, float] = {}

    cfg = PretrainConfig(
        preset=s["preset"],
        layers=s.get("layers"),
        corpus=s["corpus"],
        vocab_size=s["vocab_size"],
        recipe=s["recipe"],
        norm_position=s.get("norm_position"),
        mlm_probability=s.get("mlm_probability"),
        seq_len=s["seq_len"],
        segment_pairs=s.get("segment_pairs"),
        phases=s.get("phases"),
        batch_size=s["batch_size"],
        minutes=s["minutes"],
        steps=s["steps"],
        max_documents=s["max_documents"],
        compile=s["compile"],
        log_every=s["log_every"],
        eval_every=s["eval_every"],
        eval_batches=s["eval_batches"],
        checkpoint_every=s["checkpoint_every"],
        out=str(out_dir / "pretrain"),
        resume=resume,
        keep_last=1000,
    )  # every checkpoint: fill-mask is asked of each below
    # Training time of earlier sessions of a resumed run (interrupted, or run by `pretrain` itself):
    # part of the run's wall time although not of this call's.
    earlier = ckpt.latest_checkpoint(Path(cfg.out) / "checkpoints") if resume else None
    earlier_s = float(ckpt.load_checkpoint(earlier).state["trainer"]["elapsed_s"]) if earlier else 0.0
    t = time.perf_counter()
    result = pretrain(cfg, runtime=make_runtime("auto", "auto", compile=s["compile"], distributed=False))
    times["pretrain_with_data_s"] = time.perf_counter() - t + earlier_s
    if result.stopped_by:
        raise ActionableError(f"pretraining was stopped ({result.stopped_by}); run again with --resume")
    run = Path(cfg.out)
    final_eval = result.final_eval
    if final_eval is None:  # resumed after the last step: the log holds the final evaluation
        evals = [r for r in result.history if r.get("split") == "eval"]
        final_eval = {k: v for k, v in evals[-1].items() if k not in ("step", "split", "elapsed_s")} if evals else None
    final = run / "final"
    # A segment-pairs run scores held-out text cut into two segments, as it trained; the earlier
    # records were scored on single windows: score those too, so that records compare.
    single = None
    if s.get("segment_pairs"):
        t = time.perf_counter()
        single = evaluate_checkpoint(
            final,
            corpus=cfg.corpus,
            seq_len=s["seq_len"],
            nsp=False,
            pairs=False,
            batches=s["eval_batches"],
            batch_size=min(s["batch_size"], 64),
            max_documents=cfg.max_documents,
        )
        times["heldout_single_segment_s"] = time.perf_counter() - t

    # The artefacts, small and self-describing.
    shutil.copyfile(run / "metrics.jsonl", out_dir / "metrics.jsonl")
    shutil.copyfile(final / "config.json", out_dir / "config.json")
    shutil.copyfile(run / "tokenizer" / "tokenizer.json", out_dir / "tokenizer.json")
    shutil.copyfile(run / "tokenizer" / "vocab.txt", out_dir / "vocab.txt")
    fp16_dir = ckpt.save_model(out_dir / "model_fp16", result.model, dtype=torch.float16)
    shutil.move(str(fp16_dir / "model.safetensors"), out_dir / "model.fp16.safetensors")
    shutil.rmtree(fp16_dir)
    size_mb = (out_dir / "model.fp16.safetensors").stat().st_size / 1e6

    # Fill-mask along the run: the paper's examples and held-out sentences, at every checkpoint.
    t = time.perf_counter()
    tok = WordPieceTokenizer.load(run / "tokenizer" / "tokenizer.json")
    probes = probe_sentences(load_corpus(cfg.corpus, "heldout")[: cfg.max_documents], tok, n=8)
    texts = PAPER_PROBES + [p["text"] for p in probes]
    folders = ckpt.list_checkpoints(run / "checkpoints")
    folders = [f for f in folders if int(f.name.split("-")[1]) < result.step] + [final]
    write_json(
        out_dir / "fill_mask.json",
        {
            "texts": texts,
            "answers": [None] * len(PAPER_PROBES) + [p["answer"] for p in probes],
            "steps": [int(f.name.split("-")[1]) if f.name.startswith("step-") else result.step for f in folders],
            "along": fill_mask_along(folders, tok, texts),
        },
    )
    times["fill_mask_s"] = time.perf_counter() - t
    if size_mb > WEIGHTS_BUDGET_MB:
        print(
            f"note: model.fp16.safetensors is {size_mb:.1f} MB, over the {WEIGHTS_BUDGET_MB} MB budget for "
            f"committing it; --preset mini fits",
            flush=True,
        )

    # SST-2: pretrained vs scratch, same recipe, same seeds, for each number of labelled sentences.
    # Every stage is kept in stages/ as it ends (finetune_stage), so that --resume goes on from it.
    stages = out_dir / "stages"
    kept: dict[str, Any] = {}  # stages finished in an earlier session: their seconds, code, machine
    curve, results = [], {}
    for n in s["ft_sizes"]:
        epochs = finetune_epochs(s, n)
        ft = dict(
            task="sst2",
            epochs=epochs,
            lr=s["ft_lr"],
            batch_size=s["ft_batch"],
            seeds=s["seeds"],
            max_train_examples=n,
            max_eval_examples=s["ft_max_eval"],
            eval_every_epoch=False,
            workers=s.get("ft_workers", 1),
        )
        recipe = FinetuneConfig(**ft)
        (pre, scr), times[f"sst2_{n or 'all'}_s"] = finetune_stage(
            stages,
            stage_key(f"sst2_{n or 'all'}", recipe, final / "model.safetensors"),
            resume,
            lambda: compare_with_scratch(final, recipe, out=out_dir / f"sst2_{n or 'all'}"),
            kept,
        )
        for r in (pre, scr):
            print(f"{n or 'all'} sentences: {r.summary()}", flush=True)
        curve.append({"train_examples": n, "epochs": epochs, "pretrained": pre.to_dict(), "scratch": scr.to_dict()})
    results = {"pretrained": curve[-1]["pretrained"], "scratch": curve[-1]["scratch"]}  # the most data
    # Other tasks, every labelled example, same recipe, stored as stored_arms says.
    for task in s["ft_tasks"]:
        ft = dict(
            task=task,
            epochs=s["ft_epochs"],
            lr=s["ft_lr"],
            batch_size=s["ft_batch"],
            seeds=task_seeds(s, task),
            max_train_examples=s["ft_tasks_max_train"],
            max_eval_examples=s["ft_max_eval"],
            eval_every_epoch=False,
            workers=s.get("ft_workers", 1),
        )
        recipe = FinetuneConfig(**ft)
        (pre, scr), times[f"{task}_s"] = finetune_stage(
            stages,
            stage_key(task, recipe, final / "model.safetensors"),
            resume,
            lambda: compare_with_scratch(final, recipe, out=out_dir / task),
            kept,
        )
        for r in (pre, scr):
            print(r.summary(), flush=True)
        results.update(stored_arms(task, pre.to_dict(), scr.to_dict()))
    write_json(out_dir / "finetune_results.json", results)
    write_json(out_dir / "sst2_curve.json", curve)

    def corpus_meta(split):  # a run with phases has one folder per sequence length (train-64, ...)
        metas = sorted((run / "data").glob(f"{split}*/tokens/meta.json"))
        if not metas:
            raise FileNotFoundError(f"no {split} tokens under {run / 'data'}")
        return json.loads(metas[0].read_text())["corpus"]

    train_meta, held_meta = corpus_meta("train"), corpus_meta("heldout")
    run_info = json.loads((run / "run.json").read_text())
    provenance = {
        "command": " ".join([Path(sys.executable).name, "-m", "bertlab"] + sys.argv[1:]) if sys.argv else None,
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in s.items()},
        "smoke": smoke,
        "kind": kind,
        "git_commit": git_commit(),
        # a resumed run may fine-tune with newer code than it pretrained with: both are recorded
        "pretraining_git_commit": run_info.get("git_commit"),
        "machine": machine(rt),  # every record's machine, described alike (bertlab.runtime.machine)
        "device": device_name(rt.device),
        "cpu_model": cpu_model(),
        "precision": rt.precision,
        "torch": torch.__version__,
        # the time of this session, plus what earlier sessions spent pretraining and on kept stages
        "wall_time_s": round(time.perf_counter() - t_start + earlier_s + kept_seconds(kept), 1),
        "resumed": {"earlier_sessions_train_s": round(earlier_s, 1), "kept_stages": kept} if resume else None,
        "stage_times_s": {k: round(v, 1) for k, v in times.items()},
        "pretraining": {
            "steps": result.step,
            "tokens": result.tokens,
            "train_seconds": round(result.elapsed_s, 1),
            # what the phases' fractions divided (a run made before the field: the steps)
            "phase_plan": run_info.get("phase_plan", "steps"),
            "final_heldout": final_eval,
            "final_heldout_single_segment": single,
        },
        "corpus": {
            "name": cfg.corpus,
            "train_checksum": train_meta["checksum"],
            "train_tokens": train_meta["n_tokens"],
            "train_documents": train_meta["n_documents"],
            "heldout_checksum": held_meta["checksum"],
            "heldout_tokens": held_meta["n_tokens"],
            "heldout_documents": held_meta["n_documents"],
        },
        "weights": {
            "file": "model.fp16.safetensors",
            "megabytes": round(size_mb, 2),
            "sha256": sha256_file(out_dir / "model.fp16.safetensors"),
        },
        "sst2_dev_accuracy_median": {k: results[k]["median"] for k in ("pretrained", "scratch")},
        "other_tasks_median": {
            f"{task} from {name}": stored_arm(results, task, name)["median"] for task in s["ft_tasks"] for name in ARMS
        },
        "sst2_curve_median": [
            {
                "train_examples": p["train_examples"],
                "pretrained": p["pretrained"]["median"],
                "scratch": p["scratch"]["median"],
            }
            for p in curve
        ],
    }
    write_json(out_dir / "provenance.json", provenance)
    if s.get("squad"):  # SQuAD reads the record as written so far (its squad_seeds too), and adds itself
        add_squad(out_dir, resume=resume, kept=kept)
        provenance = json.loads((out_dir / "provenance.json").read_text())
        # the stage's own fine-tuning time (kept from an earlier session, or this one's)
        provenance["stage_times_s"]["squad_s"] = provenance["added_tasks"]["squad"]["wall_time_s"]
        provenance["wall_time_s"] = round(time.perf_counter() - t_start + earlier_s + kept_seconds(kept), 1)
        if provenance.get("resumed"):
            provenance["resumed"]["kept_stages"] = kept
        write_json(out_dir / "provenance.json", provenance)
    print(
        json.dumps(
            {
                "heldout": final_eval,
                "sst2": provenance["sst2_dev_accuracy_median"],
                "wall_time_s": provenance["wall_time_s"],
            },
            indent=1,
        )
    )
    return provenance


def _add_to_record(
    run: ReferenceRun,
    task: str,
    results: dict[str, Any],
    settings: dict[str, Any],
    seconds: float,
    commit: str | None,
    **counts: int,
) -> None:
    """Write a task fine-tuned after the record was made into it: its two arms in
    finetune_results.json as the pipeline stores them (stored_arms); its settings,
    counts, code and wall time under provenance["added_tasks"][task]; its two medians under
    provenance["other_tasks_median"]."""
    arms = {name: stored_arm(results, task, name) for name in ARMS}
    path = run.path / "finetune_results.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    write_json(path, {**recorded, **results})
    prov = dict(run.provenance)
    prov.setdefault("added_tasks", {})[task] = {
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
        **counts,
        "git_commit": commit,
        "wall_time_s": round(seconds, 1),
        "cpu_model": cpu_model(),
        # the machine and the precision fine-tuning resolved to there (bf16 where the CPU has it)
        "machine": machine(make_runtime("auto", "auto", distributed=False)),
        "init": "the record's fp16 weights, in fp32 (ReferenceRun.model_folder)",
    }
    prov.setdefault("other_tasks_median", {}).update(
        {f"{task} from {name}": arm["median"] for name, arm in arms.items()}
    )
    write_json(run.path / "provenance.json", prov)


# Sentence(-pair) classification tasks a record can gain after it was made (`--add rte`): the
# record's own fine-tuning recipe (epochs, lr, batch, seeds from its provenance), every labelled
# example, scored on dev, as MRPC is scored inside the pipeline. CoNLL-2003 (token classification,
# the same recipe) can be added too; SQuAD has its own recipe (add_squad).
ADDABLE_CLASSIFICATION = ("rte", "mrpc")
ADDABLE = (*ADDABLE_CLASSIFICATION, "conll2003")


def add_task(
    task: str,
    out: str | Path = "data/reference_run",
    seeds: Sequence[int] | None = None,
    max_train: int | None = None,
    max_eval: int | None = None,
) -> dict[str, Any]:
    """Fine-tune one more task (RTE, say, or CoNLL-2003) from the record's weights and from scratch
    with the recipe the record fine-tuned everything else with, and add the results to the record:
    its two arms in finetune_results.json as the pipeline stores them (stored_arms), the
    settings, code and wall time under provenance["added_tasks"][task].
    max_train / max_eval: the first N examples (a quick run)."""
    # local: the training stack; the chapters that only read the record stay light
    from bertlab.training.finetune import FinetuneConfig, compare_with_scratch

    if task not in ADDABLE:
        raise ValueError(
            f"cannot add {task!r} to a record; choose one of {', '.join(ADDABLE)} "
            f"(or add SQuAD with add_squad / --add squad)"
        )
    run = find(out)
    if run is None:
        raise FileNotFoundError(f"no reference run at {out}: record one first with {REPRODUCE}")
    s = run.provenance.get("settings", {})
    missing = [k for k in ("ft_epochs", "ft_lr", "ft_batch", "seeds") if k not in s]
    if missing:
        raise ValueError(
            f"the record at {out} names no fine-tuning recipe ({', '.join(missing)} missing from "
            f"provenance.json settings); make the record again with {REPRODUCE}"
        )
    settings = dict(
        epochs=s["ft_epochs"],
        lr=s["ft_lr"],
        batch_size=s["ft_batch"],
        seeds=tuple(seeds if seeds is not None else task_seeds(s, task)),
        max_train_examples=max_train,
        max_eval_examples=max_eval,
    )
    folder = str(run.model_folder())
    t0 = time.perf_counter()
    pre, scr = compare_with_scratch(folder, FinetuneConfig(task=task, **settings, eval_every_epoch=False))
    for r in (pre, scr):
        print(r.summary(), flush=True)
    results = stored_arms(task, pre.to_dict(), scr.to_dict())  # as the pipeline stores them
    _add_to_record(run, task, results, settings, time.perf_counter() - t0, git_commit())
    return results


# SQuAD v1.1 for the CPU record: the mirror holds the dev set only, so the record learns from the
# articles of chapter 13's by-article split and is scored on the others (no paragraph on both sides).
# Why two epochs, windows of 256, lr 5e-4 and batch 32: lab/README.md, "The record's settings, and why".
SQUAD_CPU = dict(
    eval_fraction=0.25,
    split_seed=0,
    max_len=256,
    doc_stride=128,
    epochs=2,
    lr=5e-4,
    batch_size=32,
    seeds=(0, 1, 2),
    max_train=None,
    max_eval=None,
    workers=1,  # seeds (of both arms) side by side in this many processes (FinetuneConfig.workers)
)


def add_squad(
    out: str | Path = "data/reference_run", resume: bool = False, kept: dict[str, Any] | None = None, **overrides: Any
) -> dict[str, Any]:
    """Fine-tune SQuAD v1.1 from the record's weights and from scratch (the same architecture and
    vocabulary), with one recipe and the same seeds, on the by-article split of dev that chapter 13
    uses (`bertlab.tasks.squad.split_by_article`), and add the results to the record: "squad_pretrained"
    and "squad_scratch" in finetune_results.json, the settings, code and wall time under
    provenance["added_tasks"]["squad"]. `overrides` change SQUAD_CPU's settings (max_train /
    max_eval: the first N questions of each side, for a quick run). With `resume`, a result kept in
    <out>/stages/squad.json for the same settings and weights is added instead of fine-tuning again
    (`finetune_stage`; `kept` gains it then). Returns the two results."""
    # local: the training stack and SQuAD's data; the chapters that only read the record stay light
    from bertlab.tasks import get_task
    from bertlab.tasks.squad import split_by_article
    from bertlab.training.finetune import FinetuneConfig, compare_with_scratch

    unknown = set(overrides) - set(SQUAD_CPU)
    if unknown:
        raise ValueError(f"unknown SQuAD settings {sorted(unknown)}; choose from {sorted(SQUAD_CPU)}")
    run = find(out)
    if run is None:
        raise FileNotFoundError(f"no reference run at {out}: record one first with {REPRODUCE}")
    # the record's own plan (its squad_seeds), then what the caller changes
    s = {**squad_plan(run.provenance.get("settings") or {}), **overrides}
    train, held = split_by_article(
        get_task("squad").load("dev"), eval_fraction=s["eval_fraction"], seed=s["split_seed"]
    )
    train, held = train[: s["max_train"]], held[: s["max_eval"]]
    recipe = FinetuneConfig(
        task="squad",
        max_len=s["max_len"],
        doc_stride=s["doc_stride"],
        epochs=s["epochs"],
        lr=s["lr"],
        batch_size=s["batch_size"],
        seeds=tuple(s["seeds"]),
        eval_every_epoch=False,
        workers=s["workers"],
    )
    folder = run.model_folder()
    results = {}
    key = stage_key(
        "squad",
        recipe,
        folder / "model.safetensors",
        split={k: s[k] for k in ("eval_fraction", "split_seed")},
        train_questions=len(train),
        eval_questions=len(held),
    )
    arms, seconds = finetune_stage(
        Path(out) / "stages",
        key,
        resume,
        lambda: compare_with_scratch(str(folder), recipe, train_examples=train, eval_examples=held),
        kept,
    )
    for name, r in zip(ARMS, arms):
        results[f"squad_{name}"] = dict(r.to_dict(), train_questions=len(train), eval_questions=len(held))
        print(r.summary(), flush=True)
    _add_to_record(
        run,
        "squad",
        results,
        s,
        seconds,
        git_commit(),
        train_questions=len(train),
        eval_questions=len(held),
    )
    return results


def build_parser() -> argparse.ArgumentParser:
    r = argparse.ArgumentParser(prog="python -m lab.reference_run", description="the book's reference run, end to end")
    r.add_argument("--out", default="data/reference_run")
    r.add_argument("--smoke", action="store_true", help="a CPU-sized version that runs in minutes")
    r.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="pretraining time budget in minutes (default: 50 on a CPU, 9 on a GPU; smoke: 40 steps)",
    )
    r.add_argument(
        "--steps",
        type=int,
        default=None,
        help="pretrain for this many steps instead of a time budget: the same tokens on any machine "
        "(the record's 50 minutes came to 3,229 steps on 2 Zen 4 cores)",
    )
    r.add_argument("--preset", default=None)
    r.add_argument("--layers", type=int, default=None, help="L, the number of layers (the preset's otherwise)")
    r.add_argument("--seeds", type=int, nargs="+", default=None)
    r.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None)
    r.add_argument(
        "--resume",
        action="store_true",
        help="resume an interrupted run: pretraining from its newest checkpoint; fine-tuning stages "
        "that finished (<out>/stages/) are kept",
    )
    r.add_argument(
        "--add",
        choices=["squad", *ADDABLE],
        default=None,
        help="fine-tune one more task from the record in --out (and from scratch) and add it to the "
        "record, instead of making a record (rte / mrpc / conll2003: the record's fine-tuning recipe, "
        "scored on dev; squad: SQuAD v1.1 on chapter 13's by-article "
        "split of dev, lab.reference_run.SQUAD_CPU with the record's squad_seeds; "
        "with --resume a SQuAD result kept in <out>/stages/ is added again)",
    )
    r.add_argument(
        "--ft-tasks",
        nargs="*",
        default=None,
        help="the tasks fine-tuned after SST-2 (default: the settings', mrpc rte conll2003); with "
        "--resume, a record can end with the stages done so far and gain the others with --add",
    )
    r.add_argument(
        "--squad",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fine-tune SQuAD at the end (default: the settings'); --no-squad leaves it to --add squad",
    )
    r.add_argument("--max-train", type=int, default=None, help="with --add: the first N training examples")
    r.add_argument("--max-eval", type=int, default=None, help="with --add: the first N held-out examples")
    return r


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.add == "squad":
            add_squad(
                args.out,
                resume=args.resume,
                max_train=args.max_train,
                max_eval=args.max_eval,
                **({"seeds": tuple(args.seeds)} if args.seeds else {}),
            )
            return 0
        if args.add:
            add_task(args.add, args.out, seeds=args.seeds, max_train=args.max_train, max_eval=args.max_eval)
            return 0
        reference_run(
            out=args.out,
            smoke=args.smoke,
            minutes=args.minutes,
            preset=args.preset,
            seeds=args.seeds,
            compile=args.compile,
            resume=args.resume,
            steps=args.steps,
            ft_tasks=args.ft_tasks,
            squad=args.squad,
            layers=args.layers,
        )
        return 0
    except (ValueError, FileNotFoundError, ActionableError) as err:
        print(f"error: {err}", file=sys.stderr)  # any other error is a fault: its traceback stays
        return 2


if __name__ == "__main__":
    sys.exit(main())
