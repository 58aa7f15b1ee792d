"""Duplicate groups (`DuplicateIndex.find_groups`, `hfsiamese.search.groups`): chains split, canonicals promoted,
incremental assignment equal to a rebuild, groups saved in every backend."""

from __future__ import annotations

import numpy as np
import pytest

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.groups import DuplicateGroups, bcubed_scores
from hfsiamese.search.groups.clustering import components, guarded_groups, pair_graph
from hfsiamese.search.groups.duplicate_groups import DATASET_COLUMNS
from hfsiamese.search.groups.group_storage import GROUPS_NAME
from tests.search.group_vectors import THRESHOLD, VectorModel, at_angle, corpus, model


def texts_of(index: DuplicateIndex, groups: DuplicateGroups) -> list[list[str]]:
    by_id = dict(zip(index.ids, index.texts))
    return sorted(sorted(by_id[i] for i in members) for members in groups.partition())


def assert_same_groups(got: DuplicateGroups, want: DuplicateGroups) -> None:
    """The same members, groups, canonicals and sizes (scores to 1e-6), whatever the row order."""
    got_rows, want_rows = got.to_dataset().sort("id").to_dict(), want.to_dataset().sort("id").to_dict()
    assert got_rows.pop("score") == pytest.approx(want_rows.pop("score"), abs=1e-6)
    assert got_rows == want_rows


def build(**options) -> DuplicateIndex:
    return DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, **options)


def test_a_chain_is_split_by_each_guard_and_kept_whole_without_one():
    index = build()
    plain = texts_of(index, index.find_groups(guard="none"))
    assert ["chain a", "chain b", "chain c", "chain d"] in plain  # A≈B≈C≈D although A and C are 70° apart
    assert texts_of(index, index.find_groups(guard="canonical")) == [
        ["chain a", "chain b"], ["chain c", "chain d"], ["loner"], ["python 1", "python 2", "python 3"],
        ["sky 1", "sky 2"],
    ]  # fmt: skip
    by_mean = texts_of(index, index.find_groups(guard="mean"))
    assert not any("chain a" in group and "chain c" in group for group in by_mean)
    assert ["python 1", "python 2", "python 3"] in by_mean  # a tight cluster is never split


def test_the_constructed_chain_alone_is_split():
    vectors = np.array([at_angle(0), at_angle(35), at_angle(70)], dtype=np.float32)  # A≈B, B≈C, A≉C
    graph = pair_graph(3, [0, 1], [1, 2])
    assert [piece.tolist() for piece in components(graph)] == [[0, 1, 2]]
    group_of, canonical_rows, scores = guarded_groups(graph, lambda rows: vectors[rows], 0.8, "canonical", "earliest")
    assert group_of.tolist() == [0, 0, 1] and canonical_rows.tolist() == [0, 2]
    assert scores[1] == pytest.approx(np.cos(np.radians(35)), abs=1e-6) and scores[2] == 1.0
    group_of, _, _ = guarded_groups(graph, lambda rows: vectors[rows], 0.8, "mean", "earliest")
    assert group_of.tolist() == [0, 0, 1]  # C's mean cosine to A and B is 0.58
    group_of, canonical_rows, _ = guarded_groups(graph, lambda rows: vectors[rows], 0.8, "none", "most_central")
    assert group_of.tolist() == [0, 0, 0] and canonical_rows.tolist() == [1]  # the chain whole, B at its centre


def test_groups_name_a_canonical_and_scores_against_it():
    index = build()
    groups = index.find_groups()
    python = groups.group_of(0)
    assert groups.canonical_of(python) == 0 and groups.members(python) == [0, 4, 9]
    assert groups.score_of(0) == 1.0 and THRESHOLD <= groups.score_of(4) < 1.0
    assert groups.largest(2) == [(python, 0, 3), (groups.group_of(1), 1, 2)]
    central = index.find_groups(canonical="most_central")
    assert central.canonical_of(central.group_of(0)) == 4  # python 2 sits between python 1 and python 3
    assert index.groups is central  # the last groups found are the index's


def test_output_dataset_columns_and_parquet(tmp_path):
    index = build()
    groups = index.find_groups()
    dataset = groups.to_dataset()
    assert tuple(dataset.column_names) == DATASET_COLUMNS and dataset.num_rows == len(index)
    row = dataset[9]  # python 3
    assert (row["id"], row["group"], row["canonical_id"], row["group_size"]) == (9, 0, 0, 3)
    groups.to_parquet(tmp_path / "groups.parquet")
    import pandas as pd

    assert pd.read_parquet(tmp_path / "groups.parquet").to_dict("list") == dataset.to_dict()
    with pytest.raises(FileExistsError, match="exists"):
        groups.to_parquet(tmp_path / "groups.parquet")


def test_deleting_a_canonical_promotes_another_member():
    index = build()
    groups = index.find_groups()
    python = groups.group_of(0)
    index.delete([0])
    assert groups.canonical_of(python) == 4 and groups.members(python) == [4, 9]  # the earliest left
    assert groups.score_of(4) == 1.0 and groups.score_of(9) == pytest.approx(
        float(np.dot(*model().encode(["python 2", "python 3"]).numpy())), abs=1e-6
    )
    index.delete([1])  # chain a: chain b is left alone, its own canonical
    assert groups.canonical_of(groups.group_of(3)) == 3 and groups.members(groups.group_of(3)) == [3]
    index.delete([6])  # the loner: its group goes
    assert 6 not in groups and len(groups) == 4


def test_deleting_every_member_of_a_group_in_one_call_removes_it():
    """A group that loses all its members in one `delete` is gone, not regrouped (it raised KeyError)."""
    index = build()
    groups = index.find_groups()
    python = groups.group_of(0)
    members = groups.members(python)
    assert len(members) > 1
    index.delete([*members, 6])  # a whole group, and a loner of another
    assert python not in groups.groups() and all(member not in groups for member in [*members, 6])
    assert sum(len(groups.members(group)) for group in groups.groups()) == len(index)


def test_a_member_that_belonged_through_a_deleted_canonical_splits_off():
    vectors = {"middle": at_angle(35), "left": at_angle(0), "right": at_angle(70)}
    index = DuplicateIndex.build(["middle", "left", "right"], VectorModel(vectors), threshold=THRESHOLD)
    groups = index.find_groups(guard="canonical")
    assert groups.members(0) == [0, 1, 2]  # both sides within 35° of the earliest, the middle
    index.delete([0])
    assert groups.canonical_of(groups.group_of(1)) == 1 and groups.group_of(2) != groups.group_of(1)


@pytest.mark.parametrize("guard", ["canonical", "mean", "none"])
@pytest.mark.parametrize("canonical", ["earliest", "most_central"])
@pytest.mark.parametrize("batch", [1, 3])
def test_incremental_assignment_equals_a_rebuild(guard, canonical, batch):
    rebuilt = build().find_groups(guard=guard, canonical=canonical)
    index = DuplicateIndex(model(), threshold=THRESHOLD)
    index.add(corpus()[:batch], assign_groups=True)
    index.groups.settings = rebuilt.settings  # the same rule as the rebuild
    texts = corpus()
    for start in range(batch, len(texts), batch):
        index.add(texts[start : start + batch], assign_groups=True)
    assert_same_groups(index.groups, rebuilt)


def test_add_with_assign_groups_names_the_group_and_the_canonical_to_link():
    index = build()
    index.find_groups()
    model_ = index.model
    model_.vectors["python 4"] = model_.vectors["python 1"][:1] + [0.05] + model_.vectors["python 1"][2:]
    model_.vectors["brand new"] = at_angle(45, axes=(6, 7))
    joined, started = index.add(["python 4", "brand new"], assign_groups=True)
    assert joined["group"] == index.groups.group_of(0) and joined["canonical_id"] == 0
    assert joined["canonical_text"] == "python 1" and not joined["new_group"] and joined["score"] > THRESHOLD
    assert started["new_group"] and started["canonical_id"] == started["id"] == 11 and started["score"] == 1.0
    assert index.add([], assign_groups=True) == [] and index.add(["another one"]) is None


def test_assign_groups_needs_groups_first_on_an_index_with_rows():
    index = build()
    with pytest.raises(ValueError, match=r"no duplicate groups yet: call index.find_groups\(\) first"):
        index.add(["python 9"], assign_groups=True)


@pytest.mark.parametrize("backend", ["exact", "faiss"])
def test_groups_are_saved_in_the_index_folder(backend, tmp_path):
    index = build(store=backend)
    index.find_groups(guard="mean", canonical="most_central")
    index.save(tmp_path / "index")
    assert (tmp_path / "index" / GROUPS_NAME).is_file()
    loaded = DuplicateIndex.load(tmp_path / "index", model())
    assert loaded.groups.settings == index.groups.settings
    assert loaded.groups.to_dataset().to_dict() == index.groups.to_dataset().to_dict()
    loaded.add(["python 9"], ids=[10], assign_groups=True)
    loaded.save(tmp_path / "index", overwrite=True)
    assert 10 in DuplicateIndex.load(tmp_path / "index").groups

    plain = build(store=backend)
    plain.save(tmp_path / "index", overwrite=True)  # an index without groups: the older groups file goes
    assert not (tmp_path / "index" / GROUPS_NAME).exists() and DuplicateIndex.load(tmp_path / "index").groups is None


@pytest.mark.parametrize("backend", ["lancedb", "qdrant"])
def test_groups_live_in_the_database_beside_the_rows(backend, tmp_path):
    options = {"store": backend, "database": tmp_path / "db"}
    with build(**options) as index:
        assert index.groups is None
        index.find_groups()
        index.model.vectors["python 9"] = index.model.vectors["python 2"][:2] + [0.05] + [0.0] * 5
        index.add(["python 9"], ids=[10], assign_groups=True)
        index.delete([0])  # python 1, a canonical: python 2 takes over
        kept = index.groups
    with DuplicateIndex(model(), threshold=THRESHOLD, **options) as reopened:  # a new process would see the same
        assert reopened.groups is not kept and reopened.groups.settings == kept.settings
        assert_same_groups(reopened.groups, kept)
        python = reopened.groups.group_of(4)
        assert reopened.groups.canonical_of(python) == 4 and 10 in reopened.groups.members(python)
        reopened.find_groups(guard="none")  # found again: the stored groups are replaced whole
    with DuplicateIndex(model(), threshold=THRESHOLD, **options) as again:
        assert again.groups.settings.guard == "none" and again.groups.members(again.groups.group_of(3)) == [1, 3, 5, 8]


def test_bcubed_scores():
    assert bcubed_scores([1, 1, 2], ["a", "a", "b"]) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    lumped = bcubed_scores([0, 0, 0, 0], ["a", "a", "b", "b"])  # each item's group is half right
    assert lumped["precision"] == 0.5 and lumped["recall"] == 1.0 and lumped["f1"] == pytest.approx(2 / 3)
    split = bcubed_scores([0, 1, 2, 2], ["a", "a", "b", "b"])
    assert split["precision"] == 1.0 and split["recall"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="3 predicted labels but 2 true"):
        bcubed_scores([0, 1, 2], [0, 1])
