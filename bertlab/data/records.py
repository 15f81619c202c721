"""Where the book's recorded runs live: the `data/` folder of a checkout of the repository
(`data/reference_run/`, `data/pilots/`, `data/ablations/`, `data/capstone/`, `data/benchmarks/`,
`data/squad2/`).

    records_dir()                  # the folder
    records_dir("pilots")          # a part of it

The folder is, in this order: the one named by $BERTLAB_RECORDS; the `data/` folder beside the
installed `bertlab` package when bertlab runs from a checkout (an editable install, `pip install
-e .`, or the chapters of a clone); `data/` in the working directory or its parent (a notebook run
from `book/`). A non-editable install from a wheel or from git holds the library only: the records
are not in the package. Then, unless $BERTLAB_RECORDS points at a checkout's `data/`, the answer is
the first place looked at, which does not exist, and every reader of a record says it has not been
recorded (the chapters show what would appear there) instead of failing.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "BERTLAB_RECORDS"
_MARKERS = ("reference_run", "pilots")  # a records folder holds at least one of these


def _candidates() -> list[Path]:
    package_root = Path(__file__).resolve().parents[1]  # the checkout, when bertlab runs from one
    here = Path.cwd()
    return [package_root / "data", here / "data", here.parent / "data"]


def records_dir(*parts: str) -> Path:
    """The records folder (or `parts` inside it); see the module docstring for where it is looked for."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        root = Path(explicit)
        if not root.is_dir():
            raise FileNotFoundError(
                f"${ENV_VAR} is {explicit}, which is not a folder; point it at the data/ "
                f"folder of a checkout of the bertlab repository, or unset it"
            )
    else:
        places = _candidates()
        root = next((p for p in places if any((p / m).is_dir() for m in _MARKERS)), places[0])
    return root.joinpath(*parts)
