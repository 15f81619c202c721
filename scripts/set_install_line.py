#!/usr/bin/env python
"""Write the install line of every notebook from one setting: the repository URL in _config.yml.

Every chapter and exercise notebook opens with the same setup cell, whose `%pip install` line
installs bertlab from the book's repository when it is missing (on Colab, say). The repository is
named once, in _config.yml (`repository: url:`), which the "Open in Colab" buttons use too; a fork
changes that one line and runs this script:

    python scripts/set_install_line.py           # rewrite the setup cell where it differs
    python scripts/set_install_line.py --check   # exit 1, naming the notebooks, if any differs

Only the first code cell is touched, and only when it is the setup cell (it starts with the
setup comment); a notebook whose first code cell is something else is reported, not changed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMMENT = "# On Colab or a fresh machine, install bertlab (Colab already has torch)."


def repository_url(config: Path = ROOT / "_config.yml") -> str:
    url = (yaml.safe_load(config.read_text()).get("repository") or {}).get("url")
    if not url or not url.startswith("https://"):
        raise ValueError(
            f"{config} has no repository url (repository: url: https://github.com/OWNER/NAME); "
            f"the notebooks' install line is written from it"
        )
    return url.rstrip("/")


def setup_cell(url: str) -> str:
    """The setup cell every notebook starts with, installing bertlab from `url`."""
    return (
        f"{COMMENT}\n"
        "try:\n"
        "    import bertlab\n"
        "except ImportError:\n"
        f'    %pip install -q "bertlab[book] @ git+{url}"\n'
        "    import importlib\n"
        "\n"
        "    importlib.invalidate_caches()\n"
        "    try:\n"
        "        import bertlab\n"
        "    except ImportError:  # pip said why above; stop here, not three cells later\n"
        "        raise SystemExit(\n"
        '            "bertlab did not install (pip\'s message is above). Check the "\n'
        '            "connection, then run this cell again."\n'
        "        ) from None\n"
        "from bertlab.notebook import setup\n"
        "\n"
        "device = setup()"
    )


def notebooks(folders: tuple[Path, ...] = (ROOT / "book", ROOT / "lab" / "notebook")) -> list[Path]:
    """The book's notebooks: the chapters and exercises (book/) and the lab notebook's pages."""
    return sorted(p for folder in folders for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def apply(paths: list[Path], url: str, write: bool) -> tuple[list[Path], list[Path]]:
    """(notebooks whose setup cell differs (rewritten when `write`), notebooks with no setup cell)."""
    want = setup_cell(url)
    differ, missing = [], []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        first = next((c for c in nb.cells if c.cell_type == "code"), None)
        if first is None or not first.source.startswith(COMMENT):
            missing.append(path)
            continue
        if first.source.strip() != want:
            differ.append(path)
            if write:
                first.source = want
                nbformat.write(nb, path)
    return differ, missing


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if any notebook differs")
    a = p.parse_args(argv)
    url = repository_url()
    differ, missing = apply(notebooks(), url, write=not a.check)
    for path in missing:
        print(f"{path.relative_to(ROOT)}: the first code cell is not the setup cell; left as it is")
    for path in differ:
        print(f"{path.relative_to(ROOT)}: {'differs from' if a.check else 'rewritten for'} {url}")
    if a.check and differ:
        print("run python scripts/set_install_line.py to write the install line from _config.yml")
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
