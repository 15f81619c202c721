"""Grade submitted exercise notebooks: the checks run again, in a fresh kernel, on the code.

    python -m grader submissions/    # grades.csv, grades.json, gradescope/ there (from a checkout's root)

Each notebook's code cells run in a fresh Jupyter kernel (not the cells that only call checks);
each exercise's check then runs there from a private copy of bertlab.exercises (a notebook that
patches `check` changes nothing), under the exercise's time and memory limits, and only *records*
the student's answers as data. A fresh Python process that never ran the student's code judges
them (bertlab.exercises.replay). A timeout or a dead kernel scores that exercise 0 and the rest are
graded in a fresh kernel; an exercise scores its points times the share of its parts passed.
This runs students' code: use a container or a throw-away account (book/instructor.md).
"""

from __future__ import annotations

import csv
import json
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import nbformat

from grader.course import ASSIGNMENTS, EXERCISES, Exercise, exercises_of, projects_of

CHECK_LINE = re.compile(r"^\s*(?:\w+\.)?check(?:_\w+)?\s*\(.*\)\s*;?\s*$")
CALLED = re.compile(r"check(?:_(\w+)\s*\(|\s*\(\s*[\"'](\w+)[\"'])")


@dataclass
class ExerciseGrade:
    """The grade of one exercise: points out of `of`, and the check's parts."""

    exercise: str
    points: float
    of: int
    parts: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""  # a timeout, functions not defined, a crash of the check
    # "grader": judged in a clean process from the recorded answers; "kernel": nothing the grader
    # could judge (the check failed in the student's kernel, or nothing was recorded): 0 points
    verdict: str = "kernel"

    @property
    def feedback(self) -> str:
        if self.error:
            return self.error
        failed = [p for p in self.parts if not p["passed"]]
        if not failed:
            return ""
        hidden = " (a hidden case: the notebook's own check does not run it)" if failed[0].get("hidden") else ""
        return f"[{self.exercise}] {failed[0]['message']}{hidden}"


@dataclass
class NotebookGrade:
    notebook: str
    assignment: str | None
    exercises: list[ExerciseGrade] = field(default_factory=list)
    cell_errors: list[str] = field(default_factory=list)  # errors in the notebook's own cells
    seconds: float = 0.0

    @property
    def points(self) -> float:
        return round(sum(e.points for e in self.exercises), 2)

    @property
    def of(self) -> int:
        return sum(e.of for e in self.exercises)

    def gradescope(self) -> dict[str, Any]:
        """This grade as Gradescope's results.json: one test per exercise."""
        tests = []
        for e in self.exercises:
            failed = [p for p in e.parts if not p["passed"]]
            lines = [e.error] if e.error else []
            lines += [f"failed{' (hidden case)' if p.get('hidden') else ''}: {p['message']}" for p in failed]
            passed = len(e.parts) - len(failed)
            lines.append(f"{passed} of {len(e.parts)} parts passed" if e.parts else "no part was checked")
            lines.append(
                "judged outside your notebook's process, from its recorded answers"
                if e.verdict == "grader"
                else "scored 0 in your notebook's kernel: the check failed there before the grader could judge it"
            )
            hidden = [bool(p["passed"]) for p in e.parts if p.get("hidden")]
            if hidden:
                note = f"of them hidden cases, run by the grader only: {sum(hidden)} of {len(hidden)} passed"
                lines.append(note)
            test = {"name": e.exercise, "score": e.points, "max_score": e.of, "output": "\n".join(lines)}
            tests.append({**test, "visibility": "visible"})
        output = "\n".join(self.cell_errors) or "graded in a fresh kernel; every exercise is listed below"
        return {
            "score": self.points,
            "output": output,
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": tests,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "notebook": self.notebook,
            "assignment": self.assignment,
            "points": self.points,
            "of": self.of,
            "seconds": round(self.seconds, 1),
            "cell_errors": self.cell_errors,
            "exercises": [
                {k: getattr(e, k) for k in ("exercise", "points", "of", "error", "verdict", "parts")}
                for e in self.exercises
            ],
        }


# --- Which assignment, which cells ---
def assignments() -> dict[str, list[Exercise]]:
    return {a: exercises_of(a) for a in ASSIGNMENTS}


def checks_file() -> str:
    """The path of bertlab/exercises/__init__.py, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("bertlab.exercises")
    if spec is None or not spec.origin:
        raise RuntimeError("bertlab.exercises not found: is bertlab installed in this environment?")
    return spec.origin


def find_assignment(nb: nbformat.NotebookNode, filename: str) -> str | None:
    """The notebook's assignment: its metadata, else the longest assignment name in the file
    name, else the one whose checks it calls most."""
    known = assignments()
    meta = nb.metadata.get("bertlab", {}).get("assignment")
    if meta in known:
        return meta
    in_name = [a for a in known if a in filename]
    if in_name:
        return max(in_name, key=len)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    called = {a or b for a, b in CALLED.findall(code)}
    scores = {a: len(called & {e.name for e in exs}) for a, exs in known.items()}
    best = max(scores, key=scores.get) if scores else None
    return best if best and scores[best] else None


def is_check_cell(cell: nbformat.NotebookNode) -> bool:
    """A cell that only calls checks, or nbgrader's locked "autograder tests" cell."""
    nbg = cell.metadata.get("nbgrader", {})
    if nbg.get("grade") and not nbg.get("solution"):
        return True
    lines = [ln for ln in cell.source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return bool(lines) and all(CHECK_LINE.match(ln) for ln in lines)


def _grader_cell(ex: Exercise, module_name: str, out: Path, memory_mb: int | None = None) -> str:
    return (
        "import importlib.util as _bl_iu, sys as _bl_sys\n"
        f"_bl_name = {module_name!r}\n"
        "if _bl_name not in _bl_sys.modules:\n"
        f"    _bl_spec = _bl_iu.spec_from_file_location(_bl_name, {checks_file()!r}, "
        f"submodule_search_locations=[{str(Path(checks_file()).parent)!r}])\n"
        "    _bl_mod = _bl_iu.module_from_spec(_bl_spec)\n"
        "    _bl_sys.modules[_bl_name] = _bl_mod\n"
        "    _bl_spec.loader.exec_module(_bl_mod)\n"
        f"_bl_sys.modules[_bl_name].grade_in_kernel({ex.name!r}, {list(ex.functions)!r}, globals(), "
        f"{str(out)!r}, memory_mb={memory_mb or ex.memory_mb!r}, record={str(out.parent / (out.stem + '-record'))!r})\n"
    )


# --- Running a notebook ---
class _Kernel:
    """A fresh kernel: execute(source, timeout) -> ("ok" | "error" | "timeout" | "dead", message)."""

    def __init__(self, workdir: Path, kernel_name: str):
        from nbclient import NotebookClient

        self.nb = nbformat.v4.new_notebook()
        resources = {"metadata": {"path": str(workdir)}}
        self.client = NotebookClient(
            self.nb, timeout=60, allow_errors=True, kernel_name=kernel_name, resources=resources
        )
        self._ctx = self.client.setup_kernel()
        self._ctx.__enter__()

    def execute(self, source: str, timeout: int) -> tuple[str, str]:
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        self.client.timeout = timeout
        try:
            self.client.execute_cell(cell, len(self.nb.cells) - 1)
        except CellTimeoutError:
            return "timeout", f"timeout: still running after {timeout} s"
        except DeadKernelError:
            return "dead", "the kernel died (a crash, or the notebook exited Python)"
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if errors:
            return "error", f"{errors[0].get('ename')}: {errors[0].get('evalue')}"[:300]
        return "ok", ""

    def close(self) -> None:
        try:
            self._ctx.__exit__(None, None, None)
        except Exception:
            pass


def grade_notebook(
    path: str | Path,
    assignment: str | None = None,
    timeout: int | None = None,
    cell_timeout: int = 120,
    kernel_name: str = "python3",
    memory_mb: int | None = None,
) -> NotebookGrade:
    """Grade one notebook; `timeout` (s) and `memory_mb` override every exercise's own limits,
    `cell_timeout` limits each of the notebook's cells."""
    path = Path(path)
    t0 = time.monotonic()
    nb = nbformat.read(path, as_version=4)
    named = nb.metadata.get("bertlab", {}).get("assignment")  # the editions handed out carry it
    assignment = assignment or find_assignment(nb, path.name)
    grade = NotebookGrade(path.name, assignment)
    if named and assignment and named != assignment:  # graded as asked, but it says it is another one
        grade.cell_errors.append(
            f"this notebook is assignment {named} (its metadata), graded here as {assignment}: "
            f"was it submitted to the wrong assignment?"
        )
    if assignment is None:
        grade.cell_errors.append(
            "no assignment found: name the file after it (e.g. alice_02_attention.ipynb) or pass --assignment"
        )
        return grade
    todo = list(assignments()[assignment])
    if not todo:  # a project (the capstone): graded from its submission folder, not in a kernel
        grade.cell_errors += [
            f"{assignment} has no checks to run here: grade its submission folder with {p.grader}"
            for p in projects_of(assignment)
        ]
    cells = [c.source for c in nb.cells if c.cell_type == "code" and c.source.strip() and not is_check_cell(c)]
    skip: set[int] = set()  # the notebook's cells that timed out or killed the kernel once
    module_name = f"_bertlab_grading_{secrets.token_hex(6)}"
    with tempfile.TemporaryDirectory(prefix="bertlab-grade-") as tmp:
        runs = 0
        while todo:
            runs += 1  # a fresh kernel in a fresh folder each time (after a timeout or a death)
            workdir = Path(tmp) / f"run{runs}"
            workdir.mkdir()
            kernel = _Kernel(workdir, kernel_name)
            try:
                restart = False
                for i, source in enumerate(cells):
                    if i in skip:
                        continue
                    status, message = kernel.execute(source, cell_timeout)
                    if status != "ok" and f"cell {i}: {message}" not in grade.cell_errors:
                        grade.cell_errors.append(f"cell {i}: {message}")
                    if status in ("timeout", "dead"):
                        skip.add(i)
                        restart = True
                        break
                if restart:
                    continue
                while todo:
                    ex = todo.pop(0)
                    limit = timeout or ex.timeout
                    out = Path(tmp) / f"{ex.name}-{secrets.token_hex(4)}.json"
                    status, message = kernel.execute(_grader_cell(ex, module_name, out, memory_mb), limit)
                    grade.exercises.append(_read_result(ex, out, status, message, limit))
                    if status in ("timeout", "dead"):
                        break  # a fresh kernel for the rest
            finally:
                kernel.close()
    grade.seconds = time.monotonic() - t0
    return grade


def replay(ex: Exercise, record: str, timeout: int) -> dict[str, Any]:
    """Judge `ex` from the kernel's record in a fresh Python process (bertlab.exercises.replay)."""
    with tempfile.TemporaryDirectory(prefix="bertlab-replay-") as tmp:
        out = Path(tmp) / "verdict.json"
        cmd = [sys.executable, "-m", "bertlab.exercises", "replay", ex.name, record, str(out), *ex.functions]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"error": f"[{ex.name}] judging the recorded answers took more than {timeout} s"}
        if run.returncode != 0 or not out.exists():
            return {"error": f"[{ex.name}] judging the recorded answers failed: {run.stderr.strip()[-300:]}"}
        return json.loads(out.read_text())


def _read_result(ex: Exercise, out: Path, status: str, message: str, timeout: int = 120) -> ExerciseGrade:
    if status in ("timeout", "dead"):
        return ExerciseGrade(ex.name, 0.0, ex.points, error=f"[{ex.name}] {message}")
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError):
        return ExerciseGrade(
            ex.name, 0.0, ex.points, error=f"[{ex.name}] the check did not report a result ({message or 'no file'})"
        )
    verdict = "kernel"
    if data.get("record") and data.get("parts"):  # judged again outside the student's process
        judged = replay(ex, data["record"], timeout)
        if "unreplayable" in judged:
            data = _not_judged(ex, judged["unreplayable"])
        else:
            data, verdict = judged, "grader"
    elif any(p.get("passed") for p in data.get("parts", [])):  # the kernel's passes alone: not trusted
        data = _not_judged(ex, data.get("unreplayable") or "no record")
    parts = data.get("parts", [])
    fraction = sum(bool(p["passed"]) for p in parts) / len(parts) if parts else 0.0
    return ExerciseGrade(ex.name, round(ex.points * fraction, 2), ex.points, parts, data.get("error", ""), verdict)


def _not_judged(ex: Exercise, why: str) -> dict[str, Any]:
    return {
        "error": (
            f"[{ex.name}] not graded: the notebook's answers could not be recorded as data for the grader "
            f"({why}), and the verdict of its own kernel is not trusted; return tensors, numbers, strings, lists "
            "or dicts from your functions"
        )[:500],
        "parts": [],
    }


def grade_folder(
    folder: str | Path,
    out: str | Path | None = None,
    timeout: int | None = None,
    assignment: str | None = None,
    verbose: bool = True,
    memory_mb: int | None = None,
) -> list[NotebookGrade]:
    """Grade every .ipynb in `folder`; write grades.csv (a row per notebook), grades.json (every
    check's parts) and gradescope/ there, or at `out`. Each notebook is graded from a private
    copy read beforehand, so one that deletes files takes nothing from another's grade."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: give the folder of submitted notebooks")
    paths = sorted(p for p in folder.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no .ipynb files in {folder}: collect the submitted notebooks there")
    submitted: dict[str, bytes | OSError] = {}
    for p in paths:
        try:
            submitted[p.name] = p.read_bytes()
        except OSError as err:
            submitted[p.name] = err
    grades = []
    copies = Path(tempfile.mkdtemp(prefix="bertlab-submissions-"))
    for name, content in submitted.items():
        p = copies / name
        try:
            if isinstance(content, OSError):
                raise content
            p.write_bytes(content)
            g = grade_notebook(p, assignment=assignment, timeout=timeout, memory_mb=memory_mb)
        except (ValueError, OSError, UnicodeDecodeError, nbformat.ValidationError) as err:
            # not JSON, not a notebook, unreadable: reported in its own row; the others are graded
            why = f"not a readable notebook ({type(err).__name__}: {str(err)[:200]})"
            g = NotebookGrade(name, None, cell_errors=[f"{why}; ask for the .ipynb file as saved by Jupyter"])
        grades.append(g)
        if verbose:
            print(f"{name}: {g.assignment or '?'} {g.points:g}/{g.of} in {g.seconds:.0f} s")
            for e in g.exercises:
                feedback = f"  {e.feedback[:150]}" if e.feedback else ""
                print(f"  {e.exercise}: {e.points:g}/{e.of}{feedback}")
    shutil.rmtree(copies, ignore_errors=True)
    target = Path(out) if out else folder / "grades.csv"
    target.parent.mkdir(parents=True, exist_ok=True)  # a submission may have deleted the folder
    names = [n for n in EXERCISES if any(e.exercise == n for g in grades for e in g.exercises)]
    with open(target, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["notebook", "assignment", *names, "points", "of", "errors", "feedback"])
        for g in grades:
            by = {e.exercise: e for e in g.exercises}
            points = [by[n].points if n in by else "" for n in names]
            errors = " | ".join(g.cell_errors)[:500]
            feedback = " | ".join(e.feedback for e in g.exercises if e.feedback)[:1000]
            w.writerow([g.notebook, g.assignment or "", *points, g.points, g.of, errors, feedback])
    target.with_suffix(".json").write_text(json.dumps([g.to_dict() for g in grades], indent=1) + "\n")
    gradescope = target.parent / "gradescope"  # one results.json per submission, Gradescope's format
    for g in grades:
        (gradescope / Path(g.notebook).stem).mkdir(parents=True, exist_ok=True)
        (gradescope / Path(g.notebook).stem / "results.json").write_text(json.dumps(g.gradescope(), indent=1) + "\n")
    if verbose:
        print(f"wrote {target}, {target.with_suffix('.json')} and {gradescope}/<notebook>/results.json")
    return grades


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m grader", description="grade submitted exercise notebooks in fresh kernels"
    )
    p.add_argument("folder", help="a folder of submitted .ipynb files")
    p.add_argument("--out", help="CSV path (default: <folder>/grades.csv)")
    p.add_argument("--timeout", type=int, help="seconds allowed to each exercise's check (default: its own limit)")
    p.add_argument("--assignment", choices=sorted(assignments()), help="grade every notebook as this assignment")
    p.add_argument(
        "--memory-mb", type=int, help="MB each exercise's check may allocate (default: its own limit, 2,048)"
    )
    args = p.parse_args(argv)
    grade_folder(args.folder, args.out, args.timeout, args.assignment, memory_mb=args.memory_mb)
