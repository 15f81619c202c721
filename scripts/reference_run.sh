#!/usr/bin/env bash
# The book's reference run, end to end, in one command. On a CPU (how the book's record was made):
#   WordPiece vocabulary (8,192 pieces) trained on the mirror's books + Wikipedia (training split),
#   pre-tokenized and packed into sequences of two segments (A, then the text after it as B: both
#   rows of the segment embedding train, no NSP loss), BERT-Mini (4/256/4, post-LN as in the paper)
#   pretrained for 50 minutes with the "cpu" recipe (unigram MLM bias, no dropout, lr 2e-3, 40%
#   masked; 50% of the steps on 32 tokens, 30% on 64, 10% on 128, 10% on 256; bf16 autocast where
#   the CPU has native bf16, torch.compile), evaluated on held-out books and articles, fill-mask
#   asked of every checkpoint, then fine-tuned from the pretrained weights and from scratch, 3 seeds
#   each: SST-2 on 500, 2,000 and 8,000 labelled sentences, MRPC, RTE; then CoNLL-2003 and SQuAD
#   v1.1 (chapter 13's by-article split of dev, two epochs), one seed each; two seeds at a time,
#   side by side in one-thread processes (FinetuneConfig.workers). The settings are
#   lab.reference_run.REFERENCE["cpu"]; the record's provenance.json holds the wall
#   time of every stage.
# On a GPU: a BERT-medium (8/512/8) for a 9-minute budget with the "budget" recipe (bf16,
#   torch.compile); those settings have not been run (no GPU was at hand), so report what you see.
# Writes metrics.jsonl, config.json, tokenizer.json / vocab.txt, model.fp16.safetensors,
# fill_mask.json, finetune_results.json and provenance.json into $OUT (default data/reference_run),
# and the whole pretraining run folder (checkpoints included) under $OUT/pretrain.
#
#   scripts/reference_run.sh                 # picks the CPU or GPU settings itself
#   scripts/reference_run.sh --smoke         # the CPU pipeline in a few minutes
#   scripts/reference_run.sh --resume        # continue an interrupted run (pretraining, kept stages)
#   scripts/reference_run.sh --steps 3520    # a fixed number of steps (the same tokens anywhere)
# Extra arguments go to `python -m lab.reference_run` (see --help there), run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/run_env.sh
exec "$PY" -m lab.reference_run --out "${OUT:-data/reference_run}" "$@"
