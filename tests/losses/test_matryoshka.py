"""`MatryoshkaLoss`: the inner loss summed over cut, re-normalised embeddings; its refusals, options and evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import average_precision_score

from hfsiamese.losses import LOSS_OPTIONS, LOSSES, MatryoshkaLoss, get_loss, loss_kwargs_for, loss_name
from hfsiamese.losses.matryoshka import truncate_output
from hfsiamese.models.siamese import SiameseModelOutput
from hfsiamese.training.preparation import view_for_loss
from tests.fixtures import tiny_eval_pairs, tiny_training_args, trainer_on_tiny_pairs

DIM = 8


def _cut(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The test's own truncation: first `dim` numbers over their Euclidean norm."""
    head = x[:, :dim]
    return head / head.pow(2).sum(dim=1, keepdim=True).sqrt()


def _batch(seed: int = 0, size: int = 6):
    g = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(size, DIM, generator=g, dtype=torch.float64), dim=-1)
    b = F.normalize(a + 0.8 * torch.randn(size, DIM, generator=g, dtype=torch.float64), dim=-1)
    n = F.normalize(torch.randn(size, DIM, generator=g, dtype=torch.float64), dim=-1)
    labels = torch.tensor([1, 0, 1, 1, 0, 1][:size])
    groups = torch.tensor([0, 1, 2, 2, 3, 4][:size])
    return a, b, n, labels, groups


# (inner loss, its options, passes labels, passes negatives)
INNER = [
    (
        "contrastive_ranking",
        {"margin": 0.4, "ranking_weight": 0.3, "ranking_loss": "multiple_negatives_ranking"},
        True,
        False,
    ),
    ("contrastive", {"margin": 0.7}, True, False),
    ("multiple_negatives_ranking", {"temperature": 0.1, "symmetric": True}, False, True),
    ("hard_negative_triplet", {"margin": 0.5, "negative_selection": "all"}, False, True),
    ("triplet", {"margin": 0.3}, False, True),
]


@pytest.mark.parametrize("inner, options, with_labels, with_negatives", INNER)
def test_equals_the_weighted_sum_of_the_inner_loss_on_cut_renormalised_embeddings(
    inner, options, with_labels, with_negatives
):
    a, b, n, labels, groups = _batch()
    dims, weights = [8, 5, 2], [1.0, 0.5, 0.25]
    inputs = {"group_ids": groups}
    if with_labels:
        inputs["labels"] = labels
    loss_fn = MatryoshkaLoss(inner, dims, weights, **options)
    output = loss_fn.compute(a, b, negatives=n if with_negatives else None, **inputs)

    reference = get_loss(inner, **options)
    terms = {
        d: reference(_cut(a, d), _cut(b, d), negatives=_cut(n, d) if with_negatives else None, **inputs) for d in dims
    }
    expected = sum(w * terms[d] for d, w in zip(dims, weights))
    assert output.loss.item() == pytest.approx(expected.item(), abs=1e-12)
    for d in dims:
        assert output.stats[f"dim{d}"].item() == pytest.approx(terms[d].item(), abs=1e-12)
    # The cut matters: the full-size loss alone, or the terms without re-normalising, give other values
    # (except for the contrastive loss, which takes cosines itself).
    assert abs(output.loss.item() - sum(weights) * terms[8].item()) > 1e-6
    if inner == "contrastive":
        return
    unnormalised = sum(
        w * reference(a[:, :d], b[:, :d], negatives=n[:, :d] if with_negatives else None, **inputs)
        for d, w in zip(dims, weights)
    )
    assert abs(output.loss.item() - unnormalised.item()) > 1e-6


def test_the_full_size_term_is_the_inner_loss_itself_and_its_statistics_are_kept():
    a, b, _, labels, groups = _batch()
    output = MatryoshkaLoss("contrastive_ranking", [DIM]).compute(a, b, labels=labels, group_ids=groups)
    inner = get_loss("contrastive_ranking").compute(a, b, labels=labels, group_ids=groups)
    assert torch.equal(output.loss, inner.loss)
    assert set(output.stats) == {"dim8"} | {f"dim8_{name}" for name in inner.stats}
    assert torch.equal(output.stats["dim8_ranking"], inner.stats["ranking"])


def test_gradients_flow_through_every_term_and_only_into_the_dimensions_each_one_sees():
    _, _, _, _, groups = _batch()
    # What the model normalises (the encoder's pooled vectors): the gradient that reaches the encoder.
    raw_a, raw_b = (torch.randn(6, DIM, dtype=torch.float64, requires_grad=True) for _ in range(2))
    loss_fn = MatryoshkaLoss("multiple_negatives_ranking", [8, 4, 2], temperature=0.1)
    a, b = F.normalize(raw_a, dim=-1), F.normalize(raw_b, dim=-1)
    grad_a, grad_b = torch.autograd.grad(loss_fn(a, b, group_ids=groups), (raw_a, raw_b))
    reference = get_loss("multiple_negatives_ranking", temperature=0.1)
    expected = sum(reference(_cut(raw_a, d), _cut(raw_b, d), group_ids=groups) for d in (8, 4, 2))
    expected_a, expected_b = torch.autograd.grad(expected, (raw_a, raw_b))
    torch.testing.assert_close(grad_a, expected_a, atol=1e-12, rtol=0)
    torch.testing.assert_close(grad_b, expected_b, atol=1e-12, rtol=0)
    a, b = F.normalize(raw_a, dim=-1), F.normalize(raw_b, dim=-1)
    full_only = torch.autograd.grad(reference(a, b, group_ids=groups), (raw_a,))[0]
    assert (grad_a - full_only).abs().max() > 1e-3  # the smaller terms add their own gradient

    # A 2-dimensional term alone moves the first two numbers of the embeddings and nothing else.
    a = F.normalize(raw_a, dim=-1).detach().requires_grad_(True)
    (grad_small,) = torch.autograd.grad(MatryoshkaLoss("multiple_negatives_ranking", [2])(a, b, group_ids=groups), (a,))
    assert grad_small[:, :2].abs().max() > 1e-3
    assert torch.count_nonzero(grad_small[:, 2:]) == 0


def test_default_dimensions_are_the_size_and_its_halves_and_the_card_names_them():
    a, b, _, _, groups = _batch()
    loss_fn = MatryoshkaLoss("multiple_negatives_ranking")
    assert loss_fn.get_config_dict()["matryoshka_dims"] is None  # not known before an embedding size is seen
    output = loss_fn.compute(a, b, group_ids=groups)
    assert [key for key in output.stats] == ["dim8", "dim4", "dim2", "dim1"]
    assert loss_fn.get_config_dict()["matryoshka_dims"] == [8, 4, 2, 1]
    assert loss_fn.resolve_dims(384) == (384, 192, 96, 48)


def test_declarations_are_the_inner_loss_s():
    labelled, triplets, in_batch = (
        MatryoshkaLoss("contrastive"),
        MatryoshkaLoss("triplet"),
        MatryoshkaLoss("multiple_negatives_ranking"),
    )
    assert labelled.requires_labels and not labelled.uses_in_batch_negatives
    assert triplets.requires_negatives and triplets.uses_negatives and not triplets.requires_labels
    assert in_batch.uses_in_batch_negatives and not in_batch.requires_negatives
    assert not any(loss.uses_logits or loss.requires_teacher for loss in (labelled, triplets, in_batch))
    assert [view_for_loss(loss) for loss in (labelled, triplets, in_batch)] == [
        "labelled_pairs",
        "mined_triplets",
        "duplicate_pairs",
    ]
    with pytest.raises(
        ValueError,
        match=r"MatryoshkaLoss needs `negatives` \(one explicit negative per anchor\), or in_batch_negatives=True",
    ):
        triplets(*_batch()[:2])


def test_a_teacher_s_embeddings_are_targets_and_are_not_cut():
    a, b, _, _, _ = _batch()
    teacher_a, teacher_b = (F.normalize(torch.randn(6, 12, dtype=torch.float64), dim=-1) for _ in range(2))
    loss_fn = MatryoshkaLoss("embedding_distillation", [8, 4], embedding_weight=0.0)
    assert loss_fn.requires_teacher
    got = loss_fn(a, b, teacher_a=teacher_a, teacher_b=teacher_b)
    reference = get_loss("embedding_distillation", embedding_weight=0.0)
    expected = sum(reference(_cut(a, d), _cut(b, d), teacher_a=teacher_a, teacher_b=teacher_b) for d in (8, 4))
    assert got.item() == pytest.approx(expected.item(), abs=1e-12)


REFUSALS = [
    (dict(matryoshka_dims=[8, 0]), r"matryoshka_dims must be positive integers, got \[8, 0\]"),
    (dict(matryoshka_dims=[-4]), r"matryoshka_dims must be positive integers, got \[-4\]"),
    (dict(matryoshka_dims=[8, 4.5]), r"matryoshka_dims must be positive integers"),
    (dict(matryoshka_dims=[]), r"matryoshka_dims is empty: give at least one dimension"),
    (dict(matryoshka_dims=[8, 4, 8, 4, 2]), r"matryoshka_dims repeat \[4, 8\]: give each dimension once"),
    (
        dict(matryoshka_dims=[8, 4], matryoshka_weights=[1.0]),
        r"matryoshka_weights has 1 values for 2 matryoshka_dims: give one weight per dimension",
    ),
    (
        dict(matryoshka_dims=[8, 4], matryoshka_weights=[1.0, -1.0]),
        r"matryoshka_weights must be non-negative, got -1.0",
    ),
    (
        dict(matryoshka_dims=[8, 4], matryoshka_weights=[0, 0]),
        r"matryoshka_weights are all 0: the loss would learn nothing",
    ),
    (dict(matryoshka_weights=[1.0]), r"matryoshka_weights need matryoshka_dims: one weight per dimension"),
    (
        dict(matryoshka_loss="verification_identification"),
        r"matryoshka_loss 'verification_identification' uses the classification head's logits",
    ),
    (dict(matryoshka_loss="matryoshka"), r"matryoshka_loss cannot be a matryoshka loss itself"),
    (dict(matryoshka_loss=MatryoshkaLoss("contrastive", [4])), r"matryoshka_loss cannot be a matryoshka loss itself"),
    (
        dict(matryoshka_loss=get_loss("contrastive"), margin=0.2),
        r"options \['margin'\] go with a loss name, not with a built loss",
    ),
    (dict(matryoshka_loss="arcface"), r"unknown loss 'arcface'"),
]


@pytest.mark.parametrize("options, message", REFUSALS)
def test_refusals_name_the_problem_in_one_line(options, message):
    with pytest.raises(ValueError, match=message) as caught:
        MatryoshkaLoss(**options)
    assert "\n" not in str(caught.value)


def test_a_dimension_larger_than_the_embeddings_is_refused_at_the_first_call():
    a, b, _, labels, _ = _batch()
    loss_fn = MatryoshkaLoss("contrastive", [16, 12, 4])
    with pytest.raises(
        ValueError,
        match=r"matryoshka_dims \[16, 12\] exceed the model's embedding size 8: give dimensions of at most 8$",
    ):
        loss_fn(a, b, labels=labels)


def test_registered_with_its_own_and_the_inner_loss_s_options():
    assert LOSSES["matryoshka"] is MatryoshkaLoss and loss_name(MatryoshkaLoss()) == "matryoshka"
    assert {"matryoshka_loss", "matryoshka_dims", "matryoshka_weights"} <= LOSS_OPTIONS
    everything = {
        "margin": 0.3,
        "temperature": 0.2,
        "symmetric": True,
        "ranking_weight": 0.5,
        "verification_weight": 2.0,
    }
    kwargs = loss_kwargs_for(
        "matryoshka", matryoshka_loss="multiple_negatives_ranking", matryoshka_dims=[8, 4], **everything
    )
    assert kwargs == {
        "matryoshka_loss": "multiple_negatives_ranking",
        "matryoshka_dims": [8, 4],
        "temperature": 0.2,
        "symmetric": True,
    }
    assert set(loss_kwargs_for("matryoshka", **everything)) == {
        "margin"
    }  # the default inner loss: hard_negative_triplet
    loss = get_loss("matryoshka", **kwargs)
    assert loss.get_config_dict() == {
        "matryoshka_loss": "multiple_negatives_ranking", "matryoshka_dims": [8, 4], "matryoshka_weights": None,
        "temperature": 0.2, "symmetric": True, "gather_across_devices": True,
    }  # fmt: skip
    with pytest.raises(ValueError, match=r"no loss takes the options \['matryoshka_dim'\]"):
        loss_kwargs_for("matryoshka", matryoshka_dim=[8])


def test_options_parse_from_flags_and_from_a_config(tmp_path):
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
    from hfsiamese.cli.command_parser import command_parser
    from hfsiamese.cli.config_and_flags import parse_config_and_flags

    parser = command_parser(SiameseTrainingArguments, prog="test")
    flags = [
        "--output_dir", str(tmp_path), "--use_cpu", "true", "--loss", "matryoshka", "--matryoshka_loss", "contrastive_ranking",
        "--matryoshka_dims", "384", "256", "128", "64", "--matryoshka_weights", "1", "1", "0.5", "0.5",
        "--margin", "0.3", "--ranking_weight", "0.2",
    ]  # fmt: skip
    (args,) = parse_config_and_flags(parser, flags)
    assert (args.matryoshka_dims, args.matryoshka_weights) == ([384, 256, 128, 64], [1.0, 1.0, 0.5, 0.5])
    loss = args.build_loss()
    assert isinstance(loss, MatryoshkaLoss) and loss.matryoshka_loss == "contrastive_ranking"
    assert (loss.inner_loss.margin, loss.inner_loss.ranking_weight) == (0.3, 0.2)

    config = tmp_path / "matryoshka.yaml"
    config.write_text("loss: matryoshka\nmatryoshka_loss: contrastive\nmatryoshka_dims: [16, 8]\nmargin: 0.6\n")
    (args,) = parse_config_and_flags(parser, [str(config), "--output_dir", str(tmp_path), "--use_cpu", "true"])
    assert args.matryoshka_dims == [16, 8] and args.build_loss().inner_loss.margin == 0.6
    (args,) = parse_config_and_flags(
        parser, [str(config), "--output_dir", str(tmp_path), "--use_cpu", "true", "--matryoshka_dims", "4"]
    )
    assert args.build_loss().matryoshka_dims == [4]

    from hfsiamese.cli.command_line import UsageError

    with pytest.raises(UsageError, match="matryoshka_dims repeat \\[8\\]"):
        parse_config_and_flags(parser, flags[:8] + ["--matryoshka_dims", "8", "8"])


def test_truncate_output_is_what_the_model_would_give_at_that_size():
    a, b, n, _, _ = _batch()
    output = SiameseModelOutput(
        similarity=(a * b).sum(-1), embeddings_a=a, embeddings_b=b, embeddings_n=n, logits=torch.randn(6, 2)
    )
    cut = truncate_output(output, 3)
    assert isinstance(cut, SiameseModelOutput) and cut.logits is None
    torch.testing.assert_close(cut.embeddings_a, _cut(a, 3))
    torch.testing.assert_close(cut.embeddings_n, _cut(n, 3))
    torch.testing.assert_close(cut.similarity, F.cosine_similarity(a[:, :3], b[:, :3]))
    assert truncate_output(output, DIM).embeddings_a is a


# ----------------------------------------------------------------------------------------------
# The trainer: per-dimension validation metrics
# ----------------------------------------------------------------------------------------------
def _tiny_transformer(tiny_bert_dir):
    from hfsiamese import SiameseModel

    torch.manual_seed(0)
    return SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))  # 16-dimensional embeddings


def _independent_scores(model, tokenizer, dim: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = tiny_eval_pairs()
    a = model.encode(pairs["question1"], tokenizer).double()
    b = model.encode(pairs["question2"], tokenizer).double()
    return (_cut(a, dim) * _cut(b, dim)).sum(-1).numpy(), np.asarray(pairs["label"])


def test_evaluation_reports_each_smaller_dimension_too(tiny_bert_dir, word_tokenizer, tmp_path):
    model = _tiny_transformer(tiny_bert_dir)
    args = tiny_training_args(
        tmp_path, loss="matryoshka", matryoshka_loss="multiple_negatives_ranking", matryoshka_dims=[16, 8, 4],
        max_steps=2, logging_steps=1,
    )  # fmt: skip
    trainer = trainer_on_tiny_pairs(model, word_tokenizer, args)
    assert trainer.evaluation_dims == (8, 4)
    trainer.train()
    assert {"loss_dim16", "loss_dim8", "loss_dim4"} <= set(trainer.state.log_history[0])
    metrics = trainer.evaluate()
    for dim in (8, 4):
        for name in ("average_precision", "roc_auc", "accuracy", "f1", "threshold", "num_pairs"):
            assert f"eval_dim{dim}_{name}" in metrics
    assert not any(key.startswith("eval_dim16") for key in metrics)
    model.eval()
    for dim, key in (
        (16, "eval_average_precision"),
        (8, "eval_dim8_average_precision"),
        (4, "eval_dim4_average_precision"),
    ):
        scores, labels = _independent_scores(model, word_tokenizer, dim)
        assert metrics[key] == pytest.approx(average_precision_score(labels, scores), abs=1e-6), key
    assert model.config.threshold == pytest.approx(metrics["eval_threshold"])  # the full size's, as without Matryoshka

    # Another set is scored at the thresholds calibrated on validation, each size at its own.
    test = trainer.evaluate(trainer.eval_dataset, metric_key_prefix="test")
    assert test["test_dim8_threshold"] == metrics["eval_dim8_threshold"]
    assert test["test_threshold"] == metrics["eval_threshold"]


def test_without_a_calibrated_threshold_a_cut_size_reports_what_needs_none(tiny_bert_dir, word_tokenizer, tmp_path):
    model = _tiny_transformer(tiny_bert_dir)
    model.config.threshold = 0.5
    args = tiny_training_args(
        tmp_path,
        loss="matryoshka",
        matryoshka_loss="multiple_negatives_ranking",
        matryoshka_dims=[8],
        calibrate_threshold=False,
    )
    metrics = trainer_on_tiny_pairs(model, word_tokenizer, args).evaluate()
    assert {key for key in metrics if key.startswith("eval_dim8_")} == {
        "eval_dim8_average_precision",
        "eval_dim8_roc_auc",
        "eval_dim8_num_pairs",
    }
    assert metrics["eval_threshold"] == 0.5


def test_other_losses_evaluate_as_before_and_too_large_dimensions_fail_before_training(
    tiny_bert_dir, word_tokenizer, tmp_path
):
    trainer = trainer_on_tiny_pairs(
        _tiny_transformer(tiny_bert_dir),
        word_tokenizer,
        tiny_training_args(tmp_path, loss="multiple_negatives_ranking"),
    )
    assert trainer.evaluation_dims == ()
    assert not any("dim" in key for key in trainer.evaluate())
    args = tiny_training_args(
        tmp_path, loss="matryoshka", matryoshka_loss="multiple_negatives_ranking", matryoshka_dims=[64, 8]
    )
    with pytest.raises(ValueError, match=r"matryoshka_dims \[64\] exceed the model's embedding size 16"):
        trainer_on_tiny_pairs(_tiny_transformer(tiny_bert_dir), word_tokenizer, args)
