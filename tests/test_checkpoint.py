"""Checkpoints: no pickle, exact round trips (weights, AdamW, RNG), atomic writes, pruning, and
loading a pretraining checkpoint into a fine-tuning model."""

import json
import random

import numpy as np
import pytest
import torch

from bertlab import BertConfig, BertForPreTraining, BertForSequenceClassification
from bertlab import checkpoint as ckpt


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return BertForPreTraining(BertConfig.preset("tiny", vocab_size=300))


def train_a_bit(model, opt, steps=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        ids = torch.randint(5, 300, (4, 16), generator=g)
        out = model(ids, mlm_labels=ids, nsp_labels=torch.zeros(4, dtype=torch.long))
        out.loss.backward()
        opt.step()
        opt.zero_grad()


def test_encode_decode_round_trip_without_pickle():
    state = {
        "a": torch.arange(5.0),
        "nested": {"t": (1, 2.5, "x", None, True), "arr": np.arange(3, dtype=np.uint32)},
        "by_int": {0: {"step": torch.tensor(3.0)}, 7: {"m": torch.ones(2, 2)}},
        "list": [1, torch.zeros(1)],
    }
    value, tensors = ckpt.encode_state(state)
    json.dumps(value)  # the non-tensor part is plain JSON
    back = ckpt.decode_state(json.loads(json.dumps(value)), tensors)
    assert torch.equal(back["a"], state["a"]) and back["nested"]["t"] == (1, 2.5, "x", None, True)
    assert back["nested"]["arr"].dtype == np.uint32 and back["nested"]["arr"].tolist() == [0, 1, 2]
    assert set(back["by_int"]) == {0, 7} and torch.equal(back["by_int"][7]["m"], torch.ones(2, 2))
    with pytest.raises(TypeError, match="cannot store"):
        ckpt.encode_state({"f": lambda: 0})


def test_training_state_round_trip_is_exact(tmp_path):
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_a_bit(model, opt)
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    path = ckpt.save_checkpoint(
        tmp_path / "ck",
        3,
        model,
        {"optimizer": opt.state_dict(), "rng": ckpt.rng_state(), "data": {"epoch": 1, "index": 9}},
    )
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json",
        "model.safetensors",
        "state.json",
        "state.safetensors",
    ]
    # the reference: continue directly
    expect_draws = (random.random(), np.random.rand(), torch.rand(2))
    train_a_bit(model, opt, seed=1)
    expected = {k: v.clone() for k, v in model.state_dict().items()}

    # the same from the checkpoint, in a fresh model and optimizer
    c = ckpt.load_checkpoint(path)
    assert c.step == 3 and c.state["data"] == {"epoch": 1, "index": 9}
    m2 = BertForPreTraining(c.config)
    m2.load_state_dict(c.model_state)
    opt2 = torch.optim.AdamW(m2.parameters(), lr=1e-3)
    opt2.load_state_dict(c.state["optimizer"])
    ckpt.set_rng_state(c.state["rng"])
    draws = (random.random(), np.random.rand(), torch.rand(2))
    assert draws[0] == expect_draws[0] and draws[1] == expect_draws[1] and torch.equal(draws[2], expect_draws[2])
    train_a_bit(m2, opt2, seed=1)
    for k, v in m2.state_dict().items():
        assert torch.equal(v, expected[k]), k


def test_writes_are_atomic_and_pruned(tmp_path, monkeypatch):
    model = tiny_model()
    root = tmp_path / "ck"
    for step in (1, 2, 3):
        ckpt.save_checkpoint(root, step, model, {"x": step}, keep_last=2)
    assert [p.name for p in ckpt.list_checkpoints(root)] == ["step-0000002", "step-0000003"]

    # a crash in the middle of writing step 4 leaves no step-4 folder and step 3 intact
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(ckpt, "save_file", boom)
    with pytest.raises(OSError):
        ckpt.save_checkpoint(root, 4, model, {"x": 4}, keep_last=2)
    monkeypatch.undo()
    assert ckpt.latest_checkpoint(root).name == "step-0000003"
    assert ckpt.load_checkpoint(ckpt.latest_checkpoint(root)).state == {"x": 3}
    assert any(p.name.startswith(".tmp-step-0000004") for p in root.iterdir())  # the debris, ignored
    # re-saving an existing step replaces it whole
    ckpt.save_checkpoint(root, 3, model, {"x": 33}, keep_last=2)
    assert ckpt.load_checkpoint(root / "step-0000003").state == {"x": 33}
    with pytest.raises(FileNotFoundError, match="state.json"):
        (root / "step-0000003" / "state.json").unlink()
        ckpt.load_checkpoint(root / "step-0000003")


def test_pretraining_checkpoint_loads_into_a_task_model(tmp_path):
    model = tiny_model()
    ckpt.save_model(tmp_path / "m", model)
    clf = ckpt.load_model(tmp_path / "m", BertForSequenceClassification, num_labels=3)
    for k, v in model.bert.state_dict().items():
        assert torch.equal(clf.bert.state_dict()[k], v), k
    assert clf.classifier.weight.shape == (3, 128)
    # the class is recorded, so the folder reloads as what it was
    assert type(ckpt.load_model(tmp_path / "m")) is BertForPreTraining
    # fp16 export: half the bytes, same values to fp16 precision
    ckpt.save_model(tmp_path / "h", model, dtype=torch.float16)
    full = (tmp_path / "m" / "model.safetensors").stat().st_size
    half = (tmp_path / "h" / "model.safetensors").stat().st_size
    assert half < 0.55 * full
    back = ckpt.load_model(tmp_path / "h", BertForPreTraining)
    w = model.bert.embeddings.token.weight
    assert back.bert.embeddings.token.weight.dtype == torch.float32
    assert torch.allclose(back.bert.embeddings.token.weight, w, atol=1e-3)
    # weights of another shape are an error, not a silent partial load
    other = BertForPreTraining(BertConfig(vocab_size=300, num_layers=3, hidden_size=128, num_heads=2))
    ckpt.save_model(tmp_path / "o", other)
    cfg = json.loads((tmp_path / "o" / "config.json").read_text())
    cfg["num_layers"] = 2
    (tmp_path / "o" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="do not fit"):
        ckpt.load_model(tmp_path / "o", BertForPreTraining)
    with pytest.raises(FileNotFoundError, match="not a bertlab model folder"):
        ckpt.load_model(tmp_path, BertForPreTraining)


def test_check_compatible_names_the_differences():
    ckpt.check_compatible({"a": 1, "b": 2}, {"a": 1, "b": 2}, "x")
    with pytest.raises(ValueError, match=r"b: checkpoint has 2, this run has 3"):
        ckpt.check_compatible({"a": 1, "b": 2}, {"a": 1, "b": 3}, "x")
