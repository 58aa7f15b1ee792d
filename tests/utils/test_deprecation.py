"""Every deprecated name (one table, `hfsiamese.utils.deprecation`) keeps working until its one sunset version, with a
FutureWarning naming the new one."""

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


# --- the one deprecation table ---


def test_every_old_name_is_dated_and_goes_in_one_release():
    import datetime

    import hfsiamese
    from hfsiamese.utils.deprecation import DEPRECATIONS, REMOVED_IN

    assert tuple(map(int, REMOVED_IN.split("."))) > tuple(map(int, hfsiamese.__version__.split(".")[:2]))
    olds = [(row.kind, row.old) for row in DEPRECATIONS]
    assert len(olds) == len(set(olds)), "an old name listed twice"
    for row in DEPRECATIONS:
        datetime.date.fromisoformat(row.since)  # a day, YYYY-MM-DD
        assert row.old != row.new


def test_every_warning_names_the_sunset_version():
    from hfsiamese.utils.deprecation import DEPRECATIONS, REMOVED_IN, deprecation_message

    for row in DEPRECATIONS:
        message = deprecation_message(row)
        assert f"hfsiamese {REMOVED_IN}" in message and row.old.rpartition(".")[2] in message, message


def test_the_package_states_no_other_sunset():
    """The four mechanisms of before (option renames, moved modules, loss names, class aliases) said "the next release"
    or "0.3"; every warning now comes from the table, and the travelling model (which cannot import it) says 0.3."""
    from hfsiamese.utils.deprecation import REMOVED_IN
    from tests.conftest import REPO_ROOT

    for path in (REPO_ROOT / "hfsiamese").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "removed in the next release" not in text and "until the next release" not in text, path
    calibration = (REPO_ROOT / "hfsiamese" / "models" / "siamese" / "calibration.py").read_text(encoding="utf-8")
    assert f"goes in hfsiamese {REMOVED_IN}" in calibration


def test_a_deprecation_missing_from_the_table_is_refused():
    from hfsiamese.utils.deprecation import renamed_option, warn_deprecated

    with pytest.raises(KeyError, match="not in hfsiamese.utils.deprecation.DEPRECATIONS"):
        warn_deprecated("option", "--never_was")

    class Args:
        old = None
        new = 1

    with pytest.raises(KeyError, match="--old is not in"):
        renamed_option(Args(), "old", "new")


@pytest.mark.parametrize(
    ("module", "name", "new_module"),
    [
        ("hfsiamese.data.arrow_columns", "column_arrow", "hfsiamese.data.question_identity"),
        ("hfsiamese.data.arrow_columns", "column_numpy", "hfsiamese.data.question_identity"),
        ("hfsiamese.data.splits", "split_report", "hfsiamese.data.question_identity"),
    ],
)
def test_a_name_moved_out_of_a_module_that_stays_still_imports_with_a_warning(module, name, new_module):
    import importlib

    with pytest.warns(FutureWarning, match=rf"{module}.{name} moved to {new_module}.{name}; the old path goes in"):
        old = getattr(importlib.import_module(module), name)
    assert old is getattr(importlib.import_module(new_module), name)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        importlib.import_module(module).nothing_here  # noqa: B018 - the attribute lookup is the test


def test_a_renamed_class_still_imports_with_a_warning():
    import hfsiamese.losses as losses

    with pytest.warns(FutureWarning, match="ContrastiveTripletLoss is now ContrastiveRankingLoss"):
        assert losses.ContrastiveTripletLoss is losses.ContrastiveRankingLoss
