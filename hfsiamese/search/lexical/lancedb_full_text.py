"""
The keyword side of a hybrid search in a LanceDB table: LanceDB's own full-text index (BM25, its tokeniser: lower
case, English stemming and stopwords) on the `text` column, created at the first hybrid search where the table has
none. The rows stay the database's alone: the index is in the table, rows added since it was built are searched too
(and indexed when the store compacts the table), rows deleted are gone, whichever process wrote them; metadata
filters apply to it as to the vector search. Each hit carries its vector, so its cosine is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hfsiamese.search.stores.lancedb_columns import ID_INT, ID_STR, TEXT, VECTOR, metadata_fields, table_rows
from hfsiamese.search.stores.lancedb_filters import MATCHES_NOTHING, where_sql
from hfsiamese.search.stores.lancedb_store import import_lancedb
from hfsiamese.search.stores.matches import match

TextHit = tuple[dict[str, Any], float]
"""A match dict (its `"score"` the cosine with the query) and its BM25 score."""


def ensure_full_text_index(table: Any) -> None:
    """Create the full-text index on `text` unless the table has one (another process may have made it meanwhile)."""
    if any(index.columns == [TEXT] and "FTS" in str(index.index_type).upper() for index in table.list_indices()):
        return
    table.create_index(TEXT, config=import_lancedb().index.FTS(), replace=False)


def full_text_search(
    store: Any, queries: list[str], query_vectors: np.ndarray, k: int, filter: dict[str, Any] | None
) -> list[list[TextHit]]:
    """Each query's `k` best BM25 matches in the store's table, best first, with their cosine to its vector."""
    lancedb = import_lancedb()
    table = store._table
    ensure_full_text_index(table)
    schema = table.schema
    where = where_sql(filter, schema)
    if where is MATCHES_NOTHING:
        return [[] for _ in queries]
    fields = metadata_fields(schema)
    columns = [ID_INT, ID_STR, TEXT, VECTOR, *fields, "_score"]
    results = []
    for text, vector in zip(queries, query_vectors):
        query = table.search(lancedb.query.MatchQuery(text, TEXT), query_type="fts").limit(k).select(columns)
        if where is not None:
            query = query.where(where, prefilter=True)
        found = query.to_arrow()
        if found.num_rows == 0:
            results.append([])
            continue
        flat = found.column(VECTOR).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        cosines = flat.astype(np.float32).reshape(found.num_rows, -1) @ vector
        bm25 = found.column("_score").to_numpy()
        order = np.argsort(-bm25, kind="stable")
        rows = table_rows(found, fields)
        hits = []
        for i in order:
            user_id, text, values = rows[i]
            hits.append((match(user_id, text, float(cosines[i]), values), float(bm25[i])))
        results.append(hits)
    return results


__all__ = ["TextHit", "ensure_full_text_index", "full_text_search"]
