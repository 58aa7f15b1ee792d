"""The one place a search match is made: `{"id", "text", "score", **metadata}`, plus `"is_duplicate"` where a
threshold decides it. Every store and `DuplicateIndex` build their matches here, so they all look the same."""

from __future__ import annotations

from typing import Any


def match(
    user_id: int | str,
    text: str,
    score: float,
    metadata: dict[str, Any] | None = None,
    *,
    threshold: float | None = None,
) -> dict[str, Any]:
    """One match: id, text, cosine score, the row's metadata (a database's), and its verdict where `threshold`."""
    found = {"id": user_id, "text": text, "score": score, **(metadata or {})}
    if threshold is not None:
        found["is_duplicate"] = score >= threshold
    return found


def decide(matches: list[dict[str, Any]], threshold: float | None) -> list[dict[str, Any]]:
    """The matches, each with `"is_duplicate"` (score at or above `threshold`) where a threshold is known."""
    if threshold is not None:
        for found in matches:
            found["is_duplicate"] = found["score"] >= threshold
    return matches


__all__ = ["decide", "match"]
