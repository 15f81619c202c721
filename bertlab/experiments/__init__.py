"""Reading the book's recorded runs: its own BERT (`reference`), the paper's section-5 ablations
(`ablations`), SQuAD 2.0's answer-or-abstain record (`squad2`), a live comparison's words
(`finetune_comparison`) and the openings the chapters generate (`findings`). The lab makes the
records (lab/, beside the package)."""
