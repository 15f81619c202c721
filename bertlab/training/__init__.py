"""Training: the pretraining and fine-tuning loops, the optimiser, the recipes (with their
measured study in measured/), the metrics log and FLOP counting."""
