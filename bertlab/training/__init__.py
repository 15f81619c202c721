"""Training: the pretraining and fine-tuning loops, the optimiser, the recipes, the metrics log
and FLOP counting."""
