"""lab.reference_run: making the book's record (the pipeline, its stages kept for --resume, the
tasks a record gains afterwards, its settings) with tiny models; reading a record is tested in
tests/test_reference.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining, files
from bertlab import checkpoint as ckpt
from bertlab.experiments import reference
from lab import reference_run
from tests.conftest import MIRROR

ROOT = Path(__file__).resolve().parents[2]  # the checkout: `python -m lab.reference_run` runs from here
ENV = {
    **os.environ,
    "BERTLAB_DATA_MIRROR": str(MIRROR),
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "BERTLAB_PROGRESS": "0",
}


def test_add_squad_fine_tunes_both_arms_and_extends_the_record(record, monkeypatch, tmp_path):

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # model_folder() writes there
    out, _ = record
    small = dict(max_train=12, max_eval=6, seeds=(0,), epochs=1, max_len=96, doc_stride=48, batch_size=4)
    results = reference_run.add_squad(out, **small)
    assert set(results) == {"squad_pretrained", "squad_scratch"}
    assert results["squad_pretrained"]["init"] != results["squad_scratch"]["init"] == "scratch"
    run = reference.find(out)
    stored = run.finetune_results()
    assert stored["squad_pretrained"]["median"] == results["squad_pretrained"]["median"]
    added = run.provenance["added_tasks"]["squad"]
    assert added["train_questions"] == 12 and added["eval_questions"] == 6
    assert added["settings"]["eval_fraction"] == reference_run.SQUAD_CPU["eval_fraction"]
    rows = [g for g in run.gains() if g["task"] == "squad"]
    assert len(rows) == 1 and rows[0]["metric"] == "f1" and rows[0]["train_examples"] == 12
    assert rows[0]["gain"] == pytest.approx(rows[0]["pretrained"] - rows[0]["scratch"])
    with pytest.raises(ValueError, match="unknown SQuAD settings"):
        reference_run.add_squad(out, max_questions=5)
    # resumed: the stage kept in stages/squad.json is added again without fine-tuning
    kept = json.loads((out / "stages" / "squad.json").read_text())
    assert kept["key"]["recipe"]["seeds"] == [0] and kept["key"]["train_questions"] == 12

    def no_training(*args, **kwargs):
        raise AssertionError("a kept stage was fine-tuned again")

    import bertlab.training.finetune as ft

    monkeypatch.setattr(ft, "compare_with_scratch", no_training)
    kept = {}
    again = reference_run.add_squad(out, resume=True, kept=kept, **small)
    assert again["squad_pretrained"]["scores"] == results["squad_pretrained"]["scores"]
    assert kept["squad"]["seconds"] == reference.find(out).provenance["added_tasks"]["squad"]["wall_time_s"]
    with pytest.raises(AssertionError, match="fine-tuned again"):  # other settings: not kept
        reference_run.add_squad(out, resume=True, **{**small, "max_eval": 5})


class _Arm:
    """A stand-in for a FinetuneResult: what finetune_stage writes and reads back."""

    def __init__(self, score):
        self.score = score

    def to_dict(self):
        return {"task": "sst2", "init": "x", "main_metric": "accuracy", "runs": [], "score": self.score}


def test_finetune_stage_keeps_a_finished_stage_for_resume(tmp_path):
    from safetensors.torch import save_file

    from bertlab.training.finetune import FinetuneConfig

    weights = tmp_path / "model.safetensors"
    save_file({"w": torch.ones(3)}, str(weights))
    recipe = FinetuneConfig(task="sst2", epochs=2, seeds=(0, 1), out="somewhere", progress=False)
    key = reference_run.stage_key("sst2_500", recipe, weights)
    assert key["recipe"]["seeds"] == [0, 1] and "out" not in key["recipe"]
    calls = []

    def run():
        calls.append(1)
        return [_Arm(len(calls)), _Arm(-len(calls))]

    arms, seconds = reference_run.finetune_stage(tmp_path / "stages", key, resume=True, run=run)
    assert len(calls) == 1 and seconds >= 0 and (tmp_path / "stages" / "sst2_500.json").exists()
    kept, again_s = reference_run.finetune_stage(tmp_path / "stages", key, resume=True, run=run)
    assert len(calls) == 1 and again_s == pytest.approx(seconds, abs=0.1)
    assert [a.config for a in kept] == [{}, {}] and kept[0].runs == []  # read back as FinetuneResults
    reference_run.finetune_stage(tmp_path / "stages", key, resume=False, run=run)  # a new run: again
    assert len(calls) == 2
    other = reference_run.stage_key("sst2_500", FinetuneConfig(task="sst2", epochs=3), weights)
    reference_run.finetune_stage(tmp_path / "stages", other, resume=True, run=run)  # another recipe
    assert len(calls) == 3
    save_file({"w": torch.zeros(3)}, str(weights))  # pretraining made again: other weights
    moved = reference_run.stage_key("sst2_500", FinetuneConfig(task="sst2", epochs=3), weights)
    reference_run.finetune_stage(tmp_path / "stages", moved, resume=True, run=run)
    assert len(calls) == 4


def test_finetune_result_refuses_a_dict_from_another_version(tmp_path):
    from bertlab.training.finetune import FinetuneResult, SeedResult

    runs = [SeedResult(seed=0, metrics={"accuracy": 70.0}, history=[], seconds=1.5)]
    d = FinetuneResult(task="sst2", init="scratch", main_metric="accuracy", runs=runs).to_dict()
    renamed = json.loads(json.dumps(d))
    renamed["runs"][0]["wall_s"] = renamed["runs"][0].pop("seconds")  # a field renamed since
    with pytest.raises(ValueError, match=r"missing runs\[0\]\.seconds; unknown run fields wall_s"):
        FinetuneResult.from_dict(renamed)
    with pytest.raises(ValueError, match="missing main_metric"):
        FinetuneResult.from_dict({k: v for k, v in d.items() if k != "main_metric"})
    # a kept stage in that shape names its file and how to get past it
    weights = tmp_path / "model.safetensors"
    from safetensors.torch import save_file

    save_file({"w": torch.ones(3)}, str(weights))
    from bertlab.training.finetune import FinetuneConfig

    key = reference_run.stage_key("sst2_500", FinetuneConfig(task="sst2"), weights)
    (tmp_path / "stages").mkdir()
    stage = tmp_path / "stages" / "sst2_500.json"
    stage.write_text(json.dumps({"key": key, "seconds": 3.0, "arms": [renamed, renamed]}))
    kept = {}
    with pytest.raises(ValueError, match=r"sst2_500\.json: .*wall_s.*delete it to fine-tune"):
        reference_run.finetune_stage(tmp_path / "stages", key, resume=True, run=lambda: [], kept=kept)
    assert kept == {}


def test_reference_run_takes_minutes_or_steps_not_both(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, minutes=5, steps=100)
    with pytest.raises(ValueError, match="at least one step"):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, steps=0)


def test_reference_run_layers_override_the_presets(tmp_path, monkeypatch):
    import bertlab.training.pretrain as pretrain_module

    seen = {}

    def stop(cfg, runtime=None):  # the pretraining the pipeline would run, caught before it starts
        seen["cfg"] = cfg
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain_module, "pretrain", stop)
    with pytest.raises(KeyboardInterrupt):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, layers=2)
    assert seen["cfg"].layers == 2 and seen["cfg"].model_size()[0] == 2
    with pytest.raises(KeyboardInterrupt):
        reference_run.reference_run(out=str(tmp_path / "r2"), smoke=True)
    assert seen["cfg"].layers is None  # the preset's
    with pytest.raises(ValueError, match="at least one layer"):
        reference_run.reference_run(out=str(tmp_path / "r3"), smoke=True, layers=0)


def test_add_task_fine_tunes_rte_with_the_records_recipe(record, monkeypatch, tmp_path):

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out, _ = record
    with pytest.raises(ValueError, match="names no fine-tuning recipe"):
        reference_run.add_task("rte", out)  # the fixture's provenance has no settings yet
    prov = json.loads((out / "provenance.json").read_text())
    prov["settings"] = {"ft_epochs": 1, "ft_lr": 1e-4, "ft_batch": 4, "seeds": [0, 1]}
    files.write_json(out / "provenance.json", prov)
    results = reference_run.add_task("rte", out, seeds=(0,), max_train=8, max_eval=6)
    assert set(results) == {"rte_pretrained", "rte_scratch"}
    assert results["rte_scratch"]["init"] == "scratch" != results["rte_pretrained"]["init"]
    assert results["rte_pretrained"]["config"]["lr"] == 1e-4
    run = reference.find(out)
    added = run.provenance["added_tasks"]["rte"]
    assert added["settings"]["seeds"] == [0] and added["settings"]["batch_size"] == 4
    m = added["machine"]  # where it ran, and the precision that resolved to
    if m["device"].startswith("cpu"):
        assert (m["precision"] == "bf16") == (m["cpu_bf16"] is not None), m
    assert run.provenance["settings"]["ft_lr"] == 1e-4  # the record's own settings are kept
    rows = [g for g in run.gains() if g["task"] == "rte"]
    assert len(rows) == 1 and rows[0]["metric"] == "accuracy" and len(rows[0]["pretrained_scores"]) == 1
    conf = run.confusions("rte")  # the added task keeps its confusion counts: 6 dev pairs
    assert set(conf) == {"pretrained", "scratch"} and sum(map(sum, conf["pretrained"]["matrix"])) == 6
    assert run.confusions("mrpc") is None  # not in the record
    with pytest.raises(ValueError, match="cannot add 'sst2'"):
        reference_run.add_task("sst2", out)


def test_add_task_adds_conll2003_as_the_pipeline_stores_it(record, monkeypatch, tmp_path):
    """A record finished without CoNLL-2003 gains it later: the pair under "conll2003" (as the
    pipeline writes it and chapter 14 reads it), its medians beside the other tasks'."""

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out, _ = record
    prov = json.loads((out / "provenance.json").read_text())
    prov["settings"] = {"ft_epochs": 1, "ft_lr": 1e-4, "ft_batch": 4, "seeds": [0]}
    files.write_json(out / "provenance.json", prov)
    before = reference_run.add_task("rte", out, max_train=8, max_eval=6)  # a task the record has
    results = reference_run.add_task("conll2003", out, max_train=8, max_eval=6)
    assert set(results) == {"conll2003"} and set(results["conll2003"]) == {"pretrained", "scratch"}
    assert results["conll2003"]["scratch"]["init"] == "scratch" != results["conll2003"]["pretrained"]["init"]
    run = reference.find(out)
    stored = run.finetune_results()
    assert stored["conll2003"] == results["conll2003"] and {k: stored[k] for k in before} == before
    medians = run.provenance["other_tasks_median"]
    assert medians["conll2003 from scratch"] == results["conll2003"]["scratch"]["median"]
    rows = [g for g in run.gains() if g["task"] == "conll2003"]
    assert len(rows) == 1 and len(rows[0]["pretrained_scores"]) == 1


def test_reference_run_refuses_a_task_it_cannot_fine_tune(tmp_path):
    with pytest.raises(ValueError, match="sst2 is not a task the record fine-tunes after SST-2"):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, ft_tasks=["mrpc", "sst2"])
    assert not (tmp_path / "r").exists()  # refused before anything was written


def test_finetune_epochs_give_small_sets_enough_updates():
    from lab.reference_run import finetune_epochs

    s = {"ft_epochs": 3, "ft_min_steps": 300, "ft_batch": 32}
    # 300 updates of 32 need 9,600 examples seen: 20 epochs of 500, 5 of 2,000, the usual 3 above
    assert [finetune_epochs(s, n) for n in (500, 2000, 8000, None)] == [20, 5, 3, 3]
    assert finetune_epochs({**s, "ft_min_steps": 0}, 500) == 3


def test_task_seeds_and_workers_follow_the_settings():
    s = {"seeds": (0, 1, 2), "ft_tasks_seeds": {"conll2003": [0]}, "squad_seeds": (0,), "ft_workers": 2}
    assert reference_run.task_seeds(s, "conll2003") == (0,)  # JSON's list read back as seeds
    assert reference_run.task_seeds(s, "mrpc") == (0, 1, 2)
    assert reference_run.task_seeds({"seeds": [3, 4]}, "conll2003") == (3, 4)  # a record without it
    plan = reference_run.squad_plan(s)
    assert plan["seeds"] == (0,) and plan["workers"] == 2
    assert reference_run.squad_plan({})["workers"] == reference_run.SQUAD_CPU["workers"] == 1
    cpu = reference_run.REFERENCE["cpu"]
    assert reference_run.task_seeds(cpu, "conll2003") == (0,) and cpu["ft_workers"] == 2


def test_changes_since_names_what_a_new_reference_run_would_change(record, tmp_path):
    out, _ = record
    prov = json.loads((out / "provenance.json").read_text())
    now = reference_run.REFERENCE["cpu"]
    plan = reference_run.squad_plan(now)
    prov["settings"] = {k: list(v) if isinstance(v, tuple) else v for k, v in now.items()}
    prov["added_tasks"] = {"squad": {"settings": {**plan, "seeds": list(plan["seeds"])}}}
    files.write_json(out / "provenance.json", prov)
    run = reference.find(out)
    assert reference_run.changes_since(run) == []  # tuples and JSON's lists read alike
    assert reference_run.changes_text([]).endswith("repeat the record's settings.")
    prov["settings"]["minutes"] = 40.0
    del prov["settings"]["squad_seeds"]  # a record made before the setting existed
    prov["added_tasks"]["squad"]["settings"].update(epochs=1, seeds=[0, 1, 2])
    files.write_json(out / "provenance.json", prov)
    changes = reference_run.changes_since(reference.find(out))
    assert changes == [
        ("minutes", 40.0, now["minutes"]),
        ("squad epochs", 1, plan["epochs"]),
        ("squad seeds", [0, 1, 2], list(plan["seeds"])),
    ]
    text = reference_run.changes_text(changes)
    assert text.startswith("Made again now, the reference run would change three settings of the record:")
    assert f"squad seeds [0, 1, 2] → {list(plan['seeds'])}" in text
    with pytest.raises(ValueError, match="choose one of"):
        reference_run.changes_since(run, kind="tpu")


@pytest.mark.slow
def test_reference_run_smoke(tmp_path):
    out = tmp_path / "ref"
    p = subprocess.run(
        [sys.executable, "-m", "lab.reference_run", "--smoke", "--out", str(out)],
        env=ENV,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for name in (
        "metrics.jsonl",
        "config.json",
        "tokenizer.json",
        "vocab.txt",
        "model.fp16.safetensors",
        "finetune_results.json",
        "provenance.json",
        "fill_mask.json",
        "sst2_curve.json",
    ):
        assert (out / name).exists(), name
    prov = json.loads((out / "provenance.json").read_text())
    for key in ("command", "git_commit", "device", "wall_time_s", "corpus", "torch", "weights"):
        assert prov.get(key) is not None, key
    assert prov["corpus"]["train_checksum"] != prov["corpus"]["heldout_checksum"]
    assert prov["weights"]["megabytes"] <= 20
    assert prov["kind"] == "smoke" and prov["cpu_model"]
    config = json.loads((out / "config.json").read_text())
    # the paper's post-LN layers (the reference run's setting, over the recipe's pre-LN), no dropout
    assert config["norm_position"] == "post" and config["hidden_dropout"] == 0.0
    assert prov["settings"]["norm_position"] == "post"
    run = json.loads((out / "pretrain" / "run.json").read_text())
    assert run["recipe"]["mlm_probability"] == prov["settings"]["mlm_probability"] == 0.3
    # two segments per sequence without NSP, and sequence-length phases, as the CPU record trains
    assert run["recipe"]["segment_pairs"] and not run["recipe"]["nsp"] and len(run["recipe"]["phases"]) == 2
    assert prov["pretraining"]["phase_plan"] == run["phase_plan"]  # what its phases divided
    single = prov["pretraining"]["final_heldout_single_segment"]  # scored again on single windows
    assert 0 < single["mlm_acc"] < 1 and single != prov["pretraining"]["final_heldout"]
    assert reference.find(out).trained_pairs() and not reference.find(out).trained_nsp()
    results = json.loads((out / "finetune_results.json").read_text())
    assert set(results) == {"pretrained", "scratch", "mrpc_pretrained", "mrpc_scratch"}
    assert results["mrpc_pretrained"]["task"] == "mrpc" and len(results["mrpc_scratch"]["scores"]) == 3
    assert set(prov["other_tasks_median"]) == {"mrpc from pretrained", "mrpc from scratch"}
    assert all(len(results[k]["scores"]) == 3 for k in ("pretrained", "scratch"))
    curve = json.loads((out / "sst2_curve.json").read_text())  # one point per number of sentences
    assert [p["train_examples"] for p in curve] == [128, 256]
    assert results["pretrained"] == curve[-1]["pretrained"]
    assert [p["train_examples"] for p in prov["sst2_curve_median"]] == [128, 256]
    fills = json.loads((out / "fill_mask.json").read_text())
    assert fills["steps"] == sorted(fills["steps"]) and fills["steps"][-1] == prov["pretraining"]["steps"]
    assert len(fills["along"]) == len(fills["steps"]) >= 2  # every checkpoint and the final model
    assert all(len(a["fills"]) == len(fills["texts"]) for a in fills["along"])
    assert fills["answers"][len(fills["texts"]) - 1]  # held-out probes carry their answer
    # the held-out accuracy, re-measured from the committed fp16 weights alone, as recorded
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "bertlab",
            "evaluate",
            "--task",
            "mlm",
            "--model",
            str(out),
            "--device",
            "cpu",
            "--precision",
            "fp32",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    again = json.loads(p.stdout.strip().splitlines()[-1])
    assert abs(again["mlm_acc"] - prov["pretraining"]["final_heldout"]["mlm_acc"]) < 0.01
    from safetensors.torch import load_file

    w = load_file(str(out / "model.fp16.safetensors"))
    assert all(v.dtype == torch.float16 for v in w.values() if v.is_floating_point())
    # run again with --resume: pretraining is done and every fine-tuning stage is kept, not redone
    p = subprocess.run(
        [sys.executable, "-m", "lab.reference_run", "--smoke", "--out", str(out), "--resume"],
        env=ENV,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for stage in ("sst2_128", "sst2_256", "mrpc"):
        assert f"{stage}: finished in an earlier session, kept" in p.stdout, p.stdout[-3000:]
    assert json.loads((out / "finetune_results.json").read_text()) == results
    again = json.loads((out / "provenance.json").read_text())
    assert again["stage_times_s"]["mrpc_s"] == prov["stage_times_s"]["mrpc_s"]  # its own wall time
    kept = again["resumed"]["kept_stages"]  # what an earlier session fine-tuned, and where
    assert set(kept) == {"sst2_128", "sst2_256", "mrpc"} and kept["mrpc"]["git_commit"] == prov["git_commit"]
    assert kept["mrpc"]["machine"]["precision"] in ("fp32", "bf16")
    assert again["wall_time_s"] >= sum(k["seconds"] for k in kept.values())  # the kept stages count
    # a session that runs short ends the record with the stages done so far (here SST-2 only) ...
    p = subprocess.run(
        [sys.executable, "-m", "lab.reference_run", "--smoke", "--out", str(out), "--resume", "--ft-tasks"],
        env=ENV,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert set(json.loads((out / "finetune_results.json").read_text())) == {"pretrained", "scratch"}
    assert json.loads((out / "provenance.json").read_text())["settings"]["ft_tasks"] == []
    # ... and a later one adds the rest to it
    add = [sys.executable, "-m", "lab.reference_run", "--out", str(out), "--add", "mrpc", "--seeds", "0"]
    p = subprocess.run(
        add + ["--max-train", "16", "--max-eval", "16"], env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    added = json.loads((out / "provenance.json").read_text())
    assert (
        added["added_tasks"]["mrpc"]["settings"]["seeds"] == [0] and "mrpc from scratch" in added["other_tasks_median"]
    )
    assert len(json.loads((out / "finetune_results.json").read_text())["mrpc_pretrained"]["scores"]) == 1


def test_stored_arms_round_trip_through_reference_stored_arm():
    pre, scr = {"median": 70.0}, {"median": 60.0}
    assert reference_run.stored_arms("mrpc", pre, scr) == {"mrpc_pretrained": pre, "mrpc_scratch": scr}
    assert reference_run.stored_arms("conll2003", pre, scr) == {"conll2003": {"pretrained": pre, "scratch": scr}}
    results = {**reference_run.stored_arms("mrpc", pre, scr), **reference_run.stored_arms("conll2003", scr, pre)}
    assert reference.stored_arm(results, "mrpc", "scratch") is scr
    assert reference.stored_arm(results, "conll2003", "pretrained") is scr  # the pair, not a flat key


def _with_header(path, out, reorder):
    """A copy of a safetensors file whose header JSON is written with its keys in another order."""
    import struct

    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    header = reorder(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # safetensors pads the header to 8 bytes
    out.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])
    return out


def test_weights_digest_names_the_weights_not_the_header_order(tmp_path):
    from bertlab.files import sha256_file

    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=300))
    first = ckpt.save_model(tmp_path / "a", model) / "model.safetensors"

    def flip(header):  # the metadata's keys (and the tensors') in reverse order
        header["__metadata__"] = dict(reversed(list(header["__metadata__"].items())))
        return dict(reversed(list(header.items())))

    flipped = _with_header(first, tmp_path / "flipped.safetensors", flip)
    assert sha256_file(flipped) != sha256_file(first)  # the same weights, other bytes
    assert reference_run.weights_digest(flipped) == reference_run.weights_digest(first)
    assert ckpt.load_model(tmp_path / "a") is not None
    with torch.no_grad():
        model.bert.embeddings.norm.bias[0] += 1e-3
    other = ckpt.save_model(tmp_path / "b", model) / "model.safetensors"
    assert reference_run.weights_digest(other) != reference_run.weights_digest(first)
    (tmp_path / "short.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(ValueError, match="too short"):
        reference_run.weights_digest(tmp_path / "short.safetensors")
    (tmp_path / "lfs.safetensors").write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    with pytest.raises(ValueError, match="more than the file holds"):
        reference_run.weights_digest(tmp_path / "lfs.safetensors")
    (tmp_path / "bad.safetensors").write_bytes((4).to_bytes(8, "little") + b"{{{{")
    with pytest.raises(ValueError, match="not JSON"):
        reference_run.weights_digest(tmp_path / "bad.safetensors")
