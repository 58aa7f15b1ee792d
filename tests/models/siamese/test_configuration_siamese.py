"""SiameseConfig refuses a model it could not build, naming its own field (not the torch layer's argument)."""

from __future__ import annotations

import pytest

from hfsiamese import SiameseConfig


@pytest.mark.parametrize(
    ("encoder_type", "values", "message"),
    [
        ("lstm", {"embedding_dim": 0}, "embedding_dim must be a positive integer, got 0"),
        ("lstm", {"hidden_size": -1}, "hidden_size must be a positive integer, got -1"),
        ("lstm", {"num_layers": 0}, "num_layers must be a positive integer, got 0"),
        ("static", {"embedding_dim": 0}, "embedding_dim must be a positive integer, got 0"),
        ("lstm", {"projection_dim": 0}, "projection_dim must be a positive integer, got 0"),
    ],
)
def test_a_size_below_one_is_refused_by_its_name(encoder_type, values, message):
    with pytest.raises(ValueError, match=message):
        SiameseConfig(encoder_type=encoder_type, **values)


def test_sizes_an_encoder_type_does_not_use_are_left_alone():
    # A static encoder has no recurrent layer; a transformer's sizes come from its encoder_config.
    assert SiameseConfig(encoder_type="static", pooling="mean", hidden_size=0, num_layers=0).embedding_dim == 128
    config = SiameseConfig(
        encoder_type="transformer", encoder_config={"model_type": "bert", "hidden_size": 8}, embedding_dim=0
    )
    assert config.encoder_type == "transformer"
