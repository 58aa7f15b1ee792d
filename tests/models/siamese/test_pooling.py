"""Every pooling mode equals sentence-transformers' `Pooling` on the same token states, right- and left-padded."""

import re

import pytest
import torch

from hfsiamese import SiameseConfig
from hfsiamese.models.siamese.pooling import pool

try:  # sentence-transformers >= 6
    from sentence_transformers.sentence_transformer.modules import Pooling
except ImportError:
    from sentence_transformers.models import Pooling

OURS = {"cls": "cls", "max": "max", "mean": "mean", "mean_sqrt_len_tokens": "mean_sqrt_len",
        "weightedmean": "weighted_mean", "lasttoken": "last_token"}  # fmt: skip


def _batch(side: str) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    lengths = torch.tensor([5, 1, 3, 5])
    positions = torch.arange(5).unsqueeze(0)
    mask = positions < lengths.unsqueeze(1) if side == "right" else positions >= (5 - lengths).unsqueeze(1)
    return torch.randn(4, 5, 6), mask.long()


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("modes", [(m,) for m in OURS] + [("cls", "mean"), ("max", "lasttoken")])
def test_equals_sentence_transformers_pooling(modes, side):
    states, mask = _batch(side)
    expected = Pooling(6, pooling_mode=modes if len(modes) > 1 else modes[0])(
        {"token_embeddings": states.clone(), "attention_mask": mask}
    )["sentence_embedding"]
    got = pool(states, mask, "+".join(OURS[m] for m in modes))
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)


def test_padding_never_takes_part():
    states, mask = _batch("right")
    noisy = states.masked_fill(mask.unsqueeze(-1) == 0, 1e4)
    for mode in OURS.values():
        torch.testing.assert_close(pool(noisy, mask, mode), pool(states, mask, mode))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (dict(pooling="median"), "pooling 'median' is not available"),
        (dict(pooling="mean+mean"), "pooling 'mean+mean' is not available"),
        (
            dict(dense_layers=[{"in_features": 16, "out_features": 8}, {"in_features": 4, "out_features": 2}]),
            "takes 4 features but the layer before gives 8",
        ),
        (
            dict(dense_layers=[{"in_features": 16, "out_features": 8, "activation": "os.system"}]),
            "activation 'os.system' is not one of",
        ),
        (
            dict(prompts={"query": "q: "}, default_prompt_name="passage"),
            "default_prompt_name 'passage' is not one of the prompts ['query']",
        ),
        (dict(max_seq_length=0), "max_seq_length must be a positive number of tokens"),
    ],
)
def test_config_refuses_what_it_cannot_build(config, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SiameseConfig(encoder_type="transformer", encoder_config={"model_type": "bert", "hidden_size": 16}, **config)


def test_prompt_text_picks_the_default_a_named_one_or_the_text_given():
    config = SiameseConfig(
        encoder_type="transformer", encoder_config={"model_type": "bert", "hidden_size": 16},
        prompts={"query": "query: ", "passage": "passage: "}, default_prompt_name="query",
    )  # fmt: skip
    assert config.prompt_text() == "query: " and config.prompt_text("passage") == "passage: "
    assert config.prompt_text(prompt="") == "" and config.prompt_text(prompt="x ") == "x "
    with pytest.raises(ValueError, match="prompt_name 'title' is not one of this model's prompts"):
        config.prompt_text("title")
