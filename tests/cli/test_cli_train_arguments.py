"""`hfsiamese train` reads a run's arguments as its family's class: a cross-encoder run has no bi-encoder option."""

import pytest

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.train import main as train_main


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--margin", "0.3"], "margin: bi-encoder loss settings"),
        (["--gradient_cache_mini_batch_size", "2"], "unrecognized arguments: --gradient_cache_mini_batch_size 2"),
    ],
)
def test_a_cross_encoder_run_refuses_bi_encoder_options_by_name(flags, message, tmp_path):
    # Refused while the command line is read: before any data, model or output folder.
    with pytest.raises((ValueError, UsageError), match=message):
        train_main(["cross_minilm_qqp", "--output_dir", str(tmp_path / "run"), *flags])
    assert not (tmp_path / "run").exists()


def test_a_cross_encoder_config_with_a_bi_encoder_key_is_refused_by_name(tmp_path):
    config = tmp_path / "cross.yaml"
    config.write_text("architecture: cross_encoder\nno_duplicate_batches: false\n")
    with pytest.raises(UsageError, match=r"unknown keys in .*cross.yaml: \['no_duplicate_batches'\]"):
        train_main([str(config), "--output_dir", str(tmp_path / "run")])


def test_the_family_comes_from_the_flag_then_the_config(tmp_path):
    from hfsiamese.cli.train import architecture_of

    config = tmp_path / "cross.yaml"
    config.write_text("architecture: cross_encoder\n")
    assert architecture_of([str(config)], "lstm_qqp") == "cross_encoder"
    assert architecture_of([str(config), "--architecture", "bi_encoder"], "lstm_qqp") == "bi_encoder"
    assert architecture_of([], str(config)) == "cross_encoder"


def test_the_old_cross_encoder_run_warns_and_runs_the_one_path(monkeypatch):
    import hfsiamese.cli.train as train_module

    calls = []
    monkeypatch.setattr(train_module, "train", lambda *args, **kwargs: calls.append((args, kwargs)) or {"f1": 1.0})
    with pytest.warns(
        FutureWarning, match="train_cross_encoder moved to hfsiamese.cli.train.train .* goes in hfsiamese 0.3"
    ):
        assert train_module.train_cross_encoder("m", "d", "t", split_command="s") == {"f1": 1.0}
    assert calls == [(("m", "d", "t"), {"split_command": "s"})]
