import json

import datasets
import pytest

from hfsiamese.mining import TEACHER_SCORES_COLUMN, score_groups
from hfsiamese.mining.score_shards import SCORES_MANIFEST_NAME, remove_score_shards
from tests.helpers import folder_state
from tests.mining.stand_ins import VECTORS, TableCrossEncoder, TableModel

GROUPS = datasets.Dataset.from_dict(
    {
        "query": ["a", "b", "c", "d", "e"],
        "positive": ["b", "a", "d", "c", "f"],
        "negatives": [["c", "d"], ["e"], ["a", "f"], ["e", "b"], ["a"]],
    }
)
SCORES = {("a", "b"): 0.9, ("a", "c"): 0.7, ("c", "d"): 0.6, ("d", "e"): 0.3, ("e", "f"): 0.2}


class StoppingCrossEncoder(TableCrossEncoder):
    """Stops (as a killed run would) at its `stop_at`-th call: the first call scores the probe pairs."""

    def __init__(self, stop_at: int):
        super().__init__(SCORES)
        self.stop_at = stop_at

    def score_pairs(self, texts_a, texts_b, tokenizer=None, **kwargs):
        if len(self.calls) + 1 == self.stop_at:
            raise KeyboardInterrupt
        return super().score_pairs(texts_a, texts_b, **kwargs)


def test_a_cross_encoder_scores_the_positive_then_each_negative(tmp_path):
    scored = score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "shards", shard_size=2)
    assert scored.column_names == ["query", "positive", "negatives", TEACHER_SCORES_COLUMN]
    assert scored[TEACHER_SCORES_COLUMN] == [
        pytest.approx(s) for s in ([0.9, 0.7, 0.1], [0.9, 0.1], [0.6, 0.7, 0.1], [0.6, 0.3, 0.1], [0.2, 0.1])
    ]
    # An existing column is replaced, not doubled
    again = score_groups(scored, TableCrossEncoder(SCORES), tmp_path / "other", shard_size=2)
    assert again[TEACHER_SCORES_COLUMN] == scored[TEACHER_SCORES_COLUMN]


def test_a_stopped_run_continues_from_its_finished_shards(tmp_path):
    whole = score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "whole", shard_size=2)
    shards = tmp_path / "shards"
    with pytest.raises(KeyboardInterrupt):
        score_groups(GROUPS, StoppingCrossEncoder(stop_at=3), shards, shard_size=2)  # probe, shard 0, stop
    assert sorted(p.name for p in shards.glob("shard-*")) == ["shard-00000.parquet"]
    resumed_teacher = TableCrossEncoder(SCORES)
    resumed = score_groups(GROUPS, resumed_teacher, shards, shard_size=2)
    assert resumed.to_dict() == whole.to_dict()
    # The probe pairs, then shards 1 and 2 only (rows 2-3: 6 pairs; row 4: 2 pairs); shard 0 was not scored again
    assert resumed_teacher.calls == [2, 6, 2]
    assert sorted(p.name for p in shards.iterdir()) == sorted(
        [SCORES_MANIFEST_NAME, "shard-00000.parquet", "shard-00001.parquet", "shard-00002.parquet"]
    )
    remove_score_shards(shards)
    assert not shards.exists()


def test_a_half_written_shard_of_a_killed_run_never_counts(tmp_path):
    """A run killed while writing leaves only a `.partial` file: the rerun scores that shard and removes the file."""
    whole = score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "whole", shard_size=2)
    shards = tmp_path / "shards"
    with pytest.raises(KeyboardInterrupt):
        score_groups(GROUPS, StoppingCrossEncoder(stop_at=2), shards, shard_size=2)  # stopped before any shard
    (shards / ".shard-00000.parquet.0123456789ab.partial").write_bytes(b"PAR1 half")
    teacher = TableCrossEncoder(SCORES)
    assert score_groups(GROUPS, teacher, shards, shard_size=2).to_dict() == whole.to_dict()
    assert teacher.calls == [2, 5, 6, 2]
    assert not list(shards.glob(".*.partial"))


def test_a_folder_of_another_run_is_refused(tmp_path):
    shards = tmp_path / "shards"
    score_groups(GROUPS, TableCrossEncoder(SCORES), shards, shard_size=2)
    with pytest.raises(ValueError, match="holds teacher scores of another teacher"):
        score_groups(
            GROUPS,
            TableCrossEncoder({("How do I learn Python?", "What is the capital of France?"): 0.8}),
            shards,
            shard_size=2,
        )
    with pytest.raises(ValueError, match="shard_size=2 \\(pass that shard size to resume\\)"):
        score_groups(GROUPS, TableCrossEncoder(SCORES), shards, shard_size=3)
    with pytest.raises(ValueError, match="max_length=None \\(pass that max_length to resume\\)"):
        score_groups(GROUPS, TableCrossEncoder(SCORES), shards, shard_size=2, max_length=32)
    with pytest.raises(ValueError, match="holds teacher scores of other rows"):
        score_groups(GROUPS.select([0, 1]), TableCrossEncoder(SCORES), shards, shard_size=2)


def test_a_bi_encoder_teacher_gives_cosines(tmp_path):
    vectors = {**VECTORS, "How do I learn Python?": [1, 1, 0], "What is the best way to learn Python?": [1, 1, 0.1],
               "What is the capital of France?": [0, 1, 1]}  # fmt: skip
    scored = score_groups(GROUPS.select([0]), TableModel(vectors), tmp_path / "shards")
    assert scored[TEACHER_SCORES_COLUMN] == [pytest.approx([0.9536, 0.8944, 0.6], abs=1e-4)]


def test_real_teachers_from_their_folders(tmp_path, tiny_cross_encoder_dir, tiny_lstm, word_tokenizer):
    tiny_lstm.save_pretrained(tmp_path / "lstm")
    word_tokenizer.save_pretrained(tmp_path / "lstm")
    groups = datasets.Dataset.from_dict(
        {
            "query": ["how do i learn python ?"],
            "positive": ["why is the sky blue ?"],
            "negatives": [["how do i cook rice ?"]],
        }
    )
    for teacher in (tiny_cross_encoder_dir, tmp_path / "lstm"):
        (scores,) = score_groups(groups, str(teacher), tmp_path / f"shards_{teacher.name}")[TEACHER_SCORES_COLUMN]
        assert len(scores) == 2 and all(-1.0 <= s <= 1.0 for s in scores)


def test_the_groups_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"the groups data set: missing column\(s\) \['negatives'\]"):
        score_groups(GROUPS.remove_columns("negatives"), TableCrossEncoder(SCORES), tmp_path / "s")
    with pytest.raises(ValueError, match="shard_size must be a positive integer"):
        score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "s", shard_size=0)
    with pytest.raises(TypeError, match="teacher must be a cross-encoder or a bi-encoder"):
        score_groups(GROUPS, object(), tmp_path / "s")


def test_a_folder_scored_in_another_precision_is_refused(tmp_path):
    import torch

    shards = tmp_path / "shards"
    scored = score_groups(GROUPS, TableCrossEncoder(SCORES), shards, shard_size=2, dtype=torch.bfloat16)
    assert json.loads((shards / SCORES_MANIFEST_NAME).read_text())["dtype"] == "bfloat16"
    again = score_groups(GROUPS, TableCrossEncoder(SCORES), shards, shard_size=2, dtype=torch.bfloat16)
    assert again[TEACHER_SCORES_COLUMN] == scored[TEACHER_SCORES_COLUMN]  # resumed: same precision
    with pytest.raises(ValueError, match="a teacher run in bfloat16 \\(pass --bf16 to resume\\)"):
        score_groups(GROUPS, TableCrossEncoder(SCORES), shards, shard_size=2)


def groups_with(**columns) -> datasets.Dataset:
    """GROUPS with some columns replaced."""
    return datasets.Dataset.from_dict({**GROUPS.to_dict(), **columns})


BAD_GROUPS = {  # each in the last row, so a check made shard by shard would come after the first shards
    "negatives as one string": (
        {"negatives": ["cd", "e", "af", "eb", "a"]},
        TypeError,
        r"column 'negatives' holds string, not lists of texts",
    ),
    "a None query": ({"query": ["a", "b", "c", "d", None]}, ValueError, r"row 4: query is empty \(None\)"),
    "an empty positive": ({"positive": ["b", "a", "d", "c", " "]}, ValueError, r"row 4: positive is empty \(' '\)"),
    "None for the negatives": (
        {"negatives": [["c"], ["e"], ["a"], ["e"], None]},
        ValueError,
        r"row 4: negatives is empty \(None\)",
    ),
    "a None negative": ({"negatives": [["c"], ["e"], ["a"], ["e"], ["a", None]]}, ValueError, r"row 4: negatives\[1\]"),
}


@pytest.mark.parametrize("bad", list(BAD_GROUPS))
def test_groups_that_cannot_be_scored_are_refused_before_the_shards_folder(bad, tmp_path):
    columns, error, match = BAD_GROUPS[bad]
    before = folder_state(tmp_path)
    with pytest.raises(error, match=rf"^the groups data set: {match}"):
        score_groups(groups_with(**columns), TableCrossEncoder(SCORES), tmp_path / "shards", shard_size=2)
    assert folder_state(tmp_path) == before
    scored = score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "shards", shard_size=2)  # the retry
    assert len(scored[TEACHER_SCORES_COLUMN]) == len(GROUPS)


@pytest.mark.parametrize("max_length", [0, -1, 2.5, True])
def test_a_max_length_that_is_no_positive_integer_is_refused_before_the_shards_folder(max_length, tmp_path):
    with pytest.raises(ValueError, match=rf"^max_length must be a positive integer or None, got {max_length!r}$"):
        score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "shards", max_length=max_length)
    assert folder_state(tmp_path) == {}
    assert len(score_groups(GROUPS, TableCrossEncoder(SCORES), tmp_path / "shards", max_length=8)) == len(GROUPS)
