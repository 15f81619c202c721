#!/usr/bin/env bash
# The GPU path in one short run, for a GPU owner or a session lent one (about 8 minutes on one
# H100 or H200): what the book's GPU settings do, measured, in three stages that each write their
# own files, so that a stage that fails leaves the others' results.
#   1. pretraining with the reference run's GPU settings (BERT-Medium 8/512/8, the `budget` recipe,
#      WordPiece 16,384 trained on the books + Wikipedia corpus, batch 256, bf16, torch.compile)
#      for $MINUTES minutes (default 2; the reference pipeline gives it 9);
#   2. CoNLL-2003 fine-tuned from those weights and from scratch (same size and vocabulary), one
#      seed each, on the whole training set, scored on the whole dev set;
#   3. lab/benchmarks/throughput.py at $BENCH_PRESET (default base): bertlab's training step against
#      transformers', and the MFU of both.
# Writes into $OUT (default runs/gpu_check): env.json, pretrain_run.json, pretrain_metrics.jsonl,
# finetune_pretrained.json, finetune_scratch.json, throughput.json, and log.txt (everything printed).
#
#   scripts/gpu_check.sh                         # on a machine with a CUDA GPU
# Each stage has a time limit (PRETRAIN_LIMIT_S, FT_LIMIT_S, BENCH_LIMIT_S; FT_EPOCHS sets the
# fine-tuning's epochs, default 3).
#   PRESET=tiny MINUTES=0.2 MAX_DOCS=20 FT_MAX=200 BENCH_PRESET=tiny scripts/gpu_check.sh   # a CPU smoke
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/run_env.sh
PY=${PYTHON:-$PY}
OUT=${OUT:-runs/gpu_check}
MINUTES=${MINUTES:-2}
PRESET=${PRESET:-medium}
BENCH_PRESET=${BENCH_PRESET:-base}
WORK=$(mktemp -d)
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
docs=()
[ -n "${MAX_DOCS:-}" ] && docs=(--max-documents "$MAX_DOCS")
ft_max=()
[ -n "${FT_MAX:-}" ] && ft_max=(--max-train-examples "$FT_MAX" --max-eval-examples "$FT_MAX")

stage() { echo; echo "=== $1 ($(date -u +%H:%M:%S))"; }

stage environment
"$PY" - "$OUT/env.json" <<'EOF'
import json, platform, sys
import torch
gpu = torch.cuda.is_available()
env = {
    "python": sys.version.split()[0],
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "device": torch.cuda.get_device_name(0) if gpu else platform.processor() or "cpu",
    "gpu_memory_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1) if gpu else None,
    "bf16": torch.cuda.is_bf16_supported() if gpu else None,
}
json.dump(env, open(sys.argv[1], "w"), indent=1)
print(env)
EOF

stage "1. pretraining ($PRESET, budget recipe, $MINUTES min)"
t0=$(date +%s)
# many cores here: let the tokenizer use them for the vocabulary and the pre-tokenization
TOKENIZERS_PARALLELISM=true timeout "${PRETRAIN_LIMIT_S:-900}" "$PY" -m bertlab pretrain --preset "$PRESET" --recipe budget --corpus books+wiki --vocab-size 16384 \
    --minutes "$MINUTES" --compile --log-every 50 --eval-every 200 --eval-batches 10 \
    --checkpoint-every 100000 --no-progress "${docs[@]}" --out "$WORK/pretrain"
echo "pretraining stage: exit $?, $(( $(date +%s) - t0 )) s"
cp "$WORK/pretrain/run.json" "$OUT/pretrain_run.json" 2>/dev/null
cp "$WORK/pretrain/metrics.jsonl" "$OUT/pretrain_metrics.jsonl" 2>/dev/null

stage "2. CoNLL-2003 from the pretrained weights and from scratch"
for arm in pretrained scratch; do
    t0=$(date +%s)
    if [ "$arm" = pretrained ]; then init=(--init "$WORK/pretrain/final"); else init=(--init scratch --like "$WORK/pretrain/final"); fi
    timeout "${FT_LIMIT_S:-600}" "$PY" -m bertlab finetune --task conll2003 "${init[@]}" --lr 1e-4 \
        --epochs "${FT_EPOCHS:-3}" --batch-size 32 \
        --seeds 0 --no-progress "${ft_max[@]}" --out "$WORK/ft-$arm"
    echo "fine-tuning ($arm): exit $?, $(( $(date +%s) - t0 )) s"
    cp "$WORK/ft-$arm/results.json" "$OUT/finetune_$arm.json" 2>/dev/null
done

stage "3. throughput against transformers ($BENCH_PRESET)"
timeout "${BENCH_LIMIT_S:-900}" "$PY" lab/benchmarks/throughput.py --preset "$BENCH_PRESET" --compile --json "$OUT/throughput.json"
echo "throughput stage: exit $?"
stage done
