"""`SiameseLoss`: the declarations drive the shared input checks; statistics come back with the loss."""

import pytest
import torch

from hfsiamese.losses import SiameseLoss, SiameseLossOutput, VerificationIdentificationLoss


class NeedsNegatives(SiameseLoss):
    """A loss of duplicate pairs that cannot run without explicit negatives."""

    uses_negatives = True

    def __init__(self, scale: float = 2.0) -> None:
        super().__init__()
        self.scale = scale

    @property
    def requires_negatives(self) -> bool:
        return True

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits):
        gap = (embeddings_a * negatives).sum(dim=1) - (embeddings_a * embeddings_b).sum(dim=1)
        return SiameseLossOutput(self.scale * gap.mean(), {"rows": torch.tensor(embeddings_a.shape[0])})


def test_declarations_choose_the_checks():
    a = torch.eye(3)
    loss_fn = NeedsNegatives()
    with pytest.raises(ValueError, match=r"^NeedsNegatives needs `negatives` \(one explicit negative per anchor\)$"):
        loss_fn(a, a)
    with pytest.raises(ValueError, match="duplicate pairs only"):
        loss_fn(a, a, negatives=a, labels=torch.tensor([1, 0, 1]))
    with pytest.raises(ValueError, match="negatives must be"):
        loss_fn(a, a, negatives=a[:2])
    output = loss_fn.compute(a, a, negatives=-a)
    assert output.loss.item() == pytest.approx(-4.0) and output.stats_as_floats() == {"rows": 3.0}
    assert loss_fn.get_config_dict() == {"scale": 2.0} and repr(loss_fn) == "NeedsNegatives(scale=2.0)"


def test_verification_identification_goes_through_the_shared_checks():
    u = torch.eye(2)
    logits = torch.zeros(2, 2)
    loss_fn = VerificationIdentificationLoss()
    with pytest.raises(ValueError, match=r"labels must be 0 or 1"):
        loss_fn(u, u, labels=torch.tensor([1, 2]), logits=logits)
    with pytest.raises(ValueError, match=r"labels must be \(2,\)"):
        loss_fn(u, u, labels=torch.tensor([1]), logits=logits)
    with pytest.raises(ValueError, match="no explicit `negatives`"):
        loss_fn(u, u, labels=torch.tensor([1, 0]), negatives=u, logits=logits)
    with pytest.raises(ValueError, match="batch, dim"):
        loss_fn(u, u[:1], labels=torch.tensor([1, 0]), logits=logits)


def test_statistics_stay_tensors_until_read():
    u = torch.nn.functional.normalize(torch.randn(4, 3), dim=-1)
    output = VerificationIdentificationLoss().compute(
        u, u.flip(0), labels=torch.tensor([1, 0, 1, 0]), logits=torch.randn(4, 2)
    )
    assert set(output.stats) == {"classification_loss", "verification_loss"}
    assert all(isinstance(value, torch.Tensor) and not value.requires_grad for value in output.stats.values())
    assert output.loss.item() == pytest.approx(sum(output.stats_as_floats().values()))


def test_a_misspelt_input_is_refused_not_ignored():
    """`LossInputs` names the inputs once for `compute` and `forward`; a keyword it does not name is a TypeError, as a
    keyword signature would make it."""
    a = torch.eye(3)
    loss_fn = NeedsNegatives()
    with pytest.raises(
        TypeError, match=r"^NeedsNegatives\.compute\(\) got unexpected keyword arguments \['negative'\]$"
    ):
        loss_fn(a, a, negative=-a)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        loss_fn.compute(a, a, negatives=-a, label=torch.ones(3))
    assert loss_fn(a, a, negatives=-a).item() == pytest.approx(-4.0)
