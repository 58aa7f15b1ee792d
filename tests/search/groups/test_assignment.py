"""Groups kept current on add (`hfsiamese.search.groups.assignment`) equal a rebuild's on the same rows: an index
grouped on half of a constructed corpus, the rest added one by one or in batches, in several orders, for each guard,
with `k` covering every question's duplicates and with `k` smaller than the clusters."""

from __future__ import annotations

import numpy as np
import pytest

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.groups import DuplicateGroups
from hfsiamese.search.groups.cross_encoder_guard import call_budget
from tests.search.group_vectors import DIM, VectorModel
from tests.search.groups.test_cross_encoder_guard import cross_encoder  # noqa: F401  (the fixture, shared)

THRESHOLD = 0.8
CLUSTERS, SIZE, SPREAD = 6, 7, 0.45  # loose clusters: chains, bridges and borderline links at this threshold
# Clusters of near-copies larger than k: each question has more duplicates than it links to.
NEAR_COPIES = dict(clusters=5, size=6, spread=0.3)
SMALL_K = 3
ACCEPTS, REJECTS = 0.4, 0.6
BUDGET = 200.0  # cross-encoder thresholds around the constant 0.5 of the `cross_encoder` fixture


def clustered_vectors(
    seed: int, clusters: int = CLUSTERS, size: int = SIZE, spread: float = SPREAD
) -> dict[str, list[float]]:
    """`clusters` clusters of `size` unit vectors each, around random centres."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, DIM))
    vectors = {}
    for i in range(clusters * size):
        vector = centres[i % clusters] + spread * rng.standard_normal(DIM)
        vectors[f"question {i}"] = (vector / np.linalg.norm(vector)).tolist()
    return vectors


def described(index: DuplicateIndex, groups: DuplicateGroups) -> dict[frozenset[str], tuple[str, list[float]]]:
    """Each group as its members' texts -> (its canonical's text, the members' scores in text order)."""
    text_of = dict(zip(index.ids, index.texts))
    found = {}
    for group in groups.groups():
        members = sorted(groups.members(group), key=lambda member: text_of[member])
        scores = [round(groups.score_of(member), 5) for member in members]
        found[frozenset(text_of[member] for member in members)] = (text_of[groups.canonical_of(group)], scores)
    return found


def kept_and_rebuilt(seed: int, batch: int, corpus: dict | None = None, **group_options) -> tuple[dict, dict, int]:
    """Groups found on the first half, the rest added in a seeded order; a rebuild on the same rows; the calls the
    rebuild's cross-encoder guard made."""
    vectors = clustered_vectors(seed, **(corpus or {}))
    texts = list(vectors)
    order = [texts[i] for i in np.random.default_rng(seed + 1).permutation(len(texts))]
    half = len(order) // 2
    judge = group_options.pop("cross_encoder", None)
    index = DuplicateIndex.build(order[:half], VectorModel(vectors), threshold=THRESHOLD, cross_encoder=judge)
    index.find_groups(**group_options)
    for start in range(half, len(order), batch):
        index.add(order[start : start + batch], assign_groups=True)
    kept = described(index, index.groups)
    rebuilt = index.find_groups(**group_options)
    return kept, described(index, rebuilt), rebuilt.cross_encoder_calls


@pytest.mark.parametrize("guard", ["none", "canonical", "mean"])
@pytest.mark.parametrize("canonical", ["earliest", "most_central"])
@pytest.mark.parametrize("batch", [1, 4])
def test_groups_kept_on_add_equal_a_rebuild_in_any_order(guard, canonical, batch):
    for seed in range(3):
        kept, rebuilt, _ = kept_and_rebuilt(seed, batch, guard=guard, canonical=canonical, k=CLUSTERS * SIZE)
        assert kept == rebuilt, f"seed {seed}"


@pytest.mark.parametrize("decision", [ACCEPTS, REJECTS])
@pytest.mark.parametrize("batch", [1, 4])
def test_groups_kept_on_add_equal_a_rebuild_with_the_cross_encoder_guard(
    cross_encoder,  # noqa: F811
    decision,
    batch,
):
    options = dict(guard="cross_encoder", cross_encoder=cross_encoder, cross_encoder_threshold=decision)
    for seed in (3, 9):  # the rebuild spends part of its budget (agreement is promised); an add's own share is less
        kept, rebuilt, calls = kept_and_rebuilt(seed, batch, k=CLUSTERS * SIZE, cross_encoder_budget=BUDGET, **options)
        assert 0 < calls < call_budget(BUDGET, CLUSTERS * SIZE)
        assert kept == rebuilt, f"seed {seed}"


def test_a_question_linking_two_groups_merges_them_under_the_earliest_members_number():
    vectors = {"a": [1.0, 0, 0, 0, 0, 0, 0, 0], "b": [0, 1.0, 0, 0, 0, 0, 0, 0], "bridge": [0.7, 0.7] + [0.0] * 6}
    index = DuplicateIndex.build(["b", "a"], VectorModel(vectors), threshold=0.7)
    groups = index.find_groups(guard="none")
    first = groups.group_of(0)
    (assigned,) = index.add(["bridge"], assign_groups=True)
    assert assigned["group"] == first and not assigned["new_group"]
    assert sorted(groups.members(first)) == [0, 1, 2] and len(groups) == 1 and groups.canonical_of(first) == 0


def test_an_add_whose_k_nearest_earlier_are_all_duplicates_says_it_was_placed_by_them_only(caplog):
    vectors = clustered_vectors(0)
    texts = list(vectors)
    index = DuplicateIndex.build(texts[:30], VectorModel(vectors), threshold=THRESHOLD)
    with caplog.at_level("WARNING"):
        index.find_groups(k=2)
    assert (
        "or more earlier duplicates at the threshold 0.8: each is linked to its 2 nearest earlier ones" in caplog.text
    )
    caplog.clear()
    with caplog.at_level("WARNING"):
        index.add(texts[30:], assign_groups=True)
    assert (
        "have 2 or more earlier duplicates at the threshold 0.8: each was placed by its 2 nearest only" in caplog.text
    )
    caplog.clear()
    index.find_groups(k=len(texts))
    with caplog.at_level("WARNING"):
        index.add(["question one more"], assign_groups=True)
    assert "earlier duplicates" not in caplog.text


@pytest.mark.parametrize("guard", ["none", "canonical", "mean"])
@pytest.mark.parametrize("batch", [1, 4])
def test_groups_kept_on_add_equal_a_rebuild_when_k_is_smaller_than_the_clusters(guard, batch):
    for seed, canonical in zip((1, 2, 3), ["earliest", "most_central", "earliest"]):
        kept, rebuilt, _ = kept_and_rebuilt(seed, batch, NEAR_COPIES, guard=guard, canonical=canonical, k=SMALL_K)
        assert kept == rebuilt, f"seed {seed}"


@pytest.mark.parametrize("decision", [ACCEPTS, REJECTS])
def test_groups_kept_on_add_equal_a_rebuild_with_the_cross_encoder_guard_when_k_is_smaller_than_the_clusters(
    cross_encoder,  # noqa: F811
    decision,
):
    options = dict(guard="cross_encoder", cross_encoder=cross_encoder, cross_encoder_threshold=decision)
    budget = 1000.0  # one pair a question: these clusters have more borderline links, and the budget must last
    for seed, batch in ((0, 1), (3, 4)):
        kept, rebuilt, calls = kept_and_rebuilt(
            seed, batch, NEAR_COPIES, k=SMALL_K, cross_encoder_budget=budget, **options
        )
        assert 0 < calls < call_budget(budget, NEAR_COPIES["clusters"] * NEAR_COPIES["size"])
        assert kept == rebuilt, f"seed {seed}"


def test_an_add_links_a_repost_to_the_earliest_identical_questions_however_the_search_rounds(monkeypatch):
    """Five posts of one question (identical embeddings) and a sixth added: its k = 2 links go to the two earliest,
    as a rebuild's do, even where the search's float32 rounding puts the later copies a hair higher (as a matrix
    product of another shape can on some CPUs)."""
    from hfsiamese.search.groups import assignment
    from tests.search.group_vectors import at_angle, unit

    repost = unit((0, 1.0), (1, 0.3))
    vectors = {f"post {i}": repost for i in range(6)} | {"other": at_angle(10), "far": unit((7, 1.0))}
    index = DuplicateIndex.build(
        ["other", *(f"post {i}" for i in range(5)), "far"], VectorModel(vectors), threshold=0.9
    )
    index.find_groups(k=2, guard="none")
    searched = index.store.search

    def rounding_up_later_rows(queries, k):  # later rows a few float32 steps higher
        return [
            [dict(match, score=match["score"] + 1e-7 * int(match["id"])) for match in matches]
            for matches in searched(queries, k)
        ]

    monkeypatch.setattr(index.store, "search", rounding_up_later_rows)
    links = []
    linking = assignment.new_questions_links
    monkeypatch.setattr(assignment, "new_questions_links", lambda *a: links.append(linking(*a)) or links[-1])
    index.add(["post 5"], assign_groups=True)
    assert links[0][0] == [[1, 2]]  # posts 0 and 1 (rows 1 and 2), the earliest of five ties
    assert links[0][0] == [earlier_links_of_last_row(index, k=2)]  # what a rebuild's mining links it to


def earlier_links_of_last_row(index: DuplicateIndex, k: int) -> list[int]:
    """The last row's links by a rebuild's mining (`earlier_links` over the index's rows)."""
    from hfsiamese.search.groups.earlier_links import earlier_links, vectors_search

    vectors = index.rows_by_id(index.ids)[1]
    found = earlier_links(vectors_search(vectors), len(vectors), 0.9, k)
    last = found.later == len(vectors) - 1
    return [index.ids[row] for row in found.earlier[last]]
