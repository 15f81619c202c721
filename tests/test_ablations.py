"""bertlab.experiments.ablations on a miniature: every model pretrained, evaluated and fine-tuned as the plan
says, the record written and read back, nothing trained twice when it is run again, and an
incomplete record refused with the command that completes it."""

import json

import pytest

from bertlab.experiments import ablations

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def miniature(monkeypatch, tmp_path):
    from bertlab.data.corpus import load_corpus
    from bertlab.data.tokenizer import train_wordpiece

    docs = load_corpus("books", "train")[:2]
    tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=600)
    tok_file = tok.save(tmp_path / "tok") / "tokenizer.json"
    monkeypatch.setattr(
        ablations,
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
    monkeypatch.setattr(ablations, "MODELS", models)
    monkeypatch.setattr(
        ablations,
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
    rec = ablations.record(out, work, steps=4, tokenizer=tok_file, compile=False, precision="fp32")
    saved = ablations.load(out)
    assert saved["models"].keys() == ablations.MODELS.keys() and saved["pretraining"]["steps"] == 4
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

    monkeypatch.setattr("bertlab.training.pretrain.pretrain", refuse)
    monkeypatch.setattr("bertlab.training.finetune.finetune", refuse)
    again = ablations.record(out, work, steps=4, tokenizer=tok_file, compile=False, precision="fp32")
    assert again["models"] == saved["models"] and again["scratch"] == saved["scratch"]


def test_incomplete_or_missing_record(tmp_path, monkeypatch):
    assert ablations.load(tmp_path) is None
    (tmp_path / "ablations.json").write_text(json.dumps({"models": {"MLM, no NSP": {}}}))
    with pytest.raises(ValueError, match="incomplete.*record_ablations.py"):
        ablations.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="no vocabulary"):
        ablations.record(tmp_path, tmp_path / "w", tokenizer=tmp_path / "missing.json")


def test_nsp_accuracy_is_the_last_evaluation_of_the_nsp_model():
    rec = {
        "models": {
            "MLM + NSP": {
                "steps": 1500,
                "tokens": 12_288_000,
                "curve": [{"step": 250, "nsp_acc": 0.74}, {"step": 1500, "nsp_acc": 0.838}],
            },
            "MLM, no NSP": {"steps": 1500, "tokens": 12_288_000, "curve": [{"step": 1500, "mlm_acc": 0.25}]},
        }
    }
    assert ablations.nsp_accuracy(rec) == {"nsp_acc": 0.838, "step": 1500, "tokens": 12_288_000}
    assert ablations.nsp_accuracy(rec, "MLM, no NSP") is None
    with pytest.raises(KeyError, match="no model 'LTR'"):
        ablations.nsp_accuracy(rec, "LTR")
    recorded = ablations.load()
    if recorded is not None:  # the book's record: the NSP model learned its task
        assert 0.5 < ablations.nsp_accuracy(recorded)["nsp_acc"] <= 1.0
