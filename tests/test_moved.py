"""The old flat import paths (bertlab.pretrain, `from bertlab import reference`, ...) still work
for one term, warn with the new path, and give the very module at the new path; the book itself
uses only the new paths."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bertlab
from bertlab.course import TABLE_NAMES
from bertlab.moved import LEFT, MOVED

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_gives_the_new_module_with_a_warning(old):
    sys.modules.pop(old, None)
    with pytest.warns(FutureWarning, match=re.escape(f"{old} has moved to {MOVED[old]}")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__name__ == MOVED[old]
    # no file at the old path shadows the table
    assert not (REPO / (old.replace(".", "/") + ".py")).exists()


def test_student_style_imports_work_in_a_fresh_interpreter():
    """What a notebook handed out before the move writes: `from bertlab import X` and
    `from bertlab.X import name`, in a new process (nothing imported yet)."""
    code = (
        "import warnings; warnings.simplefilter('error', FutureWarning)\n"
        "try:\n    from bertlab import reference\nexcept FutureWarning as w:\n    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        "from bertlab import reference, squad\nfrom bertlab.pretrain import PretrainConfig\n"
        "from bertlab.task_inputs import collate\n"
        "import bertlab.experiments.reference as r\nimport bertlab.training.pretrain as p\n"
        "print(reference is r, PretrainConfig is p.PretrainConfig)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("warned: bertlab.reference has moved to bertlab.experiments.reference")
    assert lines[1] == "True True"


def test_unknown_names_still_fail():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("bertlab.no_such_module")
    with pytest.raises(ImportError):
        exec("from bertlab import no_such_module", {})


def test_the_book_and_the_package_use_the_new_paths():
    old = "|".join(re.escape(name.split(".", 1)[1]) for name in MOVED)
    pattern = re.compile(rf"\bbertlab\.({old})\b(?![\w.]*\s*has moved)|from bertlab import [^\n]*\b({old})\b")
    found = []
    files = [
        *REPO.glob("book/**/*.ipynb"),
        *REPO.glob("lab/**/*.ipynb"),
        *REPO.glob("lab/**/*.py"),
        *REPO.glob("bertlab/**/*.py"),
        *REPO.glob("tests/*.py"),
        *REPO.glob("scripts/*.py"),
    ]
    for path in files:
        if path.name in ("moved.py", "test_moved.py"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        found += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not found, "old import paths (see bertlab.moved):\n  " + "\n  ".join(found[:20])
    assert bertlab.__version__


@pytest.mark.parametrize("old", sorted(LEFT))
def test_a_module_that_left_the_package_names_its_new_home(old):
    """bertlab.experiments.speed and finetune_speed moved to the lab (lab/, not installed): both ways
    of importing the old name stop with an ImportError that names the new module and how to import it."""
    new = LEFT[old]
    parent, name = new.rsplit(".", 1)
    sys.modules.pop(old, None)
    with pytest.raises(ImportError, match=re.escape(f"it is {new} now")) as raised:
        importlib.import_module(old)
    assert f"from {parent} import {name}" in str(raised.value) and raised.value.name == old
    package, leaf = old.rsplit(".", 1)
    with pytest.raises(ImportError, match=re.escape(f"{old} has left the package")):
        exec(f"from {package} import {leaf}", {})
    assert old not in sys.modules
    assert not (REPO / (old.replace(".", "/") + ".py")).exists()
    assert (REPO / (new.replace(".", "/") + ".py")).exists()  # its new home, from a checkout


def test_the_grader_that_left_names_its_own_folder():
    """The grader left for grader/, not the lab: the message names the folder the new module is in."""
    from bertlab.moved import left_message

    for old in ("bertlab.course.grading", "bertlab.grading"):
        message = left_message(old)
        assert "it is grader.grading now, in grader/ at the top of a checkout" in message
        assert "lab/" not in message and message.endswith("write `from grader import grading`.")
    assert "in lab/ at the top of a checkout" in left_message("bertlab.experiments.speed")


def test_the_course_table_that_left_names_grader_course(tmp_path):
    """The course table left for grader/course.py: importing one of its names from bertlab.course
    stops with an ImportError saying where it is, other unknown names are AttributeErrors, and the
    capstone's grader (which students' capstone notebook imports) stays and needs no grader/."""
    import bertlab.course
    from grader import course

    assert TABLE_NAMES == {n for n in vars(course) if not n.startswith("_")} - {"annotations", "dataclass"}
    for name in sorted(TABLE_NAMES):
        with pytest.raises(ImportError, match=re.escape(f"it is grader.course.{name} now")) as raised:
            exec(f"from bertlab.course import {name}", {})
        assert str(raised.value).endswith(f"write `from grader.course import {name}`.")
        assert raised.value.name == "bertlab.course"
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        bertlab.course.no_such_name  # noqa: B018
    code = "import sys\nfrom bertlab.course import capstone\nprint(capstone.main.__name__, 'grader' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["main", "False"]


def test_nothing_uses_the_paths_that_left():
    table = "|".join(sorted(TABLE_NAMES))
    pattern = re.compile(
        "|".join(re.escape(old) for old in LEFT)
        + r"|from bertlab\.experiments import [^\n]*\b(speed|finetune_speed|ablations)\b"
        + r"|from bertlab import [^\n]*\b(ablations|grading)\b"
        + rf"|from bertlab\.course import [^\n]*\b(grading|{table})\b"
    )
    files = [*REPO.glob("book/**/*.ipynb"), *REPO.glob("lab/**/*.ipynb"), *REPO.glob("lab/**/*.py")]
    files += [*REPO.glob("grader/*.py")]
    files += [*REPO.glob("bertlab/**/*.py"), *REPO.glob("tests/*.py"), *REPO.glob("scripts/*.py")]
    found = []
    for path in files:
        if path.name in ("moved.py", "test_moved.py"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        found += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not found, "imports of modules that left bertlab (see bertlab.moved.LEFT):\n  " + "\n  ".join(found)
