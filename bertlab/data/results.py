"""The lab's results as data: the tables, figure data and sentences of its studies, published as
data/results/<name>.json (`python -m lab.publish`) and read by the chapters through the records:

    res = results.load("finetune_seeds")     # None where this copy has no such file
    res.text("sst2_2000"), res.table("rates"), res.value("gain"), res.series("curve")

A file holds one dict per kind, keyed by name, and "from": the sha256 of the records it came from.
"""

from __future__ import annotations

import json
from functools import partialmethod
from pathlib import Path
from typing import Any

from bertlab.data import records
from bertlab.errors import ActionableError

PUBLISH = "python -m lab.publish"


class Results:
    """One published results file: `name` ("finetune_seeds"), `path` and its parsed `data`."""

    def __init__(self, name: str, data: dict[str, Any], path: Path | None = None):
        self.name, self.data, self.path = name, data, path

    def _get(self, kind: str, key: str) -> Any:
        entries = self.data.get(kind, {})
        if key not in entries:
            held = ", ".join(sorted(entries)) or "none"
            raise ActionableError(
                f"data/results/{self.name}.json has no {kind} {key!r} (its {kind}s: {held}); "
                f"run `{PUBLISH}` from the repository root to write it again, or read one it has"
            )
        return entries[key]

    table = partialmethod(_get, "table")  # a Markdown table
    text = partialmethod(_get, "text")  # a sentence or paragraph (Markdown)
    value = partialmethod(_get, "value")  # a number, or a small dict or list of them
    series = partialmethod(_get, "series")  # the data behind a figure: lists (or dicts of lists)

    def keys(self, kind: str) -> list[str]:
        """The names of one kind of entry the file holds, sorted."""
        return sorted(self.data.get(kind, {}))


def path(name: str) -> Path:
    """Where `data/results/<name>.json` is read from (a checkout's data/, or the fetched records)."""
    return records.records_dir("results", f"{name}.json")


def load(name: str) -> Results | None:
    """The published results `name`, or None where this copy has no such file (see `missing`)."""
    where = path(name)
    if not where.is_file():
        return None
    return Results(name, json.loads(where.read_text()), where)


def missing(what: str, name: str) -> str:
    """The Markdown line a page shows where `name`'s results would be: why they are missing here."""
    if records.published_files(f"results/{name}.json"):
        return records.missing_note(what, "results")
    return (
        f"> This copy of the book holds no `data/results/{name}.json`, so {what} is not shown "
        f"here; `{PUBLISH}` writes it from the records in a checkout."
    )
