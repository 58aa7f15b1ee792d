"""`hfsiamese evaluate` in this process (the recipe tests run it as a command on a trained model)."""

import json

import pytest

from hfsiamese.cli import evaluate
from tests.conftest import QQP_FILE
from tests.fixtures import saved_tiny_lstm


def refuse_constants(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


def test_a_metric_undefined_on_pairs_of_one_kind_is_null_in_strict_json(word_tokenizer, tmp_path, capsys):
    """Average precision and ROC-AUC need both kinds of pair: on duplicates only they are undefined, printed (and
    written) as null, where Python's json wrote NaN, which jq and JavaScript refuse."""
    model = saved_tiny_lstm(tmp_path / "model", word_tokenizer, threshold=0.5)
    rows = [line for line in QQP_FILE.read_text(encoding="utf-8").splitlines() if line.startswith("1\t")][:20]
    pairs = tmp_path / "duplicates.tsv"
    pairs.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    output = tmp_path / "metrics.json"
    argv = ["--model_name_or_path", str(model), "--test_file", str(pairs), "--output_file", str(output)]
    evaluate.main(argv)
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1], parse_constant=refuse_constants)
    assert printed["num_pairs"] == 20 and printed["average_precision"] is None and printed["roc_auc"] is None
    assert 0.0 <= printed["recall"] <= 1.0  # what the pairs do define, at the model's threshold
    assert json.loads(output.read_text(encoding="utf-8"), parse_constant=refuse_constants) == printed


def test_a_report_of_pairs_of_one_kind_is_refused_before_scoring(word_tokenizer, tmp_path, monkeypatch):
    model = saved_tiny_lstm(tmp_path / "model", word_tokenizer, threshold=0.5)
    rows = [line for line in QQP_FILE.read_text(encoding="utf-8").splitlines() if line.startswith("0\t")][:5]
    pairs = tmp_path / "others.tsv"
    pairs.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    monkeypatch.setattr(evaluate, "score_labelled_pairs", None)  # scoring would call it: a TypeError, not this error
    argv = ["--model_name_or_path", str(model), "--test_file", str(pairs), "--report_dir", str(tmp_path / "report")]
    with pytest.raises(ValueError, match=r"--report_dir: the report needs duplicates and non-duplicates; .* one kind"):
        evaluate.main(argv)
    assert not (tmp_path / "report").exists()
