"""Similarity search over embedded texts."""

from .exact import topk_cosine

__all__ = ["topk_cosine"]
