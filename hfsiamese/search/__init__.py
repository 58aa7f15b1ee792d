"""Similarity search over embedded texts."""

from .duplicate_index import DuplicateIndex
from .exact import topk_cosine

__all__ = ["DuplicateIndex", "topk_cosine"]
