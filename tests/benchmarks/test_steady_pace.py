"""The steady-pace benchmark alternates its training sets round by round and compares the first with each other one
(the training runs are replaced here by recorded ones: their timing is `scale_training.measured`'s)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.training import steady_pace


def test_rounds_rotate_the_order_and_the_first_set_is_compared_with_each_other(tmp_path, monkeypatch):
    pace = {"large": [400.0, 380.0, 420.0], "small": [400.0, 400.0, 400.0], "bundled": [500.0, 475.0, 525.0]}
    calls: list[list[str]] = []

    def recorded(argv, env, max_steps, batch_size, *, sample_memory):
        calls.append(argv)
        name = argv[argv.index("--output_dir") + 1].rpartition("run_")[2]
        assert max_steps == 20 and batch_size == 64 and env["HF_HUB_OFFLINE"] == "1" and not sample_memory
        return {
            "wall_s": 1.0,
            "first_step_s": 0.5,
            "pairs_per_s": pace[name][sum(c[4].endswith(f"run_{name}") for c in calls) - 1],
        }

    monkeypatch.setattr(steady_pace, "measured", recorded)
    (tmp_path / "large").mkdir()
    (tmp_path / "small").mkdir()
    runs = [f"large={tmp_path / 'large'}", f"small={tmp_path / 'small'}", "bundled=bundled"]
    result = steady_pace.main(["--runs", *runs, "--rounds", "3", "--max_steps", "20", "--work_dir", str(tmp_path)])
    assert result["command"].startswith("python benchmarks/training/steady_pace.py --runs large=")
    order = [row["run"] for row in result["rows"]]
    assert order == ["large", "small", "bundled", "small", "bundled", "large", "bundled", "large", "small"]
    # the documented command: a prepared folder as --train_file, the recipe's own pairs without one
    large_call = next(c for c in calls if c[4].endswith("run_large"))
    assert large_call[1:3] == ["train", "lstm_qqp"] and large_call[large_call.index("--train_file") + 1] == str(
        tmp_path / "large"
    )
    assert "--train_file" not in next(c for c in calls if c[4].endswith("run_bundled"))
    small = result["comparisons"]["small"]
    assert small["ratios"] == [1.0, 0.95, 1.05] and small["median"] == 1.0
    assert small["geometric_mean"] == pytest.approx(math.exp((math.log(0.95) + math.log(1.05)) / 3), abs=1e-4)
    low, high = small["interval_95"]
    assert low < 0.95 < 1.0 < high  # three rounds this far apart decide nothing
    assert result["comparisons"]["bundled"]["ratios"] == [0.8, 0.8, 0.8]
    saved = json.loads((tmp_path / "steady_pace.json").read_text())
    assert saved["comparisons"] == json.loads(json.dumps(result["comparisons"]))
    assert "| large | 3 | 400.0 | 400.0, 380.0, 420.0 |" in (tmp_path / "steady_pace.md").read_text()


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        (["large=/nowhere/prepared", "bundled=bundled"], "--runs large: /nowhere/prepared does not exist"),
        (["bundled=bundled"], "--runs needs two or more training sets"),
        (["a=bundled", "a=bundled"], "--runs names 'a' twice"),
        (["bundled", "b=bundled"], "--runs takes NAME=FOLDER"),
    ],
)
def test_bad_runs_are_refused_before_anything_runs(tmp_path, monkeypatch, runs, message):
    monkeypatch.setattr(steady_pace, "measured", lambda *a: pytest.fail("nothing may run"))
    with pytest.raises(SystemExit, match=message):
        steady_pace.main(["--runs", *runs, "--work_dir", str(tmp_path / "work")])
    assert not (tmp_path / "work").exists()
