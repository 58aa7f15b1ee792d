"""Encoding: texts per second of the models and students, and equality of embeddings with sentence-transformers'."""
