"""Your own pairs as MTEB tasks (`hfsiamese.integrations.mteb_tasks`): what MTEB reads from them, and bad input refused."""

from __future__ import annotations

import pytest

from hfsiamese.integrations import pair_classification_task, retrieval_task

QUERIES = {"q1": "how do i learn python ?"}
CORPUS = {"d1": "what is the best way to learn python ?", "d2": "why is the sky blue ?"}


def test_a_pair_task_holds_the_pairs_as_mteb_reads_them():
    task = pair_classification_task(["a", "b"], ["c", "d"], [1, 0], name="MyPairs")
    assert (task.metadata.name, task.metadata.type, task.metadata.main_score) == (
        "MyPairs",
        "PairClassification",
        "max_ap",
    )
    task.load_data()
    split = task.dataset["default"]["test"]
    assert split["sentence1"] == ["a", "b"] and split["sentence2"] == ["c", "d"] and split["labels"] == [1, 0]
    # The dataset revision follows the data: results under one task name tell different data apart.
    assert (
        pair_classification_task(["a", "b"], ["c", "e"], [1, 0], name="MyPairs").metadata.revision
        != task.metadata.revision
    )
    assert (
        pair_classification_task(["a", "b"], ["c", "d"], [1, 0], name="MyPairs").metadata.revision
        == task.metadata.revision
    )


def test_candidates_make_a_retrieval_task_a_reranking_one():
    search = retrieval_task(QUERIES, CORPUS, {"q1": {"d1": 1}})
    assert (search.metadata.type, search.metadata.main_score) == ("Retrieval", "ndcg_at_10")
    rerank = retrieval_task(QUERIES, CORPUS, {"q1": {"d1": 1}}, candidates={"q1": ["d2", "d1"]})
    assert (rerank.metadata.type, rerank.metadata.main_score) == ("Reranking", "map_at_1000")
    rerank.load_data()
    split = rerank.dataset["default"]["test"]
    assert split["top_ranked"] == {"q1": ["d2", "d1"]} and split["relevant_docs"] == {"q1": {"d1": 1}}
    assert split["corpus"]["id"] == ["d1", "d2"] and split["queries"]["text"] == [QUERIES["q1"]]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((["a"], ["b", "c"], [1]), "differ in length"),
        (([], [], []), "at least one pair"),
        ((["a"], ["b"], [2]), "0 or 1"),
        ((["a"], [None], [1]), r"texts_b\[0\] is None"),
    ],
)
def test_bad_pairs_are_refused_in_one_line(arguments, message):
    with pytest.raises((ValueError, TypeError), match=message):
        pair_classification_task(*arguments)


@pytest.mark.parametrize(
    ("relevant", "candidates", "message"),
    [
        ({"q9": {"d1": 1}}, None, "query 'q9'"),
        ({"q1": {"d9": 1}}, None, r"\['d9'\]"),
        ({"q1": {"d1": 1}}, {"q1": ["d9"]}, "candidates of 'q1'"),
    ],
)
def test_ids_that_name_nothing_are_refused(relevant, candidates, message):
    with pytest.raises(ValueError, match=message):
        retrieval_task(QUERIES, CORPUS, relevant, candidates=candidates)
