#!/usr/bin/env python
"""Generate the student edition of the exercise notebooks from the instructor edition.

    python scripts/make_student_edition.py --out student/            # all of book/exercises/
    python scripts/make_student_edition.py --out student/ --zip      # and student.zip beside it

The instructor edition (book/exercises/*.ipynb) is the one source of truth. In it:
- a solution is the code between `### BEGIN SOLUTION` and `### END SOLUTION` lines inside a
  function body (nbgrader's markers); here it becomes
  `raise NotImplementedError("<function>: your code here")`, keeping the signature and docstring;
- a markdown cell tagged "model-answer" (an open question's model answer and its grading
  rubric) becomes an empty "Your answer" cell;
- a cell tagged "instructor-only" (a note about the instructor edition) is left out;
- outputs, execution counts and the book-only tags ("solution", "hide-input") are removed;
- the notebook's metadata names its assignment (`bertlab.assignment`), which is how the grader
  (`python -m bertlab.exercises grade`) knows which checks to run, whatever the file is renamed to.
Never edit the student edition by hand: regenerate it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BOOK_TAGS = {"solution", "hide-input", "model-answer"}
INSTRUCTOR_ONLY = "instructor-only"  # a cell about the instructor edition: left out
ANSWER_PROMPT = "**Your answer:**\n\n*(write it here)*"


def strip_solutions(source: str, where: str) -> str:
    """Replace every BEGIN/END SOLUTION block by a NotImplementedError stub at its indentation."""
    lines, out, inside, fn = source.splitlines(), [], False, None
    for n, line in enumerate(lines, 1):
        m = re.match(r"\s*def\s+(\w+)", line)
        if m and not inside:
            fn = m.group(1)
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise SystemExit(f"{where}, line {n}: {BEGIN} inside another solution block")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            name = fn or "this cell"
            out.append(f'{indent}raise NotImplementedError("{name}: replace this line with your code")')
        elif stripped == END:
            if not inside:
                raise SystemExit(f"{where}, line {n}: {END} without a {BEGIN} before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise SystemExit(f"{where}: {BEGIN} without a matching {END}")
    return "\n".join(out)


def student_notebook(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if INSTRUCTOR_ONLY not in c.metadata.get("tags", [])]
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code":
            if "solution" in tags and BEGIN not in cell.source:
                raise SystemExit(f"{name}, cell {i}: tagged 'solution' but has no {BEGIN} / {END} markers")
            cell.source = strip_solutions(cell.source, f"{name}, cell {i}")
            cell.outputs, cell.execution_count = [], None
        elif "model-answer" in tags:
            cell.source = ANSWER_PROMPT
        kept = [t for t in tags if t not in BOOK_TAGS]
        if kept:
            cell.metadata["tags"] = kept
        else:
            cell.metadata.pop("tags", None)
    nb.metadata.pop("widgets", None)
    nb.metadata["bertlab"] = {"assignment": Path(name).stem, "edition": "student"}
    return nb


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--out", required=True, help="folder for the student notebooks (created)")
    p.add_argument("--src", default=str(ROOT / "book" / "exercises"), help="instructor notebooks")
    p.add_argument("--zip", action="store_true", help="also write <out>.zip to hand out")
    args = p.parse_args(argv)
    src, out = Path(args.src), Path(args.out)
    notebooks = sorted(src.glob("*.ipynb"))
    if not notebooks:
        print(f"no notebooks in {src}", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    for path in notebooks:
        nb = student_notebook(nbformat.read(path, as_version=4), path.name)
        nbformat.validate(nb)
        nbformat.write(nb, out / path.name)
        print(f"wrote {out / path.name}")
    if args.zip:
        archive = shutil.make_archive(str(out), "zip", root_dir=out)
        print(f"wrote {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
