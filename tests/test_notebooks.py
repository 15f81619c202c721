"""The chapters as files: what must hold for every notebook in book/ (and the lab notebook's pages in
lab/notebook/) before the book is built.

- committed with outputs stripped (no outputs, no execution counts, no saved widget state):
  the book build executes every chapter, so outputs in git would only be stale copies;
- the first code cell is the agreed install/setup cell, so every chapter runs on Colab as is;
- no code line is longer than the rendered page shows (88 characters);
- the table of contents and the folders agree: every listed file exists and every notebook in
  book/ and lab/notebook/ is listed (only_build_toc_files would silently leave an unlisted chapter out);
- every {cite} key used in the book exists in book/references.bib.
These read files only; they take well under a second.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
# The lab notebook's pages (the book's "Lab notebook" part), served from lab/ beside the package.
LAB_PAGES = ROOT / "lab" / "notebook"
# The chapters, the exercise notebooks (book/exercises/) and the lab pages, under the same rules.
NOTEBOOKS = sorted(
    p for folder in (BOOK, LAB_PAGES) for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
)


def _id(path: Path) -> str:
    """A notebook's test id: its path under book/ (as before the lab pages), else under the root."""
    return str(path.relative_to(BOOK if BOOK in path.parents else ROOT))


def _install_line_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("set_install_line", ROOT / "scripts" / "set_install_line.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INSTALL = _install_line_script()
# the setup cell, its install line written from the repository URL in _config.yml
SETUP_CELL = INSTALL.setup_cell(INSTALL.repository_url())


def _toc_files(entries) -> list[str]:
    files = []
    for entry in entries or []:
        if "file" in entry:
            files.append(entry["file"])
        for key in ("chapters", "sections", "parts"):
            files += _toc_files(entry.get(key))
    return files


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + _toc_files(toc.get("parts")) + _toc_files(toc.get("chapters"))


def _resolve(entry: str) -> list[Path]:
    return [p for p in (ROOT / f"{entry}.ipynb", ROOT / f"{entry}.md") if p.exists()]


def test_there_are_chapters():
    assert NOTEBOOKS, f"no notebooks found in {BOOK}"
    assert any(LAB_PAGES in p.parents for p in NOTEBOOKS), f"no lab pages found in {LAB_PAGES}"


def test_the_lab_pages_find_the_lab():
    """The lab (lab/) is not installed with bertlab: a lab page's second code cell, hidden, puts the
    checkout that holds it on sys.path, from the page's own folder (where the book build runs it)."""
    import subprocess
    import sys

    for path in sorted(LAB_PAGES.glob("*.ipynb")):
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        finder = code[1]
        assert "remove-cell" in finder.metadata.get("tags", []) and "lab/ is not installed" in finder.source
        check = finder.source + "\nimport lab\nprint(lab.__file__)"
        out = subprocess.run([sys.executable, "-c", check], cwd=path.parent, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == str(ROOT / "lab" / "__init__.py")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_notebook_is_stripped(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    ids = [c.get("id") for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]  # as committed
    without = [i for i, x in enumerate(ids) if not x]
    assert not without and len(set(ids)) == len(ids), (
        f"{path.name}: every cell needs an id of its own (cells {without} have none; `nbformat.validator.normalize`)"
    )
    dirty = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} carry outputs or execution counts; strip them before "
        f"committing (e.g. `jupyter nbconvert --clear-output --inplace {path.relative_to(ROOT)}`)"
    )
    assert "widgets" not in nb.metadata, (
        f"{path.name}: notebook metadata holds saved ipywidgets state; clear it "
        f"(del nb.metadata['widgets']) before committing"
    )


# The longest code line a rendered page shows in a 1280-pixel window without scrolling sideways
# (book/_static/bertlab.css makes room for it; tests/test_browser.py checks the built pages).
MAX_CODE_LINE = 88


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_code_lines_fit_the_page(path: Path):
    nb = nbformat.read(path, as_version=4)
    long = [
        (i, len(line), line.strip()[:60])
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for line in c.source.splitlines()
        if len(line) > MAX_CODE_LINE
    ]
    assert not long, (
        f"{path.name}: {len(long)} code lines longer than {MAX_CODE_LINE} characters scroll "
        f"sideways on the page; wrap them. (cell, length, start): {long[:10]}"
    )


# A hidden cell longer than this holds analysis or drawing that belongs in a tested library
# function (bertlab.analysis.viz, bertlab.analysis.diagrams, ...): the chapter keeps the call and
# its sentence template. Import statements, comments and blank lines do not count: an imports cell
# may be hidden whatever its length.
MAX_HIDDEN_CELL = 30


def computation_lines(source: str) -> int:
    """The lines of a code cell that compute: neither blank, nor comments, nor part of an import."""
    lines = source.splitlines()
    imports = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.update(range(node.lineno, node.end_lineno + 1))
    return sum(
        1 for n, line in enumerate(lines, 1) if n not in imports and line.strip() and not line.strip().startswith("#")
    )


def test_computation_lines_leave_out_imports_and_comments():
    cell = "import os\nfrom a import (\n    b,\n)\n\n# why\nx = 1\nprint(x)  # shown\n"
    assert computation_lines(cell) == 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_hidden_cells_stay_short(path: Path):
    nb = nbformat.read(path, as_version=4)
    hidden = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
    long = [
        (i, computation_lines(c.source), c.source.splitlines()[0][:50])
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        and hidden & set(c.metadata.get("tags", []))
        and computation_lines(c.source) > MAX_HIDDEN_CELL
    ]
    assert not long, (
        f"{path.name}: {len(long)} hidden code cells longer than {MAX_HIDDEN_CELL} lines; move "
        f"their computation into a tested bertlab function. (cell, lines, start): {long}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_first_code_cell_is_the_setup_cell(path: Path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cell"
    first = code[0].source.strip()
    assert first == SETUP_CELL, (
        f"{path.name}: the first code cell must be exactly the agreed setup cell:\n{SETUP_CELL}\n"
        f"--- found ---\n{first}\n(python scripts/set_install_line.py writes it from _config.yml)"
    )


def test_a_failed_install_stops_the_notebook_with_one_message(monkeypatch):
    """Where pip cannot install bertlab, the setup cell stops there, naming the problem, instead of
    running on into a ModuleNotFoundError under pip's output."""
    import sys

    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(SETUP_CELL)  # %pip becomes get_ipython().run_line_magic
    asked = []

    class Shell:
        def run_line_magic(self, name, line):
            asked.append((name, line))  # pip "fails": nothing gets installed

    monkeypatch.setitem(sys.modules, "bertlab", None)  # import bertlab raises ImportError
    with pytest.raises(SystemExit, match="bertlab did not install"):
        exec(code, {"get_ipython": Shell})
    assert asked and asked[0][0] == "pip" and "bertlab[book] @ git+" in asked[0][1]


def test_the_install_line_follows_the_repository_setting(tmp_path):
    """A fork changes the repository URL in _config.yml once; the script rewrites every notebook's
    install line, and --check fails until it has."""
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://github.com/someone/fork/\n")
    url = INSTALL.repository_url(config)
    assert url == "https://github.com/someone/fork"
    copies = []
    for path in NOTEBOOKS[:3]:
        copies.append(tmp_path / path.name)
        copies[-1].write_text(path.read_text())
    differ, missing = INSTALL.apply(copies, url, write=False)
    assert differ == copies and not missing
    differ, _ = INSTALL.apply(copies, url, write=True)
    for path in copies:
        first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert 'git+https://github.com/someone/fork"' in first.source
    assert INSTALL.apply(copies, url, write=False) == ([], [])
    config.write_text("title: no repository\n")
    with pytest.raises(ValueError, match="repository url"):
        INSTALL.repository_url(config)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_notebook_starts_with_a_title(path: Path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells and nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# "), (
        f"{path.name}: the first cell must be a markdown cell starting with '# <chapter title>' "
        f"(the book uses it as the page title)"
    )


def test_every_toc_entry_exists():
    missing = [f for f in toc_files() if not _resolve(f)]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"
    ambiguous = [f for f in toc_files() if len(_resolve(f)) > 1]
    assert not ambiguous, f"both .ipynb and .md exist for {ambiguous}; the build needs exactly one"


def test_every_notebook_is_in_the_toc():
    listed = {f.removesuffix(".ipynb").removesuffix(".md") for f in toc_files()}
    unlisted = [str(p.relative_to(ROOT)) for p in NOTEBOOKS if str(p.relative_to(ROOT).with_suffix("")) not in listed]
    assert not unlisted, (
        f"notebooks in book/ or lab/notebook/ missing from _toc.yml (they would not be built): {unlisted}"
    )


def test_cited_keys_exist():
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", (BOOK / "references.bib").read_text(), re.M))
    assert len(keys) >= 24
    sources = {
        p.name: "\n".join(c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "markdown")
        for p in NOTEBOOKS
    }
    sources.update({p.name: p.read_text() for p in BOOK.rglob("*.md")})
    unknown = {}
    for name, text in sources.items():
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text):
            for key in (k.strip() for k in group.split(",")):
                if key not in keys:
                    unknown.setdefault(name, []).append(key)
    assert not unknown, f"citation keys not in book/references.bib: {unknown}"


def test_the_records_full_banner_appears_once():
    """The recorded run's full banner (`label()`: machine, commit, wall time) is shown where the
    record is made, chapter 10; every other page prints the short reminder (`short_label()`)."""
    shown = {}
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        if re.search(r"\.label\(\)", code):
            shown[path.name] = True
    assert list(shown) == ["10_pretraining.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_self_checks_ask_the_reader_to_compute_or_predict(path: Path):
    """A chapter's "Check yourself" asks for more than recall: at least one question has the reader
    compute or predict something (marked **Compute.** or **Predict.**), with its answer folded."""
    nb = nbformat.read(path, as_version=4)
    checks = [c.source for c in nb.cells if c.cell_type == "markdown" and "## Check yourself" in c.source]
    if not checks:
        pytest.skip("no self-check on this page")
    questions = re.split(r"^\d+\. ", checks[0], flags=re.M)[1:]
    asking = [q for q in questions if q.startswith(("**Compute.**", "**Predict.**"))]
    assert asking, f"{path.name}: no self-check question asks the reader to compute or predict"
    for q in asking:
        assert ":::{admonition} Answer" in q and ":class: dropdown" in q, f"{path.name}: the answer is not folded"
