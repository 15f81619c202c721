"""The GLUE benchmark (Wang et al., 2018): the paper's Table 1 scores (quoted), beside which tasks
this book fine-tunes and which of their files the offline mirror holds (`coverage()`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bertlab.data import registry, task_data
from bertlab.tasks import TASKS, get_task

# Devlin et al. (2018), Table 1: GLUE test scores of BERT-Base and BERT-Large (F1 for QQP and MRPC,
# Spearman for STS-B, Matthews for CoLA, else accuracy; MNLI matched/mismatched; WNLI left out, B.1).
PAPER_TABLE_1: dict[str, tuple[str, str]] = {
    "MNLI": ("84.6/83.4", "86.7/85.9"),
    "QQP": ("71.2", "72.1"),
    "QNLI": ("90.5", "92.7"),
    "SST-2": ("93.5", "94.9"),
    "CoLA": ("52.1", "60.5"),
    "STS-B": ("85.8", "86.5"),
    "MRPC": ("88.9", "89.3"),
    "RTE": ("66.4", "70.1"),
    "WNLI": ("not reported", "not reported"),
}

# the GLUE tasks the data registry knows, by their registry (and task table) names
REGISTRY_NAME = {"SST-2": "sst2", "MRPC": "mrpc", "RTE": "rte", "QNLI": "qnli"}

BOOK_CHAPTERS = {
    "sst2": "fine-tuned in chapter 11",
    "mrpc": "fine-tuned in chapter 12",
    "rte": "fine-tuned in chapter 12",
}

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class GlueTask:
    """One GLUE task: the paper's scores, what the book does with it, and the examples of each
    split in the mirror (None where the book has no reader)."""

    task: str
    base: str
    large: str
    in_book: str
    splits: dict[str, int | None]


@dataclass(frozen=True)
class Coverage:
    """The nine tasks, which are runnable or unlisted, and whether SWAG and SQuAD 2.0 are listed."""

    rows: list[GlueTask]
    runnable: list[str]
    unlisted: list[str]
    swag: bool
    squad2: bool


def mirror_splits(dataset: str | None) -> list[str]:
    """The train/dev/test splits of a registry dataset that the offline mirror holds."""
    return [f.split for f in registry.FILES.values() if f.dataset == dataset and f.in_mirror and f.split in SPLITS]


def split_size(dataset: str, split: str) -> int | None:
    """How many examples a split's file holds; None where the book reads no such split."""
    if dataset in TASKS and split in TASKS[dataset].splits:
        return len(get_task(dataset).load(split))
    if dataset == "qnli":
        return len(task_data.read_qnli(split)[0])
    return None


def coverage(count: bool = True) -> Coverage:
    """The paper's Table 1 beside the book's chapters and the mirror's files (and their sizes)."""
    rows = []
    for task, (base, large) in PAPER_TABLE_1.items():
        key = REGISTRY_NAME.get(task)
        splits = {s: split_size(key, s) if count else None for s in mirror_splits(key)}
        in_book = BOOK_CHAPTERS.get(key, "dev set only: not fine-tuned" if splits else "not run")
        rows.append(GlueTask(task, base, large, in_book, splits))
    return Coverage(
        rows=rows,
        runnable=[r.task for r in rows if "train" in r.splits],
        unlisted=[t for t in PAPER_TABLE_1 if REGISTRY_NAME.get(t) not in registry.DATASETS],
        swag="swag" in registry.DATASETS,
        squad2=any("2.0" in f.path for f in registry.FILES.values()),
    )
