"""`hfsiamese mine` then `hfsiamese teacher-scores`, on a tiny LSTM and a tiny cross-encoder, and their refusals."""

from __future__ import annotations

import json

import datasets
import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.mining import load_dataset_file
from tests.conftest import TEXTS

PAIRS = [(TEXTS[0], TEXTS[1], 1), (TEXTS[2], TEXTS[3], 1), (TEXTS[4], TEXTS[5], 1), (TEXTS[6], TEXTS[7], 0)]
HELD_OUT = TEXTS[7]


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


@pytest.fixture
def files(tmp_path, tiny_lstm, word_tokenizer):
    tiny_lstm.save_pretrained(tmp_path / "lstm")
    word_tokenizer.save_pretrained(tmp_path / "lstm")
    q1, q2, label = zip(*PAIRS)
    datasets.Dataset.from_dict({"question1": q1, "question2": q2, "is_duplicate": label}).to_csv(tmp_path / "pairs.csv")
    (tmp_path / "held_out.txt").write_text(HELD_OUT + "\n", encoding="utf-8")
    return tmp_path


def mine_argv(files, output, *extra):
    return [
        "mine", "--pairs", str(files / "pairs.csv"), "--model_name_or_path", str(files / "lstm"),
        "--output_path", str(output), "--held_out_file", str(files / "held_out.txt"), *extra,
    ]  # fmt: skip


def test_mine_then_teacher_scores(files, tiny_cross_encoder_dir, capsys):
    mined = files / "mined.parquet"
    code, out, err = run(mine_argv(files, mined, "--num_negatives", "2", "--format", "groups-with-scores"), capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["queries"] == 3 and summary["held_out_questions"] == 1 and summary["format"] == "groups-with-scores"
    groups = load_dataset_file(mined)
    assert groups.column_names == ["query", "positive", "negatives", "teacher_scores"]
    assert len(groups) == summary["rows"] == summary["queries_with_all_negatives"] == 3
    for row in groups:
        assert HELD_OUT not in row["negatives"] and len(row["teacher_scores"]) == 3
    scored = files / "scored.jsonl"
    argv = ["teacher-scores", "--groups", str(mined), "--teacher", str(tiny_cross_encoder_dir)]
    code, out, err = run([*argv, "--output_path", str(scored), "--shard_size", "2", "--batch_size", "4"], capsys)
    assert code == 0, err
    assert json.loads(out)["rows"] == 3
    result = load_dataset_file(scored)
    assert result["negatives"] == groups["negatives"]
    assert all(len(s) == 3 and all(0.0 < v < 1.0 for v in s) for s in result["teacher_scores"])
    assert not (files / "scored.jsonl.shards").exists()  # removed once the output is written
    # An existing output is refused in one line, before any work
    code, _, err = run([*argv, "--output_path", str(scored)], capsys)
    assert code == 1 and err.strip() == f"error: {scored} exists: pass --overwrite_output to replace it"
    code, _, err = run(mine_argv(files, mined), capsys)
    assert code == 1 and err.strip() == f"error: {mined} exists: pass --overwrite_output to replace it"


def test_mine_rescores_in_bfloat16(files, tiny_cross_encoder_dir, capsys):
    mined = files / "mined.parquet"
    argv = ["--cross_encoder", str(tiny_cross_encoder_dir), "--cross_encoder_threshold", "1.0", "--bf16"]
    code, out, err = run(mine_argv(files, mined, "--format", "groups-with-scores", *argv), capsys)
    assert code == 0, err
    scores = load_dataset_file(mined)["teacher_scores"]
    assert len(scores) == json.loads(out)["rows"] > 0 and all(0.0 < v < 1.0 for row in scores for v in row)


def test_mine_from_a_config_file_in_each_format(files, capsys):
    config = files / "mine.yaml"
    config.write_text(f"pairs: {files / 'pairs.csv'}\nmodel_name_or_path: {files / 'lstm'}\nskip_top: 1\n")
    columns = {
        "triplet": ["anchor", "positive", "negative"],
        "n-tuple": ["anchor", "positive", "negative_1"],
        "labeled-pair": ["sentence1", "sentence2", "label"],
    }
    for layout, names in columns.items():
        output = files / f"{layout}"
        code, out, err = run(["mine", str(config), "--output_path", str(output), "--format", layout], capsys)
        assert code == 0, err
        assert load_dataset_file(output).column_names == names
        assert json.loads(out)["format"] == layout


def test_mine_refuses_bad_options_in_one_line(files, capsys):
    code, _, err = run(mine_argv(files, files / "m.parquet", "--num_negatives", "3", "--max_rank", "2"), capsys)
    assert code == 2 and err.strip().startswith("error: the rank window holds max_rank - skip_top = 2 candidates")
    code, _, err = run(mine_argv(files, files / "m.parquet", "--bf16"), capsys)
    assert code == 2 and err.strip() == "error: --bf16 runs the cross-encoder in bfloat16: pass --cross_encoder too"
    code, _, err = run(mine_argv(files, files / "m.csv"), capsys)
    assert code == 1 and "the suffix says how the data set is written" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(mine_argv(files, files / "m.parquet", "--format", "pairs"), capsys)
    assert code == 2 and "invalid choice: 'pairs'" in err
    code, _, err = run(mine_argv(files, files / "m.parquet", "--held_out_file", str(files / "none.txt")), capsys)
    assert code == 1 and err.strip() == f"error: held-out questions file not found: {files / 'none.txt'}"
    assert not (files / "m.parquet").exists()


def test_teacher_scores_refuses_groups_without_their_columns(files, tiny_cross_encoder_dir, capsys):
    code, _, err = run(mine_argv(files, files / "triplets.jsonl"), capsys)
    assert code == 0, err
    argv = ["teacher-scores", "--groups", str(files / "triplets.jsonl"), "--teacher", str(tiny_cross_encoder_dir)]
    code, _, err = run([*argv, "--output_path", str(files / "scored.parquet")], capsys)
    triplets = files / "triplets.jsonl"
    assert code == 1 and err.strip().startswith(f"error: {triplets}: missing column(s) ['query', 'negatives']")
