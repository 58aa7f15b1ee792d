"""
Search filters of a `LanceDBStore` as LanceDB `where` SQL: {field: value} equality, {field: [values]} any of
them (on a list field: the list holds any of them), several fields all at once (AND). Values are rendered as
SQL literals here (strings quoted with '' doubled; backslashes are literal in Lance SQL), names are checked
identifiers quoted in backticks, so nothing a caller passes is read as SQL.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from hfsiamese.search.stores.lancedb_columns import (
    ID_INT,
    ID_STR,
    IDENTIFIER,
    KEY,
    VECTOR,
    column_kind,
    fits,
    id_key,
    value_kind,
)
from hfsiamese.search.stores.store_checks import INT64_MAX, INT64_MIN, check_filter

# `where_sql`'s answer to a filter that no row can match (an any-of over [], a field no row has...).
MATCHES_NOTHING = object()


def sql_literal(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"({INT64_MIN + 1} - 1)" if value == INT64_MIN else str(value)
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: list[Any]) -> str:
    """`column` equal to any of `values` (checked str / int / bool literals), as SQL."""
    literals = ", ".join(sql_literal(v) for v in values)
    return f"`{column}` = {literals}" if len(values) == 1 else f"`{column}` IN ({literals})"


def check_filter_field(field: str) -> None:
    """LanceDB's rule on filter fields: an identifier (it is quoted into SQL), and a metadata field or "id"."""
    if not IDENTIFIER.match(field):
        raise ValueError(
            f"filter field {field!r} is not a field name (letters, digits and '_', starting with a letter)"
        )
    if field in (KEY, ID_INT, ID_STR, VECTOR):
        raise ValueError(
            f"filter field {field!r} is a column of the store itself, not metadata: filter on 'id' instead"
        )


def check_lancedb_filter(filter: dict[str, Any] | None) -> dict[str, Any]:
    """A search filter checked by LanceDB's rules here (`store_checks.check_filter` and `check_filter_field`), without
    the table: what `where_sql` reads, and what a caller can ask before searching (`LanceDBStore.check_search_filter`)."""
    return check_filter(
        filter, matches="LanceDB filters here match str, int and bool values only", check_field=check_filter_field
    )


def where_sql(filter: dict[str, Any] | None, schema: pa.Schema) -> Any:
    """{field: value} / {field: [values]} (all fields at once) as a LanceDB `where` SQL string; None for no filter."""
    checked = check_lancedb_filter(filter)
    if not checked:
        return None
    conditions = []
    nothing = False
    for field, wanted in checked.items():
        values = wanted if isinstance(wanted, list) else [wanted]
        values = list(dict.fromkeys((type(v), v) for v in values))  # True and 1 stay apart
        values = [v for _, v in values]
        if field == "id":
            keys = [
                id_key(v)
                for v in values
                if not isinstance(v, bool) and (isinstance(v, str) or INT64_MIN <= v <= INT64_MAX)
            ]
            if keys:
                conditions.append(in_list(KEY, keys))
            else:
                nothing = True
            continue
        if field not in schema.names:
            nothing = True
            continue
        kind, is_list = column_kind(schema.field(field).type)
        usable = [
            v
            for v in values
            if kind is not None
            and fits(value_kind(v), kind)
            and (isinstance(v, (str, bool)) or INT64_MIN <= v <= INT64_MAX)
        ]
        if not usable:
            nothing = True
        elif is_list:
            literals = ", ".join(sql_literal(v) for v in usable)
            conditions.append(f"array_has_any(`{field}`, make_array({literals}))")
        else:
            conditions.append(in_list(field, usable))
    if nothing:
        return MATCHES_NOTHING
    return " AND ".join(f"({condition})" for condition in conditions)


__all__ = ["MATCHES_NOTHING", "check_lancedb_filter", "in_list", "where_sql"]
