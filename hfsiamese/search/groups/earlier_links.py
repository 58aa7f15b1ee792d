"""
The links duplicate groups are made from: each question's `k` nearest EARLIER questions (in index order) whose
cosine reaches the threshold, most similar first, ties by row. A rebuild (`find_groups`) mines every row's list
(`earlier_links`, `group_graph`); an add finds its new questions' lists with the index's search
(`new_questions_links`). The one rule makes the two agree for any `k`:

* A row's links are drawn from the rows before it, so adding rows at the end never changes an earlier row's links.
  A rebuild places the rows in index order, each from its links and the groups of the earlier rows as they stand
  (`clustering.guarded_groups`), never looking at a later row. So on the rows after an add, a rebuild runs as it did
  before the add, row for row, and then places each new row from its `k` nearest among the rows before it: what the
  add's search finds and places by the same `placement.place`. Without a guard the groups are the connected
  components of the links; a new row's links join the components of the rows it links to, which the add merges.
* Where the cap does not bind, the links are those of every pair at the threshold, as before this rule. Let `D(i)`
  be row `i`'s duplicates (the rows whose cosine with it reaches the threshold). If `D(i)` holds at most `k` rows,
  each is among `i`'s `k` nearest rows (a duplicate outside them would make `k + 1` rows at least as similar, all
  duplicates), so `i` links to every earlier duplicate, as the pairs of each row's `k` nearest taken both ways did
  (`paraphrase_pairs`, still what `find_duplicates` mines). A row places itself from its earlier links only, so
  groups can change only from a row with more than `k` duplicates on: it links to its `k` nearest earlier ones,
  where the pairs both ways gave it those of its `k` nearest that came before it and every earlier row that had it
  among its own `k` nearest. `find_groups` and an add warn of rows with `k` earlier duplicates or more.

The keyword side of a hybrid index adds no links: an add's search does not see it, and with an exact store its
candidates could only add pairs where the cap binds. A rebuild mines a chunk of rows at a time, in row order: the
chunk's rows are searched among the rows BEFORE the chunk only (`stores.prefix_search`), `k + 1` of them each, and
compared among themselves exactly, so a row's list is complete after one search however many later near-copies it
has (searched among all rows, a row with thousands of later duplicates had to be searched past all of them: the
grouping of a dense million-question corpus did not finish). Only where a row left unseen could tie with the
`k`-th is it searched twice as deep. Both paths decide on each candidate's cosine computed again from the two rows
alone (`pair_cosines.exact_cosines`): a float32 search's rounding depends on how its rows were batched, which once
made a rebuild and an add link a repost to different identical earlier questions. Mining is exact with an exact
store; through a quantised FAISS index, the prefix is searched through an empty copy of the index filled in row
order, its candidates rescored exactly, and a list is as complete as that search finds rows (a database's rows are
mined from an exact in-memory copy, in the order it reads them back).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from scipy.sparse import csr_matrix

from hfsiamese.search.groups.clustering import pair_graph
from hfsiamese.search.groups.pair_cosines import exact_cosine_matrix, exact_cosines, search_margin
from hfsiamese.search.stores.prefix_search import ExactPrefixSearch, PrefixSearch

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.groups.duplicate_groups import DuplicateGroups
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.in_memory import InMemoryStore

logger = logging.getLogger(__name__)

# Scores (rows x depth) one search of the deeper rounds returns at most.
_SCORES_AT_ONCE = 1 << 18


class EarlierLinks(NamedTuple):
    """Each link joins a row (`later[i]`) to one of its `k` nearest earlier duplicates (`earlier[i]`), its cosine
    `scores[i]`; `capped`: the rows that kept `k` links (they have `k` earlier duplicates or more)."""

    later: np.ndarray
    earlier: np.ndarray
    scores: np.ndarray
    capped: int


def store_search(store: InMemoryStore) -> PrefixSearch:
    """The store's own search among its first rows (through FAISS where the store has an approximate index, else
    exact)."""
    return store.prefix_search()


def vectors_search(vectors: np.ndarray) -> PrefixSearch:
    """Exact search among a few rows' L2-normalised embeddings (a group's members)."""
    return ExactPrefixSearch.of_vectors(vectors)


def earlier_links(
    search: PrefixSearch,
    num_rows: int,
    threshold: float,
    k: int,
    *,
    query_chunk_size: int = 1024,
    show_progress_bar: bool = False,
) -> EarlierLinks:
    """Each of the `num_rows` rows linked to its `k` nearest earlier rows whose cosine reaches `threshold`: a chunk
    of rows at a time, in row order, each chunk's rows searched among the rows before the chunk (`search.before`)
    and compared among themselves exactly."""
    k = min(k, num_rows - 1)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    capped = 0
    starts = range(0, num_rows if k >= 1 else 0, query_chunk_size)
    if show_progress_bar:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="Linking questions", unit="chunk")
    for start in starts:
        chunk = _Chunk(search, start, min(start + query_chunk_size, num_rows))
        pending, depth = np.arange(chunk.start, chunk.stop), k + 1
        while len(pending):
            depth = min(depth, start)
            step = max(1, _SCORES_AT_ONCE // (depth + 1))
            unfinished = []
            for first in range(0, len(pending), step):
                rows = pending[first : first + step]
                links, complete, rows_capped = _nearest_earlier(search, chunk, rows, depth, threshold, k)
                found.append(links)
                capped += rows_capped
                unfinished.append(rows[~complete])
            pending, depth = np.concatenate(unfinished), depth * 2
    if not found:
        empty = np.empty(0, dtype=np.int64)
        return EarlierLinks(empty, empty, np.empty(0, dtype=np.float32), 0)
    later, earlier, scores = (np.concatenate(column) for column in zip(*found))
    return EarlierLinks(later, earlier, scores, capped)


class _Chunk:
    """Rows `start:stop`: their embeddings and their exact cosines among themselves."""

    def __init__(self, search: PrefixSearch, start: int, stop: int) -> None:
        self.start, self.stop = start, stop
        self.rows = np.arange(start, stop)
        self.vectors = np.ascontiguousarray(search.vectors(start, stop), dtype=np.float32)
        self.cosines = exact_cosine_matrix(self.vectors)


def _nearest_earlier(
    search: PrefixSearch, chunk: _Chunk, rows: np.ndarray, depth: int, threshold: float, k: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray, int]:
    """One search of `depth` rows before the chunk for `rows` (rows of the chunk), with the chunk's earlier rows:
    the links of the rows whose list it completes, which rows those are, and how many of them kept `k` links."""
    local = rows - chunk.start
    margin = search_margin(chunk.vectors.shape[1])
    before_scores, before_rows = search.before(chunk.vectors[local], chunk.start, depth)
    returned = (before_rows >= 0).sum(axis=1)
    # Compared with the threshold as an add compares its scores (Python floats).
    before_wide = np.where(before_rows >= 0, before_scores, -np.inf).astype(np.float64)
    last = np.where(returned > 0, before_wide.min(axis=1, initial=np.inf), -np.inf)
    # The rows the search found near enough to be duplicates, scored again exactly; those that are.
    at_b, col_b = np.nonzero(before_wide >= threshold - margin)
    other_b = before_rows[at_b, col_b]
    exact_b = exact_cosines(chunk.vectors[local[at_b]], search.vectors_of(other_b))
    duplicate = exact_b.astype(np.float64) >= threshold
    at_b, other_b, exact_b = at_b[duplicate], other_b[duplicate], exact_b[duplicate]
    within = chunk.cosines[local]
    earlier_in_chunk = np.arange(len(chunk.rows))[None, :] < local[:, None]
    at_w, col_w = np.nonzero(earlier_in_chunk & (within.astype(np.float64) >= threshold))
    at = np.concatenate([at_b, at_w])
    other = np.concatenate([other_b, chunk.rows[col_w]])
    scores = np.concatenate([exact_b, within[at_w, col_w]]).astype(np.float32)
    order = np.lexsort((other, -scores, at))  # per row: most similar first, ties by row (the order an add sees)
    at, other, scores = at[order], other[order], scores[order]
    rank = np.arange(len(at)) - np.searchsorted(at, at, side="left") + 1
    kept = np.bincount(at, minlength=len(rows))
    kth = np.full(len(rows), -np.inf)
    at_k = rank == k
    kth[at[at_k]] = scores[at_k].astype(np.float64)
    # A row left unseen scored at most `last` in the search, so at most `last + margin` exactly.
    complete = (
        (depth >= chunk.start)  # every row before the chunk was searched
        | (returned < depth)  # the search has no more rows before the chunk to give
        | (last + margin < threshold)  # no row left unseen is a duplicate
        | (kth > last + margin)  # k kept, and no row left unseen ties with the k-th
    )
    take = (rank <= k) & complete[at]
    links = (rows[at[take]], other[take], scores[take])
    return links, complete, int(((kept >= k) & complete).sum())


def group_graph(
    index: SearchIndex, store: InMemoryStore, threshold: float, k: int, show_progress_bar: bool = False
) -> csr_matrix:
    """The graph `find_groups` groups: each row of `store` linked to its `k` nearest earlier rows at or above
    `threshold` (`earlier_links`), with a warning where rows have `k` earlier duplicates or more."""
    links = earlier_links(
        store_search(store), len(store), threshold, k, query_chunk_size=index.query_chunk_size,
        show_progress_bar=show_progress_bar,
    )  # fmt: skip
    if links.capped:
        logger.warning(
            f"{links.capped} questions have {min(k, len(store) - 1)} or more earlier duplicates at the threshold "
            f"{threshold}: each is linked to its {min(k, len(store) - 1)} nearest earlier ones only, as an add "
            f"links a new one; find_groups with a larger k links more (k={len(store) - 1} links every pair)"
        )
    return pair_graph(len(store), links.later, links.earlier, links.scores)


def new_questions_links(
    index: SearchIndex, groups: DuplicateGroups, ids: list[Any], vectors: np.ndarray
) -> tuple[list[list[Any]], int]:
    """
    The links of questions just added to the index (`ids` in order, their embeddings `vectors`), by the same rule:
    each one's `k` nearest among the questions before it (those `groups` holds, then the earlier ones of this call)
    at or above the threshold, most similar first, ties by arrival (the index's order); and how many kept `k`. The
    rebuild's search: `k + 1` other rows each, deeper while its list may be incomplete (a later question of this call
    can take a place), so what a call costs grows with its questions' duplicates, not with its size.
    """
    settings = groups.settings
    position = {member: place for place, member in enumerate(ids)}
    margin = search_margin(vectors.shape[1])

    def arrival(member: Any) -> tuple[int, int]:  # grouped questions first, in the order they came; then this call's
        return (0, groups.arrival_order([member])[0]) if member in groups else (1, position[member])

    links: list[list[Any]] = [[] for _ in ids]
    capped = 0
    pending, depth = list(range(len(ids))), settings.k + 1
    while pending:
        asked = min(depth + 1, len(index))  # its own row comes back too
        found = index.store.search(vectors[pending], asked)
        # The earlier questions the search found near enough to be duplicates, scored again exactly from the rows
        # as stored (what a rebuild reads), read in one call.
        near = [
            [match for match in matches if match["score"] >= settings.threshold - margin
             and (match["id"] in groups or position.get(match["id"], place) < place)]
            for place, matches in zip(pending, found)
        ]  # fmt: skip
        stored = stored_vectors(index, [ids[place] for place in pending], near)
        unfinished = []
        for place, matches, candidates in zip(pending, found, near):
            asking = stored[ids[place]]
            others = np.array([stored[match["id"]] for match in candidates]).reshape(len(candidates), len(asking))
            # Compared as Python floats, as the rebuild compares its scores widened to float64.
            scores = exact_cosines(asking[None, :], others).tolist()
            duplicates = sorted(
                ((score, match["id"]) for score, match in zip(scores, candidates) if score >= settings.threshold),
                key=lambda pair: (-pair[0], arrival(pair[1])),
            )[: settings.k]
            last = matches[-1]["score"] if matches else -math.inf  # a question left unseen: at most this + margin
            complete = asked >= len(index) or len(matches) < asked or last + margin < settings.threshold
            if complete or (len(duplicates) == settings.k and duplicates[-1][0] > last + margin):
                links[place] = [member for _, member in duplicates]
                capped += len(duplicates) == settings.k
            else:
                unfinished.append(place)
        pending, depth = unfinished, depth * 2
    return links, capped


def stored_vectors(index: SearchIndex, asking: list[Any], near: list[list[dict[str, Any]]]) -> dict[Any, np.ndarray]:
    """The stored embeddings of the questions `asking` and of their candidates `near`, by id, read in one call."""
    wanted = list(dict.fromkeys([*asking, *(match["id"] for matches in near for match in matches)]))
    return dict(zip(wanted, index.rows_by_id(wanted)[1]))


__all__ = [
    "EarlierLinks", "earlier_links", "group_graph", "new_questions_links", "store_search",
    "vectors_search",
]  # fmt: skip
