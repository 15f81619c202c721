"""Chapter 15's experiment for one pre-trained encoder: the paper's feature-based approach
(Table 7, from bertlab.tasks.feature_based) beside fine-tuning the same encoder on the same sentences.

    study = feature_study(encoder, get_task("conll2003"), train, dev, tagger=..., finetune=..., out=...)
    study.ranking(); study.reading("second_to_last", FINETUNED)
"""

from __future__ import annotations

import time
from typing import Sequence

import torch

from bertlab import checkpoint as ckpt
from bertlab.runtime import make_runtime
from bertlab.tasks.feature_based import COMBINATIONS, FeatureStudy, extract_word_states, train_tagger
from bertlab.tasks.ner import predict_words
from bertlab.training.finetune import FinetuneConfig, build_task_model
from bertlab.training.finetune import finetune as run_finetune


def feature_study(
    encoder,
    task,
    train: Sequence,
    dev: Sequence,
    *,
    tagger: dict,
    finetune: dict,
    store: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    out: str | None = None,
) -> FeatureStudy:
    """Freeze `encoder` (a reference.PretrainedEncoder), train one tagger per combination of Table 7
    on its word states (`train_tagger(**tagger)`), and fine-tune it on the same sentences (`**finetune`)."""
    seconds = {}
    t0 = time.perf_counter()
    model, _ = build_task_model(task, FinetuneConfig(task=task.name, init=str(encoder.folder)))
    bert = model.bert.eval().to(device).requires_grad_(False)  # frozen: no weight of it changes
    tok = encoder.tokenizer()
    train_states, dev_states = (extract_word_states(bert, task.featurize(x, tok), dtype=store) for x in (train, dev))
    seconds["extract"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    taggers = {n: train_tagger(train_states, dev_states, n, device=device, **tagger) for n in COMBINATIONS}
    seconds["taggers"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cfg = FinetuneConfig(
        task=task.name, init=str(encoder.folder), progress=False, out=out, save_models=out is not None, **finetune
    )
    tuned = run_finetune(cfg, train_examples=train, eval_examples=dev)
    median_run = sorted(tuned.runs, key=lambda r: r.metrics[tuned.main_metric])[len(tuned.runs) // 2]
    if median_run.model_dir is None:
        raise ValueError("feature_study needs `out`, a folder for the fine-tuned model it reads back")
    # its dev tags, read as fine-tuning's evaluation read them (same windows, batches and autocast)
    rt = make_runtime(cfg.device, cfg.precision, distributed=False)
    ft_model = ckpt.load_model(median_run.model_dir, task.model_class, **task.model_kwargs).to(rt.device)
    feats = task.featurize(dev, tok, max_len=cfg.max_len or task.max_len)
    predicted = predict_words(ft_model, feats, cfg.eval_batch_size, rt)
    del ft_model
    seconds["finetune"] = time.perf_counter() - t0
    settings = {"tagger": dict(tagger), "finetune": dict(finetune)}
    return FeatureStudy(
        encoder.name, bert, train_states, dev_states, taggers, predicted, tuned.scores, settings, seconds
    )
