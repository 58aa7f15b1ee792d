"""`hfsiamese split`: the held-out pairs of a training config, as benchmarks/export_validation_slice.py wrote them."""

from __future__ import annotations

import json

import pytest
import yaml

from benchmarks.common.qqp_slices import recipe_splits
from hfsiamese.cli import split
from hfsiamese.cli.command_line import UsageError
from tests.conftest import QQP_FILE


@pytest.fixture
def small_config(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:600]), encoding="utf-8")
    config = tmp_path / "small.yaml"
    config.write_text(yaml.safe_dump({"train_file": str(pairs), "validation_fraction": 0.2, "test_fraction": 0.1,
                                      "split_seed": 7, "loss": "contrastive", "max_steps": 3}))  # fmt: skip
    return config


def rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("which", ["validation", "test"])
def test_writes_the_pairs_the_old_script_wrote(small_config, tmp_path, which, capsys):
    out = tmp_path / f"{which}.jsonl"
    summary = split.main([str(small_config), "--output_file", str(out), "--split", which])
    expected = recipe_splits(small_config)[which]
    expected = expected.remove_columns([c for c in expected.column_names if c not in split.KEPT_COLUMNS])
    assert rows(out) == expected.to_list() and len(expected) > 10
    assert summary == {"file": str(out), "split": which, "pairs": len(expected), "duplicates": sum(expected["label"])}
    assert json.loads(capsys.readouterr().out) == summary


def test_data_flags_override_the_config_and_training_flags_are_refused(small_config, tmp_path):
    out = tmp_path / "v.jsonl"
    split.main([str(small_config), "--output_file", str(out), "--split_seed", "8"])
    assert rows(out) != [dict(row) for row in rows_of(small_config, tmp_path)]
    with pytest.raises(UsageError, match="--max_steps: training settings; hfsiamese split takes only"):
        split.main([str(small_config), "--output_file", str(tmp_path / "w.jsonl"), "--max_steps", "4"])


def rows_of(config, tmp_path):
    out = tmp_path / "seed7.jsonl"
    split.main([str(config), "--output_file", str(out)])
    return rows(out)


def test_refusals(small_config, tmp_path):
    out = tmp_path / "v.jsonl"
    out.write_text("mine\n")
    with pytest.raises(FileExistsError, match="--overwrite_output_file"):
        split.main([str(small_config), "--output_file", str(out)])
    assert out.read_text() == "mine\n"
    split.main([str(small_config), "--output_file", str(out), "--overwrite_output_file"])
    assert len(rows(out)) > 10
    with pytest.raises(UsageError, match="must end in .jsonl"):
        split.main([str(small_config), "--output_file", str(tmp_path / "v.csv")])
    no_test = tmp_path / "no_test.yaml"
    no_test.write_text(small_config.read_text().replace("test_fraction: 0.1", "test_fraction: 0.0"))
    with pytest.raises(UsageError, match="no 'test' split"):
        split.main([str(no_test), "--output_file", str(tmp_path / "t.jsonl"), "--split", "test"])


def test_the_split_command_of_a_training_command_line():
    from hfsiamese.cli.configs import DEFAULT_CONFIG, DISTILL_CONFIG

    assert (
        split.held_out_command(["--max_steps", "3"], DEFAULT_CONFIG)
        == "hfsiamese split --output_file HELD_OUT_PAIRS.jsonl"
    )
    # hfsiamese distill's default config is not split's: named, so that the split is the distillation run's.
    assert split.held_out_command(
        ["--teacher_model_name_or_path", "t", "--validation_fraction", "0.2"], DISTILL_CONFIG
    ) == ("hfsiamese split lstm_distilled_qqp --validation_fraction 0.2 --output_file HELD_OUT_PAIRS.jsonl")
    assert split.held_out_command(["my.yaml", "--dataset_name", "nyu-mll/glue:qqp"], DEFAULT_CONFIG, "v.jsonl") == (
        "hfsiamese split my.yaml --dataset_name nyu-mll/glue:qqp --output_file v.jsonl"
    )
    # A boolean data flag given without a value does not take the next flag as its value.
    assert split.held_out_command(["--train_file", "p.tsv", "--prepare_data", "--max_steps", "3"], DEFAULT_CONFIG) == (
        "hfsiamese split --train_file p.tsv --prepare_data --output_file HELD_OUT_PAIRS.jsonl"
    )
