"""
The checks every database backend of `DuplicateIndex` (`qdrant_store.QdrantStore`, `lancedb_store.LanceDBStore`)
applies to its input before it writes or searches anything. They live here, once, so that both engines
refuse the same bad input with the same one-line messages (naming the row, field or id at fault; where an
engine's own limit is the reason, the engine passes the words for it), and so that the stores hold only
what is engine-specific.

Here: ids (ints or strings, ints within int64) and id lists; the rows of an `add` (ids, texts, embeddings
of the right shape, finite and not all zero, one metadata dict per text, no id twice) and the L2
normalisation of the embeddings; metadata (a dict of JSON scalars or lists of them under string keys, none
of them a name that `search` gives back itself: "id", "text", "score"); the JSON dict of `set_metadata`;
the shape of a search filter. `k` is checked by `search.input_checks.check_k`, as for the in-process backends.

What depends on the engine stays in its module and is passed in where a check needs it: which metadata
keys and filter fields it can address (Qdrant reads `.` and `[]` in a key as a path, LanceDB fields are
SQL identifiers), the names of its own columns, and how an id becomes a point id or a row key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# What `search` gives back beside a row's metadata: no metadata field may take these names, in any store.
RESERVED_FIELDS = ("id", "text", "score")


class Rows(NamedTuple):
    """The checked rows of one `add`: plain ids, texts, L2-normalised float32 vectors, one metadata dict each."""

    ids: list[int | str]
    texts: list[str]
    vectors: np.ndarray
    metadata: list[dict[str, Any]]


def check_id(user_id: Any, int64_note: str) -> int | str:
    """
    `user_id` as a plain int or str (numpy / torch integers become ints): TypeError for any other type (bools
    included), ValueError for an int outside int64; `int64_note` says why the engine needs int64.
    """
    if hasattr(user_id, "item") and not isinstance(user_id, (str, bytes)):
        user_id = user_id.item()  # numpy / torch integers
    if isinstance(user_id, bool) or not isinstance(user_id, (int, str)):
        raise TypeError(f"ids must be ints or strings, got {type(user_id).__name__} {user_id!r}")
    if isinstance(user_id, int) and not INT64_MIN <= user_id <= INT64_MAX:
        raise ValueError(f"int id {user_id} does not fit in 64 bits ({int64_note}): use a str id")
    return user_id


def id_list(ids: Sequence[int | str]) -> list[int | str]:
    """`ids` as a list, refusing a single id (a str or an int) where a list is meant."""
    if isinstance(ids, (str, int)):
        raise TypeError("ids must be a list: wrap a single id in a list")
    return list(ids)


def show(ids: list[Any], limit: int = 5) -> str:
    """The first `limit` ids, repr'd, for a message: "1, 'a' and 3 more"."""
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def check_embedding_dim(embedding_dim: int | None) -> int | None:
    """`embedding_dim` (None: take it from the existing collection), or ValueError unless a positive int."""
    if embedding_dim is not None and (
        isinstance(embedding_dim, bool) or not isinstance(embedding_dim, int) or embedding_dim < 1
    ):
        raise ValueError(f"embedding_dim must be a positive integer, got {embedding_dim!r}")
    return embedding_dim


def check_batch_size(batch_size: int) -> int:
    """`batch_size`, or ValueError unless a positive int."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return batch_size


def check_vectors(values: np.ndarray | torch.Tensor, embedding_dim: int, what: str) -> np.ndarray:
    """`values` (array-like or tensor) as a float32 `(n, embedding_dim)` array of finite numbers."""
    if isinstance(values, torch.Tensor):
        values = values.detach().to("cpu", torch.float32).numpy()
    values = np.asarray(values, dtype=np.float32)
    if values.ndim != 2 or values.shape[1] != embedding_dim:
        raise ValueError(f"{what} must have shape (n, {embedding_dim}) for this collection, got {tuple(values.shape)}")
    if not np.isfinite(values).all():
        raise ValueError(f"{what} hold NaN or infinite values")
    return values


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm (rows of zeros stay zeros), so that a dot product is a cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.finfo(np.float32).tiny)


def is_json_scalar(value: Any) -> bool:
    """Whether a metadata value is one both engines store as is: str, bool, None, an int64 or a finite float."""
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    return isinstance(value, float) and math.isfinite(value)


def check_metadata_row(
    values: Any,
    position: int,
    *,
    reserved: Sequence[str] = RESERVED_FIELDS,
    check_key: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """
    Row `position`'s metadata: a dict of JSON scalars or lists of them, under non-empty string keys that are
    not `reserved`; `check_key(key, position)` adds the engine's own rule on key names (raising if broken).
    """
    if not isinstance(values, dict):
        raise TypeError(f"metadata[{position}] is {type(values).__name__}, not a dict")
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"metadata[{position}] has key {key!r}: keys must be non-empty strings")
        if key in reserved:
            raise ValueError(f"metadata[{position}] has key {key!r}, which the store uses itself: rename it")
        if check_key is not None:
            check_key(key, position)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not is_json_scalar(item):
                raise TypeError(
                    f"metadata[{position}][{key!r}] holds {type(item).__name__} {item!r}: values must be "
                    "str, int, float, bool or None, or lists of them"
                )
    return values


def check_rows(
    ids: Sequence[int | str],
    texts: Sequence[str],
    embeddings: np.ndarray | torch.Tensor,
    metadata: Sequence[dict[str, Any]] | None,
    *,
    embedding_dim: int,
    int64_note: str,
    reserved: Sequence[str] = RESERVED_FIELDS,
    check_key: Callable[[str, int], None] | None = None,
) -> Rows:
    """
    The rows of an `add`, checked before anything is written: one id, embedding and metadata dict (None:
    none for any) per text, texts that are strings, embeddings `(n, embedding_dim)`, finite and not all
    zeros (returned normalised), metadata as `check_metadata_row` takes it, ids as `check_id` takes them
    and none twice. Whether an id is already stored is the engine's to look up (then `check_not_present`).
    """
    if isinstance(ids, str) or isinstance(texts, str):
        raise TypeError("ids and texts must be lists, not single strings: wrap them in lists")
    ids, texts = list(ids), list(texts)
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts: pass one id per text")
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{position}] is {type(text).__name__}, not a string")
    vectors = check_vectors(embeddings, embedding_dim, "embeddings")
    if len(vectors) != len(texts):
        raise ValueError(f"{len(vectors)} embeddings for {len(texts)} texts: pass one embedding per text")
    zeros = np.flatnonzero((vectors == 0).all(axis=1))
    if len(zeros):
        raise ValueError(f"embeddings[{int(zeros[0])}] is all zeros: cosine similarity is undefined for it")
    if metadata is None:
        metadata = [{} for _ in texts]
    else:
        metadata = list(metadata)
        if len(metadata) != len(texts):
            raise ValueError(f"{len(metadata)} metadata dicts for {len(texts)} texts: pass one per text")
        for position, values in enumerate(metadata):
            check_metadata_row(values, position, reserved=reserved, check_key=check_key)
    ids = [check_id(user_id, int64_note) for user_id in ids]
    # Plain ints and strs: 5 and "5" are two ids (5 == "5" is False), as they are two rows in every engine.
    if len(set(ids)) != len(ids):
        seen, repeated = set(), []
        for user_id in ids:
            if user_id in seen and user_id not in repeated:
                repeated.append(user_id)
            seen.add(user_id)
        raise ValueError(f"ids repeat within this call: {show(repeated)}; pass each id once")
    return Rows(ids, texts, normalise(vectors), metadata)


def check_not_present(ids: list[int | str], present: list[bool]) -> None:
    """ValueError naming the ids of an `add` that the store already holds (`present[i]` for `ids[i]`), if any."""
    found = [user_id for user_id, is_present in zip(ids, present) if is_present]
    if found:
        raise ValueError(
            f"{len(found)} ids are already in the collection: {show(found)}; nothing was added "
            "(delete them first to replace their texts, or add only new ids)"
        )


def check_filter(
    filter: dict[str, Any] | None, *, matches: str, check_field: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """
    A search filter, {field: value} or {field: [values]} (a tuple or set is taken as a list), as a dict whose
    any-of values are lists; {} for no filter. Fields are non-empty strings (`check_field(field)` adds the
    engine's rule), values str, int or bool (`matches` ends the message refusing another type).
    """
    if filter is None or filter == {}:
        return {}
    if not isinstance(filter, dict):
        raise TypeError(f"filter must be a dict of {{field: value or list of values}}, got {type(filter).__name__}")
    checked = {}
    for field, wanted in filter.items():
        if not isinstance(field, str) or not field:
            raise TypeError(f"filter field {field!r} must be a non-empty string")
        if check_field is not None:
            check_field(field)
        if isinstance(wanted, (list, tuple, set, frozenset)):
            wanted = list(wanted)
        for value in wanted if isinstance(wanted, list) else [wanted]:
            if isinstance(value, float) or not isinstance(value, (str, int)):
                raise TypeError(f"filter[{field!r}] holds {type(value).__name__} {value!r}: {matches}")
        checked[field] = wanted
    return checked


def check_json_dict(values: Any) -> dict[str, Any]:
    """What `set_metadata` keeps: `values` as plain JSON (a copy through json), or an error saying why not."""
    if not isinstance(values, dict):
        raise TypeError(f"metadata must be a dict, got {type(values).__name__}")
    try:
        return json.loads(json.dumps(values, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise ValueError(f"collection metadata must be plain JSON (no NaN, no objects): {err}") from err


__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "RESERVED_FIELDS",
    "Rows",
    "check_batch_size",
    "check_embedding_dim",
    "check_filter",
    "check_id",
    "check_json_dict",
    "check_metadata_row",
    "check_not_present",
    "check_rows",
    "check_vectors",
    "id_list",
    "is_json_scalar",
    "normalise",
    "show",
]
