"""The pretraining loop on real text (two books of the mirror, a tiny model, a few steps):
exact resume, NaN detection, time budgets, metrics, checks of bad settings."""

import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab import checkpoint as ckpt
from bertlab.runtime import make_runtime, resolve_precision, seed_everything
from bertlab.training.logs import plot_metrics, read_metrics
from bertlab.training.optim import parameter_groups
from bertlab.training.pretrain import NonFiniteLossError, PretrainConfig, Trainer, build_model, prepare_data, pretrain
from bertlab.training.recipes import RECIPES, get_recipe, lr_multiplier

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory):
    from bertlab.data.corpus import load_corpus
    from bertlab.data.tokenizer import train_wordpiece

    docs = load_corpus("books", "train")[:2]
    tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=1000)
    return str(tok.save(tmp_path_factory.mktemp("tok")) / "tokenizer.json")


def tiny(out, tokenizer_file, **kw):
    base = dict(
        preset="tiny",
        corpus="books",
        max_documents=2,
        tokenizer=tokenizer_file,
        seq_len=32,
        batch_size=8,
        steps=8,
        lr=1e-3,
        warmup=0.25,
        log_every=1,
        eval_every=4,
        eval_batches=2,
        checkpoint_every=4,
        out=str(out),
        progress=False,
        device="cpu",
        precision="fp32",
    )
    base.update(kw)
    return PretrainConfig(**base)


def params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_resume_is_bit_identical(tmp_path, tokenizer_file, monkeypatch):
    # each session records the code it ran; a fixed one here, so that a commit made while this runs
    # in a working checkout cannot fail the test
    monkeypatch.setattr("bertlab.training.pretrain.git_commit", lambda: "code-of-the-resume")
    straight = pretrain(tiny(tmp_path / "a", tokenizer_file))
    assert straight.step == 8 and straight.stopped_by is None
    first = pretrain(tiny(tmp_path / "b", tokenizer_file, stop_after=4))
    assert first.stopped_by == "stop_after" and first.step == 4
    assert [p.name for p in ckpt.list_checkpoints(tmp_path / "b" / "checkpoints")] == ["step-0000004"]
    started = json.loads((tmp_path / "b" / "run.json").read_text())
    started["git_commit"] = "code-of-the-first-session"  # run.json as an earlier commit wrote it
    (tmp_path / "b" / "run.json").write_text(json.dumps(started))
    resumed = pretrain(tiny(tmp_path / "b", tokenizer_file, resume=True))
    assert resumed.step == 8
    run = json.loads((tmp_path / "b" / "run.json").read_text())  # the pretraining's code, then the resume's
    assert run["git_commit"] == "code-of-the-first-session" and run["runtime"] == started["runtime"]
    assert [r["git_commit"] for r in run["resumed_with"]] == ["code-of-the-resume"]

    a, b = params(straight.model), params(resumed.model)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), f"{k} differs after resume"
    # the logged losses, step by step (train and held-out), are the same numbers
    la = read_metrics(tmp_path / "a" / "metrics.jsonl")
    lb = read_metrics(tmp_path / "b" / "metrics.jsonl")
    key = lambda r: (r["split"], r["step"], r["loss"], r["mlm_acc"])  # noqa: E731
    assert [key(r) for r in la] == [key(r) for r in lb]
    assert [r["step"] for r in la if r["split"] == "train"] == list(range(1, 9))
    # and it really trained: the loss went down from the ~log(V) of a random model
    train = [r["loss"] for r in la if r["split"] == "train"]
    assert train[0] > 6.0 and train[-1] < train[0] - 0.2

    # Settings that cannot continue this run are refused with the differences named.
    with pytest.raises(ValueError, match="model_config"):
        pretrain(tiny(tmp_path / "b", tokenizer_file, resume=True, preset="mini"))
    with pytest.raises(ValueError, match="steps"):
        pretrain(tiny(tmp_path / "b", tokenizer_file, resume=True, steps=12))
    from bertlab.data.corpus import load_corpus
    from bertlab.data.tokenizer import train_wordpiece

    docs = load_corpus("books", "train")[2:4]
    other = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=1000)
    other_file = str(other.save(tmp_path / "other") / "tokenizer.json")
    with pytest.raises(ValueError, match="different vocabulary"):
        pretrain(tiny(tmp_path / "b", other_file, resume=True))
    # nothing was overwritten by the refused attempts
    assert ckpt.load_checkpoint(ckpt.latest_checkpoint(tmp_path / "b" / "checkpoints")).step == 8
    assert (tmp_path / "b" / "tokenizer" / "tokenizer.json").read_text() == Path(tokenizer_file).read_text()


def test_nan_is_detected_with_its_step_and_nothing_bad_is_saved(tmp_path, tokenizer_file):
    cfg = tiny(tmp_path / "n", tokenizer_file, steps=6, checkpoint_every=2, eval_every=100)
    rt = make_runtime("cpu", "fp32", distributed=False)
    data = prepare_data(cfg, rt)
    model = build_model(cfg, data.tokenizer.vocab_size)
    calls = {"n": 0}

    def poison(module, inputs, output):  # the 3rd training forward pass produces NaN
        calls["n"] += 1
        return output * float("nan") if calls["n"] == 3 else output

    model.bert.embeddings.register_forward_hook(poison)
    trainer = Trainer(cfg, model, data.train, data.eval_batches, rt, data.tokenizer.fingerprint, data.tokenizer_file)
    with pytest.raises(NonFiniteLossError, match="step 3") as err:
        trainer.run()
    assert err.value.step == 3
    saved = ckpt.list_checkpoints(tmp_path / "n" / "checkpoints")
    assert [p.name for p in saved] == ["step-0000002"]
    weights = ckpt.load_checkpoint(saved[0]).model_state
    assert all(torch.isfinite(v).all() for v in weights.values())
    lines = read_metrics(tmp_path / "n" / "metrics.jsonl")
    assert [r["step"] for r in lines] == [1, 2]  # the poisoned step was never logged as a number


def test_time_budget_sets_the_schedule(tmp_path, tokenizer_file):
    budget_min = 0.12
    r = pretrain(
        tiny(
            tmp_path / "t",
            tokenizer_file,
            steps=None,
            minutes=budget_min,
            warmup=0.1,
            log_every=5,
            eval_every=10_000,
            checkpoint_every=10_000,
        )
    )
    assert r.stopped_by is None and r.step >= 5
    assert r.elapsed_s < budget_min * 60 + 20
    lrs = [h["lr"] for h in r.train_history]
    peak = max(lrs)
    assert peak <= 1e-3 + 1e-12 and lrs[-1] < 0.35 * peak  # decayed towards 0 at the end of the budget
    assert (tmp_path / "t" / "final" / "model.safetensors").exists()


def test_metrics_lines_and_plot(tmp_path, tokenizer_file):
    r = pretrain(tiny(tmp_path / "m", tokenizer_file, steps=4, nsp=True, whole_word=True))
    rows = read_metrics(tmp_path / "m" / "metrics.jsonl", split="train")
    assert len(rows) == 4
    for key in (
        "step",
        "loss",
        "mlm_loss",
        "nsp_loss",
        "mlm_acc",
        "nsp_acc",
        "lr",
        "tokens_per_s",
        "mfu",
        "elapsed_s",
        "grad_norm",
    ):
        assert key in rows[0], key
    assert rows[0]["mfu"] is None  # a CPU has no known peak
    assert math.isclose(rows[0]["loss"], rows[0]["mlm_loss"] + rows[0]["nsp_loss"], rel_tol=1e-9)
    assert 0.0 <= rows[-1]["nsp_acc"] <= 1.0
    evals = read_metrics(tmp_path / "m" / "metrics.jsonl", split="eval")
    assert [e["step"] for e in evals] == [4] and "nsp_acc" in evals[0]
    assert r.final_eval == {k: evals[0][k] for k in r.final_eval}
    run = json.loads((tmp_path / "m" / "run.json").read_text())
    assert run["model_config"]["num_layers"] == 2 and run["recipe"]["nsp"] is True

    import matplotlib

    matplotlib.use("Agg")
    fig = plot_metrics(tmp_path / "m" / "metrics.jsonl")
    axes = fig.axes
    assert len(axes) == 4 and all(ax.lines for ax in axes)  # loss, MLM acc, NSP acc, tokens/s
    assert list(axes[0].lines[0].get_xdata()) == [1, 2, 3, 4]


def test_plot_metrics_draws_only_what_was_logged():
    import matplotlib

    matplotlib.use("Agg")
    mlm = [
        {"step": s, "split": "train", "loss": 7.0 - s, "mlm_acc": 0.1 * s, "tokens_per_s": 1e4, "tokens": 512 * s}
        for s in (1, 2, 3)
    ] + [{"step": 3, "split": "eval", "loss": 4.5, "mlm_acc": 0.25}]
    fig = plot_metrics(mlm, x="tokens")
    assert [ax.get_title() for ax in fig.axes] == ["loss", "MLM accuracy", "tokens / s"]  # no empty NSP panel
    held = fig.axes[1].lines[1]
    assert list(held.get_xdata()) == [1536] and list(held.get_ydata()) == [0.25]  # eval placed at its tokens
    ltr = [{"step": 1, "split": "train", "loss": 6.0, "next_token_acc": 0.2, "tokens_per_s": 1e4}]
    assert [ax.get_title() for ax in plot_metrics(ltr).axes] == ["loss", "next-token accuracy", "tokens / s"]
    import matplotlib.pyplot as plt

    _, axes = plt.subplots(1, 4)
    plot_metrics(ltr, axes=axes)
    assert [ax.get_visible() for ax in axes] == [True, True, True, False]  # a spare axis is hidden


@pytest.mark.slow
def test_compiled_objective_matches_eager(tmp_path, tokenizer_file):
    # torch.compile's graph capture of the objective (aot_eager: no C++ build, fast on a CPU)
    eager = pretrain(tiny(tmp_path / "e", tokenizer_file, steps=8, stop_after=3))
    comp = pretrain(
        tiny(tmp_path / "c", tokenizer_file, steps=8, stop_after=3, compile=True, compile_backend="aot_eager")
    )
    le = [h["loss"] for h in eager.train_history]
    lc = [h["loss"] for h in comp.train_history]
    assert len(le) == len(lc) == 3
    assert all(math.isclose(x, y, rel_tol=1e-4) for x, y in zip(le, lc)), (le, lc)


def test_corpus_too_small_is_a_clear_error(tmp_path, tokenizer_file):
    with pytest.raises(ValueError, match="corpus too small"):
        pretrain(tiny(tmp_path / "s", tokenizer_file, max_documents=1, seq_len=512, batch_size=4096))


def test_bad_settings_are_refused(tmp_path, tokenizer_file):
    with pytest.raises(ValueError, match="not both"):
        tiny(tmp_path, tokenizer_file, steps=5, minutes=1.0).validate()
    with pytest.raises(ValueError, match="fraction"):
        tiny(tmp_path, tokenizer_file, steps=None, minutes=1.0, recipe="paper", warmup=None).validate()
    with pytest.raises(ValueError, match="unknown preset"):
        tiny(tmp_path, tokenizer_file, preset="huge").validate()
    with pytest.raises(ValueError, match="512"):
        tiny(tmp_path, tokenizer_file, seq_len=1024).validate()
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        resolve_precision("fp16", torch.device("cpu"))
    assert make_runtime("cpu", "auto", distributed=False).fused_adamw  # PyTorch has a CPU kernel
    assert not make_runtime("cpu", "auto", fused_adamw=False, distributed=False).fused_adamw


def test_cpu_recipe_starts_pre_ln_with_the_unigram_bias(tmp_path, tokenizer_file):
    from bertlab.data.pretraining_data import PretrainingDataset, unigram_log_probs
    from bertlab.data.tokenizer import WordPieceTokenizer

    r = pretrain(tiny(tmp_path / "c", tokenizer_file, recipe="cpu", steps=1, lr=1e-12, warmup=0.0))
    model = r.model
    assert model.config.norm_position == "pre" and model.bert.final_norm is not None
    assert model.config.hidden_dropout == 0.0 and not r.history[0].get("nsp_loss")
    tok = WordPieceTokenizer.load(tokenizer_file)
    ds = PretrainingDataset(next((tmp_path / "c" / "data" / "train").glob("examples_*")), tok)
    prior = unigram_log_probs(ds, tok.vocab_size, exclude=[tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id])
    torch.testing.assert_close(model.mlm.bias.detach(), prior, atol=1e-6, rtol=0)  # lr ~ 0: unchanged
    # a model that knows only frequencies: the first loss is near the unigram entropy, far below log V
    entropy = -(prior[prior > -1e4].exp() * prior[prior > -1e4]).sum().item()
    first = r.history[0]["mlm_loss"]
    assert abs(first - entropy) < 1.0 < math.log(tok.vocab_size) - first
    # the bias comes from the training data: a custom batch source has none to count
    with pytest.raises(ValueError, match="mlm_bias='unigram' needs the token frequencies"):
        pretrain(tiny(tmp_path / "d", tokenizer_file, recipe="cpu"), source=iter([]), tokenizer=tok)


def test_weight_decay_skips_biases_and_layernorm():
    from bertlab import BertConfig, BertForPreTraining

    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=500))
    decay, plain = parameter_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    plain_names = {names[id(p)] for p in plain["params"]}
    decay_names = {names[id(p)] for p in decay["params"]}
    assert "bert.embeddings.norm.weight" in plain_names and "mlm.bias" in plain_names
    assert "bert.layers.0.attention.qkv.bias" in plain_names
    assert "bert.layers.0.attention.qkv.weight" in decay_names and "bert.embeddings.token.weight" in decay_names
    assert all("norm" not in n and not n.endswith("bias") for n in decay_names)
    assert len(plain_names) + len(decay_names) == len(list(model.parameters()))


def test_adamw_is_fused_on_a_cpu_and_makes_the_same_updates():
    from bertlab import BertConfig, BertForPreTraining
    from bertlab.training.optim import adamw

    def trained(fused):
        torch.manual_seed(0)
        model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=500))
        opt = adamw(model, 1e-3, fused=fused)
        g = torch.Generator().manual_seed(1)
        for _ in range(4):
            for p in model.parameters():
                p.grad = torch.randn(p.shape, generator=g)
            opt.step()
        return opt, torch.cat([p.detach().flatten() for p in model.parameters()])

    opt, fused = trained(None)
    assert opt.defaults["fused"] is True  # the default on a CPU
    plain_opt, plain = trained(False)
    assert not plain_opt.defaults["fused"]
    moved = (fused - trained(None)[1]).abs().max()
    assert moved == 0  # deterministic
    assert torch.allclose(fused, plain, rtol=0, atol=1e-6)


def test_learning_rate_schedule():
    T, warm = 100, 0.1
    m = [lr_multiplier(s, T, warm) for s in range(T)]
    assert 0 < m[0] < 0.2 and m[9] == 1.0  # rises over 10 updates, first update not wasted
    assert all(a <= b for a, b in zip(m[:10], m[1:10]))
    assert all(a >= b for a, b in zip(m[9:], m[10:]))  # then falls linearly...
    assert 0 < m[-1] <= 1 / 90 + 1e-12  # ...to (almost) 0 at the end
    assert lr_multiplier(50, T, warm, "constant") == 1.0
    c = [lr_multiplier(s, T, warm, "cosine") for s in range(T)]
    assert c[9] == 1.0 and c[-1] < 0.01 and abs(c[55] - 0.5) < 0.05
    paper = RECIPES["paper"]
    assert (paper.lr, paper.betas, paper.eps, paper.weight_decay, paper.warmup, paper.batch_size) == (
        1e-4,
        (0.9, 0.999),
        1e-6,
        0.01,
        10_000,
        256,
    )
    assert paper.lr_at(9_999, 1_000_000) == pytest.approx(1e-4) and paper.lr_at(4_999, 1_000_000) == pytest.approx(5e-5)
    assert get_recipe("budget", lr=1e-3).lr == 1e-3 and get_recipe("budget", lr=None).lr == RECIPES["budget"].lr
    with pytest.raises(ValueError, match="fraction"):
        paper.warmup_fraction(None)
    with pytest.raises(ValueError, match="unknown recipe"):
        get_recipe("fast")


# --- the left-to-right LM objective (the paper's "LTR & No NSP", section 5.1) ---------------------
def test_ltr_loss_decreases_and_is_logged_under_its_own_names(tmp_path, tokenizer_file):
    r = pretrain(tiny(tmp_path / "l", tokenizer_file, objective="ltr", steps=12, eval_every=12))
    assert r.model.config.causal
    train = r.train_history
    for key in ("ltr_loss", "next_token_acc", "loss", "lr", "grad_norm"):
        assert key in train[0], key
    assert not any("mlm_loss" in h or "mlm_acc" in h or "nsp_loss" in h for h in r.history)
    assert train[0]["loss"] == train[0]["ltr_loss"]
    losses = [h["loss"] for h in train]
    assert losses[0] > 6.0  # about log(1000): a random model
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.3  # and it learns
    assert set(r.final_eval) == {"ltr_loss", "next_token_acc", "loss"}
    assert 0.0 < r.final_eval["next_token_acc"] < 1.0


def test_ltr_with_the_unigram_bias_can_predict_sep(tmp_path, tokenizer_file):
    """The cpu recipe's unigram MLM bias for a left-to-right LM: [SEP] follows the last piece of
    every segment, so it is a target and keeps its frequency (with -1e4, as for the masked LM that
    never predicts it, one [SEP] target per sequence would dominate the mean loss)."""
    from bertlab.data.tokenizer import WordPieceTokenizer

    tok = WordPieceTokenizer.load(tokenizer_file)
    r = pretrain(tiny(tmp_path / "l", tokenizer_file, recipe="cpu", objective="ltr", steps=1, lr=1e-12, warmup=0.0))
    bias = r.model.mlm.bias.detach()
    assert -20 < bias[tok.sep_id].item() < 0 and bias[tok.mask_id].item() <= -1e4 + 1
    first = r.history[0]["ltr_loss"]
    assert first < math.log(tok.vocab_size), first  # frequencies already known, no [SEP] blow-up
    m = pretrain(tiny(tmp_path / "m", tokenizer_file, recipe="cpu", steps=1, lr=1e-12, warmup=0.0)).model
    assert m.mlm.bias[tok.sep_id].item() <= -1e4 + 1  # the masked LM never predicts [SEP]


def test_ltr_objective_is_saved_restored_and_kept_for_fine_tuning(tmp_path, tokenizer_file):
    from bertlab import BertForSequenceClassification
    from bertlab.tasks import get_task
    from bertlab.training.finetune import FinetuneConfig, build_task_model
    from bertlab.training.heldout import evaluate_checkpoint

    straight = pretrain(tiny(tmp_path / "a", tokenizer_file, objective="ltr"))
    first = pretrain(tiny(tmp_path / "b", tokenizer_file, objective="ltr", stop_after=4))
    assert first.stopped_by == "stop_after"
    saved = ckpt.load_checkpoint(ckpt.latest_checkpoint(tmp_path / "b" / "checkpoints"))
    assert saved.state["run"]["objective"] == "ltr" and saved.config.causal
    assert json.loads((tmp_path / "b" / "run.json").read_text())["config"]["objective"] == "ltr"
    with pytest.raises(ValueError, match="objective"):  # an MLM run cannot continue it
        pretrain(tiny(tmp_path / "b", tokenizer_file, objective="mlm", resume=True))
    resumed = pretrain(tiny(tmp_path / "b", tokenizer_file, objective="ltr", resume=True))
    assert resumed.step == 8
    a, b = params(straight.model), params(resumed.model)
    assert all(torch.equal(a[k], b[k]) for k in a)  # bit-identical, as for the MLM

    final = tmp_path / "b" / "final"
    assert json.loads((final / "config.json").read_text())["causal"] is True
    clf = ckpt.load_model(final, BertForSequenceClassification, num_labels=2)
    assert clf.config.causal  # fine-tuning keeps the left-to-right attention
    model, _ = build_task_model(get_task("sst2"), FinetuneConfig(task="sst2", init=str(final)))
    assert model.config.causal
    scratch, _ = build_task_model(get_task("sst2"), FinetuneConfig(task="sst2", init="scratch", like=str(final)))
    assert scratch.config.causal  # the same architecture from scratch
    ev = evaluate_checkpoint(
        final, corpus="books", seq_len=32, batches=2, batch_size=8, max_documents=2, device="cpu", precision="fp32"
    )  # as the run (auto is bf16 on some CPUs)
    assert set(ev) == {"ltr_loss", "next_token_acc", "loss"}
    assert ev["ltr_loss"] == pytest.approx(resumed.final_eval["ltr_loss"], rel=1e-6)


def test_ltr_with_nsp_or_masking_settings_is_refused(tmp_path, tokenizer_file):
    with pytest.raises(ValueError, match="LTR & No NSP"):
        tiny(tmp_path, tokenizer_file, objective="ltr", nsp=True).validate()
    with pytest.raises(ValueError, match="LTR & No NSP"):
        tiny(tmp_path, tokenizer_file, objective="ltr", recipe="paper").validate()
    tiny(tmp_path, tokenizer_file, objective="ltr", recipe="paper", nsp=False).validate()
    with pytest.raises(ValueError, match="masks nothing"):
        tiny(tmp_path, tokenizer_file, objective="ltr", whole_word=True).validate()
    with pytest.raises(ValueError, match="unknown objective"):
        tiny(tmp_path, tokenizer_file, objective="gpt").validate()
    # the engine refuses a model whose attention does not fit the objective
    cfg = tiny(tmp_path / "x", tokenizer_file, objective="ltr")
    rt = make_runtime("cpu", "fp32", distributed=False)
    mlm_model = build_model(tiny(tmp_path / "x", tokenizer_file), 1000)
    with pytest.raises(ValueError, match="causal=True"):
        Trainer(cfg, mlm_model, source=None, eval_batches=None, rt=rt)


def test_model_size_overrides_the_preset(tmp_path, tokenizer_file):
    # Table 6's sizes between the named presets: L, H, A override the preset's
    cfg = tiny(tmp_path / "s", tokenizer_file, layers=1, hidden=64, heads=4, steps=2)
    assert cfg.model_size() == (1, 64, 4)
    model = build_model(cfg, 1000)
    c = model.config
    assert (c.L, c.H, c.A, c.intermediate_size, c.causal) == (1, 64, 4, 256, False)
    assert build_model(tiny(tmp_path, tokenizer_file), 1000).config == BertConfig.preset("tiny", vocab_size=1000)
    r = pretrain(cfg)
    assert json.loads((tmp_path / "s" / "final" / "config.json").read_text())["num_layers"] == 1
    assert r.model.num_parameters() == BertForPreTraining(c).num_parameters()
    with pytest.raises(ValueError, match="not divisible"):
        tiny(tmp_path, tokenizer_file, hidden=100, heads=3).validate()


def test_first_step_is_timed_apart(tmp_path, tokenizer_file):
    r = pretrain(tiny(tmp_path / "f", tokenizer_file, steps=6, log_every=3, eval_every=100, checkpoint_every=100))
    logged = [x for x in r.history if x.get("split") == "train"]
    assert [x["step"] for x in logged] == [3, 6]
    assert logged[0]["first_step_s"] > 0 and "first_step_s" not in logged[1]  # once per session
    assert all(x["tokens_per_s"] > 0 for x in logged)


def test_heldout_masks_at_the_papers_rate_whatever_the_training_rate(tmp_path, tokenizer_file):
    """A run that trains at 30% masking is still scored on held-out batches masked at 15%, so its
    held-out accuracy compares with a 15% run's (the masks are the very same ones)."""
    rt = make_runtime("cpu", "fp32", distributed=False)

    from bertlab.data.tokenizer import WordPieceTokenizer
    from bertlab.model import IGNORE_INDEX

    tok = WordPieceTokenizer.load(tokenizer_file)

    def masked_share(batch):  # masked tokens / tokens that can be masked (not padding, [CLS] or [SEP])
        ids = batch["input_ids"]
        real = (ids != tok.pad_id) & (ids != tok.cls_id) & (ids != tok.sep_id)
        return (batch["mlm_labels"] != IGNORE_INDEX).sum().item() / real.sum().item()

    d30 = prepare_data(tiny(tmp_path / "m30", tokenizer_file, mlm_probability=0.3, eval_batches=4), rt)
    d15 = prepare_data(tiny(tmp_path / "m15", tokenizer_file, eval_batches=4), rt)
    train_share = sum(masked_share(next(d30.train)) for _ in range(4)) / 4
    held_share = sum(masked_share(b) for b in d30.eval_batches) / len(d30.eval_batches)
    assert 0.25 < train_share < 0.35 and 0.11 < held_share < 0.19, (train_share, held_share)
    for a, b in zip(d30.eval_batches, d15.eval_batches, strict=True):
        assert torch.equal(a["mlm_labels"], b["mlm_labels"]) and torch.equal(a["input_ids"], b["input_ids"])
    # whole-word masking too is scored on the same single-piece masks
    dww = prepare_data(tiny(tmp_path / "ww", tokenizer_file, whole_word=True, eval_batches=4), rt)
    for a, b in zip(dww.eval_batches, d15.eval_batches, strict=True):
        assert torch.equal(a["mlm_labels"], b["mlm_labels"]) and torch.equal(a["input_ids"], b["input_ids"])


def test_a_session_stopped_by_stop_after_is_scored_where_it_stops(tmp_path, tokenizer_file):
    """A pilot stopped between two evaluations (--stop-after) records its held-out score at the
    step it stops, so its curve ends where it ended; the extra evaluation changes nothing else:
    resumed, the run ends with the weights and scores of a run never stopped."""
    straight = pretrain(tiny(tmp_path / "a", tokenizer_file))
    first = pretrain(tiny(tmp_path / "b", tokenizer_file, stop_after=3))
    assert first.stopped_by == "stop_after" and first.step == 3
    scored = read_metrics(tmp_path / "b" / "metrics.jsonl", split="eval")
    assert [r["step"] for r in scored] == [3] and 0.0 <= scored[0]["mlm_acc"] <= 1.0
    resumed = pretrain(tiny(tmp_path / "b", tokenizer_file, resume=True))
    a, b = params(straight.model), params(resumed.model)
    assert all(torch.equal(a[k], b[k]) for k in a), "scoring the stopped session changed the run"
    ea = read_metrics(tmp_path / "a" / "metrics.jsonl", split="eval")
    eb = read_metrics(tmp_path / "b" / "metrics.jsonl", split="eval")
    assert [(r["step"], r["loss"]) for r in eb] == [(3, scored[0]["loss"])] + [(r["step"], r["loss"]) for r in ea]


# --- sequence-length phases and segment pairs (the paper's 90/10 schedule; both segment rows) ------
def test_phases_run_in_order_and_resume_across_the_boundary(tmp_path, tokenizer_file):
    phases = "0.5:16:16,0.5:32:8"  # the same tokens per step: 256
    straight = pretrain(tiny(tmp_path / "a", tokenizer_file, phases=phases))
    assert json.loads((tmp_path / "a" / "run.json").read_text())["phase_plan"] == "steps"
    rows = read_metrics(tmp_path / "a" / "metrics.jsonl", split="train")
    assert [(r["seq_len"], r["batch_size"]) for r in rows] == [(16, 16)] * 4 + [(32, 8)] * 4
    assert straight.tokens == 8 * 256 and rows[-1]["tokens"] == 8 * 256
    # held-out batches stay at --seq-len (32): the same measure in both phases
    assert all(e["step"] in (4, 8) for e in read_metrics(tmp_path / "a" / "metrics.jsonl", split="eval"))
    # stopped inside the first phase, then again after the boundary, resumed each time
    assert pretrain(tiny(tmp_path / "b", tokenizer_file, phases=phases, stop_after=3)).step == 3
    assert pretrain(tiny(tmp_path / "b", tokenizer_file, phases=phases, stop_after=3, resume=True)).step == 6
    resumed = pretrain(tiny(tmp_path / "b", tokenizer_file, phases=phases, resume=True))
    a, b = params(straight.model), params(resumed.model)
    assert all(torch.equal(a[k], b[k]) for k in a), "a phased run resumed twice differs from one run"
    with pytest.raises(ValueError, match="recipe"):  # other phases cannot continue this run
        pretrain(tiny(tmp_path / "b", tokenizer_file, phases="0.25:16:16,0.75:32:8", resume=True))
    with pytest.raises(ValueError, match="add up to"):
        tiny(tmp_path, tokenizer_file, phases="0.5:16:16,0.4:32:8").validate()
    with pytest.raises(ValueError, match="FRACTION:SEQ_LEN:BATCH"):
        tiny(tmp_path, tokenizer_file, phases="0.5-16-16").validate()
    with pytest.raises(ValueError, match="512"):
        tiny(tmp_path, tokenizer_file, phases="0.5:16:16,0.5:1024:8").validate()


@pytest.mark.parametrize("pause_s", [0.0, 0.5])
def test_phases_follow_a_time_budget(tmp_path, tokenizer_file, monkeypatch, pause_s):
    """A run under a time budget switches phase where its plan says (here half way), also when
    evaluations pause it. The budget's speed is the mean since the first step, pauses included:
    measured over the step after an evaluation alone, a pause read as a slow run, pulled the phase
    boundaries back behind the run, and phases, never left once begun, ended early for good (the
    sixth CPU record's 32-token phase ran 255 steps of the 1,675 planned)."""
    import time

    from bertlab.training.pretrain import Trainer

    if pause_s:
        monkeypatch.setattr(Trainer, "evaluate", lambda self, logger, last: time.sleep(pause_s))
    r = pretrain(
        tiny(
            tmp_path / "t",
            tokenizer_file,
            steps=None,
            minutes=0.15 if pause_s else 0.1,
            warmup=0.1,
            phases="0.5:16:16,0.5:32:8",
            eval_every=20 if pause_s else 10_000,
            checkpoint_every=10_000,
        )
    )
    lens = [h["seq_len"] for h in r.train_history]
    assert r.stopped_by is None and lens[0] == 16 and lens[-1] == 32
    assert not pause_s or r.step > 60  # a dozen evaluations
    switch = lens.index(32) + 1  # the first step of the second phase (a log line per step)
    assert abs(switch - r.step / 2) <= 0.25 * r.step, (switch, r.step)
    # half of the time: the clock at the switch (elapsed_s of the last line of the first phase)
    budget = (0.15 if pause_s else 0.1) * 60
    assert abs(r.train_history[switch - 2]["elapsed_s"] - budget / 2) <= 0.15 * budget
    assert json.loads((tmp_path / "t" / "run.json").read_text())["phase_plan"] == "time"


def test_a_time_budget_keeps_its_phase_plan_across_a_resume(tmp_path, tokenizer_file):
    """Stopped early in its first phase and resumed, a run limited by time still changes phase half
    way through its budget: the clock goes on from the checkpoint's elapsed seconds."""
    cfg = dict(
        steps=None, minutes=0.1, warmup=0.1, phases="0.5:16:16,0.5:32:8", eval_every=10_000, checkpoint_every=10_000
    )
    first = pretrain(tiny(tmp_path / "r", tokenizer_file, stop_after=5, **cfg))
    assert first.step == 5 and first.stopped_by == "stop_after"
    r = pretrain(tiny(tmp_path / "r", tokenizer_file, resume=True, **cfg))
    assert r.stopped_by is None and r.step > 10
    lines = read_metrics(tmp_path / "r" / "metrics.jsonl", split="train")
    lens = [h["seq_len"] for h in lines]
    assert lens[:5] == [16] * 5 and lens[-1] == 32
    switch = lens.index(32)  # the first line of the second phase
    assert abs(lines[switch - 1]["elapsed_s"] - 3.0) <= 0.9, [(h["elapsed_s"], h["seq_len"]) for h in lines]


def simulate_phases(plan, seconds_per_step, resume_at=None, budget_s=100.0):
    """The share of the time each phase of "0.5:32:256,0.3:64:128,0.1:128:64,0.1:256:32" gets in a
    simulated run limited to budget_s whose steps take seconds_per_step(elapsed) seconds: the
    trainer's estimate of its length (the mean speed since the session began; a session resumed at
    `resume_at` seconds measures afresh), the phase boundaries that `plan(phases, elapsed, step,
    total, ends_before)` gives, and the real PhasedBatches choosing each step's phase."""
    import itertools

    from bertlab.data.pretraining_data import PhasedBatches
    from bertlab.training.recipes import parse_phases

    phases = parse_phases("0.5:32:256,0.3:64:128,0.1:128:64,0.1:256:32")
    source = PhasedBatches([itertools.repeat(k) for k in range(len(phases))])
    spent, elapsed, step, since = [0.0] * len(phases), 0.0, 0, (0, 0.0)
    while elapsed < budget_s:
        k = next(source)
        dt = seconds_per_step(elapsed)
        spent[k] += dt
        elapsed, step = elapsed + dt, step + 1
        if resume_at is not None and since == (0, 0.0) and elapsed >= resume_at:
            since = (step, elapsed)
        if step > since[0]:
            rate = (step - since[0]) / (elapsed - since[1])
            total = max(step, step + int(max(budget_s - elapsed, 0.0) * rate))
            source.set_ends(plan(phases, elapsed, step, total, source.ends))
    return [t / elapsed for t in spent]


def test_a_time_budget_divides_its_time_between_phases():
    """A run limited by time places its phase boundaries by the clock: each phase gets its share of
    the time whether the steps slow down late in the run (a busier host) or a run resumes on a
    machine twice as fast. Boundaries placed as fractions of the estimated number of steps come to
    the same within one session, whose estimate is its mean speed, but not across a resume: the
    resumed session's faster steps make the run look longer, and the last phase got 7.5% of the
    time."""
    from bertlab.training.recipes import phase_ends, phase_ends_by_time

    def by_time(phases, elapsed, step, total, before):
        return phase_ends_by_time(phases, 100.0, elapsed, step, total, before)

    def by_steps(phases, elapsed, step, total, before):
        return phase_ends(phases, total)

    def slows(t):
        return 0.1 if t < 60 else 0.2

    def faster(t):
        return 0.2 if t < 50 else 0.1

    for speed, resume_at in ((lambda t: 0.1, None), (slows, None), (faster, 50.0)):
        shares = simulate_phases(by_time, speed, resume_at)
        assert shares == pytest.approx([0.5, 0.3, 0.1, 0.1], abs=0.005), shares
    assert simulate_phases(by_steps, faster, 50.0)[-1] < 0.08


def test_phase_ends_by_time_keeps_boundaries_behind_the_run():
    from bertlab.training.recipes import parse_phases, phase_ends_by_time

    phases = parse_phases("0.5:16:16,0.25:32:8,0.25:64:4")
    # 40 s of 100 at step 400, 1,000 steps expected: the first boundary is 10 of the 60 seconds
    # left away, so a sixth of the 600 steps left; the second 35 of 60 (350 steps)
    assert phase_ends_by_time(phases, 100, 40, 400, 1000) == [500, 750, 1000]
    # the clock has passed the first boundary: it stays at this step, or where it was placed before;
    # the second is 20 of the 45 seconds left away (4/9 of 440 steps: 195.6, rounded up)
    assert phase_ends_by_time(phases, 100, 55, 560, 1000) == [560, 756, 1000]
    assert phase_ends_by_time(phases, 100, 55, 560, 1000, [515, 900, 1000]) == [515, 756, 1000]
    # a boundary just ahead is at least one step on; past the budget, everything ends here
    assert phase_ends_by_time(phases, 100, 49.99, 500, 1000)[0] == 501
    assert phase_ends_by_time(phases, 100, 101, 1000, 1000) == [1000, 1000, 1000]
    with pytest.raises(ValueError, match="one earlier end per phase"):
        phase_ends_by_time(phases, 100, 40, 400, 1000, [410, 1000])


def test_segment_pairs_train_both_segment_rows(tmp_path, tokenizer_file):
    """Without NSP and single segments, row B of the segment embedding never gets a gradient;
    with segment pairs it trains like row A. (No weight decay here: it shrinks an untrained row too.)"""

    def moved(**kw):
        cfg = tiny(tmp_path / str(len(kw)), tokenizer_file, steps=4, weight_decay=0.0, **kw)
        seed_everything(cfg.seed)  # as pretrain does before it builds the model
        seed_model = build_model(cfg, 1000)
        before = params(seed_model)["bert.embeddings.segment.weight"]
        after = params(pretrain(cfg).model)["bert.embeddings.segment.weight"]
        return (after - before).abs().sum(-1)  # (2,) how far each row moved

    single = moved(nsp=False)
    pairs = moved(nsp=False, segment_pairs=True)
    assert single[0] > 0 and single[1] == 0
    assert pairs[0] > 0 and pairs[1] > 0


def test_heldout_accuracy_at_mask_positions_only(tmp_path, tokenizer_file):
    """mlm_acc counts every chosen position, the 10% left unchanged included; mlm_acc_mask only
    those the model saw as [MASK]. A 'model' that predicts the piece it sees is right exactly at
    the unchanged positions: about a tenth of mlm_acc, and never at a [MASK]."""
    from types import SimpleNamespace

    import torch.nn.functional as F

    from bertlab.data.tokenizer import WordPieceTokenizer
    from bertlab.training.heldout import evaluate_pretraining

    tok = WordPieceTokenizer.load(tokenizer_file)
    rt = make_runtime("cpu", "fp32", distributed=False)
    data = prepare_data(tiny(tmp_path / "e", tokenizer_file, eval_batches=4), rt)

    class SeesOnly(torch.nn.Module):
        def forward(self, input_ids, token_type_ids, attention_mask, mlm_positions=None):
            shown = input_ids.gather(1, mlm_positions)
            return SimpleNamespace(mlm_logits=10.0 * F.one_hot(shown, tok.vocab_size).float(), nsp_logits=None)

    scores = evaluate_pretraining(SeesOnly(), data.eval_batches, rt, mask_id=tok.mask_id)
    assert scores["mlm_acc_mask"] == 0.0
    assert 0.06 < scores["mlm_acc"] < 0.14  # the unchanged tenth
    assert "mlm_acc_mask" not in evaluate_pretraining(SeesOnly(), data.eval_batches, rt)
    # and a real run logs both at every evaluation
    pretrain(tiny(tmp_path / "r", tokenizer_file, steps=4))
    evals = read_metrics(tmp_path / "r" / "metrics.jsonl", split="eval")
    assert evals and all(0.0 <= e["mlm_acc_mask"] <= 1.0 for e in evals)


def test_the_paper_recipe_follows_the_papers_two_phases():
    from bertlab.training.recipes import Phase, token_positions

    paper = RECIPES["paper"]
    assert paper.training_phases() == (Phase(0.9, 128, 256), Phase(0.1, 512, 256))
    assert token_positions(paper) == pytest.approx(1_000_000 * 256 * (0.9 * 128 + 0.1 * 512))
    assert round(token_positions(paper) / 1e9, 1) == 42.6
    assert token_positions(RECIPES["cpu"], steps=1000) == 1000 * 64 * 128


TRAINER_KEEPS = """
import tempfile
from bertlab import BertConfig, BertForPreTraining
from bertlab.runtime import freed_memory_kept, make_runtime
from bertlab.training.pretrain import PretrainConfig, Trainer
rt = make_runtime("cpu", "fp32", distributed=False)
before = freed_memory_kept()
model = BertForPreTraining(BertConfig(vocab_size=64, num_layers=1, hidden_size=16, num_heads=2))
with tempfile.TemporaryDirectory() as out:
    cfg = PretrainConfig(steps=1, batch_size=2, seq_len=16, out=out, progress=False)
    Trainer(cfg, model, source=None, eval_batches=None, rt=rt)
print(before, freed_memory_kept())
"""


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc")
@pytest.mark.parametrize("setting, expected", [(None, "False True"), ("default", "False False")])
def test_pretraining_on_a_cpu_keeps_freed_memory_unless_told_not_to(setting, expected):
    env = {k: v for k, v in os.environ.items() if k != "BERTLAB_CPU_ALLOCATOR"}
    if setting:
        env["BERTLAB_CPU_ALLOCATOR"] = setting
    out = subprocess.run([sys.executable, "-c", TRAINER_KEEPS], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == expected.split()  # a runtime alone changes nothing; the Trainer does
