"""Reading the book's recorded runs (`reference`, `squad2`), and the chapters' experiments and
their words (`feature_study`, `finetune_comparison`, `findings`). The lab (lab/) makes the records."""
