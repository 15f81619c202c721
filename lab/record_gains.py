"""The book's record, task by task: what pre-training bought over the same network from scratch
(`ReferenceRun.gains()`), as a Markdown table and in a few sentences, and how the lab's prose,
tables and figures name the tasks. The lab's fine-tuning checks (lab/notebook/finetuning_checks.ipynb)
show the table and the sentences under `lab.charts.gains_chart`.

    rows = reference.find().gains()
    gains_table(rows)
    gains_reading(rows)
    TASK_TITLES["conll2003"]       # 'CoNLL-2003'
"""

from __future__ import annotations

from typing import Any

TASK_TITLES = {  # how the lab's prose, tables and figures name the fine-tuning tasks
    "sst2": "SST-2",
    "mrpc": "MRPC",
    "rte": "RTE",
    "conll2003": "CoNLL-2003",
    "squad": "SQuAD v1.1",
}


def gains_table(rows: list[dict[str, Any]]) -> str:
    """`ReferenceRun.gains()` as a Markdown table: task, labelled examples ("all" for the whole
    training set), metric, the medians from the pretrained weights and from scratch, and the gain."""
    lines = ["| task | examples | metric | pre-trained | from scratch | gain |", "|---|---|---|---|---|---|"]
    for r in rows:
        n = f"{r['train_examples']:,}" if r["train_examples"] else "all"
        lines.append(
            f"| {TASK_TITLES.get(r['task'], r['task'])} | {n} | {r['metric']} | {r['pretrained']:.1f} | "
            f"{r['scratch']:.1f} | {r['gain']:+.1f} |"
        )
    return "\n".join(lines)


def gains_reading(rows: list[dict[str, Any]]) -> str:
    """A few sentences on `ReferenceRun.gains()`: the task with the largest gain, the range of the
    SST-2 gains, and, when entity labelling gained more than any SST-2 size, why that is expected."""
    if not rows:
        return ""
    best = max(rows, key=lambda r: r["gain"])
    text = f"The largest gain is on {TASK_TITLES.get(best['task'], best['task'])} ({best['gain']:+.1f} points)"
    sst = [r["gain"] for r in rows if r["task"] == "sst2"]
    ner = [r["gain"] for r in rows if r["task"] == "conll2003"]
    if sst:
        spread = f"{sst[0]:+.1f}" if len(sst) == 1 else f"from {min(sst):+.1f} to {max(sst):+.1f}"
        text += f"; on SST-2 the gain{'s run' if len(sst) > 1 else ' is'} {spread}"
    text += "."
    if ner and sst and ner[0] > max(sst):
        text += (
            " Labelling entities asks about single words in context, which is what the masked LM "
            "trains every position for; a judgement about a whole sentence gains less from this "
            "much pre-training."
        )
    return text
