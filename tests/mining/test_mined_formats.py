import datasets
import numpy as np
import pytest

from hfsiamese.mining import OUTPUT_FORMATS, MinedNegatives, NegativeFilters, mine_negatives
from tests.mining.stand_ins import VECTORS, TableCrossEncoder, TableModel


def mined_example() -> MinedNegatives:
    """a (positive b) gets c, d; c (positive d) gets only a: num_negatives=2 with a ceiling that leaves c one."""
    texts = ["a", "b", "c", "d", "e"]
    return MinedNegatives(
        texts=texts,
        query_codes=np.array([0, 2]),
        positive_codes=np.array([1, 3]),
        positive_scores=np.array([0.9, 0.8], dtype=np.float32),
        negative_codes=np.array([[2, 3], [0, -1]]),
        negative_scores=np.array([[0.7, 0.5], [0.6, np.nan]], dtype=np.float32),
    )


def test_each_format_has_its_columns_and_rows():
    mined = mined_example()
    triplet = mined.to_dataset("triplet")
    assert triplet.column_names == ["anchor", "positive", "negative"]
    assert triplet.to_list() == [
        {"anchor": "a", "positive": "b", "negative": "c"},
        {"anchor": "a", "positive": "b", "negative": "d"},
        {"anchor": "c", "positive": "d", "negative": "a"},
    ]
    n_tuple = mined.to_dataset("n-tuple")  # only queries with both negatives
    assert n_tuple.to_list() == [{"anchor": "a", "positive": "b", "negative_1": "c", "negative_2": "d"}]
    labeled = mined.to_dataset("labeled-pair")
    assert labeled.column_names == ["sentence1", "sentence2", "label"]
    assert [(r["sentence1"], r["sentence2"], r["label"]) for r in labeled] == [
        ("a", "b", 1), ("a", "c", 0), ("a", "d", 0), ("c", "d", 1), ("c", "a", 0),
    ]  # fmt: skip
    groups = mined.to_dataset("groups-with-scores")
    assert groups.column_names == ["query", "positive", "negatives", "teacher_scores"]
    assert groups.features["teacher_scores"] == datasets.Sequence(datasets.Value("float32"))
    (row,) = groups.to_list()
    assert row["query"] == "a" and row["positive"] == "b" and row["negatives"] == ["c", "d"]
    assert row["teacher_scores"] == pytest.approx([0.9, 0.7, 0.5])
    with pytest.raises(ValueError, match="format must be one of"):
        mined.to_dataset("pairs")
    assert set(OUTPUT_FORMATS) == {"triplet", "n-tuple", "labeled-pair", "groups-with-scores"}


def test_groups_take_the_cross_encoder_scores_where_it_rescored():
    data = datasets.Dataset.from_dict({"question1": ["a", "c"], "question2": ["b", "d"], "label": [1, 0]})
    cross = TableCrossEncoder({("a", "b"): 0.95, ("a", "d"): 0.3}, threshold=0.99)
    mined = mine_negatives(data, TableModel(VECTORS), filters=NegativeFilters(num_negatives=2), cross_encoder=cross)
    (row,) = mined.to_dataset("groups-with-scores").to_list()
    assert row["negatives"] == ["c", "d"]
    assert row["teacher_scores"] == pytest.approx([0.95, 0.1, 0.3])
