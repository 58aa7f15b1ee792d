"""`SiameseTrainingArguments`: one field per loss option, and the one place a loss is built from arguments."""

import dataclasses

import pytest

from hfsiamese.bi_encoder.training_args import LOSS_OPTION_FIELDS, SiameseTrainingArguments
from hfsiamese.losses import LOSS_OPTIONS, ContrastiveRankingLoss


def _args(tmp_path, **values):
    return SiameseTrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True, **values)


def test_every_loss_option_is_a_field():
    fields = {f.name: f for f in dataclasses.fields(SiameseTrainingArguments)}
    assert set(LOSS_OPTION_FIELDS) == set(LOSS_OPTIONS)
    for name in LOSS_OPTIONS:
        assert fields[name].default is None, f"{name}: unset must keep the loss's own default"


def test_build_loss_takes_the_options_that_apply(tmp_path):
    args = _args(tmp_path, loss="contrastive_ranking", triplet_margin=0.2, ranking_weight=0.5)
    assert args.loss_options() == {"triplet_margin": 0.2, "ranking_weight": 0.5}
    loss = args.build_loss()
    assert isinstance(loss, ContrastiveRankingLoss)
    assert loss.get_config_dict() == {
        "margin": 0.5, "triplet_margin": 0.2, "ranking_weight": 0.5,
        "ranking_loss": "hard_negative_triplet", "ranking_candidates": "all_rows", "temperature": 0.05,
    }  # fmt: skip
    with pytest.warns(UserWarning, match=r"options \['temperature'\] do not apply to loss 'contrastive'"):
        _args(tmp_path, loss="contrastive", temperature=0.1)


def test_the_loss_s_old_name_and_option_still_work_and_say_so(tmp_path):
    from hfsiamese.cli.command_parser import command_parser
    from hfsiamese.cli.config_and_flags import parse_config_and_flags

    with pytest.warns(FutureWarning) as caught:
        args = _args(tmp_path, loss="contrastive_triplet", triplet_weight=0.05)
    assert {
        "loss contrastive_triplet is renamed contrastive_ranking; contrastive_triplet goes in hfsiamese 0.3",
        "loss option triplet_weight is renamed ranking_weight; triplet_weight goes in hfsiamese 0.3",
    } <= {str(w.message) for w in caught}
    assert (args.loss, args.ranking_weight, args.triplet_weight) == ("contrastive_ranking", 0.05, None)
    assert isinstance(args.build_loss(), ContrastiveRankingLoss) and args.build_loss().ranking_weight == 0.05
    # A config written before the rename parses to the same arguments.
    config = tmp_path / "old.yaml"
    config.write_text("loss: contrastive_triplet\ntriplet_weight: 0.05\nranking_loss: multiple_negatives_ranking\n")
    with pytest.warns(FutureWarning):
        (parsed,) = parse_config_and_flags(
            command_parser(SiameseTrainingArguments, prog="test"),
            [str(config), "--output_dir", str(tmp_path), "--use_cpu", "true"],
        )
    assert (parsed.loss, parsed.ranking_weight, parsed.ranking_loss) == (
        "contrastive_ranking",
        0.05,
        "multiple_negatives_ranking",
    )
    with pytest.raises(ValueError, match="triplet_weight is the old name of ranking_weight: give ranking_weight only"):
        _args(tmp_path, loss="contrastive_ranking", triplet_weight=0.05, ranking_weight=0.1)


def test_the_loss_class_s_old_name_still_imports():
    import hfsiamese.losses as losses

    with pytest.warns(FutureWarning, match="ContrastiveTripletLoss is now ContrastiveRankingLoss"):
        assert losses.ContrastiveTripletLoss is ContrastiveRankingLoss
