"""Looking into a trained model: attention maps and their statistics, fill-mask, the bias probe,
where a training signal falls, and the book's plots. Never imports training or tasks."""
