#!/usr/bin/env python
"""Check that nbgrader makes the same student notebooks as the book's own student edition.

    python scripts/nbgrader_roundtrip.py                     # every assignment with checks
    python scripts/nbgrader_roundtrip.py 02_attention --nbgrader /path/to/venv/bin/nbgrader

For each assignment it builds a throw-away nbgrader course (the instructor notebook in
source/<assignment>/, the `nbgrader_config.py` below), runs `nbgrader generate_assignment`, and
compares the released notebook with `scripts/make_student_edition.py`'s, cell by cell. The two
write different stubs for the same thing, so those are read as equal: nbgrader's
`# YOUR CODE HERE` / `raise NotImplementedError()` and the book's
`raise NotImplementedError("<function>: ...")`, nbgrader's `YOUR ANSWER HERE` and the book's
"Your answer" prompt. Anything else that differs (a cell more or less, a line of a solution left
in, a changed check cell) is printed, and the exit status is 1.

nbgrader is not one of the book's requirements (version 0.9.6 brings a Jupyter server and a
database): install it in a separate environment and pass its `nbgrader` with --nbgrader, or put
it on PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's grader/ (not installed), for its course table
sys.path.insert(0, str(ROOT / "scripts"))

from make_student_edition import ANSWER_PROMPT, student_notebook  # noqa: E402

# The course configuration: nbgrader's own preprocessors, after nbconvert's TagRemovePreprocessor,
# which leaves out the book's "instructor-only" cells (a note about the instructor edition).
NBGRADER_CONFIG = """\
c = get_config()
c.CourseDirectory.course_id = "bertlab"
c.CourseDirectory.root = {root!r}
c.TagRemovePreprocessor.remove_cell_tags = {{"instructor-only"}}
c.TagRemovePreprocessor.enabled = True
c.GenerateAssignment.preprocessors = [
    "nbconvert.preprocessors.TagRemovePreprocessor",
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]
"""
STUB = "<your code>"
ANSWER = "<your answer>"


def normalise(cell: nbformat.NotebookNode) -> tuple[str, str]:
    """(cell type, source) with both tools' stubs written the same way."""
    text = cell.source.strip()
    if cell.cell_type == "markdown":
        return "markdown", ANSWER if text in ("YOUR ANSWER HERE", ANSWER_PROMPT) else text
    lines = [ln for ln in text.splitlines() if ln.strip() != "# YOUR CODE HERE"]
    lines = [re.sub(r"^(\s*)raise NotImplementedError\(.*\)\s*$", rf"\g<1>{STUB}", ln) for ln in lines]
    return "code", "\n".join(lines)


def compare(released: nbformat.NotebookNode, ours: nbformat.NotebookNode) -> list[str]:
    """The differences between nbgrader's student notebook and the book's, after `normalise`."""
    a, b = [normalise(c) for c in released.cells], [normalise(c) for c in ours.cells]
    out = []
    if len(a) != len(b):
        out.append(f"nbgrader has {len(a)} cells, the student edition {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            out.append(f"cell {i}: nbgrader {x[0]} {x[1][:200]!r}\n    ours {y[0]} {y[1][:200]!r}")
    return out


def roundtrip(assignment: str, nbgrader: str) -> list[str]:
    """Run nbgrader generate_assignment on `assignment` and compare (see the module docstring)."""
    source = ROOT / "book" / "exercises" / f"{assignment}.ipynb"
    if not source.exists():
        raise FileNotFoundError(f"{source}: no such assignment notebook")
    with tempfile.TemporaryDirectory(prefix="bertlab-nbgrader-") as tmp:
        course = Path(tmp)
        (course / "source" / assignment).mkdir(parents=True)
        shutil.copy(source, course / "source" / assignment / source.name)
        (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(course)))
        env = {**os.environ, "PATH": f"{Path(nbgrader).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        run = subprocess.run(
            [nbgrader, "generate_assignment", assignment, "--force"],
            cwd=course,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        released = course / "release" / assignment / source.name
        if run.returncode != 0 or not released.exists():
            return [f"nbgrader generate_assignment failed ({run.returncode}):\n{run.stderr[-2000:]}"]
        theirs = nbformat.read(released, as_version=4)
    ours = student_notebook(nbformat.read(source, as_version=4), source.stem)
    return compare(theirs, ours)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("assignments", nargs="*", help="assignment names (default: every one with checks)")
    p.add_argument("--nbgrader", default=shutil.which("nbgrader"), help="the nbgrader command (default: on PATH)")
    args = p.parse_args(argv)
    if not args.nbgrader:
        print("nbgrader not found: pip install nbgrader==0.9.6 in a separate environment and pass --nbgrader")
        return 2
    from grader.course import ASSIGNMENTS, exercises_of

    names = args.assignments or [a for a in ASSIGNMENTS if exercises_of(a)]
    failed = 0
    for name in names:
        diffs = roundtrip(name, args.nbgrader)
        print(f"{name}: " + ("same as the student edition" if not diffs else f"{len(diffs)} differences"))
        for d in diffs:
            print("  " + d)
        failed += bool(diffs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
