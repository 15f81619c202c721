"""bertlab.reference: finding, describing and loading the recorded reference run."""

from __future__ import annotations

import json

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining, BertForSequenceClassification
from bertlab import checkpoint as ckpt
from bertlab import reference


@pytest.fixture
def record(tmp_path, bert_tokenizer):
    """A reference-run folder as reference_run writes it, for a tiny random model."""
    torch.manual_seed(0)
    cfg = BertConfig.preset("tiny", vocab_size=bert_tokenizer.vocab_size)
    model = BertForPreTraining(cfg).eval()
    out = tmp_path / "reference_run"
    saved = ckpt.save_model(tmp_path / "fp16", model, dtype=torch.float16)
    out.mkdir()
    (saved / "model.safetensors").rename(out / reference.WEIGHTS)
    (saved / "config.json").rename(out / "config.json")
    bert_tokenizer.save(tmp_path / "tok")
    (tmp_path / "tok" / "tokenizer.json").rename(out / "tokenizer.json")
    ckpt.write_json(out / "provenance.json", {
        "device": "NVIDIA H100 80GB HBM3", "git_commit": "0123456789abcdef", "wall_time_s": 840.0,
        "smoke": False, "weights": {"sha256": ckpt.file_sha256(out / reference.WEIGHTS)}})
    (out / "metrics.jsonl").write_text('{"step": 50, "loss": 7.5}\n{"step": 100, "loss": 6.0}\n')
    return out, model


def test_find_loads_the_recorded_weights(record, tmp_path, monkeypatch):
    out, model = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = reference.find(out)
    assert run is not None and not run.smoke
    label = run.label()
    assert "RECORDED" in label and "H100" in label and "0123456789" in label and "14.0 min" in label
    assert [m["step"] for m in run.metrics()] == [50, 100]
    loaded = run.load()
    ids = torch.randint(5, 1000, (2, 12))
    with torch.no_grad():
        want = model.half().float()(ids).mlm_logits  # the same weights rounded through fp16
        got = loaded(ids).mlm_logits
    assert torch.allclose(got, want, atol=1e-4)
    # a fine-tuning class takes the encoder and a fresh task layer
    clf = run.load(BertForSequenceClassification, num_labels=2)
    assert torch.equal(clf.bert.embeddings.token.weight, loaded.bert.embeddings.token.weight)
    folder = run.model_folder()
    assert folder == run.model_folder()  # written once, reused
    assert json.loads((folder / "config.json").read_text())["num_layers"] == loaded.config.num_layers


def test_env_var_and_missing_record(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv(reference.ENV_VAR, str(out))
    assert reference.find().path == out.resolve()
    monkeypatch.setenv(reference.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="no reference run at"):
        reference.find()
    monkeypatch.delenv(reference.ENV_VAR)
    monkeypatch.setattr(reference, "_default_places", lambda: [tmp_path / "nowhere"])
    assert reference.find() is None
    assert "Pending" in reference.pending("the curves") and "the curves" in reference.pending("the curves")


def test_incomplete_and_corrupt_records_are_named(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (out / "tokenizer.json").unlink()
    with pytest.raises(reference.IncompleteReferenceRun, match="tokenizer.json"):
        reference.find(out)


def test_corrupt_weights_are_detected(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = bytearray((out / reference.WEIGHTS).read_bytes())
    data[-10] ^= 0xFF
    (out / reference.WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt"):
        reference.find(out).load()


def test_stand_in_without_a_record(tmp_path, monkeypatch):
    monkeypatch.delenv(reference.ENV_VAR, raising=False)
    monkeypatch.setattr(reference, "_default_places", lambda: [tmp_path / "nowhere"])
    enc = reference.pretrained_encoder()
    assert not enc.is_reference and enc.name == "all-MiniLM-L6-v2"
    assert (enc.folder / "config.json").exists()
    assert enc.tokenizer().vocab_size == 30522
