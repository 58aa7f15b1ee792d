"""The recipes as a user runs them: subprocesses, small configs, real embedded QQP data."""

import json
import sys

import pytest
import yaml

from tests.conftest import QQP_FILE, REPO_ROOT
from tests.helpers import EVALUATE, TINY_LSTM_BASE, TRAIN, accelerate_launch, recipe_flags, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

TINY_LSTM = dict(
    TINY_LSTM_BASE,
    max_train_pairs=600,
    max_eval_pairs=300,
    max_steps=8,
    eval_strategy="no",
    save_strategy="no",
    logging_steps=4,
)


@pytest.fixture(scope="module")
def trained_lstm(tmp_path_factory):
    """One small LSTM run of the default recipe: YAML config first, flags after it overriding it."""
    tmp = tmp_path_factory.mktemp("lstm_recipe")
    config = tmp / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_LSTM, "output_dir": str(tmp / "from_yaml")}))
    out = tmp / "run"
    result = run_offline(
        [sys.executable, str(TRAIN), str(config), "--output_dir", str(out), "--max_steps", "6"], cwd=tmp
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out, result


def test_train_writes_checkpoint_results_and_threshold(trained_lstm):
    out, result = trained_lstm
    # The command's CPU defaults reached the run (hfsiamese.cpu_policy): OpenMP's spin chosen before torch loaded, and
    # core sharing decided by the run's own checks (here off: the suite's HFSIAMESE_SHARE_CORES=0, or the caller's
    # OMP_NUM_THREADS), not off as in a library run.
    assert "GOMP_SPINCOUNT=" in result.stderr and "torch was imported before" not in result.stderr
    assert "core sharing: off (" in result.stderr and "a library run keeps torch's threads" not in result.stderr
    assert "precision: " in result.stderr
    results = json.loads((out / "all_results.json").read_text())
    for key in (
        "train_samples_per_second",
        "train_runtime",
        "eval_accuracy",
        "eval_f1",
        "eval_average_precision",
        "eval_roc_auc",
    ):
        assert key in results
    # The summary, printed once: where the model is, its validation metrics, the commands that use it.
    summary = result.stdout[result.stdout.index("Model saved to") :]
    # Paths as the user types them from where the command ran (out's parent).
    assert f"Model saved to {out.name} " in summary and f"accuracy {results['eval_accuracy']:.3f}" in summary
    assert f"--model_name_or_path {out.name} " in summary and "hfsiamese search" in summary
    # No metrics table or JSON dump after it (the Trainer's own log lines stay), and no lock left behind.
    assert "***** all metrics *****" not in result.stdout and '"eval_accuracy":' not in result.stdout
    assert "lock" not in " ".join(p.name for p in out.iterdir())
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 6  # the flag beat the YAML
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "siamese" and config["threshold"] == pytest.approx(results["eval_threshold"])
    assert {"model.safetensors", "tokenizer.json", "modeling_siamese.py"} <= {p.name for p in out.iterdir()}


def test_evaluate_prints_one_json_object(trained_lstm, tmp_path):
    out, _train_result = trained_lstm
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:200]), encoding="utf-8")
    args = [sys.executable, str(EVALUATE), "--model_name_or_path", str(out), "--test_file", str(pairs)]
    result = run_offline(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    metrics = json.loads(lines[0])
    for key in ("accuracy", "f1", "precision", "recall", "average_precision", "roc_auc", "threshold", "num_pairs"):
        assert key in metrics
    assert metrics["num_pairs"] == 200
    assert metrics["threshold"] == pytest.approx(json.loads((out / "all_results.json").read_text())["eval_threshold"])


def test_group_pairs_view_length_batches_and_test_split(tmp_path):
    out = tmp_path / "run"
    result = run_offline(
        [
            sys.executable,
            str(TRAIN),
            *recipe_flags(TINY_LSTM, out),
            "--max_steps",
            "3",
            "--test_fraction",
            "0.1",
            "--train_view",
            "group_pairs",
            "--max_pairs_per_group",
            "5",
            "--train_sampling_strategy",
            "group_by_length",
            "--loss",
            "hard_negative_triplet",
        ],  # group pairs are duplicates: an in-batch loss
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    results = json.loads((out / "all_results.json").read_text())
    assert results["test_num_pairs"] > 500  # ~10% of 10,000 pairs, not capped by max_eval_pairs
    assert results["test_threshold"] == pytest.approx(results["eval_threshold"])
    assert '"shared_questions": {"train/validation": 0, "train/test": 0, "validation/test": 0}' in result.stderr


def test_refuses_non_empty_output_dir(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("a user's file")
    result = run_offline([sys.executable, str(TRAIN), "--output_dir", str(out), "--max_steps", "1"], cwd=tmp_path)
    assert result.returncode != 0
    assert "is not empty" in result.stderr and "--overwrite_output_dir" in result.stderr
    assert (out / "keep.txt").read_text() == "a user's file"


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--train_file", "no/such/file.tsv"], "no/such/file.tsv"),
        (["--per_device_train_batch_size", "1"], "at least 2 pairs"),
        (["--dataset_name", "nyu-mll/glue:qqp"], "offline mode is set"),
    ],
)
def test_bad_input_gets_a_clear_message(tmp_path, flags, message):
    result = run_offline([sys.executable, str(TRAIN), "--output_dir", str(tmp_path / "o"), *flags], cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr.splitlines()[-1] or message in result.stderr[-2000:]


def test_file_without_duplicates_is_refused(tmp_path):
    pairs = tmp_path / "no_dups.tsv"
    pairs.write_text("".join(f"0\tquestion {i} ?\tother question {i} ?\t{i}\n" for i in range(50)), encoding="utf-8")
    args = [sys.executable, str(TRAIN), "--train_file", str(pairs), "--output_dir", str(tmp_path / "o")]
    result = run_offline(args, cwd=tmp_path)
    assert result.returncode != 0 and "holds no duplicate pairs" in result.stderr


def test_unknown_config_key_is_an_error(tmp_path):
    config = tmp_path / "typo.yaml"
    config.write_text("learnig_rate: 0.1\n")
    result = run_offline([sys.executable, str(TRAIN), str(config)], cwd=tmp_path)
    assert result.returncode != 0 and "learnig_rate" in result.stderr


def test_accelerate_launch_two_cpu_processes(tmp_path):
    """The documented launcher, with 2 CPU processes as on a 2-GPU node."""
    out = tmp_path / "ddp"
    command = [
        *accelerate_launch(2),
        str(TRAIN),
        *recipe_flags(TINY_LSTM),
        "--max_steps",
        "3",
        "--output_dir",
        str(out),
    ]
    result = run_offline(command, cwd=tmp_path, ACCELERATE_USE_CPU="1")
    assert result.returncode == 0, result.stderr[-4000:]
    assert json.loads((out / "all_results.json").read_text())["eval_num_pairs"] == 300
    assert (out / "model.safetensors").is_file()


def test_minilm_recipe_smoke(tmp_path):
    out = tmp_path / "minilm"
    result = run_offline(
        [
            sys.executable,
            str(TRAIN),
            str(REPO_ROOT / "recipes/configs/minilm_qqp.yaml"),
            "--output_dir",
            str(out),
            "--max_steps",
            "2",
            "--per_device_train_batch_size",
            "8",
            "--max_train_pairs",
            "64",
            "--max_eval_pairs",
            "64",
            "--disable_tqdm",
            "true",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    config = json.loads((out / "config.json").read_text())
    assert config["encoder_type"] == "transformer" and config["encoder_config"]["model_type"] == "bert"
    # The recipe's speed settings reach the saved model (no dropout); sub-batching is a runtime choice, not saved.
    assert config["encoder_config"]["hidden_dropout_prob"] == 0.0 and "sub_batch_size" not in config
    assert json.loads((out / "all_results.json").read_text())["eval_num_pairs"] == 64


def test_gradient_cache_under_two_processes_matches_the_plain_step(tmp_path):
    """2 CPU processes: GradCache's own gradient averaging must give the weights DDP gives."""
    from safetensors.torch import load_file

    # Plain SGD: the update is proportional to the gradient, so a wrong average shows plainly.
    flags = recipe_flags(TINY_LSTM) + ["--max_steps", "2", "--dropout", "0", "--max_eval_pairs", "20", "--optim", "sgd",
                                       "--learning_rate", "1.0", "--warmup_steps", "0"]  # fmt: skip
    weights = []
    for name, extra in (("plain", []), ("cached", ["--gradient_cache_mini_batch_size", "5"])):
        out = tmp_path / name
        result = run_offline(
            [*accelerate_launch(2), str(TRAIN), *flags, *extra, "--output_dir", str(out)],
            cwd=tmp_path,
            ACCELERATE_USE_CPU="1",
        )
        assert result.returncode == 0, result.stderr[-4000:]
        weights.append(load_file(out / "model.safetensors"))
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        assert (weights[0][key] - weights[1][key]).abs().max() < 1e-5, key
