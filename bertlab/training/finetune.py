"""Fine-tuning: one small output layer on top of a pretrained BERT, every weight trained.

    result = finetune(FinetuneConfig(task="sst2", init="runs/mini/final", seeds=(0, 1, 2)))
    result.median             # the task's main metric (dev), median over the seeds
    result.runs[0].history    # per-epoch dev scores and training loss of seed 0

or `python -m bertlab finetune --task sst2 --init runs/mini/final --seeds 0 1 2`. As in the paper
(section 4, A.3): a task layer (bertlab.tasks) on the pretrained encoder, everything trained for a
few epochs with AdamW, warm-up over 10% of the steps then linear decay. Small dev sets are noisy:
several seeds run and the median is reported. `init` is a bertlab or Hugging Face model folder, a
hub name such as "bert-base-uncased" (online only), or "scratch": random weights, the size and
vocabulary of `like` (else `preset` and bert-base-uncased's).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from bertlab import checkpoint as ckpt
from bertlab import files
from bertlab.config import BertConfig
from bertlab.data.tokenizer import WordPieceTokenizer, bert_uncased_tokenizer, load_tokenizer_for
from bertlab.errors import ActionableError
from bertlab.hf import folder_config, is_hf_folder
from bertlab.model import IGNORE_INDEX
from bertlab.runtime import Runtime, make_runtime, seed_everything
from bertlab.tasks import TASKS, get_task
from bertlab.tasks.inputs import LengthGroupedSampler, labelled_tokens
from bertlab.training import logs
from bertlab.training.optim import adamw, optimizer_step
from bertlab.training.recipes import FINETUNE_DEFAULTS, lr_multiplier


@dataclass
class FinetuneConfig:
    task: str = "sst2"  # sst2, mrpc, rte, squad (dev only locally) or conll2003
    init: str = "scratch"  # a bertlab model folder (e.g. runs/x/final), "scratch", or a hub name (online)
    like: str | None = None  # with --init scratch: take the size and vocabulary from this model folder
    preset: str = "mini"  # with --init scratch and no --like: the model size (tiny, mini, ... large)
    lr: float = FINETUNE_DEFAULTS["lr"]  # peak learning rate after the warm-up (small models do best well above 5e-5)
    epochs: float = FINETUNE_DEFAULTS["epochs"]  # passes over the training examples (a fraction is a part of one)
    batch_size: int = FINETUNE_DEFAULTS["batch_size"]  # examples per optimiser step
    seeds: Sequence[int] = (0,)  # one fine-tuning run per seed; the median is reported (small sets vary by seed)
    max_len: int | None = None  # maximum tokens per example (default: the task's, 128; 384 for SQuAD)
    doc_stride: int | None = None  # SQuAD: tokens between the starts of a long context's windows (default: 128)
    warmup: float = FINETUNE_DEFAULTS["warmup"]  # warm-up as a fraction of the steps, then linear decay to 0
    weight_decay: float = FINETUNE_DEFAULTS["weight_decay"]  # decoupled (AdamW) weight decay
    train_split: str = "train"  # the split to train on
    eval_split: str = "dev"  # the split to score: dev, or another split the task's local data has
    max_train_examples: int | None = None  # train on the first N examples only: a quick run
    max_eval_examples: int | None = None  # evaluate on the first N examples only
    eval_batch_size: int = 128  # examples per batch when scoring (no gradients kept, so it can be larger)
    eval_every_epoch: bool = True  # score after every epoch (--no-eval-every-epoch: after the last only, cheaper)
    group_by_length: bool = True  # random batches of similar lengths, padded less (--no-group-by-length: plain random)
    balance_tokens: bool = True  # with grouped batches, a token task weighs each token the same in short and long ones
    device: str = "auto"  # auto, cpu, cuda or cuda:N
    precision: str = "auto"  # auto (bf16 where it is native, fp16 on older GPUs, else fp32), fp32, bf16 or fp16
    out: str | None = None  # the folder for results.json (and, with --save-models, each seed's model)
    save_models: bool = False  # write each seed's fine-tuned model under --out
    progress: bool = True  # a progress bar while it runs (--no-progress for logs)
    workers: int = 1  # seeds trained at once on a CPU, each on cores/workers threads (small batches use cores poorly)


@dataclass
class SeedResult:
    seed: int
    metrics: dict[str, float]  # dev scores after the last epoch
    history: list[dict[str, Any]]  # one record per epoch: train loss, dev scores (if evaluated)
    seconds: float
    model_dir: str | None = None
    step_losses: list[float] = field(default_factory=list)  # the training loss of every optimizer step
    # classification: the last evaluation's counts, rows gold and columns predicted (task.label_names)
    confusion: list[list[int]] | None = None


@dataclass
class FinetuneResult:
    task: str
    init: str
    main_metric: str
    runs: list[SeedResult]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> list[float]:
        return [r.metrics[self.main_metric] for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.scores)

    def summary(self) -> str:
        s = ", ".join(f"{x:.2f}" for x in self.scores)
        return f"{self.task} {self.main_metric} from {self.init}: median {self.median:.2f} over seeds ({s})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "init": self.init,
            "main_metric": self.main_metric,
            "median": self.median,
            "scores": self.scores,
            "runs": [dataclasses.asdict(r) for r in self.runs],
            "config": self.config,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FinetuneResult":
        """The result `to_dict` wrote; a ValueError names the fields missing or unknown (a file
        from another version of bertlab)."""
        missing = [k for k in ("task", "init", "main_metric", "runs") if k not in d]
        fields = {f.name for f in dataclasses.fields(SeedResult)}
        needed = {f.name for f in dataclasses.fields(SeedResult) if f.default is dataclasses.MISSING}
        for i, r in enumerate(d.get("runs", [])):
            missing += [f"runs[{i}].{k}" for k in sorted(needed - set(r))]
        unknown = sorted({k for r in d.get("runs", []) for k in r} - fields)
        found = {"missing": missing, "unknown run fields": unknown}
        problems = [f"{what} {', '.join(keys)}" for what, keys in found.items() if keys]
        if problems:
            raise ValueError(
                f"not a fine-tuning result this version of bertlab reads ({'; '.join(problems)}): written by "
                "another version? Fine-tune again to write it anew"
            )
        runs = [SeedResult(**r) for r in d["runs"]]
        return cls(task=d["task"], init=d["init"], main_metric=d["main_metric"], runs=runs, config=d.get("config", {}))


def _is_model_folder(path: str) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "config.json").exists() and (p / "model.safetensors").exists()


def _check_not_a_path(init: str) -> None:
    """`init` is neither 'scratch' nor a model folder: raise if it looks like a path, not a hub name."""
    if Path(init).exists():
        raise FileNotFoundError(
            f"--init {init}: the folder has no config.json + model.safetensors; pass a "
            f"checkpoint folder (<run>/final or <run>/checkpoints/step-N), 'scratch', or a "
            f"hub name such as bert-base-uncased"
        )
    if "/" in init and init.startswith((".", "/", "runs")):
        raise FileNotFoundError(f"--init {init}: no such folder")


def init_tokenizer(cfg: FinetuneConfig):
    """The vocabulary of cfg.init: a model folder's, `like`'s for scratch (else bert-base-uncased's),
    or the one published with a hub model."""
    init = cfg.init
    if init == "scratch":
        if cfg.like is None:
            return bert_uncased_tokenizer()
        if not _is_model_folder(cfg.like):
            raise FileNotFoundError(f"--like {cfg.like}: not a model folder (config.json + model.safetensors)")
        return load_tokenizer_for(cfg.like)
    if _is_model_folder(init):
        return load_tokenizer_for(init)
    _check_not_a_path(init)
    return hub_tokenizer(init)


def task_tokenizer(task, cfg: FinetuneConfig):
    """The vocabulary fine-tuning from cfg.init uses; a hub model is loaded once, which checks the
    name and the network before any data is read."""
    if cfg.init == "scratch" or _is_model_folder(cfg.init):
        return init_tokenizer(cfg)
    return build_task_model(task, cfg)[1]


def build_task_model(task, cfg: FinetuneConfig):
    """(model, tokenizer) for the task, from cfg.init (see the module docstring)."""
    init = cfg.init
    if init == "scratch":
        tokenizer = init_tokenizer(cfg)
        if cfg.like is not None:  # a bertlab or a Hugging Face folder
            return task.build_model(folder_config(cfg.like)), tokenizer
        config = BertConfig.preset(cfg.preset, vocab_size=tokenizer.vocab_size, pad_token_id=tokenizer.pad_id)
        return task.build_model(config), tokenizer
    if _is_model_folder(init):  # a Hugging Face folder's names are transformers' (bertlab.hf)
        hf = is_hf_folder(init)
        model = task.from_pretrained(init) if hf else ckpt.load_model(init, task.model_class, **task.model_kwargs)
        return model, init_tokenizer(cfg)
    _check_not_a_path(init)
    try:  # a hub name: needs the network (or a filled hub cache)
        model = task.from_pretrained(init)
    except Exception as err:
        raise ActionableError(
            f"--init {init!r} is neither a bertlab model folder nor 'scratch', and loading it "
            f"from the Hugging Face hub failed ({type(err).__name__}: {err}). Hub names such as "
            f"bert-base-uncased need the network (unset HF_HUB_OFFLINE)."
        ) from err
    return model, init_tokenizer(cfg)


def hub_tokenizer(name: str):
    """The tokenizer published with a hub model (tokenizer.json, else vocab.txt); the offline
    bert-base-uncased vocabulary as a last resort for uncased models."""
    try:
        from huggingface_hub import hf_hub_download

        try:
            return WordPieceTokenizer.load(hf_hub_download(name, "tokenizer.json"))
        except Exception:
            return WordPieceTokenizer.load(hf_hub_download(name, "vocab.txt"), lowercase="uncased" in name)
    except Exception as err:
        if "uncased" in name:
            return bert_uncased_tokenizer()
        raise ActionableError(f"could not get the tokenizer of {name!r} from the hub ({err})") from err


def evaluate(
    model: nn.Module, task, features, rt: Runtime | None = None, batch_size: int = 128, with_confusion: bool = False
) -> dict[str, Any]:
    """The task's scores of `model` on featurized examples (dev or test with labels). With
    with_confusion, a classification task's scores also hold "confusion" (task.confusion)."""
    rt = rt or make_runtime("auto", "auto", distributed=False)
    outputs = task.predict(model, features, batch_size, rt)
    scores: dict[str, Any] = task.evaluate(outputs, features)
    if with_confusion and task.kind == "classification":
        scores["confusion"] = task.confusion(outputs, features)
    return scores


def balanced_tokens_per_batch(task, cfg: FinetuneConfig, train_feats, steps_per_epoch: int) -> float | None:
    """The mean labelled tokens per batch over an epoch, for a token-level task grouped by length
    (cfg.balance_tokens), else None: scaling each batch's mean loss by its tokens over this mean
    gives every token the same weight, as in random batches."""
    if not (cfg.group_by_length and cfg.balance_tokens and task.kind == "token"):
        return None
    return float(labelled_tokens(train_feats).sum()) / max(1, steps_per_epoch)


def batch_objective(loss: torch.Tensor, batch: dict, tokens_per_batch: float | None) -> torch.Tensor:
    """What a training batch backpropagates: its mean loss, or its sum over labelled tokens divided
    by `tokens_per_batch` (balanced_tokens_per_batch)."""
    if tokens_per_batch is None:
        return loss
    return loss * (batch["labels"] != IGNORE_INDEX).sum() / tokens_per_batch


def _train_one(
    task, cfg: FinetuneConfig, seed: int, train_feats, eval_feats, rt: Runtime, tokenizer_file: Path | None = None
) -> SeedResult:
    seed_everything(seed)
    model, _ = build_task_model(task, cfg)  # the head's init depends on the seed
    model.to(rt.device).train()
    opt = adamw(model, cfg.lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=cfg.weight_decay, fused=rt.fused_adamw)
    scaler = rt.grad_scaler()
    g = torch.Generator().manual_seed(seed)
    if cfg.group_by_length:
        order = {"batch_sampler": LengthGroupedSampler(train_feats.lengths(), cfg.batch_size, g)}
    else:
        order = {"batch_size": cfg.batch_size, "shuffle": True, "generator": g}
    # on a GPU, batches pinned in the loader's thread: rt.to_device then copies them asynchronously
    pin = rt.device.type == "cuda"
    loader = torch.utils.data.DataLoader(train_feats, collate_fn=task.collate, pin_memory=pin, **order)
    steps_per_epoch = len(loader)
    total = max(1, math.ceil(cfg.epochs * steps_per_epoch))
    tokens_per_batch = balanced_tokens_per_batch(task, cfg, train_feats, steps_per_epoch)
    history: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    step = 0
    bar = logs.progress_bar(total, f"{task.name} seed {seed}", enabled=cfg.progress)
    step_losses: list[float] = []
    epoch_losses: list[torch.Tensor] = []  # kept on the device: read back once per epoch, not per step
    epoch = 0
    try:
        while step < total:
            for batch in loader:
                batch = rt.to_device(batch)
                with rt.autocast():
                    loss = model(**batch).loss  # the batch's mean over its examples (or labelled tokens)
                scaler.scale(batch_objective(loss, batch, tokens_per_batch)).backward()
                optimizer_step(opt, scaler, cfg.lr * lr_multiplier(step, total, cfg.warmup, "linear"), grad_clip=1.0)
                epoch_losses.append(loss.detach().float())
                step += 1
                bar.update(1)
                if step >= total:
                    break
            epoch += 1
            train_loss = (sum(epoch_losses) / len(epoch_losses)).item()
            step_losses += torch.stack(epoch_losses).tolist()
            epoch_losses.clear()
            if not math.isfinite(train_loss):
                raise ActionableError(
                    f"{task.name} seed {seed}: the training loss became {train_loss} in epoch {epoch}; lower --lr"
                )
            scores = {}
            if cfg.eval_every_epoch or step >= total:
                scores = evaluate(model, task, eval_feats, rt, cfg.eval_batch_size, with_confusion=step >= total)
            history.append({"epoch": epoch, "step": step, "train_loss": train_loss, **scores})
            history[-1]["elapsed_s"] = time.perf_counter() - t0
            shown = {task.main_metric: f"{scores[task.main_metric]:.2f}"} if scores else {}
            bar.set_postfix({"loss": f"{train_loss:.3f}", **shown})
    finally:
        bar.close()
    model_dir = None
    if cfg.save_models and cfg.out:
        model_dir = str(ckpt.save_model(Path(cfg.out) / f"seed-{seed}", model, tokenizer_file=tokenizer_file))
    last = history[-1] if history else {}
    confusion = last.pop("confusion", None)  # the seed's own field; the history keeps scores
    return SeedResult(
        seed=seed,
        metrics={k: v for k, v in last.items() if k in task.metrics},
        history=history,
        seconds=time.perf_counter() - t0,
        model_dir=model_dir,
        step_losses=step_losses,
        confusion=confusion,
    )


def finetune(
    cfg: FinetuneConfig | None = None,
    runtime: Runtime | None = None,
    *,
    train_examples: Sequence[Any] | None = None,
    eval_examples: Sequence[Any] | None = None,
    **kwargs: Any,
) -> FinetuneResult:
    """Fine-tune on cfg.task once per seed, scoring cfg.eval_split after every epoch (or the last).
    Keyword arguments override fields of cfg; train_examples / eval_examples replace the splits."""
    cfg = dataclasses.replace(cfg or FinetuneConfig(), **kwargs)
    return _run_arms([cfg], runtime, train_examples, eval_examples)[0]


def _check(cfg: FinetuneConfig, task, train_examples, eval_examples) -> None:
    """Refuse a recipe that cannot run, naming what to change."""
    for name, given in (("train_examples", train_examples), ("eval_examples", eval_examples)):
        if given is not None and len(given) == 0:
            raise ValueError(f"{name} is empty; pass at least one {task.name} example")
    if cfg.doc_stride is not None and task.kind != "span":
        raise ValueError(f"doc_stride is for span QA (SQuAD) windows; task {task.name!r} does not use it")
    if train_examples is None and cfg.train_split not in task.splits:
        raise ValueError(
            f"task {task.name!r} has no {cfg.train_split!r} split in the local data (it has "
            f"{list(task.splits)}), so it cannot be fine-tuned here; choose another task "
            f"({', '.join(t for t, v in TASKS.items() if cfg.train_split in v.splits)})"
        )
    if not cfg.seeds:
        raise ValueError("give at least one seed")
    if cfg.epochs <= 0 or cfg.lr <= 0 or cfg.batch_size < 1:
        raise ValueError(f"epochs, lr and batch_size must be positive (got {cfg.epochs}, {cfg.lr}, {cfg.batch_size})")
    if cfg.workers < 1:
        raise ValueError(f"workers={cfg.workers}: give 1 (seeds one after another) or more (side by side)")


def _examples(task, cfg: FinetuneConfig, train_examples, eval_examples) -> tuple[list, list]:
    """The training and evaluation examples: those given, or the splits; the first max_*_examples."""
    train_ex = list(train_examples) if train_examples is not None else task.load(cfg.train_split)
    eval_ex = list(eval_examples) if eval_examples is not None else task.load(cfg.eval_split)
    return train_ex[: cfg.max_train_examples or None], eval_ex[: cfg.max_eval_examples or None]


def _features(task, cfg: FinetuneConfig, tokenizer, train_ex, eval_ex):
    """The examples as the model reads them (ids, masks, labels; SQuAD: windows)."""
    max_len = cfg.max_len or task.max_len
    windows = {"doc_stride": cfg.doc_stride} if cfg.doc_stride is not None else {}
    return (
        task.featurize(train_ex, tokenizer, max_len=max_len, **windows),
        task.featurize(eval_ex, tokenizer, max_len=max_len, **windows),
    )


def _seed_in_worker(
    cfg: FinetuneConfig, seed: int, train_examples, eval_examples, tokenizer_file: Path | None, threads: int
) -> SeedResult:
    """One seed of one arm in a worker process of `_run_arms`, which makes the data again (cheaper
    than sending the features)."""
    torch.set_num_threads(threads)
    task = get_task(cfg.task)
    train_ex, eval_ex = _examples(task, cfg, train_examples, eval_examples)
    train_feats, eval_feats = _features(task, cfg, task_tokenizer(task, cfg), train_ex, eval_ex)
    rt = make_runtime(cfg.device, cfg.precision, distributed=False)
    return _train_one(task, dataclasses.replace(cfg, progress=False), seed, train_feats, eval_feats, rt, tokenizer_file)


def _run_arms(
    cfgs: Sequence[FinetuneConfig], runtime: Runtime | None, train_examples, eval_examples
) -> list[FinetuneResult]:
    """Fine-tune each config in `cfgs` (the arms: pretrained, scratch) with each of its seeds, on the
    same examples. With workers > 1 every (arm, seed) goes to one pool of processes; the results
    are the same either way."""
    rt = runtime or make_runtime(cfgs[0].device, cfgs[0].precision, distributed=False)
    workers = cfgs[0].workers
    prepared = []
    for cfg in cfgs:
        task = get_task(cfg.task)
        _check(cfg, task, train_examples, eval_examples)
        tokenizer = task_tokenizer(task, cfg)
        train_ex, eval_ex = _examples(task, cfg, train_examples, eval_examples)
        tokenizer_file = None
        if cfg.out:
            tokenizer_file = tokenizer.save(Path(cfg.out) / "tokenizer") / "tokenizer.json"
        prepared.append((cfg, task, tokenizer, train_ex, eval_ex, tokenizer_file))
    if workers > 1 and rt.device.type != "cpu":
        raise ValueError(
            f"workers={workers} trains seeds side by side on a CPU's cores; on {rt.device.type} give workers=1"
        )

    runs: list[list[SeedResult]] = []
    if workers == 1:
        for cfg, task, tokenizer, train_ex, eval_ex, tokenizer_file in prepared:
            train_feats, eval_feats = _features(task, cfg, tokenizer, train_ex, eval_ex)
            runs.append(
                [_train_one(task, cfg, seed, train_feats, eval_feats, rt, tokenizer_file) for seed in cfg.seeds]
            )
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        threads = max(1, torch.get_num_threads() // workers)
        # spawn: a fresh interpreter per worker (a forked one would share the parent's thread pools)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [
                [
                    pool.submit(_seed_in_worker, cfg, seed, train_examples, eval_examples, tokenizer_file, threads)
                    for seed in cfg.seeds
                ]
                for cfg, _, _, _, _, tokenizer_file in prepared
            ]
            for (cfg, task, *_), arm in zip(prepared, futures):
                runs.append([])
                for seed, future in zip(cfg.seeds, arm):
                    runs[-1].append(future.result())
                    if cfg.progress:
                        score = runs[-1][-1].metrics.get(task.main_metric, float("nan"))
                        print(f"{task.name} from {cfg.init}, seed {seed}: {task.main_metric} {score:.2f}", flush=True)

    results = []
    for (cfg, task, _, train_ex, eval_ex, _), arm_runs in zip(prepared, runs):
        # examples passed in are recorded by their number, not written out
        passed = {"train_examples": (train_examples, train_ex), "eval_examples": (eval_examples, eval_ex)}
        given = {name: len(kept) for name, (arg, kept) in passed.items() if arg is not None}
        result = FinetuneResult(
            task=task.name,
            init=cfg.init,
            main_metric=task.main_metric,
            runs=arm_runs,
            config={**dataclasses.asdict(cfg), "seeds": list(cfg.seeds), **given, "runtime": rt.describe()},
        )
        if cfg.out:
            Path(cfg.out).mkdir(parents=True, exist_ok=True)
            files.write_json(Path(cfg.out) / "results.json", result.to_dict())
        results.append(result)
    return results


def compare_with_scratch(
    folder: str | Path,
    cfg: FinetuneConfig | None = None,
    out: str | Path | None = None,
    *,
    train_examples: Sequence[Any] | None = None,
    eval_examples: Sequence[Any] | None = None,
    **kwargs: Any,
) -> tuple[FinetuneResult, FinetuneResult]:
    """(pretrained, scratch): cfg.task fine-tuned from the weights in `folder` and from random ones
    of the same architecture and vocabulary, with one recipe and the same seeds. Arguments as in
    `finetune`; with `out`, the arms write into <out>/pretrained and <out>/scratch."""
    cfg = dataclasses.replace(cfg or FinetuneConfig(), **kwargs)
    if not _is_model_folder(str(folder)):
        raise FileNotFoundError(f"{folder}: not a model folder (config.json + model.safetensors) to compare")
    inits = {"pretrained": {"init": str(folder)}, "scratch": {"init": "scratch", "like": str(folder)}}
    where = {name: {"out": str(Path(out) / name)} if out is not None else {} for name in inits}
    arms = [dataclasses.replace(cfg, **init, **where[name]) for name, init in inits.items()]
    pre, scr = _run_arms(arms, None, train_examples, eval_examples)
    return pre, scr


def evaluate_folder(
    folder: str | Path,
    task_name: str,
    split: str = "dev",
    max_len: int | None = None,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int = 128,
    max_examples: int | None = None,
) -> dict[str, float]:
    """Scores of a saved fine-tuned model (a folder from finetune(save_models=True))."""
    task = get_task(task_name)
    rt = make_runtime(device, precision, distributed=False)
    model = ckpt.load_model(folder, task.model_class, **task.model_kwargs).to(rt.device)
    from safetensors import safe_open

    with safe_open(str(Path(folder) / "model.safetensors"), "pt") as f:
        has_head = any(k.startswith(("classifier.", "qa.")) for k in f.keys())
    if not has_head:
        raise ValueError(
            f"{folder} holds no {task.name} output layer (a pretraining checkpoint?); evaluate a "
            f"fine-tuned model (finetune --save-models), or fine-tune this one first"
        )
    tokenizer = load_tokenizer_for(folder)
    examples = task.load(split)[: max_examples or None]
    feats = task.featurize(examples, tokenizer, max_len=max_len or task.max_len)
    return evaluate(model, task, feats, rt, batch_size)
