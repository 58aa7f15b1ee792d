"""The registry, the contract every registered loss declares, `loss_kwargs_for`, and the docstring examples."""

import doctest
import inspect

import pytest
import torch

from hfsiamese.losses import LOSS_OPTIONS, LOSSES, LossInputs, SiameseLoss, get_loss, loss_kwargs_for, loss_name

ALL_OPTIONS = {
    "margin": 0.3,
    "use_mean_negative": True,
    "use_closest_negative": False,
    "negative_selection": "hard",
    "in_batch_negatives": True,
    "temperature": 0.1,
    "symmetric": True,
    "gather_across_devices": False,
    "triplet_margin": 0.2,
    "ranking_weight": 0.5,
    "ranking_loss": "multiple_negatives_ranking",
    "ranking_candidates": "duplicates",
    "verification_weight": 2.0,
    "embedding_weight": 0.5,
    "score_weight": 2.0,
    "matryoshka_loss": "multiple_negatives_ranking",
    "matryoshka_dims": [4, 2],
    "matryoshka_weights": [1.0, 0.5],
    "teacher_temperature": 1.0,
    "similarity_scale": 5.0,
}
EXPECTED_KWARGS = {
    "hard_negative_triplet": {
        "margin",
        "use_mean_negative",
        "use_closest_negative",
        "negative_selection",
        "gather_across_devices",
    },
    "triplet": {"margin", "in_batch_negatives", "gather_across_devices"},
    "contrastive": {"margin"},
    "online_contrastive": {"margin"},
    "contrastive_ranking": {
        "margin",
        "triplet_margin",
        "ranking_weight",
        "ranking_loss",
        "ranking_candidates",
        "temperature",
    },
    "multiple_negatives_ranking": {"temperature", "symmetric", "gather_across_devices"},
    "verification_identification": {"margin", "verification_weight"},
    "embedding_distillation": {"embedding_weight", "score_weight"},
    "margin_mse": {"similarity_scale"},
    "listwise_kl": {"temperature", "teacher_temperature"},
    # Its own options, and those of the loss it wraps (`matryoshka_loss`).
    "matryoshka": {
        "matryoshka_loss",
        "matryoshka_dims",
        "matryoshka_weights",
        "temperature",
        "symmetric",
        "gather_across_devices",
    },
}
DECLARATIONS = (
    "requires_labels", "uses_negatives", "requires_negatives", "uses_logits", "uses_in_batch_negatives", "requires_teacher",
    "requires_teacher_scores",
)  # fmt: skip


def test_registered_names():
    assert set(LOSSES) == set(EXPECTED_KWARGS)
    assert set(ALL_OPTIONS) == LOSS_OPTIONS


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_common_interface(name):
    loss_class = LOSSES[name]
    assert issubclass(loss_class, SiameseLoss)
    loss = loss_class()
    for declaration in DECLARATIONS:
        assert isinstance(getattr(loss, declaration), bool), declaration
    assert not (loss.requires_negatives and not loss.uses_negatives)
    assert loss_name(loss) == name
    for method in (loss_class.forward, loss_class.compute):
        parameters = inspect.signature(method).parameters
        assert list(parameters) == ["self", "embeddings_a", "embeddings_b", "inputs"]
        assert parameters["inputs"].kind is inspect.Parameter.VAR_KEYWORD  # typed Unpack[LossInputs]
    # every input is optional, and LossInputs names each one the trainers pass
    assert not LossInputs.__required_keys__
    assert {"labels", "group_ids", "negatives", "logits", "teacher_scores"} <= LossInputs.__optional_keys__


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_kwargs_for_picks_what_each_loss_takes(name):
    kwargs = loss_kwargs_for(name, **ALL_OPTIONS)
    assert set(kwargs) == EXPECTED_KWARGS[name]
    loss = get_loss(name, **kwargs)
    for (
        key
    ) in loss.option_names():  # a wrapping loss reports the inner loss's options, which are the inner loss's attributes
        assert getattr(loss, key) == kwargs[key]
    assert loss.get_config_dict() == kwargs


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_runs_on_what_it_declares(name):
    torch.manual_seed(0)
    a, b, n = (torch.nn.functional.normalize(torch.randn(4, 5), dim=-1) for _ in range(3))
    loss_fn = get_loss(name)
    inputs = {"group_ids": torch.arange(4)}
    if loss_fn.requires_labels:
        inputs["labels"] = torch.tensor([1, 0, 1, 0])
    if loss_fn.uses_negatives:
        inputs["negatives"] = n
    if loss_fn.requires_teacher_scores:  # one negative per row, the teacher's scores of the positive and of it
        inputs["teacher_scores"] = torch.tensor([[0.9, 0.1], [0.5, 0.4], [0.8, -0.2], [0.3, 0.6]])
    if loss_fn.uses_logits:
        inputs["logits"] = torch.randn(4, 2)
    if loss_fn.requires_teacher:
        inputs["teacher_a"], inputs["teacher_b"] = (
            torch.nn.functional.normalize(torch.randn(4, 5), dim=-1) for _ in range(2)
        )
    output = loss_fn.compute(a, b, **inputs)
    assert output.loss.dim() == 0 and torch.isfinite(output.loss)
    assert all(isinstance(value, torch.Tensor) and value.dim() == 0 for value in output.stats.values())
    assert torch.equal(loss_fn(a, b, **inputs), output.loss)


def test_nothing_is_ignored_silently():
    with pytest.raises(TypeError):
        get_loss("contrastive", temperature=0.1)  # get_loss passes everything on
    with pytest.raises(ValueError, match="no loss takes the options \\['margn'\\]"):
        loss_kwargs_for("triplet", margn=0.3)
    with pytest.raises(ValueError, match="unknown loss"):
        loss_kwargs_for("arcface", margin=0.3)
    assert loss_kwargs_for("contrastive") == {}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_docstring_examples_run(name):
    """Every registered loss's docstring has an example, and it runs: examples cannot rot unseen."""
    loss_class = LOSSES[name]
    (test,) = doctest.DocTestFinder(recurse=False).find(
        loss_class, globs={"torch": torch, loss_class.__name__: loss_class}
    )
    assert test.examples, f"{loss_class.__name__} has no docstring example"
    torch.manual_seed(0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test)
    assert result.attempted > 0 and result.failed == 0
