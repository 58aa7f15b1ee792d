"""The common loss interface, the registry, `loss_kwargs_for`, and the docstring examples."""

import doctest
import importlib
import inspect

import pytest
import torch

from hfsiamese.losses import LOSSES, get_loss, loss_kwargs_for

OURS = ["hard_negative_triplet", "triplet", "contrastive", "online_contrastive", "multiple_negatives_ranking"]
ALL_OPTIONS = {
    "margin": 0.3,
    "use_mean_negative": True,
    "use_closest_negative": False,
    "negative_selection": "hard",
    "in_batch_negatives": True,
    "temperature": 0.1,
    "symmetric": True,
    "gather_across_devices": False,
}
EXPECTED_KWARGS = {
    "hard_negative_triplet": {"margin", "use_mean_negative", "use_closest_negative", "negative_selection", "gather_across_devices"},
    "triplet": {"margin", "in_batch_negatives", "gather_across_devices"},
    "contrastive": {"margin"},
    "online_contrastive": {"margin"},
    "multiple_negatives_ranking": {"temperature", "symmetric", "gather_across_devices"},
}


def test_registered_names():
    assert set(OURS) <= set(LOSSES)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_common_interface(name):
    loss_class = LOSSES[name]
    assert loss_class.pair_type in ("duplicates", "labelled")
    assert isinstance(loss_class.uses_negatives, bool)
    parameters = inspect.signature(loss_class.forward).parameters
    assert list(parameters)[:3] == ["self", "embeddings_a", "embeddings_b"]
    for keyword in ("labels", "group_ids", "negatives"):
        assert parameters[keyword].kind is inspect.Parameter.KEYWORD_ONLY and parameters[keyword].default is None


@pytest.mark.parametrize("name", OURS)
def test_loss_kwargs_for_picks_what_each_loss_takes(name):
    kwargs = loss_kwargs_for(name, **ALL_OPTIONS)
    assert set(kwargs) == EXPECTED_KWARGS[name]
    loss = get_loss(name, **kwargs)
    for key, value in kwargs.items():
        assert getattr(loss, key) == value


@pytest.mark.parametrize("name", OURS)
def test_every_loss_runs_on_its_pair_type(name):
    torch.manual_seed(0)
    a, b, n = (torch.nn.functional.normalize(torch.randn(4, 5), dim=-1) for _ in range(3))
    loss_fn = get_loss(name)
    inputs = {"group_ids": torch.arange(4)}
    if loss_fn.pair_type == "labelled":
        inputs["labels"] = torch.tensor([1, 0, 1, 0])
    if loss_fn.uses_negatives:
        inputs["negatives"] = n
    loss = loss_fn(a, b, **inputs)
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert isinstance(loss_fn.last_stats, dict)


def test_nothing_is_ignored_silently():
    with pytest.raises(TypeError):
        get_loss("contrastive", temperature=0.1)  # get_loss passes everything on
    with pytest.raises(ValueError, match="no loss takes the options \\['margn'\\]"):
        loss_kwargs_for("triplet", margn=0.3)
    with pytest.raises(ValueError, match="unknown loss"):
        loss_kwargs_for("arcface", margin=0.3)
    assert loss_kwargs_for("contrastive") == {}


@pytest.mark.parametrize("module", ["hard_negative_triplet", "triplet", "contrastive", "multiple_negatives_ranking"])
def test_docstring_examples_run(module):
    module = importlib.import_module(f"hfsiamese.losses.{module}")
    torch.manual_seed(0)
    result = doctest.testmod(module, extraglobs={"torch": torch}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
