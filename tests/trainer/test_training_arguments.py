"""`SiameseTrainingArguments`: one field per loss option, and the one place a loss is built from arguments."""

import dataclasses

import pytest

from hfsiamese.losses import LOSS_OPTIONS, ContrastiveTripletLoss
from hfsiamese.trainer import SiameseTrainingArguments
from hfsiamese.trainer.training_arguments import LOSS_OPTION_FIELDS


def _args(tmp_path, **values):
    return SiameseTrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True, **values)


def test_every_loss_option_is_a_field():
    fields = {f.name: f for f in dataclasses.fields(SiameseTrainingArguments)}
    assert set(LOSS_OPTION_FIELDS) == set(LOSS_OPTIONS)
    for name in LOSS_OPTIONS:
        assert fields[name].default is None, f"{name}: unset must keep the loss's own default"


def test_build_loss_takes_the_options_that_apply(tmp_path):
    args = _args(tmp_path, loss="contrastive_triplet", triplet_margin=0.2, triplet_weight=0.5)
    assert args.loss_options() == {"triplet_margin": 0.2, "triplet_weight": 0.5}
    loss = args.build_loss()
    assert isinstance(loss, ContrastiveTripletLoss)
    assert loss.get_config_dict() == {
        "margin": 0.5, "triplet_margin": 0.2, "triplet_weight": 0.5,
        "ranking_loss": "hard_negative_triplet", "ranking_candidates": "all_rows", "temperature": 0.05,
    }  # fmt: skip
    with pytest.warns(UserWarning, match=r"options \['temperature'\] do not apply to loss 'contrastive'"):
        _args(tmp_path, loss="contrastive", temperature=0.1)
