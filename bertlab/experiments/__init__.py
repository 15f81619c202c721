"""The book's recorded experiments: the reference run (reading and making it), the pretraining
pilots, and the paper's section-5 ablations at a CPU budget."""
