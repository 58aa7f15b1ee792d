"""Checks on what callers hand a `DuplicateIndex` (texts, ids, a corpus `Dataset`, `k`): errors say which item is wrong."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import datasets


def check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer of at least 1, got {k!r}")
    return k


def check_sizes(batch_size: int, query_chunk_size: int, corpus_chunk_size: int) -> None:
    """The encoding batch and the exact search's blocks: each at least 1."""
    if query_chunk_size < 1 or corpus_chunk_size < 1:
        raise ValueError(
            f"chunk sizes must be at least 1, got query_chunk_size={query_chunk_size}, "
            f"corpus_chunk_size={corpus_chunk_size}"
        )
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")


def check_texts(texts: Sequence[str], what: str = "texts") -> list[str]:
    """`texts` as a list, refusing a single string, non-strings and empty texts (naming the position)."""
    if isinstance(texts, str):
        raise TypeError(f"{what} must be a list of strings, not a single string: wrap it in a list")
    if not isinstance(texts, Iterable):  # None, a number: list() would say "'NoneType' object is not iterable"
        raise TypeError(f"{what} must be a list of strings, got {type(texts).__name__}")
    texts = list(texts)
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{what}[{position}] is {type(text).__name__}, not a string")
        if not text.strip():
            raise ValueError(f"{what}[{position}] is empty: drop empty texts before indexing or searching")
    return texts


def check_metadata(
    metadata: Sequence[dict[str, Any]] | None, count: int, *, database: bool
) -> list[dict[str, Any]] | None:
    """One dict of JSON values per text, without the reserved keys `id` and `text`; only a database keeps them."""
    if metadata is None:
        return None
    if not database:
        raise ValueError(
            'metadata (and search filters) need a database backend ("lancedb" or "qdrant"): the in-process index keeps ids and texts only'
        )
    return check_metadata_rows(metadata, count)


def check_metadata_rows(metadata: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """One dict per text, without the reserved keys `id`, `text` and `score`: what needs no store to check."""
    if isinstance(metadata, dict):
        raise TypeError("metadata must be a list of dicts, one per text, not a single dict")
    metadata = list(metadata)
    if len(metadata) != count:
        raise ValueError(f"got {count} texts but {len(metadata)} metadata dicts: give one per text")
    for position, values in enumerate(metadata):
        if not isinstance(values, dict):
            raise TypeError(f"metadata[{position}] is {type(values).__name__}, not a dict")
        reserved = sorted({"id", "text", "score"} & set(values))
        if reserved:
            raise ValueError(
                f"metadata[{position}] uses the reserved key(s) {reserved}: every match has its own id, text and score"
            )
    return metadata


def id_type(ids: list[Any]) -> str:
    """'int' or 'str': one Arrow column type for all ids, so that indexes can be saved and extended."""
    if all(isinstance(i, str) for i in ids):
        return "str"
    if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return "int"
    kinds = sorted({type(i).__name__ for i in ids})
    raise TypeError(f"ids must be all integers or all strings, got {kinds}")


def plain_ids(ids: Sequence[Any]) -> list[Any]:
    """numpy / torch integers become plain ints, so that they are checked and stored as such."""
    if isinstance(ids, str):
        raise TypeError("ids must be a list, not a single string")
    return [i.item() if hasattr(i, "item") and not isinstance(i, (str, bytes)) else i for i in ids]


def check_given_ids(ids: Sequence[Any], count: int) -> list[Any]:
    """The ids a caller gave for `count` texts, as plain ids: one per text, of one kind, none twice (what needs no
    index to check, so that a build refuses them before it opens a store or encodes a text)."""
    ids = plain_ids(ids)
    if len(ids) != count:
        raise ValueError(f"got {count} texts but {len(ids)} ids: give one id per text")
    if ids:
        id_type(ids)  # refuses ids of both kinds
    seen: set[Any] = set()
    repeated = [i for i in ids if i in seen or seen.add(i)]
    if repeated:
        raise ValueError(f"duplicate ids among the new texts: {sorted(set(repeated))[:5]}")
    return ids


def texts_and_ids(
    corpus: Sequence[str] | datasets.Dataset,
    ids: Sequence[int | str] | None,
    text_column: str,
    id_column: str | None,
) -> tuple[list[str], list[Any] | None]:
    """The texts and ids (if any) of a corpus given as a list of texts or as one `datasets.Dataset` split."""
    if isinstance(corpus, (datasets.DatasetDict, datasets.IterableDataset, datasets.IterableDatasetDict)):
        raise TypeError(f"pass one split as a datasets.Dataset, not a {type(corpus).__name__}")
    if isinstance(corpus, datasets.Dataset):
        for name, column in (("text_column", text_column), ("id_column", id_column)):
            if column is not None and column not in corpus.column_names:
                raise KeyError(f"{name} {column!r} is not a column of the dataset; columns: {corpus.column_names}")
        if ids is not None and id_column is not None:
            raise ValueError("pass either ids or id_column, not both")
        texts = check_texts(list(corpus[text_column]), f"corpus[{text_column!r}]")
        if id_column is not None:
            ids = list(corpus[id_column])
        return texts, ids
    if id_column is not None:
        raise ValueError("id_column applies to a datasets.Dataset corpus; with a list of texts pass ids=...")
    return check_texts(corpus, "corpus"), ids


__all__ = [
    "check_given_ids",
    "check_k",
    "check_metadata_rows",
    "check_sizes",
    "check_texts",
    "id_type",
    "plain_ids",
    "texts_and_ids",
]
