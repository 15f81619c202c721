"""A chapter as a Colab reader runs it: bertlab installed with pip from git (not a checkout), the
notebook alone in an empty folder, the book's records fetched by their manifest.

Offline like CI: the fresh virtual environment borrows the libraries of the project's environment
(a path file), pip installs bertlab from a git clone of this checkout (`git+file://`, no
dependencies), and `BERTLAB_RECORDS_URL` names a folder `python -m lab.publish_records` wrote,
standing in for the repository's raw files. Chapter 11 is the chapter that failed there: the
book's own BERT never appeared, and the page said "Pending". It runs its GPU branch at tiny
sizes (BERTLAB_GPU_BRANCH=1), what a Colab reader with a GPU runs: the book build already runs
its CPU branch, and what differs on Colab (the install, the records) is the same for both.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "11_finetuning_sst2.ipynb"
# what a page must never show when the repository holds the record it stands in for
FORBIDDEN = ("stand-in", "Pending", "could not be fetched", "holds no recorded reference run")


def _run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _outputs(nb) -> str:
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text.append(out.get("text", ""))
            for kind in ("text/plain", "text/markdown"):
                text.append(out.get("data", {}).get(kind, ""))
    return "\n".join(text)


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """A fresh virtual environment with bertlab installed from git, and a published records folder."""
    if shutil.which("git") is None or subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"]).returncode:
        pytest.skip("needs git and a git checkout")
    tmp = tmp_path_factory.mktemp("colab")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    # the libraries (torch, transformers, nbclient...) of the project's environment, offline; not its
    # bertlab, whose editable-install hook is a .pth file that a plain path entry does not run
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation"]
        + [f"bertlab @ git+file://{ROOT}"]
    )
    records = tmp / "records"
    _run([sys.executable, "-m", "lab.publish_records", "--out", str(records)], cwd=ROOT)  # the lab, from the root
    return {"venv": venv, "python": python, "records": records}


def run_chapter(colab, work: Path, records_url: str) -> str:
    """Chapter 11 alone in the empty folder `work`, in the Colab environment; what it showed."""
    work.mkdir()
    shutil.copy(CHAPTER, work / CHAPTER.name)
    check = work / "check.py"
    check.write_text(
        textwrap.dedent(
            f"""
            import nbformat
            from nbclient import NotebookClient

            nb = nbformat.read({CHAPTER.name!r}, as_version=4)
            nb.cells.append(nbformat.v4.new_code_cell(
                "import bertlab, json\\n"
                "from bertlab.data import records\\n"
                "print('WHERE', json.dumps([bertlab.__file__, str(records.checkout_records())]))"
            ))
            try:
                where = {{"metadata": {{"path": "."}}}}
                NotebookClient(nb, timeout=1800, kernel_name="python3", resources=where).execute()
            finally:
                nbformat.write(nb, "executed.ipynb")
            """
        )
    )
    env = {**os.environ, "BERTLAB_RECORDS_URL": records_url, "BERTLAB_CACHE": str(work / "cache")}
    env["BERTLAB_GPU_BRANCH"] = "1"
    env.pop("BERTLAB_RECORDS", None)
    env.pop("PYTHONPATH", None)
    done = subprocess.run([colab["python"], check.name], cwd=work, env=env, capture_output=True, text=True)
    executed = work / "executed.ipynb"
    shown = _outputs(nbformat.read(executed, as_version=4)) if executed.exists() else ""
    assert done.returncode == 0, f"chapter 11 raised on the Colab path:\n{done.stderr[-4000:]}"
    where = json.loads(next(line for line in shown.splitlines() if line.startswith("WHERE "))[6:])
    assert str(colab["venv"]) in where[0] and where[1] == "None", f"bertlab ran from {where[0]}, records {where[1]}"
    return shown


def test_chapter_11_on_colab_uses_the_books_own_bert(colab, tmp_path):
    shown = run_chapter(colab, tmp_path / "content", str(colab["records"]))
    assert "the book's own BERT" in shown
    found = [word for word in FORBIDDEN if word in shown]
    assert not found, f"chapter 11 on the Colab path shows {found}"


def test_chapter_11_without_its_records_says_so_and_carries_on(colab, tmp_path):
    """Offline, or the repository unreachable: the page says in one line that the records could not
    be fetched, runs on another encoder, and no sentence credits the book's BERT with its numbers."""
    shown = run_chapter(colab, tmp_path / "content", "http://127.0.0.1:9/")  # nothing listens there
    assert "could not be fetched here" in shown
    assert "stand-in" not in shown and "Pending" not in shown
    assert "points from the book's BERT" not in shown and "points from all-MiniLM-L6-v2" in shown
