#!/usr/bin/env bash
# The student book: the course page and the exercise notebooks of the student edition, with no
# solutions and no model answers (absent from the sources, not hidden), generated from the same
# sources as the public book by scripts/make_student_edition.py. Its notebooks are not executed
# (their checks fail until a student writes the code; the public build executes the instructor
# edition), so this takes well under a minute. -W turns any warning into a failed build.
#   output: _build/student/_build/html/index.html
set -euo pipefail
cd "$(dirname "$0")/.."
python scripts/make_student_edition.py --book _build/student_src
jupyter-book build _build/student_src --path-output _build/student -W -n --keep-going
