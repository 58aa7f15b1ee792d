"""`hfsiamese train` from a prepared folder tokenises in the collator by default, and trains as it would tokenising first."""

from __future__ import annotations

import json
import logging

import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.preparation import prepare_pairs
from tests.conftest import QQP_FILE

TINY = [
    "--max_steps", "3", "--max_train_pairs", "300", "--max_eval_pairs", "100", "--per_device_train_batch_size", "16",
    "--eval_strategy", "no", "--save_strategy", "no", "--disable_tqdm", "true", "--logging_steps", "1",
]  # fmt: skip


def train(folder, out, monkeypatch, *flags, config=()):
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    with pytest.raises(SystemExit) as exited:
        cli_main.main(["train", *config, "--train_file", str(folder), "--output_dir", str(out), *TINY, *flags])
    assert exited.value.code == 0
    state = json.loads((out / "trainer_state.json").read_text())
    results = json.loads((out / "all_results.json").read_text())
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    return losses, {key: value for key, value in results.items() if not key.endswith(("runtime", "per_second"))}


def test_a_run_tokenising_in_the_collator_equals_one_tokenising_first(tmp_path, monkeypatch):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    in_collator = train(tmp_path / "prepared", tmp_path / "in_collator", monkeypatch)
    first = train(tmp_path / "prepared", tmp_path / "first", monkeypatch, "--tokenize_in_collator", "false")
    assert len(in_collator[0]) == 3
    assert in_collator == first


def test_a_cross_encoder_run_from_a_prepared_folder_tokenises_in_the_collator_as_one_tokenising_first(
    tiny_cross_encoder_dir, tmp_path, monkeypatch
):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    from hfsiamese.cross_encoder import run_family

    tokenised_up_front = []  # the training rows (both orders) each run tokenised before its first step
    tokenize = run_family.tokenize_cross_pairs
    monkeypatch.setattr(
        run_family,
        "tokenize_cross_pairs",
        lambda pairs, *args, **kwargs: (
            tokenised_up_front.append(kwargs["both_orders"]) or tokenize(pairs, *args, **kwargs)
        ),
    )
    model = ["--model_name_or_path", str(tiny_cross_encoder_dir)]
    config = ["cross_minilm_qqp"]
    in_collator = train(tmp_path / "prepared", tmp_path / "in_collator", monkeypatch, *model, config=config)
    assert True not in tokenised_up_front  # only the validation pairs
    first = train(
        tmp_path / "prepared", tmp_path / "first", monkeypatch, *model, "--tokenize_in_collator", "false", config=config
    )
    assert len(in_collator[0]) == 3 and True in tokenised_up_front
    assert in_collator == first
