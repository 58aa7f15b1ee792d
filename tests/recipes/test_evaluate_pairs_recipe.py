"""recipes/evaluate_pairs.py with a report and retrieval metrics, on a tiny saved model and real QQP pairs."""

import json
import sys

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import evaluate_retrieval, question_corpus
from tests.conftest import QQP_FILE
from tests.helpers import EVALUATE, load_recipe, run_offline

THRESHOLD = 0.6


@pytest.fixture(scope="module")
def saved_model_and_pairs(tmp_path_factory):
    """A tiny untrained LSTM saved with its tokenizer and a threshold, and 300 QQP pairs with duplicate groups."""
    tmp = tmp_path_factory.mktemp("evaluate_recipe")
    pairs_file = tmp / "pairs.tsv"
    pairs_file.write_text(
        "".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:300]), encoding="utf-8"
    )
    pairs = load_pairs(str(pairs_file), deduplicate=False)
    tokenizer = train_word_tokenizer(
        list(pairs["question1"]) + list(pairs["question2"]), vocab_size=800, model_max_length=128
    )
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=16, hidden_size=16, pad_token_id=0
    )
    model = SiameseModel(config)
    model.config.threshold = THRESHOLD
    model_dir = tmp / "model"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model_dir, pairs_file, model, tokenizer, pairs


def test_report_and_retrieval_in_one_json_object(saved_model_and_pairs, tmp_path, capsys, monkeypatch):
    model_dir, pairs_file, model, tokenizer, pairs = saved_model_and_pairs
    report = tmp_path / "report"
    args = ["--model_name_or_path", str(model_dir), "--test_file", str(pairs_file), "--report_dir", str(report)]
    args += ["--retrieval", "--retrieval_k", "1", "3"]
    returned = load_recipe(monkeypatch, "evaluate_pairs").main(args)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(lines) == 1
    printed = json.loads(lines[0])
    assert printed == pytest.approx(returned)
    assert printed["threshold"] == pytest.approx(THRESHOLD)  # the model's, never re-fitted on test pairs
    assert printed["num_pairs"] == 300

    questions, groups = question_corpus(pairs)
    expected = evaluate_retrieval(model, questions, groups, tokenizer, k=(1, 3))
    for name in ("mrr@1", "mrr@3", "recall@3", "ndcg@3", "num_queries", "corpus_size"):
        assert printed[f"retrieval_{name}"] == pytest.approx(expected[name]), name
    assert 0 < printed["retrieval_num_queries"] < printed["retrieval_corpus_size"]
    assert "retrieval_mrr@10" not in printed

    assert json.loads((report / "metrics.json").read_text()) == pytest.approx(printed)
    summary = (report / "report.md").read_text()
    assert str(model_dir) in summary and str(pairs_file) in summary and "retrieval_ndcg@3" in summary
    for name in ("similarity_histogram.png", "precision_recall_curve.png", "threshold_sweep.png"):
        assert (report / name).stat().st_size > 10_000, name


def test_refuses_a_non_empty_report_dir_before_scoring(saved_model_and_pairs, tmp_path, capsys, monkeypatch):
    model_dir, pairs_file, *_ = saved_model_and_pairs
    report = tmp_path / "report"
    report.mkdir()
    (report / "keep.txt").write_text("a user's file")
    args = ["--model_name_or_path", str(model_dir), "--test_file", str(pairs_file), "--report_dir", str(report)]
    recipe = load_recipe(monkeypatch, "evaluate_pairs")
    with pytest.raises(FileExistsError, match="--overwrite_report_dir"):
        recipe.main(args)
    assert capsys.readouterr().out == ""
    recipe.main([*args, "--overwrite_report_dir"])
    assert (report / "keep.txt").read_text() == "a user's file" and (report / "report.md").is_file()


def test_an_existing_output_file_is_kept_unless_replacing_is_asked(
    saved_model_and_pairs, tmp_path, capsys, monkeypatch
):
    """`--output_file` replaced a file of earlier figures without a word; now refused before the model loads, like
    every other command's output; a folder is named; a file in a folder not there yet is written."""
    from hfsiamese.cli.command_line import UsageError

    model_dir, pairs_file, *_ = saved_model_and_pairs
    recipe = load_recipe(monkeypatch, "evaluate_pairs")
    args = ["--model_name_or_path", str(model_dir), "--test_file", str(pairs_file), "--output_file"]
    earlier = tmp_path / "scores.json"
    earlier.write_text("a user's figures")
    with pytest.raises(UsageError, match=r"^--output_file \S+scores\.json exists: pass --overwrite_output_file"):
        recipe.main([*args, str(earlier)])
    assert earlier.read_text() == "a user's figures" and capsys.readouterr().out == ""
    with pytest.raises(UsageError, match="is a directory"):
        recipe.main([*args, str(tmp_path)])
    returned = recipe.main([*args, str(earlier), "--overwrite_output_file"])
    assert json.loads(earlier.read_text()) == pytest.approx(returned)
    nested = tmp_path / "runs" / "today" / "scores.json"
    recipe.main([*args, str(nested)])
    assert json.loads(nested.read_text()) == pytest.approx(returned)


@pytest.mark.slow
def test_runs_as_a_script(saved_model_and_pairs, tmp_path):
    """As a user runs it: `python recipes/evaluate_pairs.py ...`, printing one JSON object."""
    model_dir, pairs_file, *_ = saved_model_and_pairs
    args = ["--model_name_or_path", str(model_dir), "--test_file", str(pairs_file)]
    args += ["--retrieval", "--report_dir", str(tmp_path / "report")]
    result = run_offline([sys.executable, str(EVALUATE), *args], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    printed = json.loads(result.stdout)
    assert {"retrieval_mrr@10", "retrieval_recall@5", "retrieval_ndcg@1", "average_precision"} <= set(printed)
    assert (tmp_path / "report" / "report.md").is_file()


def _with_fingerprint(model_dir, tmp_path, training_pairs):
    """A copy of the model folder with the fingerprint a training run on `training_pairs` saves."""
    import shutil

    import safetensors.numpy

    from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE, fingerprint_tensors, pair_question_hashes

    folder = tmp_path / "trained"
    shutil.copytree(model_dir, folder)
    safetensors.numpy.save_file(
        fingerprint_tensors(pair_question_hashes(training_pairs)), str(folder / FINGERPRINT_FILE)
    )
    return folder


def test_test_pairs_seen_in_training_are_said_and_marked(saved_model_and_pairs, tmp_path, monkeypatch):
    model_dir, pairs_file, _, _, pairs = saved_model_and_pairs
    trained = _with_fingerprint(model_dir, tmp_path, pairs.select(range(100)))
    report = tmp_path / "report"
    args = ["--model_name_or_path", str(trained), "--test_file", str(pairs_file), "--report_dir", str(report)]
    with pytest.warns(UserWarning, match=r"of 300 test pairs \(\d+%\) share a question with the pairs that trained"):
        printed = load_recipe(monkeypatch, "evaluate_pairs").main(args)
    assert 100 <= printed["training_overlap_pairs"] < 300
    assert printed["training_overlap_fraction"] == pytest.approx(printed["training_overlap_pairs"] / 300)
    assert "**Caveat:**" in (report / "report.md").read_text() and "overstate" in (report / "report.md").read_text()


def test_held_out_pairs_are_said_to_share_nothing(saved_model_and_pairs, tmp_path, monkeypatch, recwarn):
    model_dir, pairs_file, _, _, pairs = saved_model_and_pairs
    held_out = {*pairs.select(range(200, 300))["question1"], *pairs.select(range(200, 300))["question2"]}
    training = pairs.filter(lambda row: row["question1"] not in held_out and row["question2"] not in held_out)
    trained = _with_fingerprint(model_dir, tmp_path, training)
    test_file = tmp_path / "held_out.tsv"
    test_file.write_text(
        "".join(pairs_file.read_text(encoding="utf-8").splitlines(keepends=True)[200:300]), encoding="utf-8"
    )
    printed = load_recipe(monkeypatch, "evaluate_pairs").main(
        ["--model_name_or_path", str(trained), "--test_file", str(test_file)]
    )
    assert printed["training_overlap_pairs"] == 0 and printed["training_overlap_fraction"] == 0.0
    assert not [w for w in recwarn if "trained this model" in str(w.message)]


def test_a_model_without_a_fingerprint_claims_nothing(saved_model_and_pairs, monkeypatch):
    model_dir, pairs_file, *_ = saved_model_and_pairs
    printed = load_recipe(monkeypatch, "evaluate_pairs").main(
        ["--model_name_or_path", str(model_dir), "--test_file", str(pairs_file)]
    )
    assert "training_overlap_pairs" not in printed


def test_a_folder_that_is_no_model_is_named(tmp_path, monkeypatch, saved_model_and_pairs):
    _, pairs_file, *_ = saved_model_and_pairs
    (tmp_path / "notes").mkdir()
    with pytest.raises(FileNotFoundError, match=r"notes is not a model folder: it holds no config.json"):
        load_recipe(monkeypatch, "evaluate_pairs").main(
            ["--model_name_or_path", str(tmp_path / "notes"), "--test_file", str(pairs_file)]
        )


def test_truncate_dim_scores_the_first_dimensions(saved_model_and_pairs, capsys, monkeypatch):
    model_dir, pairs_file, model, tokenizer, pairs = saved_model_and_pairs
    args = [
        "--model_name_or_path",
        str(model_dir),
        "--test_file",
        str(pairs_file),
        "--truncate_dim",
        "8",
        "--retrieval",
    ]
    with pytest.warns(UserWarning, match="calibrated on full-size embeddings"):
        printed = load_recipe(monkeypatch, "evaluate_pairs").main(args)
    a = model.encode(list(pairs["question1"]), tokenizer, truncate_dim=8)
    b = model.encode(list(pairs["question2"]), tokenizer, truncate_dim=8)
    from hfsiamese.metrics import pair_classification_metrics

    expected = pair_classification_metrics((a * b).sum(-1).double().numpy(), pairs["label"], threshold=THRESHOLD)
    assert printed["truncate_dim"] == 8
    assert printed["average_precision"] == pytest.approx(expected["average_precision"])
    questions, groups = question_corpus(pairs)
    retrieval = evaluate_retrieval(model, questions, groups, tokenizer, k=(10,), truncate_dim=8)
    assert printed["retrieval_mrr@10"] == pytest.approx(retrieval["mrr@10"])
    full = evaluate_retrieval(model, questions, groups, tokenizer, k=(10,))
    assert retrieval["mrr@10"] != pytest.approx(full["mrr@10"])  # the cut changes the figure
