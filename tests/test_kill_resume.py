"""SIGKILL at random moments (some inside checkpoint writes), --resume, and the run still ends with
no corrupt checkpoint and exactly the weights of an uninterrupted run: scripts/kill_resume_check.py
at a small count (the full check: `python scripts/kill_resume_check.py --kills 25`)."""

import shutil
from pathlib import Path

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab import checkpoint as ckpt


@pytest.fixture(scope="module")
def krc(load_script):
    return load_script("scripts/kill_resume_check.py")


@pytest.mark.slow
def test_killed_and_resumed_run_ends_like_an_uninterrupted_one(krc, mirror, tmp_path):
    settings = krc.Settings(kills=3, steps=12, seed=1, write_share=0.67, startup_share=0.0, timeout=400, verbose=False)
    summary = krc.run_check(settings, tmp_path / "kr")
    assert summary.get("error") is None, summary.get("error")
    assert summary["kills"] >= 3 and summary["resumes"] >= 2, summary
    assert summary["corrupt_checkpoints"] == 0, summary["corrupt"]
    assert not summary["problems"], summary["problems"]
    assert summary["identical"] and summary["max_abs_diff"] == 0.0, summary
    assert summary["state_identical"] and summary["losses_identical"], summary
    assert summary["ok"]


def test_the_checks_catch_corruption_and_different_weights(krc, tmp_path):
    """The check is not vacuous: a changed weight, a truncated or missing file are all caught."""
    torch.manual_seed(0)
    model = BertForPreTraining(
        BertConfig(
            vocab_size=50, num_layers=1, hidden_size=16, num_heads=2, intermediate_size=32, max_position_embeddings=16
        )
    )
    opt = torch.optim.AdamW(model.parameters())

    def state(step):
        return {
            "optimizer": opt.state_dict(),
            "rng": ckpt.rng_state(),
            "data": {"i": step},
            "trainer": {"step": step},
            "run": {},
        }

    root = tmp_path / "checkpoints"
    for step in (1, 2, 3):
        ckpt.save_checkpoint(root, step, model, state(step), keep_last=2)
    keys = set(model.state_dict())
    v = krc.verify_checkpoints(root, keys)
    assert v["steps"] == [2, 3] and v["latest"] == 3 and not v["corrupt"] and v["latest_ok"]

    a, b = root / "step-0000002" / "model.safetensors", root / "step-0000003" / "model.safetensors"
    assert krc.compare_weights(a, b)["identical"]
    with torch.no_grad():
        model.bert.embeddings.token.weight[3, 5] += 1e-6
    ckpt.save_checkpoint(root, 4, model, state(4))  # no pruning: step 2 stays to compare with
    w = krc.compare_weights(a, root / "step-0000004" / "model.safetensors")
    assert not w["identical"] and 0 < w["max_abs_diff"] < 1e-5 and w["differ"] == ["bert.embeddings.token.weight"]
    assert not krc.compare_states(root / "step-0000003", root / "step-0000004")["identical"]  # data position

    # a truncated weights file in the newest checkpoint (what a non-atomic write would leave)
    newest = root / "step-0000004" / "model.safetensors"
    newest.write_bytes(newest.read_bytes()[:1000])
    v = krc.verify_checkpoints(root, keys)
    assert [n for n, _ in v["corrupt"]] == ["step-0000004"] and not v["latest_ok"]
    # a half-deleted older one
    (root / "step-0000003" / "state.json").unlink()
    v = krc.verify_checkpoints(root, keys)
    assert [n for n, _ in v["corrupt"]] == ["step-0000003", "step-0000004"]
    # and a checkpoint of the wrong step
    shutil.copytree(root / "step-0000002", root / "step-0000005")
    with pytest.raises(krc.CorruptCheckpoint, match="says step 2"):
        krc.check_checkpoint(root / "step-0000005", keys)


def test_pruning_never_lists_a_half_deleted_checkpoint(tmp_path, monkeypatch):
    """A crash while an old checkpoint is being deleted (simulated: deleting stops after the first
    file) must not leave a `step-*` folder that list_checkpoints reports but that does not load."""
    torch.manual_seed(0)
    model = BertForPreTraining(
        BertConfig(
            vocab_size=50, num_layers=1, hidden_size=16, num_heads=2, intermediate_size=32, max_position_embeddings=16
        )
    )
    root = tmp_path / "checkpoints"
    for step in (1, 2):
        ckpt.save_checkpoint(root, step, model, {"x": step}, keep_last=2)

    real_rmtree = ckpt.shutil.rmtree

    def crash_after_one_file(path, *a, **k):
        path = Path(path)
        if not path.is_dir() or path.name.startswith(".tmp-"):
            return real_rmtree(path, *a, **k)
        sorted(path.iterdir())[0].unlink()
        raise KeyboardInterrupt("killed while deleting")

    monkeypatch.setattr(ckpt.shutil, "rmtree", crash_after_one_file)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save_checkpoint(root, 3, model, {"x": 3}, keep_last=2)
    monkeypatch.undo()
    for p in ckpt.list_checkpoints(root):
        ckpt.load_checkpoint(p)  # every listed checkpoint is whole
    assert [p.name for p in ckpt.list_checkpoints(root)] == ["step-0000002", "step-0000003"]
    ckpt.save_checkpoint(root, 4, model, {"x": 4}, keep_last=2)
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["step-0000003", "step-0000004"]
