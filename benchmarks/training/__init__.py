"""Training: speed and memory of a step, a whole recipe run, beside sentence-transformers' trainer and the seeds' model."""
