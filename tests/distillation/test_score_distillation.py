"""Distilled students trained on a teacher's scores: `hfsiamese distill --distillation_targets scores|both`."""

import json

import pytest
from transformers import AutoModel

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.distill import main as distill_main
from hfsiamese.distillation import DistillationArguments, distillation_training_args
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits
from tests.conftest import QQP_FILE, REPO_ROOT
from tests.fixtures import tiny_training_args, write_scored_rows
from tests.helpers import recipe_flags

STATIC = REPO_ROOT / "recipes" / "configs" / "static_distilled_qqp.yaml"
SIZES = dict(max_train_pairs=300, max_eval_pairs=100)
TINY = dict(
    **SIZES, vocab_size=2000, embedding_dim=16, per_device_train_batch_size=16, distillation_max_steps=4, max_steps=3,
    eval_strategy="no", save_strategy="no", teacher_batch_size=64, disable_tqdm=True,
)  # fmt: skip


@pytest.fixture(scope="module")
def scored_file(tmp_path_factory):
    """40 rows of the run's training questions: a pair, and two other pairs' second questions as negatives."""
    train = load_splits(DataArguments(**SIZES), default_train_file=QQP_FILE)["train"]
    return write_scored_rows(tmp_path_factory.mktemp("scored") / "scored.jsonl", train)


def distill(tmp_path, teacher, **flags):
    out = tmp_path / "student"
    results = distill_main(
        [str(STATIC), "--teacher_model_name_or_path", str(teacher), *recipe_flags({**TINY, **flags}, out)]
    )
    return out, results


def test_the_default_stays_the_embeddings_and_the_options_are_checked(tmp_path):
    args = DistillationArguments(teacher_model_name_or_path="t")
    assert args.distillation_targets == "embeddings" and args.learns_embeddings and not args.learns_scores
    training = tiny_training_args(tmp_path, loss="contrastive", temperature=0.1)
    assert distillation_training_args(training, args).loss == "embedding_distillation"
    scores = DistillationArguments(teacher_model_name_or_path="t", score_distillation_loss="listwise_kl")
    assert distillation_training_args(training, scores, scores=True).build_loss().temperature == 0.1
    with pytest.raises(ValueError, match="distillation_targets must be one of"):
        DistillationArguments(teacher_model_name_or_path="t", distillation_targets="logits")
    with pytest.raises(ValueError, match="score_distillation_loss must be one of \\['listwise_kl', 'margin_mse'\\]"):
        DistillationArguments(teacher_model_name_or_path="t", score_distillation_loss="contrastive")


def test_scores_alone_need_no_teacher_model_when_it_is_not_evaluated(tmp_path, scored_file):
    out, results = distill(
        tmp_path, tmp_path / "no_such_teacher", distillation_targets="scores", teacher_scores_file=scored_file,
        evaluate_teacher="false", fine_tune="false", score_distillation_loss="listwise_kl",
    )  # fmt: skip
    assert results["score_distillation_train_samples"] == 40
    assert not any(key.startswith(("distillation_", "teacher_eval_")) for key in results)
    assert results["eval_average_precision"] == results["score_distillation_eval_average_precision"]
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 4
    assert AutoModel.from_pretrained(out).config.encoder_type == "static"


def test_both_learn_the_embeddings_then_the_scores_then_fine_tune(tmp_path, tiny_bert_dir, scored_file):
    _, results = distill(tmp_path, tiny_bert_dir, distillation_targets="both", teacher_scores_file=scored_file)
    for key in ("teacher_eval_average_precision", "distillation_train_samples", "score_distillation_train_loss",
                "score_distillation_eval_average_precision", "eval_average_precision", "train_samples"):  # fmt: skip
        assert key in results, key
    assert results["score_distillation_train_samples"] == 40


def test_scores_without_the_file_are_refused_before_any_work(tmp_path, tiny_bert_dir):
    with pytest.raises(
        UsageError, match="--distillation_targets scores learns the teacher's scores .* --teacher_scores_file"
    ):
        distill(tmp_path, tiny_bert_dir, distillation_targets="scores")
    assert not (tmp_path / "student").exists()


def test_teacher_embeddings_sharded_on_disk_train_as_those_held_in_memory(tmp_path, tiny_bert_dir):
    flags = dict(fine_tune="false", evaluate_teacher="false", seed=5)
    _, in_memory = distill(tmp_path / "memory", tiny_bert_dir, **flags)
    out, sharded = distill(tmp_path / "sharded", tiny_bert_dir, teacher_embeddings_dir=tmp_path / "teacher", **flags)
    assert (tmp_path / "teacher" / "teacher_vectors.npy").is_file() and not (out / "teacher_embeddings").exists()
    assert in_memory["distillation_train_loss"] == sharded["distillation_train_loss"]


def test_a_run_from_a_prepared_folder_shards_the_teachers_embeddings_in_its_output_folder(tmp_path):
    from types import SimpleNamespace

    from hfsiamese.cli.distill import teacher_embeddings_dir
    from hfsiamese.preparation import prepare_pairs
    from hfsiamese.preparation.reading import load_prepared_splits

    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    prepared = SimpleNamespace(splits=load_prepared_splits(tmp_path / "prepared"))
    from_file = SimpleNamespace(splits=load_splits(DataArguments(**SIZES), default_train_file=QQP_FILE))
    args = DistillationArguments(teacher_model_name_or_path="t")
    training = tiny_training_args(tmp_path)
    assert teacher_embeddings_dir(prepared, args, training) == tmp_path / "out" / "teacher_embeddings"
    assert teacher_embeddings_dir(from_file, args, training) is None  # the bundled pairs: in memory, as before
    args.teacher_embeddings_dir = str(tmp_path / "mine")
    assert teacher_embeddings_dir(from_file, args, training) == tmp_path / "mine"
