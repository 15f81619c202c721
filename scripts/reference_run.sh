#!/usr/bin/env bash
# The book's reference run, end to end, in one command:
#   WordPiece vocabulary (16,384 pieces) trained on the mirror's books + Wikipedia (training split),
#   pre-tokenized and packed into 128-token sequences, a BERT-medium (8/512/8) pretrained for a
#   9-minute budget with the "budget" recipe (MLM, bf16, torch.compile), evaluated on held-out books
#   and articles, then SST-2 fine-tuned with 3 seeds from the pretrained weights and 3 from scratch.
# Writes metrics.jsonl, config.json, tokenizer.json / vocab.txt, model.fp16.safetensors,
# finetune_results.json and provenance.json into $OUT (default data/reference_run).
#
#   scripts/reference_run.sh                 # one GPU (an H100: about 15 minutes)
#   scripts/reference_run.sh --smoke         # the same pipeline at CPU size (a few minutes)
#   scripts/reference_run.sh --resume        # continue an interrupted pretraining
# Extra arguments go to `python -m bertlab reference-run` (see --help there).
set -euo pipefail
cd "$(dirname "$0")/.."
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
# The team's mirror beside the checkout (../shared/data), unless a mirror is named already;
# elsewhere the datasets are downloaded from their canonical URLs.
if [ -z "${BERTLAB_DATA_MIRROR:-}" ] && [ -f ../shared/data/SHA256SUMS ]; then
    BERTLAB_DATA_MIRROR=$(cd ../shared/data && pwd)
    export BERTLAB_DATA_MIRROR
fi
PY=python
[ -x .venv/bin/python ] && PY=.venv/bin/python
exec "$PY" -m bertlab reference-run --out "${OUT:-data/reference_run}" "$@"
