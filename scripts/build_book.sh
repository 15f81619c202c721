#!/usr/bin/env bash
# Build the book with every chapter executed; -W turns any warning, a failing cell included,
# into a failed build. A build that failed only because a cell timed out (the kernel went
# silent: an intermittent Jupyter messaging fault, see the ipykernel pin in requirements.txt)
# is run once more, with a loud note, and with --all: Sphinx keeps the pages of the first attempt,
# tracebacks included, and would otherwise find nothing out of date and execute nothing again.
# Any other failure is final.
set -uo pipefail
cd "$(dirname "$0")/.."
# every notebook executed afresh, side by side, into the cache the build reads (BOOK_WORKERS=1: one
# at a time); a notebook that fails there is executed again by the build, which reports it
python scripts/execute_book.py --workers "${BOOK_WORKERS:-2}" || exit
log=$(mktemp)
trap 'rm -f "$log"' EXIT
again=()
for attempt in 1 2; do
    jupyter-book build . -W -n --keep-going "${again[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] && exit 0
    if [ "$attempt" = 1 ] && grep -q "Executing notebook failed: CellTimeoutError" "$log" \
        && ! grep -q "Executing notebook failed: CellExecutionError" "$log"; then
        echo "build_book: a cell timed out without an error of its own; building every page once more" >&2
        again=(--all)
        continue
    fi
    exit "$rc"
done
