"""The independent leak check (no hfsiamese code) finds a question planted on both sides, and none in a preparation."""

from __future__ import annotations

import pyarrow as pa

from benchmarks.training.leak_check import main
from hfsiamese.data.question_identity import split_report
from hfsiamese.preparation import PreparationOptions, prepare_pairs
from hfsiamese.preparation.reading import load_prepared_splits
from tests.preparation.test_prepare import synthetic_pairs


def write_shard(path, question1, question2):
    table = pa.table({"question1": question1, "question2": question2, "label": [1] * len(question1)})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def test_a_question_on_both_sides_is_counted_once_folded(tmp_path):
    write_shard(tmp_path / "train-00000.arrow", ["How do I learn Python?", "a"], ["b", "c"])
    write_shard(tmp_path / "train-00001.arrow", ["d"], ["  how  do i LEARN python?"])  # the same question folded
    write_shard(tmp_path / "validation-00000.arrow", ["HOW DO I  learn python?", "e"], ["f", "a"])
    report = main([str(tmp_path), "--processes", "1"])
    assert report["train"] == {"shards": 2, "pairs": 3, "questions": 5}
    assert report["validation"] == {"shards": 1, "pairs": 2, "questions": 4}
    assert report["shared_questions"] == {"train/validation": 2}  # the folded question and "a"


def test_a_preparation_shares_no_question_and_counts_as_the_split_report(tmp_path):
    source = synthetic_pairs(tmp_path / "pairs.tsv", 3_000)
    prepare_pairs(source, tmp_path / "prepared", PreparationOptions(test_fraction=0.1), shard_pairs=700)
    report = main([str(tmp_path / "prepared"), "--processes", "2"])
    assert report["shared_questions"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    theirs = split_report(load_prepared_splits(tmp_path / "prepared", PreparationOptions(test_fraction=0.1)))
    for name in ("train", "validation", "test"):
        assert report[name]["questions"] == theirs[name]["questions"] and report[name]["pairs"] == theirs[name]["pairs"]
