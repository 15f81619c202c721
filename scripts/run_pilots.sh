#!/usr/bin/env bash
# Pilots that each change one thing in a baseline run: the same data, vocabulary, seed and
# learning-rate schedule as the baseline (a fixed schedule of its number of steps), stopped after
# their first STOP steps, and recorded in data/pilots/ with their held-out curves, so the book can
# compare them step by step. Two series:
#
#   SERIES=tiny (default): the baseline is the book's first record, data/pilots/cpu-tiny-16k.json
#     (the cpu recipe on the tiny size, WordPiece 16,384, 3,701 steps; its vocabulary is kept in
#     data/pilots/cpu-tiny-16k-vocabulary/).
#   SERIES=mini: the baseline is the settings of the book's second record (cpu-mini-8k-50min:
#     BERT-Mini, WordPiece 8,192 kept in data/pilots/cpu-mini-8k-vocabulary/, 15% masked, bf16 +
#     torch.compile where the CPU has bf16) on a fixed schedule of that record's 4,105 steps; the
#     series runs that baseline first (pilot cpu-mini-8k).
#
#   scripts/run_pilots.sh               # STOP = 1500 steps each (about 13 minutes on 2 cores)
#   scripts/run_pilots.sh 2000          # longer pilots
#   PILOTS="cpu-dropout cpu-lr-4e-3" scripts/run_pilots.sh   # only these
#   SERIES=size: BERT-Mini at the record's settings (WordPiece 8,192, 30% masked) for MINUTES
#     minutes (default 10) on a whole schedule, and the tiny (2/128/2) and small (4/512/8) sizes for
#     the same minutes: model size at equal wall time (the first argument is then unused); the small
#     size again at a peak lr of 1e-3, since the recipe's 2e-3 collapsed it. With MINUTES=50 the
#     baseline is the recorded run itself (data/pilots/cpu-size-mini-50min.json, made from the
#     reference run's pretrain folder with scripts/record_pilot.py), so run only the other sizes:
#     SERIES=size MINUTES=50 PILOTS=cpu-size-tiny-50min scripts/run_pilots.sh
#
#   SERIES=record5: the fifth record's settings (post-LN BERT-Mini, two segments per sequence, 30%
#     masked, phases of 64/128/256 tokens, its vocabulary kept in
#     data/pilots/cpu-mini-post-ln-pairs-phases-50min-vocabulary/) on a fixed schedule of that
#     record's 3,520 steps, each run to its end (the first argument is unused), so that it saw the
#     record's tokens at every evaluation; recorded without a baseline, since a run here may change
#     more than one thing, and read against the record at its end (pilots.same_tokens_reading).
#     About two hours each on 2 Zen 3 cores in fp32; checkpoints every 250 steps, and running the
#     same command again resumes an interrupted run. cpu-mini-2-layers-x1.71 runs 1.71 times the
#     steps with half the layers (the same CPU time), so it ends after more tokens than the record.
#
#   SERIES=record7: the seventh record's settings (REFERENCE["cpu"]: post-LN BERT-Mini, two segments
#     per sequence, 40% masked, phases of 32/64/128/256 tokens, its vocabulary kept in
#     data/pilots/cpu-mini-32-first-mask-40-50min-planned-vocabulary/) on a fixed schedule of that
#     record's 3,747 steps, whole resumable runs as in SERIES=record5, read against the record's
#     own curve (cpu-mini-32-first-mask-40-50min-planned). cpu-mini-record7-2-layers-x1.71 runs 1.71
#     times the steps with half the layers: the record's CPU time. About an hour on 2 Zen 4 cores.
#
#   SERIES=record-128: the record's settings (REFERENCE["cpu"]: post-LN BERT-Mini, two segments per
#     sequence, 40% masked, the record's own vocabulary, kept as for SERIES=record7) on
#     sequences of 128 tokens only, 64 a batch, on a fixed schedule of 3,000 steps, stopped after
#     STOP steps (default here 1,000: 8.2M token positions); then the same with 32 sequences a batch
#     on twice the steps, stopped after twice STOP (the same tokens at every evaluation, and 40
#     held-out batches of 32 so that both score the same 1,280 held-out windows): does a step of
#     half the tokens buy more per token in the record's regime? And two layers instead of four on a
#     schedule of 1.71 times the steps, stopped after 1.71 times STOP: the same CPU time (a 2/256/4
#     step runs 1.71 times as fast as a 4/256/4 one), the lever an H100 sweep read +3.5 for. About
#     15 minutes each on 2 Zen 4 cores.
#
#   SERIES=mini scripts/run_pilots.sh 1250
#   SERIES=size MINUTES=10 scripts/run_pilots.sh
#   SERIES=record5 PILOTS=cpu-mini-32-first-mask-40 scripts/run_pilots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/run_env.sh
SERIES=${SERIES:-tiny}
STOP=${1:-$([ "$SERIES" = record-128 ] && echo 1000 || echo 1500)}
PILOTS=${PILOTS:-all}
case "$SERIES" in
    tiny)
        BASE=cpu-tiny-16k
        TOTAL=$("$PY" -c "import json; print(json.load(open('data/pilots/$BASE.json'))['heldout'][-1]['step'])")
        size=(--preset tiny --tokenizer "data/pilots/$BASE-vocabulary/tokenizer.json") ;;
    mini|size)
        BASE=cpu-mini-8k
        TOTAL=$("$PY" -c "import json; print(json.load(open('data/pilots/cpu-mini-8k-50min.json'))['heldout'][-1]['step'])")
        size=(--preset mini --tokenizer data/pilots/cpu-mini-8k-vocabulary/tokenizer.json --compile) ;;
    record5)
        BASE=
        TOTAL=$("$PY" -c "import json; print(json.load(open('data/pilots/cpu-mini-post-ln-pairs-phases-50min.json'))['heldout'][-1]['step'])")
        size=(--preset mini --tokenizer data/pilots/cpu-mini-post-ln-pairs-phases-50min-vocabulary/tokenizer.json
              --compile --norm-position post --segment-pairs --phases 0.8:64:128,0.1:128:64,0.1:256:32
              --mlm-probability 0.3 --seq-len 128 --batch-size 64) ;;
    record7)
        BASE=
        TOTAL=$("$PY" -c "import json; print(json.load(open('data/pilots/cpu-mini-32-first-mask-40-50min-planned.json'))['heldout'][-1]['step'])")
        size=(--preset mini --tokenizer data/pilots/cpu-mini-32-first-mask-40-50min-planned-vocabulary/tokenizer.json
              --compile --norm-position post --segment-pairs --phases 0.5:32:256,0.3:64:128,0.1:128:64,0.1:256:32
              --mlm-probability 0.4 --seq-len 128 --batch-size 64) ;;
    record-128)
        BASE=cpu-mini-record-128
        TOTAL=3000
        size=(--preset mini --tokenizer data/pilots/cpu-mini-32-first-mask-40-50min-planned-vocabulary/tokenizer.json
              --compile --norm-position post
              --segment-pairs --mlm-probability 0.4 --seq-len 128 --batch-size 64) ;;
    *) echo "SERIES must be tiny, mini, size, record5, record7 or record-128, not $SERIES" >&2; exit 2 ;;
esac
steps_text() { "$PY" -c "print(f'{$1:,}')"; }  # 3520 -> 3,520, as the book writes counts
common=("${size[@]}" --recipe cpu --corpus books+wiki --seed 0
        --steps "$TOTAL" --stop-after "$STOP" --eval-every 250 --eval-batches 20
        --checkpoint-every 100000 --log-every 50 --no-progress)
if [ "$SERIES" = record5 ] || [ "$SERIES" = record7 ]; then  # whole runs, resumable
    common=("${size[@]}" --recipe cpu --corpus books+wiki --seed 0
            --steps "$TOTAL" --eval-every 250 --eval-batches 20
            --checkpoint-every 250 --log-every 50 --no-progress --resume)
fi
if [ "$SERIES" = size ]; then
    MINUTES=${MINUTES:-10}
    BASE=cpu-size-mini-${MINUTES}min
    common=("${size[@]}" --recipe cpu --corpus books+wiki --seed 0 --mlm-probability 0.3
            --minutes "$MINUTES" --eval-every 250 --eval-batches 20
            --checkpoint-every 100000 --log-every 50 --no-progress)
fi
pilot() {
    local name=$1 change=$2
    shift 2
    if [ "$PILOTS" != all ] && [[ " $PILOTS " != *" $name "* ]]; then return 0; fi
    echo "pilot $name: $change"
    local args=("${common[@]}")
    if [[ " $* " == *" --vocab-size "* ]]; then  # a vocabulary of its own: drop the baseline's
        args=()
        local skip=0 a
        for a in "${common[@]}"; do
            if [ $skip = 1 ]; then skip=0; continue; fi
            if [ "$a" = --tokenizer ]; then skip=1; continue; fi
            args+=("$a")
        done
    fi
    "$PY" -m bertlab pretrain "${args[@]}" --out "runs/pilots/$name" "$@"
    local base=(--baseline "$BASE")
    [ "$name" = "$BASE" ] || [ -z "$BASE" ] && base=()
    "$PY" scripts/record_pilot.py "runs/pilots/$name" --name "$name" --change "$change" "${base[@]}"
}
if [ "$SERIES" = size ]; then
    pilot "$BASE" "BERT-Mini (4/256/4) at the record's settings for $MINUTES minutes, a whole schedule"
    pilot "cpu-size-tiny-${MINUTES}min" "the tiny size (2/128/2) instead of BERT-Mini, for the same $MINUTES minutes" \
        --preset tiny
    pilot "cpu-size-small-${MINUTES}min" "the small size (4/512/8) instead of BERT-Mini, for the same $MINUTES minutes" \
        --preset small
    pilot "cpu-size-small-lr-1e-3-${MINUTES}min" "the small size (4/512/8) with a peak learning rate of 1e-3 (2e-3 collapsed it), for the same $MINUTES minutes" \
        --preset small --lr 1e-3
elif [ "$SERIES" = record5 ]; then
    pilot cpu-mini-32-first-mask-40 "the fifth record's settings on a fixed schedule of its $(steps_text "$TOTAL") steps, with 50% of the steps on 32 tokens first (256 a batch; then 30/10/10% on 64/128/256) and 40% masked" \
        --phases 0.5:32:256,0.3:64:128,0.1:128:64,0.1:256:32 --mlm-probability 0.4
    pilot cpu-mini-record5-steps "the fifth record's settings on a fixed schedule of its $(steps_text "$TOTAL") steps (the record itself had a 50-minute budget)"
    # two layers run a step 1.71 times as fast as four (the ablations' timing of 2/256/4 against
    # 4/256/4), so 1.71 times the steps is the record's CPU time; an H100 sweep read +3.5 for it
    LONG=$(( TOTAL * 171 / 100 ))
    pilot cpu-mini-2-layers-x1.71 "the fifth record's settings with 2 layers (2/256/4) on a fixed schedule of $(steps_text "$LONG") steps, 1.71 times its $(steps_text "$TOTAL"): the same CPU time" \
        --layers 2 --steps "$LONG"
elif [ "$SERIES" = record7 ]; then
    LONG=$(( TOTAL * 171 / 100 ))
    pilot cpu-mini-record7-2-layers-x1.71 "the seventh record's settings with 2 layers (2/256/4) on a fixed schedule of $(steps_text "$LONG") steps, 1.71 times its $(steps_text "$TOTAL"): the same CPU time" \
        --layers 2 --steps "$LONG"
elif [ "$SERIES" = record-128 ]; then
    pilot "$BASE" "the record's settings (post-LN, two segments, 40% masked, its vocabulary) on sequences of 128 tokens only, 64 a batch, on a fixed schedule of $(steps_text "$TOTAL") steps"
    pilot cpu-mini-record-128-batch-32 "the baseline run ($BASE), with 32 sequences per batch on a schedule of twice the steps ($(steps_text $((TOTAL * 2))); the same tokens)" \
        --batch-size 32 --steps $((TOTAL * 2)) --stop-after $((STOP * 2)) --eval-every 500 --eval-batches 40
    pilot cpu-mini-record-128-2-layers-x1.71 "the baseline run ($BASE), with 2 layers (2/256/4) on a schedule of 1.71 times the steps ($(steps_text $((TOTAL * 171 / 100)))), stopped after 1.71 times as many: the same CPU time" \
        --layers 2 --steps $((TOTAL * 171 / 100)) --stop-after $((STOP * 171 / 100))
elif [ "$SERIES" = tiny ]; then
    pilot cpu-post-ln "the baseline run ($BASE), with post-LN layers (the paper's)" --norm-position post
    pilot cpu-zero-bias "the baseline run ($BASE), with the MLM bias started at 0" --mlm-bias zeros
    pilot cpu-dropout "the baseline run ($BASE), with dropout 0.1" --dropout 0.1
    pilot cpu-lr-1e-3 "the baseline run ($BASE), with a peak learning rate of 1e-3 (the baseline: 2e-3)" --lr 1e-3
    pilot cpu-lr-4e-3 "the baseline run ($BASE), with a peak learning rate of 4e-3 (the baseline: 2e-3)" --lr 4e-3
else
    pilot cpu-mini-8k "the reference run's settings (BERT-Mini, WordPiece 8,192) on a fixed schedule of its $(steps_text "$TOTAL") steps"
    pilot cpu-mini-mask-30 "the baseline run ($BASE), masking 30% of the tokens (held-out accuracy still at 15%)" \
        --mlm-probability 0.3
    pilot cpu-mini-lr-4e-3 "the baseline run ($BASE), with a peak learning rate of 4e-3 (the baseline: 2e-3)" --lr 4e-3
    pilot cpu-mini-lr-1e-3 "the baseline run ($BASE), with a peak learning rate of 1e-3 (the baseline: 2e-3)" --lr 1e-3
    pilot cpu-mini-dropout "the baseline run ($BASE), with dropout 0.1" --dropout 0.1
    pilot cpu-mini-seq-64 "the baseline run ($BASE), with sequences of 64 tokens, 128 of them per batch (the same tokens per step)" \
        --seq-len 64 --batch-size 128
    half=$((TOTAL / 2))
    pilot cpu-mini-batch-128 "the baseline run ($BASE), with 128 sequences per batch on a schedule of half the steps ($half; the same tokens)" \
        --batch-size 128 --steps "$half" --stop-after $((STOP / 2)) --eval-every 125
    pilot cpu-mini-vocab-4k "the baseline run ($BASE), with a WordPiece vocabulary of 4,096 pieces (the baseline: 8,192)" \
        --vocab-size 4096
    pilot cpu-mini-vocab-16k "the baseline run ($BASE), with a WordPiece vocabulary of 16,384 pieces (the baseline: 8,192)" \
        --vocab-size 16384
    pilot cpu-mini-mask-20 "the baseline run ($BASE), masking 20% of the tokens (held-out accuracy still at 15%)" \
        --mlm-probability 0.2
    pilot cpu-mini-post-ln "the baseline run ($BASE), with post-LN layers (the paper's; the baseline is pre-LN)" \
        --norm-position post
    pilot cpu-mini-post-ln-warmup-10 "the baseline run ($BASE), with post-LN layers and a warm-up of 10% of the steps (the baseline: pre-LN, 3%)" \
        --norm-position post --warmup 0.1
    pilot cpu-mini-nsp "the baseline run ($BASE), with two segments per sequence (A/B segment ids) and the NSP loss" \
        --nsp
    pilot cpu-mini-pairs "the baseline run ($BASE), with two segments per sequence (A/B segment ids, B the text after A) and no NSP loss" \
        --segment-pairs
    pilot cpu-mini-phases-64-128 "the baseline run ($BASE), with 90% of the steps on sequences of 64 tokens (128 a batch), then 10% on 128 (64 a batch)" \
        --phases 0.9:64:128,0.1:128:64
    pilot cpu-mini-wwm-30 "the baseline run ($BASE), masking 30% by whole words (held-out accuracy still on single pieces at 15%)" \
        --mlm-probability 0.3 --whole-word
fi
