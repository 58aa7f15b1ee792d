"""`hfsiamese groups`: a corpus's duplicate groups, kept in the index folder and written as the file's suffix says."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from datasets import load_from_disk

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.groups import main
from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0,
        threshold=0.9,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("groups_model")
    SiameseModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path


def test_groups_are_written_kept_with_the_index_and_printed(model_dir, tmp_path, capsys):
    corpus = tmp_path / "questions.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    flags = ["--model_name_or_path", str(model_dir), "--index_dir", str(tmp_path / "index")]
    output = main([*flags, "--corpus", str(corpus), "--output_file", str(tmp_path / "groups.parquet"), "--json"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == output
    table = pd.read_parquet(tmp_path / "groups.parquet")
    assert list(table.columns) == ["id", "group", "canonical_id", "score", "group_size"] and len(table) == len(TEXTS)
    assert output["num_texts"] == len(TEXTS) and output["num_groups"] == table["group"].nunique()
    assert output["settings"] == {"threshold": 0.9, "guard": "mean", "canonical": "earliest", "k": 10}
    for row in output["largest"]:
        assert row["size"] >= 2 and row["canonical_text"] == TEXTS[row["canonical_id"]]
    saved = DuplicateIndex.load(tmp_path / "index").groups  # kept with the index
    assert saved.to_dataset().to_pandas().equals(table)

    with pytest.raises(UsageError, match="exists: pass --overwrite_output_file"):
        main([*flags, "--output_file", str(tmp_path / "groups.parquet")])
    again = main([*flags, "--guard", "none", "--threshold", "0.5", "--largest", "1"])  # the saved index, regrouped
    assert again["settings"]["guard"] == "none" and len(again["largest"]) <= 1
    assert "questions in" in capsys.readouterr().out
    assert DuplicateIndex.load(tmp_path / "index").groups.settings.guard == "none"


def test_the_output_file_is_written_as_its_suffix_says(model_dir, tmp_path):
    """A .jsonl was written as Parquet under that name; now JSON lines, a folder without a suffix, and a suffix that
    names no kind (.csv) refused before the corpus is embedded, nothing written."""
    corpus = tmp_path / "questions.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    flags = ["--model_name_or_path", str(model_dir), "--corpus", str(corpus)]
    main([*flags, "--output_file", str(tmp_path / "groups.parquet")])
    parquet = pd.read_parquet(tmp_path / "groups.parquet")
    main([*flags, "--output_file", str(tmp_path / "groups.jsonl")])
    lines = pd.read_json(tmp_path / "groups.jsonl", lines=True)
    pd.testing.assert_frame_equal(lines, parquet, check_dtype=False)  # the same rows (JSON's floats are 64-bit)
    assert len(lines) == len(TEXTS)
    main([*flags, "--output_file", str(tmp_path / "groups"), "--guard", "none"])
    assert load_from_disk(str(tmp_path / "groups")).to_pandas()["group"].nunique() <= parquet["group"].nunique()
    main([*flags, "--output_file", str(tmp_path / "groups.jsonl"), "--overwrite_output_file", "--threshold", "1.0"])
    assert pd.read_json(tmp_path / "groups.jsonl", lines=True)["group_size"].max() == 1  # replaced, as asked
    before = sorted(path.name for path in tmp_path.iterdir())
    with pytest.raises(UsageError, match=r"^--output_file \S+groups\.csv: the suffix says how the data set is written"):
        main([*flags, "--output_file", str(tmp_path / "groups.csv"), "--index_dir", str(tmp_path / "index")])
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # no index folder, no file


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "pass --corpus"),
        (["--index_dir", "x", "--threshold", "0.5", "--probability_threshold", "0.9"], "not both"),
        (["--index_dir", "x", "--store", "lancedb"], "--database goes with"),
        (["--index_dir", "x", "--guard", "cross_encoder"], "--cross_encoder goes with --guard cross_encoder"),
        (["--index_dir", "x", "--cross_encoder", "ce"], "--cross_encoder goes with --guard cross_encoder"),
        # the cross-encoder guard's own options, given with another guard, were ignored
        (
            ["--index_dir", "x", "--check_size", "0"],
            r"^--check_size applies only with --guard cross_encoder \(the guard is mean\)$",
        ),
        (
            ["--index_dir", "x", "--guard", "none", "--cross_encoder_budget", "5", "--cross_encoder_threshold", "0.5"],
            "--cross_encoder_threshold, --cross_encoder_budget apply only with --guard cross_encoder",
        ),
    ],
)
def test_flag_mistakes_are_one_line(flags, message):
    with pytest.raises(UsageError, match=message):
        main(["--model_name_or_path", "m", *flags])


def test_the_cross_encoder_guard_is_saved_with_its_options(model_dir, tiny_cross_encoder_dir, tmp_path):
    corpus = tmp_path / "questions.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    flags = ["--model_name_or_path", str(model_dir), "--index_dir", str(tmp_path / "index"), "--corpus", str(corpus)]
    output = main([*flags, "--guard", "cross_encoder", "--cross_encoder", str(tiny_cross_encoder_dir),
                   "--cross_encoder_threshold", "0.5", "--cross_encoder_budget", "100", "--json"])  # fmt: skip
    assert output["settings"] == {
        "threshold": 0.9, "guard": "cross_encoder", "canonical": "earliest", "k": 10, "cross_encoder_threshold": 0.5,
        "cross_encoder_budget": 100.0, "check_size": 50,
    }  # fmt: skip
    assert DuplicateIndex.load(tmp_path / "index").groups.settings.cross_encoder_budget == 100.0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--threshold", "1.5"], r"threshold is a cosine similarity and must lie in \[-1, 1\], got 1.5"),
        (["--probability_threshold", "2"], r"probability_threshold is a P\(duplicate\) and must lie in \[0, 1\]"),
        (["--group_threshold", "-2"], r"group_threshold is a cosine in \[-1, 1\], got -2.0"),
    ],
)
def test_a_bar_out_of_range_is_refused_before_the_corpus_is_read(flags, message, model_dir, tmp_path):
    missing = tmp_path / "no-such-corpus.txt"  # read first, it would be the error
    with pytest.raises(ValueError, match=message):
        main(["--model_name_or_path", str(model_dir), "--corpus", str(missing), *flags])
    assert not missing.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--cross_encoder_threshold", "0.5", "--cross_encoder_budget", "-1"], "must be 0 or more, got -1.0"),
        (["--cross_encoder_threshold", "0.5", "--check_size", "1"], "check_size must be an integer of at least 2"),
        (["--cross_encoder_threshold", "3"], r"threshold is a cross-encoder score in \[0, 1\], got 3.0"),
        ([], "no threshold to decide pairs with the cross-encoder"),  # this one was never calibrated
    ],
)
def test_the_cross_encoder_guards_settings_are_refused_before_the_corpus_is_read(
    flags, message, model_dir, tiny_cross_encoder_dir, tmp_path
):
    missing = tmp_path / "no-such-corpus.txt"
    with pytest.raises(ValueError, match=message):
        main(["--model_name_or_path", str(model_dir), "--corpus", str(missing), "--guard", "cross_encoder",
              "--cross_encoder", str(tiny_cross_encoder_dir), *flags])  # fmt: skip
