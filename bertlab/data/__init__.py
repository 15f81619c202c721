"""Text in, tensors out: the dataset registry and its checksummed downloads, the task readers,
the pretraining corpus, the WordPiece tokenizer, masking, and the pretraining examples.
Imports only the package's core modules (config, model, hf, files)."""
