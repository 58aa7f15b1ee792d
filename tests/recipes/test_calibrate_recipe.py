"""recipes/calibrate.py (a calibrated copy of a model folder) and recipes/evaluate_pairs.py --calibration_file."""

import hashlib
import json
import sys

import pytest
import torch
from transformers import AutoModel

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.calibrated_folder import CARD_SECTION_TITLE
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data import load_pairs
from tests.conftest import QQP_FILE, REPO_ROOT
from tests.helpers import load_recipe, run_offline

CALIBRATE = REPO_ROOT / "recipes" / "calibrate.py"


@pytest.fixture(scope="module")
def model_and_files(tmp_path_factory):
    """A tiny LSTM saved with a card, and two pair files: 120 label-first QQP rows to calibrate on, 200 to test on."""
    tmp = tmp_path_factory.mktemp("calibrate_recipe")
    rows = QQP_FILE.read_text(encoding="utf-8").splitlines()
    calibration = tmp / "new_domain.tsv"  # headerless label-first, labels as words
    calibration.write_text(
        "".join(
            f"{'duplicate' if label == '1' else 'non-duplicate'}\t{a}\t{b}\n"
            for label, a, b, _ in (row.split("\t") for row in rows[:120])
        ),
        encoding="utf-8",
    )
    test = tmp / "test.tsv"
    test.write_text("\n".join(rows[1000:1200]) + "\n", encoding="utf-8")
    pairs = load_pairs(str(calibration), deduplicate=False)
    tokenizer = train_word_tokenizer(
        list(pairs["question1"]) + list(pairs["question2"]), vocab_size=800, model_max_length=64
    )
    torch.manual_seed(0)
    model = SiameseModel(SiameseConfig(vocab_size=len(tokenizer), embedding_dim=16, hidden_size=16, threshold=0.99))
    folder = tmp / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "README.md").write_text("# A model\n\nTrained somewhere else.\n", encoding="utf-8")
    return folder, calibration, test


def _fingerprint(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_writes_a_calibrated_copy_and_never_touches_the_source(model_and_files, tmp_path, capsys, monkeypatch):
    source, calibration, _ = model_and_files
    before = _fingerprint(source)
    output = tmp_path / "calibrated"
    args = ["--model_name_or_path", str(source), "--calibration_file", str(calibration), "--output_dir", str(output)]
    returned = load_recipe(monkeypatch, "calibrate").main(
        [*args, "--calibration_method", "platt", "--num_bootstrap", "50"]
    )
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(lines) == 1 and json.loads(lines[0]) == returned

    assert _fingerprint(source) == before
    copied = _fingerprint(output)
    assert copied["model.safetensors"] == before["model.safetensors"]  # weights copied unchanged
    assert copied["tokenizer.json"] == before["tokenizer.json"]
    config = json.loads((output / "config.json").read_text())
    assert config["threshold"] == pytest.approx(returned["threshold"]) != 0.99
    assert config["calibration"]["data"] == "new_domain.tsv" and config["calibration"]["num_pairs"] == 120
    assert config["calibration"]["method"] == "platt" and (output / "calibration.py").is_file()
    card = (output / "README.md").read_text()
    assert card.startswith("# A model") and CARD_SECTION_TITLE in card
    assert "120 labelled pairs" in card and "`new_domain.tsv`" in card and f"{returned['threshold']:.4f}" in card

    low, high = returned["threshold_interval"]
    assert low <= returned["threshold"] <= high and returned["num_pairs"] == 120
    loaded = AutoModel.from_pretrained(output)
    out = loaded.predict(["how do i learn python ?"], ["what is the best way to learn python ?"])
    assert 0.0 <= out["probability"].item() <= 1.0


def test_refuses_a_non_empty_output_dir_and_one_inside_the_source(model_and_files, tmp_path, capsys, monkeypatch):
    source, calibration, _ = model_and_files
    recipe = load_recipe(monkeypatch, "calibrate")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("a user's file")
    with pytest.raises(FileExistsError, match="is not empty"):
        recipe.main(
            ["--model_name_or_path", str(source), "--calibration_file", str(calibration), "--output_dir", str(taken)]
        )
    assert (taken / "keep.txt").read_text() == "a user's file" and capsys.readouterr().out == ""
    before = _fingerprint(source)
    with pytest.raises(ValueError, match="inside"):
        recipe.main(
            ["--model_name_or_path", str(source), "--calibration_file", str(calibration),
             "--output_dir", str(source / "calibrated")]
        )  # fmt: skip
    assert _fingerprint(source) == before and capsys.readouterr().out == ""


def test_evaluate_calibrates_on_the_calibration_file_then_scores_the_test_file(model_and_files, tmp_path, monkeypatch):
    source, calibration, test = model_and_files
    report = tmp_path / "report"
    args = ["--model_name_or_path", str(source), "--test_file", str(test), "--calibration_file", str(calibration)]
    printed = load_recipe(monkeypatch, "evaluate_pairs").main(
        [*args, "--calibration_method", "isotonic", "--report_dir", str(report)]
    )
    model = AutoModel.from_pretrained(source)
    expected = model.calibrate(load_pairs(str(calibration), deduplicate=False), method="isotonic", num_bootstrap=5)
    assert printed["threshold"] == pytest.approx(expected.threshold)
    assert printed["num_pairs"] == 200 and {"ece", "brier"} <= set(printed)
    assert (report / "reliability_diagram.png").stat().st_size > 10_000
    plain = load_recipe(monkeypatch, "evaluate_pairs").main(
        ["--model_name_or_path", str(source), "--test_file", str(test)]
    )
    assert plain["threshold"] == pytest.approx(0.99) and "ece" not in plain


@pytest.mark.slow
def test_calibrate_runs_as_a_script(model_and_files, tmp_path):
    source, calibration, _ = model_and_files
    output = tmp_path / "calibrated"
    args = ["--model_name_or_path", str(source), "--calibration_file", str(calibration), "--output_dir", str(output)]
    result = run_offline(
        [sys.executable, str(CALIBRATE), *args, "--calibrate_for", "f1", "--num_bootstrap", "20"], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-4000:]
    printed = json.loads(result.stdout)
    assert printed["method"] == "threshold" and printed["target"] == "f1" and printed["output_dir"] == str(output)
    assert json.loads((output / "config.json").read_text())["calibration"]["method"] == "threshold"
