"""Reading a sentence-transformers folder: what it takes, and the one-line refusals of what hfsiamese cannot reproduce."""

import json

import pytest
import torch
from safetensors.torch import save_file

from hfsiamese.bi_encoder.sentence_transformers_folder import read_sentence_transformers_folder


def _folder(tmp_path, modules, *, pooling=None, dense=None, model_config=None, bert_config=None):
    """A hand-written sentence-transformers folder (older layouts included), without sentence-transformers."""
    (tmp_path / "modules.json").write_text(
        json.dumps([{"idx": i, "name": str(i), "path": p, "type": t} for i, (p, t) in enumerate(modules)])
    )
    if pooling is not None:
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    if dense is not None:
        config, weights = dense
        (tmp_path / "2_Dense").mkdir()
        (tmp_path / "2_Dense" / "config.json").write_text(json.dumps(config))
        if weights is not None:
            save_file(weights, str(tmp_path / "2_Dense" / "model.safetensors"))
    if model_config is not None:
        (tmp_path / "config_sentence_transformers.json").write_text(json.dumps(model_config))
    (tmp_path / "sentence_bert_config.json").write_text(
        json.dumps(bert_config or {"max_seq_length": 128, "do_lower_case": False})
    )
    return tmp_path


TRANSFORMER = ("", "sentence_transformers.models.Transformer")
POOLING = ("1_Pooling", "sentence_transformers.models.Pooling")
DENSE = ("2_Dense", "sentence_transformers.models.Dense")
NORMALIZE = ("3_Normalize", "sentence_transformers.models.Normalize")
DENSE_CONFIG = {
    "in_features": 4,
    "out_features": 2,
    "bias": True,
    "activation_function": "torch.nn.modules.activation.Tanh",
}
DENSE_WEIGHTS = {"linear.weight": torch.ones(2, 4), "linear.bias": torch.zeros(2)}


def test_a_plain_automodel_folder_has_no_settings(tmp_path):
    assert read_sentence_transformers_folder(tmp_path) is None


def test_reads_legacy_pooling_flags_dense_normalize_prompts_and_length(tmp_path):
    folder = _folder(
        tmp_path, [TRANSFORMER, POOLING, DENSE, NORMALIZE],
        pooling={"word_embedding_dimension": 4, "pooling_mode_cls_token": True, "pooling_mode_max_tokens": True},
        dense=(DENSE_CONFIG, DENSE_WEIGHTS),
        model_config={"prompts": {"query": "query: "}, "default_prompt_name": "query", "similarity_fn_name": "dot"},
    )  # fmt: skip
    settings = read_sentence_transformers_folder(folder)
    assert settings.pooling == "cls+max" and settings.normalize and settings.max_seq_length == 128
    assert settings.dense_layers == [{"in_features": 4, "out_features": 2, "bias": True, "activation": "Tanh"}]
    assert torch.equal(settings.dense_weights[0]["linear.weight"], torch.ones(2, 4))
    assert settings.prompts == {"query": "query: "} and settings.default_prompt_name == "query"
    assert settings.similarity_fn_name == "dot"


@pytest.mark.parametrize(
    ("modules", "extra", "message"),
    [
        (
            [TRANSFORMER, ("1_Router", "sentence_transformers.models.Router")],
            {},
            "module 'sentence_transformers.models.Router' has no hfsiamese counterpart",
        ),
        (
            [POOLING, TRANSFORMER],
            {"pooling": {"pooling_mode": "mean"}},
            "the first module, and only it, must be a Transformer",
        ),
        (
            [TRANSFORMER, NORMALIZE, POOLING],
            {"pooling": {"pooling_mode": "mean"}},
            "hfsiamese reproduces Transformer → Pooling → Dense… → Normalize",
        ),
        ([TRANSFORMER, POOLING], {"pooling": {"pooling_mode": "median"}}, "pooling mode 'median' is not one of"),
        (
            [TRANSFORMER, POOLING, DENSE],
            {"pooling": {"pooling_mode": "mean"}, "dense": (DENSE_CONFIG, None)},
            "the Dense module's weights are not in model.safetensors",
        ),
        (
            [TRANSFORMER, POOLING, DENSE],
            {
                "pooling": {"pooling_mode": "mean"},
                "dense": (dict(DENSE_CONFIG, activation_function="mypackage.Swish"), DENSE_WEIGHTS),
            },
            "activation 'mypackage.Swish' is not one of",
        ),
        (
            [TRANSFORMER, POOLING, DENSE],
            {"pooling": {"pooling_mode": "mean"}, "dense": (dict(DENSE_CONFIG, use_residual=True), DENSE_WEIGHTS)},
            "a Dense module with a residual connection",
        ),
        (
            [TRANSFORMER, POOLING],
            {
                "pooling": {"pooling_mode": "mean", "include_prompt": False},
                "model_config": {"prompts": {"q": "Represent: "}},
            },
            "include_prompt: false",
        ),
        (
            [TRANSFORMER, POOLING],
            {"pooling": {"pooling_mode": "mean"}, "bert_config": {"max_seq_length": 64, "do_lower_case": True}},
            "do_lower_case true",
        ),
    ],
)
def test_refuses_what_it_cannot_reproduce_in_one_line(tmp_path, modules, extra, message):
    folder = _folder(tmp_path, modules, **extra)
    with pytest.raises(ValueError) as raised:
        read_sentence_transformers_folder(folder)
    assert message in str(raised.value) and "\n" not in str(raised.value)
