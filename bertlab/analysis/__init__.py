"""Looking into a trained model: attention maps and their statistics, fill-mask, linear probes
and the book's plots. Never imports training or tasks."""
