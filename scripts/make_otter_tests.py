#!/usr/bin/env python
"""Write otter-grader tests for one assignment: one exception-based test file per exercise, one
test case per part of its check, so that otter gives the same partial credit as bertlab's grader.

    python scripts/make_otter_tests.py 02_attention --out otter/02_attention/tests
    otter generate -t otter/02_attention/tests -o autograder.zip --no-requirements --no-environment --no-config
    otter run -a autograder.zip submission.ipynb -o results/          # results/results.json

Each test case calls `bertlab.exercises.require_part(check, k, *functions)`, which runs the check
once on the notebook's functions and fails the case unless part k passed. The number of parts
comes from running the check on the instructor's solution (book/exercises/<assignment>.ipynb).
otter runs the notebook in its own kernel with no time limit per exercise: see
book/instructor.md for how it compares with `python -m grader`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's grader/ (not installed), for its course table


def part_names(assignment: str) -> dict[str, list[str]]:
    """Each exercise of `assignment` -> the names of its check's parts, from the instructor's
    solution (its imports cell and solution cells, executed here)."""
    from bertlab.exercises import CHECKS, RESULTS, ExerciseFailure, grading
    from grader.course import exercises_of

    nb = nbformat.read(ROOT / "book" / "exercises" / f"{assignment}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    ns: dict = {}
    for cell in [code[1]] + [c for c in code if "solution" in c.metadata.get("tags", [])]:
        exec(compile(cell.source, f"{assignment}.ipynb", "exec"), ns)
    out = {}
    for ex in exercises_of(assignment):
        try:
            with grading(True):  # every part the grader counts, hidden cases included
                CHECKS[ex.name](*[ns[f] for f in ex.functions])
        except ExerciseFailure as err:
            raise SystemExit(f"the instructor's solution fails its own check: {err}")
        out[ex.name] = [p.name for p in RESULTS[ex.name].parts]
    return out


def test_file(name: str, points: int, functions: tuple[str, ...], parts: list[str]) -> str:
    args = ", ".join(functions)
    lines = [
        '"""otter-grader tests, written by scripts/make_otter_tests.py: one case per part."""',
        "",
        "from otter.test_files import test_case",
        "",
        "OK_FORMAT = False",
        "",
        f"name = {name!r}",
        f"points = {points}  # shared equally by the cases",
        "",
    ]
    for k, part in enumerate(parts):
        lines += [
            "",
            f"@test_case(hidden=False, name={part!r})",
            f"def part_{k}({args}):",
            "    from bertlab.exercises import require_part",
            f"    require_part({name!r}, {k}, {args})",
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    from grader.course import ASSIGNMENTS, EXERCISES

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("assignment", choices=sorted(ASSIGNMENTS))
    p.add_argument("--out", required=True, help="folder for the test files (created)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, parts in part_names(args.assignment).items():
        ex = EXERCISES[name]
        (out / f"{name}.py").write_text(test_file(name, ex.points, ex.functions, parts))
        print(f"wrote {out / f'{name}.py'}: {len(parts)} cases, {ex.points} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
