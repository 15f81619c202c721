"""Reading the book's recorded runs: its own BERT (`reference`), SQuAD 2.0's answer-or-abstain record
(`squad2`), a live comparison's words (`finetune_comparison`) and the openings the chapters generate
(`findings`). The lab makes the records (lab/, beside the package), and reads its own studies, such
as the paper's section-5 ablations, into data/results/ for the chapters."""
