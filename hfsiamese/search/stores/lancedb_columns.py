"""
The layout of a `LanceDBStore` table (see `lancedb_store` for the whole picture): its own columns, the id key
that keeps the int 5 and the str "5" apart, one typed column per metadata field (checked, and created when a
field is first seen), and the conversion of rows to and from Arrow.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pyarrow as pa

from hfsiamese.search.stores import store_checks
from hfsiamese.search.stores.store_checks import check_id

# The table's own columns.
KEY, ID_INT, ID_STR, TEXT, VECTOR = "id_key", "id_int", "id_str", "text", "vector"
BASE_COLUMNS = (KEY, ID_INT, ID_STR, TEXT, VECTOR)
# Names metadata cannot take: what `search` gives back beside the metadata, and the table's own columns.
RESERVED_FIELDS = (*store_checks.RESERVED_FIELDS, KEY, ID_INT, ID_STR, VECTOR)
# Why an int id must fit in int64, for the message refusing one that does not.
INT64_NOTE = "LanceDB stores int64"
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
SCALAR_TYPES = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}


def id_key(user_id: int | str) -> str:
    """
    The `id_key` of a caller's id: "int:<id>" or "str:<id>", so that the int 5 and the str "5" are two
    rows. Ints must fit in int64 (numpy / torch integers are taken as ints).
    """
    user_id = check_id(user_id, INT64_NOTE)
    return f"int:{user_id}" if isinstance(user_id, int) else f"str:{user_id}"


def base_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field(KEY, pa.string(), nullable=False),
            pa.field(ID_INT, pa.int64()),
            pa.field(ID_STR, pa.string()),
            pa.field(TEXT, pa.string(), nullable=False),
            pa.field(VECTOR, pa.list_(pa.float32(), dim), nullable=False),
        ]
    )


def metadata_fields(schema: pa.Schema) -> list[str]:
    return [name for name in schema.names if name not in BASE_COLUMNS]


def value_kind(value: Any) -> str:
    """'bool', 'int', 'float' or 'str' of a checked metadata scalar."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    return "float" if isinstance(value, float) else "str"


def column_kind(data_type: pa.DataType) -> tuple[str | None, bool]:
    """(the scalar kind, is it a list) of a metadata column; kind None for a type this store does not write."""
    is_list = pa.types.is_list(data_type) or pa.types.is_large_list(data_type)
    scalar = data_type.value_type if is_list else data_type
    for kind, wanted in SCALAR_TYPES.items():
        if scalar.equals(wanted) or (kind == "str" and pa.types.is_large_string(scalar)):
            return kind, is_list
    return None, is_list


def fits(kind: str, column: str) -> bool:
    return kind == column or (kind == "int" and column == "float")


def new_fields(metadata: list[dict[str, Any]], schema: pa.Schema) -> list[pa.Field]:
    """
    The columns to add for the fields this table does not have yet, after checking every value against its
    column's type, or for a new field against its other values: TypeError (naming the row) for a mismatch.
    """
    existing = {name: column_kind(schema.field(name).type) for name in metadata_fields(schema)}
    new: dict[str, tuple[set[str], bool, int]] = {}  # field -> (kinds of its values, lists?, first row)
    for position, values in enumerate(metadata):
        for key, value in values.items():
            if value is None:
                continue
            is_list = isinstance(value, list)
            kinds = {value_kind(item) for item in value if item is not None} if is_list else {value_kind(value)}
            shape = "a list" if is_list else "a single value"
            if key in existing:
                column, column_is_list = existing[key]
                if column is None:
                    raise TypeError(
                        f"field {key!r} of this collection has type {schema.field(key).type}, which LanceDBStore does "
                        "not write: use another field name"
                    )
                held = f"lists of {column}" if column_is_list else f"{column} values"
                if is_list != column_is_list or any(not fits(kind, column) for kind in kinds):
                    got = sorted(kinds) if is_list else value_kind(value)
                    raise TypeError(
                        f"metadata[{position}][{key!r}] is {shape} ({got}) but field {key!r} holds {held} in this "
                        "collection: a LanceDB column has one type; convert the value, or use another field name"
                    )
                continue
            if key not in new:
                new[key] = (kinds, is_list, position)
                known = kinds
            else:
                known, first_is_list, first = new[key]
                if is_list != first_is_list:
                    raise TypeError(
                        f"metadata[{position}][{key!r}] is {shape} but metadata[{first}][{key!r}] is not: a field "
                        "holds either lists or single values"
                    )
                known = known | kinds
                new[key] = (known, is_list, first)
            if len(known) > 1 and known != {"int", "float"}:
                raise TypeError(
                    f"metadata field {key!r} mixes {' and '.join(sorted(known))} values (metadata[{position}]): a "
                    "LanceDB column has one type; convert them, or use several fields"
                )
    fields = []
    for key, (kinds, is_list, first) in new.items():
        if not kinds:
            raise ValueError(
                f"metadata field {key!r} holds only empty lists (metadata[{first}] on), so the type of its items "
                "cannot be told: leave it out (None) until a list has an item"
            )
        scalar = SCALAR_TYPES["float" if "float" in kinds else next(iter(kinds))]
        fields.append(pa.field(key, pa.list_(scalar) if is_list else scalar))
    return fields


def record_batch(
    schema: pa.Schema,
    fields: list[str],
    ids: list[int | str],
    keys: list[str],
    texts: list[str],
    vectors: np.ndarray,
    metadata: list[dict[str, Any]],
) -> pa.RecordBatch:
    dim = vectors.shape[1]
    columns = [
        pa.array(keys, pa.string()),
        pa.array([i if isinstance(i, int) else None for i in ids], pa.int64()),
        pa.array([i if isinstance(i, str) else None for i in ids], pa.string()),
        pa.array(texts, pa.string()),
        pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(vectors, np.float32).ravel()), dim),
    ]
    for name in fields:
        data_type = schema.field(name).type
        kind, is_list = column_kind(data_type)
        values = [row.get(name) for row in metadata]
        if kind == "float":  # ints in a float column
            values = [
                ([None if x is None else float(x) for x in v] if is_list else float(v)) if v is not None else None
                for v in values
            ]
        columns.append(pa.array(values, data_type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def table_rows(found: pa.Table, fields: list[str]) -> list[tuple[int | str, str, dict[str, Any]]]:
    """(id, text, non-null metadata) of each row of a query result."""
    ints = found.column(ID_INT).to_pylist()
    strs = found.column(ID_STR).to_pylist()
    texts = found.column(TEXT).to_pylist()
    values = {name: found.column(name).to_pylist() for name in fields}
    rows = []
    for position, (as_int, as_str, text) in enumerate(zip(ints, strs, texts)):
        meta = {name: column[position] for name, column in values.items() if column[position] is not None}
        rows.append((as_int if as_int is not None else as_str, text, meta))
    return rows


def by_query(found: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The query number of each row of a (multi-vector) search's result, and the order of its rows by query, best
    first (stable for ties)."""
    numbers = (
        found.column("query_index").to_numpy()
        if "query_index" in found.column_names
        else np.zeros(found.num_rows, dtype=np.int64)
    )
    return numbers, np.lexsort((found.column("_distance").to_numpy(), numbers))


def check_key(key: str, position: int) -> None:
    """LanceDB's rule on metadata keys: each becomes a column, named in SQL filters, so it must be an identifier."""
    if not IDENTIFIER.match(key):
        raise ValueError(
            f"metadata[{position}] has key {key!r}: LanceDB columns here are identifiers (letters, digits and "
            "'_', starting with a letter): rename it"
        )


def check_base_columns(schema: pa.Schema, collection: str, where: str) -> None:
    """An existing table has the columns `LanceDBStore` makes (any vector size: checked against the model apart)."""
    for name, wanted in zip(BASE_COLUMNS, base_schema(1)):
        field = schema.field(name) if name in schema.names else None
        same = field is not None and (
            field.type.equals(wanted.type)
            or (name == VECTOR and pa.types.is_fixed_size_list(field.type) and field.type.value_type == pa.float32())
        )
        if not same:
            raise ValueError(
                f"table {collection!r} at {where} has no {name} column of type {wanted.type}, so it was not made "
                "by LanceDBStore: choose another collection name"
            )


# Key of the `vector` field's metadata under which `LanceDBStore.set_metadata` keeps its dict.
METADATA_KEY = "hfsiamese"


def row_batch(
    rows: pa.Table, fields: list[str], embedding_dim: int | None
) -> tuple[list[int | str], list[str], np.ndarray | None, list[dict[str, Any]]]:
    """`iter_rows`' batch of the table's `rows`: ids, texts, float32 `(n, embedding_dim)` vectors (None without an
    `embedding_dim`: read without vectors) and metadata."""
    ids, texts, metadata = [], [], []
    for user_id, text, values in table_rows(rows, fields):
        ids.append(user_id)
        texts.append(text)
        metadata.append(values)
    embeddings = None if embedding_dim is None else vector_array(rows.column(VECTOR), embedding_dim)
    return ids, texts, embeddings, metadata


def vector_array(column: pa.ChunkedArray | pa.Array, embedding_dim: int) -> np.ndarray:
    """A `vector` column as float32 `(rows, embedding_dim)`."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    flat = np.ascontiguousarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    return flat.reshape(len(column), embedding_dim)


def read_table_metadata(table: Any) -> dict[str, Any]:
    """The JSON dict kept in the `vector` field's metadata, {} if none."""
    return schema_json(table.schema, METADATA_KEY) or {}


def schema_json(schema: pa.Schema, key: str) -> dict[str, Any] | None:
    """The JSON dict kept under `key` in the `vector` field's metadata, None if none (the index config's key,
    `METADATA_KEY`, and the vector index's settings each keep one there, written apart)."""
    raw = (schema.field(VECTOR).metadata or {}).get(key.encode())
    return dict(json.loads(raw)) if raw else None


def write_table_metadata(table: Any, plain: dict[str, Any], key: str = METADATA_KEY) -> None:
    """Replace the dict under `key` (one commit of the table; the other keys of the field's metadata are kept)."""
    table.update_field_metadata({"path": VECTOR, "metadata": {key: json.dumps(plain)}})


__all__ = [
    "BASE_COLUMNS", "ID_INT", "ID_STR", "INT64_NOTE", "KEY", "RESERVED_FIELDS", "TEXT", "VECTOR", "base_schema", "by_query",
    "METADATA_KEY", "check_base_columns", "check_key", "column_kind", "fits", "id_key", "metadata_fields", "new_fields",
    "read_table_metadata", "record_batch", "row_batch", "schema_json", "table_rows", "value_kind", "vector_array",
    "write_table_metadata",
]  # fmt: skip
