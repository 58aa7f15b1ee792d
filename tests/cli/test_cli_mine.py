"""`hfsiamese mine` then `hfsiamese teacher-scores`, on a tiny LSTM and a tiny cross-encoder, and their refusals."""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import textwrap

import datasets
import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.mining import load_dataset_file
from tests.conftest import REPO_ROOT, TEXTS
from tests.helpers import offline_env

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
    code, _, err = run(mine_argv(files, files / "m.parquet", "--shard_size", "0"), capsys)
    assert code == 2 and err.strip() == "error: --shard_size must be a positive integer, got 0"
    code, _, err = run(mine_argv(files, files / "m.parquet", "--max_score", "7"), capsys)
    assert code == 2 and err.strip() == "error: max_score is a cosine ceiling in (-1, 1], got 7.0"
    code, _, err = run(mine_argv(files, files / "m.parquet", "--margin", "5"), capsys)
    assert code == 2 and err.strip().startswith("error: margin must be below 2") and len(err.strip().splitlines()) == 1
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


# `hfsiamese mine` / `hfsiamese teacher-scores` in a process of their own, killed by SIGKILL (no exception handler,
# no cleanup) as its hook (`module:function` or `module:Class.method`) is called for the second time.
_KILLED_COMMAND = textwrap.dedent(
    """
    import importlib, os, signal, sys
    from hfsiamese.cli import main as cli_main

    module, path = sys.argv[1].split(":")
    owner = importlib.import_module(module)
    *owners, name = path.split(".")
    for part in owners:
        owner = getattr(owner, part)
    hooked, calls = getattr(owner, name), []

    def killed_at_second_call(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return hooked(*args, **kwargs)

    setattr(owner, name, killed_at_second_call)
    cli_main.main(sys.argv[2:])
    """
)


def killed_run(hook: str, argv: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _KILLED_COMMAND, hook, *argv],
        env=offline_env(PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == -signal.SIGKILL, run.stderr[-3000:]


def counting(monkeypatch, hook: str) -> list[int]:
    """Calls of `hook` (`module:function` or `module:Class.method`) from now on, counted."""
    module, path = hook.split(":")
    owner = importlib.import_module(module)
    *owners, name = path.split(".")
    for part in owners:
        owner = getattr(owner, part)
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


# Killed as it writes the second of 4 embedding shards (2 of the 7 questions each), or the second of 3 query chunks;
# then the work counted on the rerun, and how often an unstopped run does it.
MINE_KILLS = {
    "embedding": ("hfsiamese.search.shards.local_encoding:write_shard", "hfsiamese.search.shards.local_encoding:encode_texts", 4),
    "searching": ("hfsiamese.mining.mining_shards:MiningFolder.write_chunk", "hfsiamese.mining.negative_mining:_ChunkSearch.chunk", 3),
}  # fmt: skip


@pytest.mark.parametrize("stage", sorted(MINE_KILLS))
@pytest.mark.slow
def test_mine_killed_with_sigkill_resumes_to_the_unstopped_output(
    stage, files, tiny_cross_encoder_dir, capsys, monkeypatch
):
    kill_at, work, total = MINE_KILLS[stage]
    options = ["--format", "groups-with-scores", "--num_negatives", "2", "--shard_size", "2", "--query_chunk_size", "1"]
    options += ["--cross_encoder", str(tiny_cross_encoder_dir), "--cross_encoder_threshold", "0.99"]
    code, _, err = run(mine_argv(files, files / "unstopped.parquet", *options), capsys)
    assert code == 0, err
    killed = files / "killed.parquet"
    killed_run(kill_at, mine_argv(files, killed, *options))
    shards = files / "killed.parquet.shards"
    assert not killed.exists()
    done = sorted(p.name for p in (shards / ("embeddings" if stage == "embedding" else "negatives")).glob("shard-*"))
    assert done == ["shard-00000.parquet"]

    calls = counting(monkeypatch, work)
    code, out, err = run(mine_argv(files, killed, *options), capsys)
    assert code == 0, err
    assert len(calls) == total - 1  # the finished shard or chunk was kept, not done again
    assert killed.read_bytes() == (files / "unstopped.parquet").read_bytes()
    assert json.loads(out)["rows"] == 3 and not shards.exists()


@pytest.mark.slow
def test_teacher_scores_killed_with_sigkill_resumes_to_the_unstopped_output(
    files, tiny_cross_encoder_dir, capsys, monkeypatch
):
    mined = files / "mined.parquet"
    code, _, err = run(mine_argv(files, mined, "--num_negatives", "2", "--format", "groups-with-scores"), capsys)
    assert code == 0, err
    argv = ["teacher-scores", "--groups", str(mined), "--teacher", str(tiny_cross_encoder_dir), "--shard_size", "1"]
    code, _, err = run([*argv, "--output_path", str(files / "unstopped.jsonl")], capsys)
    assert code == 0, err
    killed = files / "killed.jsonl"
    killed_run("hfsiamese.mining.teacher_scoring:write_score_shard", [*argv, "--output_path", str(killed)])
    shards = files / "killed.jsonl.shards"
    assert not killed.exists() and sorted(p.name for p in shards.glob("shard-*")) == ["shard-00000.parquet"]

    calls = counting(monkeypatch, "hfsiamese.mining.teacher_scoring:_scored")
    code, _, err = run([*argv, "--output_path", str(killed)], capsys)
    assert code == 0, err
    assert len(calls) == 2  # shards 1 and 2 of 3: shard 0 was kept
    assert killed.read_bytes() == (files / "unstopped.jsonl").read_bytes() and not shards.exists()
