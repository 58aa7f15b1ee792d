"""Data preparation for a training run: pairs -> leak-free splits with groups -> the rows the loss needs."""

from __future__ import annotations

import json
import warnings

import datasets
import numpy as np
import pytest

from hfsiamese.data import load_pairs, split_report
from hfsiamese.losses import get_loss
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits, training_view, view_for_loss, warn_if_thin
from tests.conftest import QQP_FILE, TEXTS


def write(path, rows) -> str:
    path.write_text("".join(f"{label}\t{a}\t{b}\t{i}\n" for i, (label, a, b) in enumerate(rows)), encoding="utf-8")
    return str(path)


def test_default_file_is_split_by_question_with_groups():
    splits = load_splits(DataArguments(test_fraction=0.1), default_train_file=QQP_FILE)
    assert list(splits) == ["train", "validation", "test"]
    assert sum(len(split) for split in splits.values()) == len(load_pairs(str(QQP_FILE)))
    assert split_report(splits)["shared_questions"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    assert "group_id" in splits["train"].column_names
    again = load_splits(DataArguments(test_fraction=0.1), default_train_file=QQP_FILE)
    assert again["validation"]["question1"][:] == splits["validation"]["question1"][:]


def test_limits_and_a_validation_file(tmp_path):
    validation = write(tmp_path / "val.tsv", [(1, TEXTS[6], TEXTS[7]), (0, TEXTS[5], TEXTS[7])])
    args = DataArguments(train_file=str(QQP_FILE), validation_file=validation, max_train_pairs=100, max_eval_pairs=1)
    splits = load_splits(args)
    assert (len(splits["train"]), len(splits["validation"])) == (100, 1)
    assert splits["validation"]["question1"][:] in ([TEXTS[6]], [TEXTS[5]])  # a sample of the file's pairs


def test_bad_sources(tmp_path):
    with pytest.raises(ValueError, match="either --train_file or --dataset_name, not both"):
        load_splits(DataArguments(train_file="a.tsv", dataset_name="nyu-mll/glue:qqp"))
    with pytest.raises(ValueError, match="pass --train_file or --dataset_name"):
        load_splits(DataArguments())
    no_duplicates = write(tmp_path / "neg.tsv", [(0, TEXTS[0], TEXTS[1]), (0, TEXTS[2], TEXTS[3])])
    args = DataArguments(train_file=no_duplicates, validation_file=no_duplicates)
    with pytest.raises(ValueError, match="neg.tsv holds no duplicate pairs"):
        load_splits(args)


@pytest.mark.parametrize(
    ("name", "options", "view"),
    [
        ("contrastive", {}, "labelled_pairs"),
        ("online_contrastive", {}, "labelled_pairs"),
        ("contrastive_ranking", {}, "labelled_pairs"),
        ("verification_identification", {}, "labelled_pairs"),
        ("multiple_negatives_ranking", {}, "duplicate_pairs"),
        ("hard_negative_triplet", {}, "duplicate_pairs"),
        ("triplet", {}, "mined_triplets"),
        ("triplet", {"in_batch_negatives": True}, "duplicate_pairs"),
    ],
)
def test_auto_view_is_what_the_loss_declares(name, options, view):
    assert view_for_loss(get_loss(name, **options)) == view


TRAIN = datasets.Dataset.from_dict(
    {
        "question1": [TEXTS[0], TEXTS[2], TEXTS[4], TEXTS[1], TEXTS[6]],
        "question2": [TEXTS[1], TEXTS[3], TEXTS[5], TEXTS[2], TEXTS[7]],
        "label": [1, 1, 1, 0, 0],
    }
)


def test_training_views(tiny_lstm, word_tokenizer):
    args = DataArguments(mining_margin=-2.0)
    labelled = training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)
    assert labelled["label"] == [1, 1, 1, 0, 0] and "group_id" in labelled.column_names
    duplicates = training_view(TRAIN, args, get_loss("multiple_negatives_ranking"), tiny_lstm, word_tokenizer)
    assert duplicates["label"] == [1, 1, 1]
    mined = training_view(TRAIN, args, get_loss("triplet"), tiny_lstm, word_tokenizer)
    assert "negative" in mined.column_names and "negative_score" not in mined.column_names
    assert np.all(np.asarray(mined["label"]) == 1)
    args = DataArguments(train_view="group_pairs", max_pairs_per_group=1)
    assert len(training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)) == 3
    # Labelled negatives where the group has one (T0's and T2's), a mined one for the rest (T4's).
    args = DataArguments(train_view="triplets", mining_margin=-2.0, mining_relative_margin=None)
    rows = training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)
    assert rows["question1"] == [TEXTS[0], TEXTS[2], TEXTS[4]] and "__source_row" not in rows.column_names
    args = DataArguments(train_view="triplets", mining_margin=1.5)  # mining finds nothing: the labelled ones stay
    labelled = training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)
    assert labelled["question1"] == [TEXTS[0], TEXTS[2]] and labelled["negative"] == rows["negative"][:2]
    with pytest.raises(ValueError, match="train_view must be one of auto, duplicate_pairs, .*; got 'pairs'"):
        training_view(TRAIN, DataArguments(train_view="pairs"), get_loss("contrastive"), tiny_lstm, word_tokenizer)


def test_a_view_keeping_less_than_half_of_the_duplicates_warns(tiny_lstm, word_tokenizer):
    pairs = datasets.Dataset.from_dict({"question1": TEXTS[0:8:2], "question2": TEXTS[1:8:2], "label": [1, 1, 1, 1]})
    args = DataArguments(train_view="mined_triplets", mining_margin=-2.0, mining_relative_margin=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every pair keeps a negative: no warning
        assert len(training_view(pairs, args, get_loss("triplet"), tiny_lstm, word_tokenizer)) == 4
    with pytest.warns(UserWarning, match=r"train_view=triplets keeps 1 of 4 duplicate pairs \(25%\)"):
        warn_if_thin("triplets", 1, 4)


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def pair(question1, question2, label, **ids):
    """A silver pair as recipes/silver_pairs.py writes it (its score and source are read by no one here)."""
    return {
        "question1": question1,
        "question2": question2,
        "label": label,
        "silver_score": 0.5,
        "source": "random",
        **ids,
    }


def test_silver_pairs_are_added_after_the_gold_ones(tmp_path):
    gold = load_splits(DataArguments(test_fraction=0.1), default_train_file=QQP_FILE)
    train = gold["train"]
    q1, q2, groups = list(train["question1"]), list(train["question2"]), list(train["group_id"])
    a, b = next((i, j) for i in range(len(train)) for j in range(i + 1, len(train)) if groups[i] != groups[j])
    silver = write_jsonl(
        tmp_path / "silver.jsonl",
        [
            pair(q1[a], q1[b], 1),  # a silver duplicate across two gold groups: it does not merge them
            pair(q2[a], q2[b], 0),
            pair(q2[0].upper(), q1[0], 1 - train["label"][0]),  # a gold pair, mirrored: dropped
            pair(q1[b], q1[a], 1),  # the first silver pair, mirrored: dropped
        ],
    )
    splits = load_splits(DataArguments(test_fraction=0.1, silver_pairs_file=silver), default_train_file=QQP_FILE)
    with_silver = splits["train"]
    assert len(with_silver) == len(train) + 2
    assert with_silver.column_names == [*train.column_names[:-1], "silver", "group_id"]
    assert with_silver["silver"] == [False] * len(train) + [True, True]
    assert with_silver["question1"][-2:] == [q1[a], q2[a]] and with_silver["label"][-2:] == [1, 0]
    assert with_silver["question1"][: len(train)] == q1  # the gold pairs first, unchanged
    assert with_silver["group_id"][: len(train)] == groups  # the gold pairs' groups, unchanged
    assert with_silver["group_id"][-2] == groups[a]  # a silver pair takes its first question's group
    for name in ("validation", "test"):
        assert splits[name]["question1"][:] == gold[name]["question1"][:]
    assert split_report(splits)["shared_questions"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    # max_train_pairs limits the gold pairs; every silver pair stays.
    limited = DataArguments(test_fraction=0.1, silver_pairs_file=silver, max_train_pairs=10)
    assert load_splits(limited, default_train_file=QQP_FILE)["train"]["question1"][:] == q1[:10] + [q1[a], q2[a]]


def test_silver_pairs_holding_a_held_out_question_are_refused(tmp_path):
    gold = load_splits(DataArguments(test_fraction=0.1), default_train_file=QQP_FILE)
    train_question = gold["train"]["question1"][0]
    for name in ("validation", "test"):
        held_out = "  " + gold[name]["question2"][3].upper()  # the same question, by normalised text
        silver = write_jsonl(
            tmp_path / f"{name}.jsonl",
            [pair(train_question, gold["train"]["question2"][5], 0), pair(train_question, held_out, 1)],
        )
        message = rf"1 of 2 silver pairs in .*{name}.jsonl hold a validation or test question \(by normalised text\)"
        with pytest.raises(ValueError, match=message):
            load_splits(DataArguments(test_fraction=0.1, silver_pairs_file=silver), default_train_file=QQP_FILE)


def test_silver_pairs_take_the_gold_pairs_identity(tmp_path):
    rows = [(1, TEXTS[0], TEXTS[1]), (0, TEXTS[2], TEXTS[3]), (1, TEXTS[4], TEXTS[5])]
    train = write_jsonl(
        tmp_path / "train.jsonl",
        [pair(a, b, label, qid1=f"q{2 * i}", qid2=f"q{2 * i + 1}") for i, (label, a, b) in enumerate(rows)],
    )
    validation = write_jsonl(tmp_path / "val.jsonl", [pair(TEXTS[6], TEXTS[7], 0, qid1="v1", qid2="v2")])
    args = {"train_file": train, "validation_file": validation}
    # Held out by id, whatever its text.
    leaking = write_jsonl(tmp_path / "leak.jsonl", [pair(TEXTS[0], "another text", 0, qid1="q0", qid2="v2")])
    with pytest.raises(
        ValueError, match=r"1 of 1 silver pairs .* hold a validation or test question \(by question ids\)"
    ):
        load_splits(DataArguments(**args, silver_pairs_file=leaking))
    no_ids = write_jsonl(tmp_path / "no_ids.jsonl", [pair(TEXTS[0], TEXTS[2], 0)])
    with pytest.raises(
        ValueError, match="no_ids.jsonl has no qid1/qid2 but the training pairs are identified by question ids"
    ):
        load_splits(DataArguments(**args, silver_pairs_file=no_ids))
    silver = write_jsonl(tmp_path / "silver.jsonl", [pair(TEXTS[0], TEXTS[2], 0, qid1="q0", qid2="q2")])
    assert load_splits(DataArguments(**args, silver_pairs_file=silver))["train"]["qid2"][:] == ["q1", "q3", "q5", "q2"]


def test_a_prepared_folder_holds_what_the_first_run_derives_from_it(tmp_path, monkeypatch):
    """`hfsiamese prepare` computes the split report and the training questions' fingerprint as `train` does, so the
    first run after it computes neither (and reads the values it would have computed)."""
    from hfsiamese.cli import main as cli_main
    from hfsiamese.data.question_fingerprints import pair_question_hashes
    from hfsiamese.preparation import derived_cache
    from hfsiamese.preparation.derived_cache import cached_pair_question_hashes
    from hfsiamese.training.preparation import load_splits_and_validation_size

    folder = tmp_path / "prepared"
    with pytest.raises(SystemExit) as exited:
        cli_main.main(
            ["prepare", "--train_file", str(QQP_FILE), "--output_dir", str(folder), "--max_eval_pairs", "200"]
        )
    assert exited.value.code == 0
    data_args = DataArguments(train_file=str(folder), max_eval_pairs=200)
    calls = []
    for name in ("pair_question_hashes", "split_report"):
        monkeypatch.setattr(derived_cache, name, lambda *args, name=name: calls.append(name))
    splits, _ = load_splits_and_validation_size(data_args)  # what `train` runs first
    hashes = cached_pair_question_hashes(splits["train"])
    assert calls == []
    np.testing.assert_array_equal(hashes, pair_question_hashes(splits["train"]))
    assert derived_cache.cached_split_report(splits) == split_report(splits)


def _run_start(config: str | None, folder, tmp_path):
    """The model arguments and training pairs a `train` from `folder` starts with (`config`: a shipped one or the
    default), parsed as `hfsiamese train` parses them."""
    from hfsiamese.base.model_arguments import ModelArguments
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
    from hfsiamese.cli.command_parser import command_parser
    from hfsiamese.cli.config_and_flags import parse_config_and_flags
    from hfsiamese.cli.configs import DEFAULT_CONFIG, resolve_config_argument
    from hfsiamese.training.preparation import load_splits_and_validation_size

    argv = [*([config] if config else []), "--train_file", str(folder), "--output_dir", str(tmp_path / "run")]
    parser = command_parser((ModelArguments, DataArguments, SiameseTrainingArguments), prog="test")
    model_args, data_args, _ = parse_config_and_flags(
        parser, [*resolve_config_argument(argv), "--max_eval_pairs", "200"], default_config=DEFAULT_CONFIG
    )
    splits, _ = load_splits_and_validation_size(data_args)
    return model_args, splits["train"]


def test_a_prepared_folder_holds_the_word_vocabulary_the_first_run_trains_with(tmp_path, monkeypatch):
    """`hfsiamese prepare` with an LSTM recipe's config trains that run's word vocabulary and keeps it in the folder:
    the first `train` reads it (trains none) and gets the very vocabulary it would have trained; with a pretrained
    encoder's config nothing is built."""
    from hfsiamese.bi_encoder import model_building
    from hfsiamese.cli import main as cli_main
    from hfsiamese.preparation.derived_cache import VOCABULARIES

    folders = {config: tmp_path / f"prepared_{config}" for config in ("lstm_qqp", "minilm_qqp")}
    for config, folder in folders.items():
        with pytest.raises(SystemExit) as exited:
            cli_main.main(
                [
                    "prepare",
                    config,
                    "--train_file",
                    str(QQP_FILE),
                    "--output_dir",
                    str(folder),
                    "--max_eval_pairs",
                    "200",
                ]
            )
        assert exited.value.code == 0
    assert len(list((folders["lstm_qqp"] / VOCABULARIES).iterdir())) == 1
    assert not (folders["minilm_qqp"] / VOCABULARIES).exists()

    model_args, train_pairs = _run_start("lstm_qqp", folders["lstm_qqp"], tmp_path)
    trained = []
    train_word_tokenizer = model_building.train_word_tokenizer
    monkeypatch.setattr(model_building, "train_word_tokenizer", lambda *a, **k: trained.append(1))
    _, tokenizer = model_building.build_model_and_tokenizer(model_args, train_pairs)
    assert trained == []  # read from the folder
    monkeypatch.setattr(model_building, "train_word_tokenizer", train_word_tokenizer)
    fresh = model_building.word_vocabulary(model_args, train_pairs.flatten_indices(keep_in_memory=True))
    assert tokenizer.get_vocab() == fresh.get_vocab() and len(tokenizer) > 1_000
