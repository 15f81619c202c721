"""lab.ablations: making the ablation record (pretraining, scoring and fine-tuning each model of
the plan, resuming, merging parts) with miniature models; reading it is test_ablations_reading.py."""

import json

import pytest

from lab import ablations as making
from lab import ablations_reading as ablations

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def miniature(monkeypatch, tmp_path):
    from bertlab.data.corpus import load_corpus
    from bertlab.data.tokenizer import train_wordpiece

    docs = load_corpus("books", "train")[:2]
    tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=600)
    tok_file = tok.save(tmp_path / "tok") / "tokenizer.json"
    monkeypatch.setattr(
        making,
        "PRETRAIN",
        dict(
            corpus="books",
            max_documents=2,
            recipe="cpu",
            seq_len=32,
            batch_size=8,
            seed=0,
            eval_every=2,
            eval_batches=2,
            log_every=1,
            checkpoint_every=2,
            keep_last=2,
            device="cpu",
        ),
    )
    models = {
        "MLM + NSP": dict(preset="tiny", nsp=True),
        "MLM, no NSP": dict(preset="tiny", nsp=False),
        "LTR, no NSP": dict(preset="tiny", nsp=False, objective="ltr"),
    }
    monkeypatch.setattr(making, "SETTINGS", models)
    monkeypatch.setattr(ablations, "MODELS", tuple(models))  # what the reader expects in a record
    monkeypatch.setattr(
        making,
        "FINETUNE_TASKS",
        {
            "sst2": dict(
                max_train_examples=48,
                max_eval_examples=40,
                epochs=1,
                models=("MLM, no NSP", "LTR, no NSP", ablations.SCRATCH),
            ),
            "mrpc": dict(max_train_examples=24, max_eval_examples=24, epochs=1, models=("MLM + NSP",)),
        },
    )
    return tok_file, tmp_path


def test_record_trains_scores_and_resumes(miniature, monkeypatch):
    tok_file, tmp = miniature
    out, work = tmp / "record", tmp / "runs"
    rec = making.record(out, work, steps=4, tokenizer=tok_file, compile=False, precision="fp32")
    saved = ablations.load(out)
    assert saved["models"].keys() == set(ablations.MODELS) and saved["pretraining"]["steps"] == 4
    for name, m in saved["models"].items():
        assert m["steps"] == 4 and m["tokens"] == 4 * 8 * 32 and m["parameters"] > m["encoder_parameters"] > 0
        key = "next_token_acc" if name.startswith("LTR") else "mlm_acc"
        assert 0.0 <= m["heldout"][key] <= 1.0, m["heldout"]
    assert (work / "ltr-no-nsp" / "final" / "config.json").exists()
    assert json.loads((work / "ltr-no-nsp" / "final" / "config.json").read_text())["causal"] is True
    assert saved["models"]["MLM + NSP"]["finetune"]["mrpc"]["metric"] == "f1"
    sst2 = saved["models"]["MLM, no NSP"]["finetune"]["sst2"]
    assert len(sst2["scores"]) == 3 and min(sst2["scores"]) <= sst2["median"] <= max(sst2["scores"])
    assert "sst2" in saved["scratch"] and "mrpc" not in saved["models"]["MLM, no NSP"]["finetune"]
    assert ablations.gap(saved, "sst2", "MLM, no NSP", ablations.SCRATCH) == pytest.approx(
        sst2["median"] - saved["scratch"]["sst2"]["median"]
    )
    assert rec == saved

    # run again: nothing is trained or fine-tuned twice
    def refuse(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(making, "pretrain", refuse)
    monkeypatch.setattr(making, "finetune", refuse)
    again = making.record(out, work, steps=4, tokenizer=tok_file, compile=False, precision="fp32")
    assert again["models"] == saved["models"] and again["scratch"] == saved["scratch"]


def test_parts_made_side_by_side_merge_into_one_record(miniature):
    tok_file, tmp = miniature
    kw = dict(steps=4, tokenizer=tok_file, compile=False, precision="fp32")
    a = making.record(tmp / "a", tmp / "runs", only=("MLM, no NSP",), **kw)
    b = making.record(tmp / "b", tmp / "runs", only=("LTR, no NSP", "MLM + NSP"), scratch=False, **kw)
    assert "sst2" in a["scratch"] and b["scratch"] == {}
    merged = making.merge([a, b])
    assert merged["models"].keys() == set(ablations.MODELS) and merged["scratch"] == a["scratch"]
    assert merged["models"]["LTR, no NSP"] == b["models"]["LTR, no NSP"]
    with pytest.raises(ValueError, match="MLM, no NSP in more than one part"):
        making.merge([a, a])
    with pytest.raises(ValueError, match="other pretraining settings"):
        making.merge([a, {**b, "pretraining": {**b["pretraining"], "steps": 5}}])


def test_record_ablations_merges_parts_from_the_command_line(tmp_path):
    import subprocess
    import sys

    plan = {"pretraining": {"steps": 4}, "finetuning": {"lr": 5e-4}, "machine": {"device": "x"}}
    parts = {
        "a": {**plan, "models": {"MLM, no NSP": {"steps": 4}}, "scratch": {"sst2": {"median": 50.0}}},
        "b": {**plan, "models": {"LTR, no NSP": {"steps": 4}}, "scratch": {}},
    }
    for name, part in parts.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "ablations.json").write_text(json.dumps(part))
    from pathlib import Path

    script = [
        sys.executable,
        str(Path(__file__).parents[2] / "scripts" / "record_ablations.py"),
        "--out",
        str(tmp_path / "m"),
        "--merge",
    ]
    done = subprocess.run(script + [str(tmp_path / "a"), str(tmp_path / "b")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    merged = json.loads((tmp_path / "m" / "ablations.json").read_text())
    assert merged["models"].keys() == {"MLM, no NSP", "LTR, no NSP"} and merged["scratch"] == parts["a"]["scratch"]
    missing = subprocess.run(script + [str(tmp_path / "c")], capture_output=True, text=True)
    assert missing.returncode != 0 and "c/ablations.json does not exist: run that part first" in missing.stderr


def test_a_missing_vocabulary_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no vocabulary"):
        making.record(tmp_path, tmp_path / "w", tokenizer=tmp_path / "missing.json")
