#!/usr/bin/env python
"""Generate the student edition of the exercise notebooks from the instructor edition.

    python scripts/make_student_edition.py --out student/            # all of book/exercises/
    python scripts/make_student_edition.py --out student/ --zip      # and student.zip beside it
    python scripts/make_student_edition.py --book _build/student_src  # the student book's sources

The instructor edition (book/exercises/*.ipynb) is the one source of truth. In it:
- a solution is the code between `### BEGIN SOLUTION` and `### END SOLUTION` lines inside a
  function body (nbgrader's markers); here it becomes
  `raise NotImplementedError("<function>: your code here")`, keeping the signature and docstring;
- a markdown cell tagged "model-answer" (an open question's model answer and its grading
  rubric) becomes an empty "Your answer" cell;
- a cell tagged "instructor-only" (a note about the instructor edition) is left out;
- outputs, execution counts and the book-only tags ("solution", "hide-input") are removed;
- the notebook's metadata names its assignment (`bertlab.assignment`), which is how the grader
  (`python -m grader`, grader/ in a checkout) knows which checks to run, whatever the file is renamed to.
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
sys.path.insert(0, str(ROOT))  # the checkout's grader/ (not installed), for its course table
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


# ------------------------------------------------------------------------------------------------
# The student book: the course page and the exercises, from the same sources, without solutions
# ------------------------------------------------------------------------------------------------
INSTRUCTOR_BLOCK = re.compile(r"<!-- instructor-only -->.*?<!-- /instructor-only -->\n?", re.S)
LINK = re.compile(r"\]\(((?!https?:|#|mailto:)[^)\s]+?\.(?:ipynb|md))(#[^)]*)?\)")


def student_page(text: str) -> str:
    """A markdown page of the instructor edition with its instructor-only blocks removed."""
    if text.count("<!-- instructor-only -->") != text.count("<!-- /instructor-only -->"):
        raise SystemExit("instructor.md: every <!-- instructor-only --> needs its <!-- /instructor-only -->")
    return INSTRUCTOR_BLOCK.sub("", text)


def relink(text: str, page: Path, book: Path, repo_url: str) -> str:
    """Links from `page` (a path inside `book`, the student source) to chapters the student book
    does not have point at the chapter's notebook in the public repository instead."""

    def fix(m: re.Match) -> str:
        target = (page.parent / m.group(1)).resolve()
        if target.exists():
            return m.group(0)
        # the student source mirrors the repository's layout (book/, book/exercises/)
        rel = (ROOT / page.parent.relative_to(book.parent) / m.group(1)).resolve().relative_to(ROOT)
        return f"]({repo_url}/{rel.as_posix()}{m.group(2) or ''})"

    return LINK.sub(fix, text)


STUDENT_INTRO = """# {title}

These are the exercises of *bertlab: BERT, built from the paper*, for students. Each assignment
is a Jupyter notebook: download it (the download button at the top of its page, as `.ipynb`),
open it in Jupyter or upload it to Colab, write the missing code, and run the check below each
exercise; it says what is wrong and where. The chapters each assignment follows are in the book
itself; the links point there.

[The course page](instructor.md) lists the assignments, their points and the time they take,
and how they are graded.
"""


def build_student_book(out: Path) -> Path:
    """Write the sources of the student book into `out` (emptied first): its own _config.yml
    (notebooks not executed: they are the student edition, whose checks fail until solved) and
    _toc.yml, the course page without its instructor-only blocks, the student notebooks. Build it
    with `jupyter-book build <out> --path-output <dir> -W -n --keep-going`."""
    import yaml

    from grader.course import ASSIGNMENTS

    if out.exists():
        shutil.rmtree(out)
    (out / "book" / "exercises").mkdir(parents=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config.get("repository", {})
    repo_url = f"{repo.get('url', '').rstrip('/')}/blob/{repo.get('branch', 'main')}"
    title = f"{config['title']}: the exercises"
    config.update(title=title, only_build_toc_files=True, exclude_patterns=["_build/*", "**.ipynb_checkpoints"])
    config["execute"] = {"execute_notebooks": "off"}
    # No launch buttons: they would open the repository's copy of a notebook, the instructor
    # edition; the download button gives the student notebook of this site.
    config.pop("launch_buttons", None)
    (out / "_config.yml").write_text(
        "# Generated by scripts/make_student_edition.py --book: do not edit.\n"
        + yaml.safe_dump(config, sort_keys=False)
    )
    toc = {
        "format": "jb-book",
        "root": "book/intro",
        "parts": [
            {
                "caption": "Exercises",
                "chapters": [{"file": "book/instructor"}] + [{"file": f"book/exercises/{a}"} for a in ASSIGNMENTS],
            },
            {"caption": "Back matter", "chapters": [{"file": "book/references"}]},
        ],
    }
    (out / "_toc.yml").write_text(
        "# Generated by scripts/make_student_edition.py --book: do not edit.\n" + yaml.safe_dump(toc, sort_keys=False)
    )
    book = out / "book"
    (book / "intro.md").write_text(STUDENT_INTRO.format(title=title))
    for name in ("references.md", "references.bib"):
        shutil.copy(ROOT / "book" / name, book / name)
    shutil.copytree(ROOT / "book" / "_static", book / "_static")  # the book's CSS (_config.yml)
    vendor = ROOT / "book" / "_vendor"
    if vendor.is_dir():  # the offline MathJax and widgets, as in the public book
        (book / "_vendor").symlink_to(vendor, target_is_directory=True)
    page = book / "instructor.md"
    page.write_text(relink(student_page((ROOT / "book" / "instructor.md").read_text()), page, book, repo_url))
    for stem in ASSIGNMENTS:
        path = ROOT / "book" / "exercises" / f"{stem}.ipynb"
        nb = student_notebook(nbformat.read(path, as_version=4), path.name)
        target = book / "exercises" / path.name
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = relink(cell.source, target, book, repo_url)
        nbformat.validate(nb)
        nbformat.write(nb, target)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--out", help="folder for the student notebooks (created)")
    p.add_argument("--src", default=str(ROOT / "book" / "exercises"), help="instructor notebooks")
    p.add_argument("--zip", action="store_true", help="also write <out>.zip to hand out")
    p.add_argument(
        "--book",
        metavar="DIR",
        help="write the sources of the student book into DIR instead (scripts/build_student_book.sh builds it)",
    )
    args = p.parse_args(argv)
    if args.book:
        print(f"wrote the student book's sources to {build_student_book(Path(args.book))}")
        return 0
    if not args.out:
        p.error("give --out DIR (the student notebooks) or --book DIR (the student book's sources)")
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
