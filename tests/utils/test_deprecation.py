"""Renamed options keep working under their old name for one release, with a FutureWarning naming the new one."""

from __future__ import annotations

import pytest

from hfsiamese.bi_encoder import sentence_transformers_export as st_export
from hfsiamese.bi_encoder.calibrated_folder import CalibrationArguments
from hfsiamese.calibration_fitting import calibrate_model
from hfsiamese.training.arguments import DataArguments, model_card_kwargs

CALIBRATION = dict(model_name_or_path="m", calibration_file="c.jsonl", output_dir="o")


def test_method_is_calibration_method_as_in_evaluate():
    with pytest.warns(FutureWarning, match="--method is renamed --calibration_method"):
        args = CalibrationArguments(**CALIBRATION, method="platt")
    assert args.calibration_method == "platt"
    assert args.method == "platt"  # code still reading the old attribute gets the value


@pytest.mark.filterwarnings("error")
def test_the_new_name_gives_no_warning():
    args = CalibrationArguments(**CALIBRATION, calibration_method="isotonic")
    assert (args.calibration_method, args.method) == ("isotonic", "isotonic")
    assert CalibrationArguments(**CALIBRATION).calibration_method == "threshold"


def test_both_names_with_different_values_are_refused():
    with pytest.raises(ValueError, match="--method .deprecated. and --calibration_method give different values"):
        CalibrationArguments(**CALIBRATION, method="platt", calibration_method="isotonic")


def test_the_parser_takes_the_old_flag():
    from transformers import HfArgumentParser

    argv = ["--model_name_or_path", "m", "--calibration_file", "c", "--output_dir", "o", "--method", "isotonic"]
    with pytest.warns(FutureWarning, match="--calibration_method"):
        (args,) = HfArgumentParser(CalibrationArguments).parse_args_into_dataclasses(argv)
    assert args.calibration_method == "isotonic"


def test_dataset_name_with_a_config_is_split_as_transformers_examples_do():
    with pytest.warns(FutureWarning, match="--dataset_name nyu-mll/glue --dataset_config_name qqp"):
        args = DataArguments(dataset_name="nyu-mll/glue:qqp")
    assert (args.dataset_name, args.dataset_config_name) == ("nyu-mll/glue", "qqp")
    assert args.dataset_source == "nyu-mll/glue:qqp"  # what hfsiamese's Hub loader reads


@pytest.mark.filterwarnings("error")
def test_dataset_config_name():
    args = DataArguments(dataset_name="nyu-mll/glue", dataset_config_name="qqp")
    assert args.dataset_source == "nyu-mll/glue:qqp"
    assert DataArguments(dataset_name="owner/pairs").dataset_source == "owner/pairs"
    assert DataArguments().dataset_source is None
    with pytest.raises(ValueError, match="--dataset_config_name needs --dataset_name"):
        DataArguments(dataset_config_name="qqp")
    with pytest.raises(ValueError, match="names configuration 'qqp', --dataset_config_name 'mrpc'"):
        DataArguments(dataset_name="nyu-mll/glue:qqp", dataset_config_name="mrpc")


def test_the_model_card_names_the_data_set_and_its_config(monkeypatch):
    from hfsiamese.training.arguments import ModelArguments

    card = model_card_kwargs(ModelArguments(), DataArguments(dataset_name="nyu-mll/glue", dataset_config_name="qqp"))
    assert (card["dataset"], card["dataset_tags"], card["dataset_args"]) == ("nyu-mll/glue:qqp", "nyu-mll/glue", "qqp")


def test_calibrate_target_is_calibrate_for(monkeypatch):
    seen = {}

    def fake_calibrate_model(model, pairs, labels=None, **kwargs):
        seen.update(kwargs)
        return "report"

    monkeypatch.setattr("hfsiamese.calibration_fitting.calibrate_model", fake_calibrate_model)
    from hfsiamese.models.siamese.calibration import CalibrationMixin

    with pytest.warns(FutureWarning, match=r"model\.calibrate\(target=\.\.\.\) is renamed calibrate_for="):
        assert CalibrationMixin().calibrate([("a", "b")], [1], target="f1") == "report"
    assert seen["calibrate_for"] == "f1" and "target" not in seen


def test_calibrate_model_takes_the_old_keyword():
    class NoScores:
        def score_pairs(self, *args, **kwargs):
            raise AssertionError("the options are checked first")

    with pytest.warns(FutureWarning, match="calibrate_for"), pytest.raises(ValueError, match="needs target_precision"):
        calibrate_model(NoScores(), [("a", "b")], [1], target="precision")


def test_st_export_overwrite_is_overwrite_output_dir(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(
        st_export, "export_sentence_transformers", lambda *args, **kwargs: calls.append(kwargs) or "out"
    )
    with pytest.warns(FutureWarning, match="--overwrite is renamed --overwrite_output_dir"):
        st_export.main(["ckpt", "out", "--overwrite"])
    st_export.main(["ckpt", "out", "--overwrite_output_dir"])
    st_export.main(["ckpt", "out"])
    assert [call["overwrite"] for call in calls] == [True, True, False]
