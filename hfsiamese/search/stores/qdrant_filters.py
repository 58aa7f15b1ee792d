"""A `search` filter ({field: value} / {field: [values]}, checked by `store_checks.check_filter`) as a Qdrant
`Filter`, as `lancedb_filters` makes LanceDB's `where` SQL: kept apart from the store so that each file says one thing."""

from __future__ import annotations

from typing import Any

from hfsiamese.search.stores.store_checks import check_filter

# `qdrant_filter`'s answer to an any-of over an empty list: no text can match.
MATCHES_NOTHING = object()


def check_qdrant_filter(filter: dict[str, Any] | None) -> dict[str, Any]:
    """A search filter checked by Qdrant's rules here, without a client: what `qdrant_filter` reads, and what a caller
    can ask before searching (`QdrantStore.check_search_filter`)."""
    return check_filter(filter, matches="Qdrant matches str, int and bool values only")


def qdrant_filter(filter: dict[str, Any] | None, models: Any) -> Any:
    """{field: value} / {field: [values]} (all fields at once) as a Qdrant Filter; None for no filter."""
    checked = check_qdrant_filter(filter)
    if not checked:
        return None
    must = []
    for field, wanted in checked.items():
        values = wanted if isinstance(wanted, list) else None
        if values is None:
            must.append(models.FieldCondition(key=field, match=models.MatchValue(value=wanted)))
            continue
        if not values:
            return MATCHES_NOTHING
        # MatchAny takes all-str or all-int lists; bools (and a mix) become one condition each, any of them.
        strs = [v for v in values if isinstance(v, str)]
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        bools = list(dict.fromkeys(v for v in values if isinstance(v, bool)))
        conditions = [
            models.FieldCondition(key=field, match=models.MatchAny(any=group)) for group in (strs, ints) if group
        ]
        conditions += [models.FieldCondition(key=field, match=models.MatchValue(value=b)) for b in bools]
        must.append(conditions[0] if len(conditions) == 1 else models.Filter(should=conditions))
    return models.Filter(must=must)


__all__ = ["MATCHES_NOTHING", "check_qdrant_filter", "qdrant_filter"]
