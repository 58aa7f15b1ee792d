"""With HF_HUB_OFFLINE=1 nothing touches the network: sockets are blocked and the main paths run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from transformers import AutoModel, AutoTokenizer

from hfsiamese import SiameseModel
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data import (
    assign_duplicate_groups,
    duplicate_pairs,
    load_pairs,
    tokenize_pairs,
)
from hfsiamese.evaluation import evaluate_pairs
from hfsiamese.utils.hub_access import require_local_or_cached
from tests.conftest import QQP_FILE, REPO_ROOT
from tests.helpers import refuse_network

NOT_CACHED = "someone-offline/not-cached-model"


@pytest.fixture
def no_network(monkeypatch):
    """Any DNS lookup or connection attempt raises (and is recorded), as on a machine without network."""
    attempts = refuse_network(monkeypatch)
    yield attempts
    assert not attempts, f"network attempts while offline: {attempts}"


def test_the_library_sees_offline_mode():
    from huggingface_hub import constants

    from hfsiamese.utils.hub_access import hub_offline

    # What the tests set (tests/conftest.py) reaches the library and the Hub client, read as they read it.
    assert hub_offline() and constants.HF_HUB_OFFLINE


def test_local_model_data_training_and_evaluation_never_touch_the_network(
    no_network, tiny_lstm, word_tokenizer, tmp_path
):
    pairs = load_pairs(str(QQP_FILE), cache_dir=str(tmp_path / "cache"))
    pairs = assign_duplicate_groups(pairs.select(range(400)))
    train = tokenize_pairs(duplicate_pairs(pairs), word_tokenizer)
    evaluation = tokenize_pairs(pairs.select(range(64)), word_tokenizer)
    args = SiameseTrainingArguments(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        max_steps=2,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = SiameseTrainer(
        model=tiny_lstm, args=args, train_dataset=train, eval_dataset=evaluation, processing_class=word_tokenizer
    )
    trainer.train()
    metrics = trainer.evaluate()
    assert metrics["eval_num_pairs"] == 64
    trainer.save_model()
    word_tokenizer.save_pretrained(args.output_dir)

    for load in (SiameseModel.from_pretrained, AutoModel.from_pretrained):
        model = load(args.output_dir)
        assert model.config.threshold == pytest.approx(metrics["eval_threshold"])
    tokenizer = AutoTokenizer.from_pretrained(args.output_dir)
    scores = evaluate_pairs(model, pairs.select(range(32)), tokenizer, batch_size=8)
    assert 0.0 <= scores["accuracy"] <= 1.0
    assert model.encode(["how do i learn python ?"]).shape == (1, model.config.sentence_embedding_dim)


def test_local_encoder_loads_offline(no_network, tiny_bert_dir):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    assert model.config.encoder_type == "transformer"


@pytest.mark.parametrize(
    "load",
    [
        pytest.param(lambda: SiameseModel.from_pretrained(NOT_CACHED), id="SiameseModel.from_pretrained"),
        pytest.param(lambda: SiameseModel.from_encoder_pretrained(NOT_CACHED), id="from_encoder_pretrained"),
        pytest.param(lambda: require_local_or_cached(NOT_CACHED), id="recipes:model_name_or_path"),
        pytest.param(lambda: load_pairs(NOT_CACHED), id="load_pairs/recipes:dataset_name"),
    ],
)
def test_hub_id_not_cached_fails_at_once_saying_so(monkeypatch, load):
    """At once: no connection attempt (no network timeout to wait for) and no sleep (no retry back-off)."""
    attempts = refuse_network(monkeypatch, waits=True)
    with pytest.raises(OSError) as info:  # HubUnreachableError is a ConnectionError, hence an OSError
        load()
    assert attempts == []
    message = str(info.value)
    assert "offline mode is set" in message and NOT_CACHED in message, message


def test_not_a_path_nor_a_hub_id_is_file_not_found(no_network, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder: "):
        require_local_or_cached(str(tmp_path / "a" / "b" / "missing"))
    require_local_or_cached(str(tmp_path))  # a local folder: nothing to check


# The recipes as run from the command line, in a child whose sockets are blocked the same way.
CHILD = r"""
import runpy, socket, sys

def blocked(*args, **kwargs):
    raise SystemExit("NETWORK USED: " + repr(args[:2]))

socket.socket.connect = socket.socket.connect_ex = blocked
socket.getaddrinfo = socket.create_connection = blocked
script, *argv = sys.argv[1:]
sys.argv = [script, *argv]
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize(
    "script,flags",
    [
        ("train.py", ["--encoder_type", "transformer", "--model_name_or_path", NOT_CACHED, "--max_train_pairs", "50"]),
        ("evaluate_pairs.py", ["--model_name_or_path", NOT_CACHED, "--test_file", str(QQP_FILE)]),
    ],
)
@pytest.mark.slow
def test_recipes_with_a_hub_model_not_cached(tmp_path, script, flags):
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    argv = [str(REPO_ROOT / "recipes" / script), *flags]
    if script == "train.py":
        argv += ["--output_dir", str(tmp_path / "out")]
    result = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "NETWORK USED" not in result.stderr, result.stderr[-2000:]
    assert f"cannot load the model {NOT_CACHED!r}: offline mode is set" in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr  # one line: `error: cannot load the model ...`


def test_mistyped_local_folder_is_no_such_folder(tmp_path, monkeypatch):
    from hfsiamese.utils.hub_access import require_local_or_cached

    (tmp_path / "outputs" / "lstm_qqp").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    for name in ("outputs/lstm_qq", "./lstm_qqp", str(tmp_path / "outputs" / "nothing")):
        with pytest.raises(FileNotFoundError, match=f"no such folder: {name}"):
            require_local_or_cached(name)
    require_local_or_cached("outputs/lstm_qqp")
