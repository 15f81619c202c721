#!/usr/bin/env bash
# Pilots that each change one thing in a baseline run: the same data, vocabulary, seed and
# learning-rate schedule as the baseline (a fixed schedule of its number of steps), stopped after
# their first STOP steps, and recorded in data/pilots/ with their held-out curves, so the book can
# compare them step by step. The baseline is the book's first record, data/pilots/cpu-tiny-16k.json
# (the cpu recipe on the tiny size, WordPiece 16,384; its vocabulary is kept in
# data/pilots/cpu-tiny-16k-vocabulary/).
#
#   scripts/run_pilots.sh               # STOP = 1500 steps each (about 13 minutes on 2 cores)
#   scripts/run_pilots.sh 2000          # longer pilots
#   PILOTS="cpu-dropout cpu-lr-4e-3" scripts/run_pilots.sh   # only these
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/run_env.sh
STOP=${1:-1500}
BASE=${BASE:-cpu-tiny-16k}  # the baseline's pilot file (data/pilots/$BASE.json) and vocabulary
TOTAL=$("$PY" -c "import json; print(json.load(open('data/pilots/$BASE.json'))['heldout'][-1]['step'])")
common=(--preset tiny --recipe cpu --corpus books+wiki --tokenizer "data/pilots/$BASE-vocabulary/tokenizer.json" --seed 0
        --steps "$TOTAL" --stop-after "$STOP" --eval-every 250 --eval-batches 20
        --checkpoint-every 100000 --log-every 50 --no-progress)
PILOTS=${PILOTS:-all}
pilot() {
    local name=$1 change=$2
    shift 2
    if [ "$PILOTS" != all ] && [[ " $PILOTS " != *" $name "* ]]; then return 0; fi
    echo "pilot $name: $change"
    "$PY" -m bertlab pretrain "${common[@]}" --out "runs/pilots/$name" "$@"
    "$PY" scripts/record_pilot.py "runs/pilots/$name" --name "$name" --change "$change" --baseline "$BASE"
}
pilot cpu-post-ln "the baseline run ($BASE), with post-LN layers (the paper's)" --norm-position post
pilot cpu-zero-bias "the baseline run ($BASE), with the MLM bias started at 0" --mlm-bias zeros
pilot cpu-dropout "the baseline run ($BASE), with dropout 0.1" --dropout 0.1
pilot cpu-lr-1e-3 "the baseline run ($BASE), with a peak learning rate of 1e-3 (the baseline: 2e-3)" --lr 1e-3
pilot cpu-lr-4e-3 "the baseline run ($BASE), with a peak learning rate of 4e-3 (the baseline: 2e-3)" --lr 4e-3
