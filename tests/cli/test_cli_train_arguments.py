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
