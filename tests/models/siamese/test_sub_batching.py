"""Length-sorted sub-batches (`SiameseModel.set_sub_batching`, `hfsiamese.models.siamese.sub_batching`) and encoder settings of `from_encoder_pretrained`."""

import pytest
import torch
from transformers import AutoModel, BertConfig, DistilBertConfig, RobertaConfig

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.models.siamese.sub_batching import (
    CPU_INFERENCE_TOKEN_BUDGET,
    CPU_TOKEN_BUDGET,
    plan_sub_batches,
    resolve_token_budget,
)

TEXTS_A = [
    "how do i learn python ?",
    "why is the sky blue ?",
    "how",
    "what is the capital of france ?",
    "how can i lose weight fast ?",
]
TEXTS_B = [
    "what is the best way to learn python ?",
    "what makes the sky look blue ?",
    "how do i cook rice ?",
    "france",
    "rice",
]
NEGATIVES = [
    "how do i cook rice ?",
    "what",
    "why is the sky blue ?",
    "what is the fastest way to lose weight ?",
    "python",
]


def _encoder_dir(tmp_path, word_tokenizer, family: str):
    torch.manual_seed(0)
    vocab = len(word_tokenizer) + 2  # roberta's positions start after its padding index
    if family == "distilbert":
        config = DistilBertConfig(vocab_size=vocab, dim=16, n_layers=2, n_heads=2, hidden_dim=24, pad_token_id=0)
    else:
        config_class = {"bert": BertConfig, "roberta": RobertaConfig}[family]
        config = config_class(
            vocab_size=vocab,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=24,
            max_position_embeddings=40,
            pad_token_id=0,
        )
    AutoModel.from_config(config).save_pretrained(tmp_path / family)
    return str(tmp_path / family)


def _sides(tokenizer, *texts, padding_side="right"):
    tokenizer.padding_side = padding_side
    try:
        batches = [tokenizer(t, padding=True, return_tensors="pt") for t in texts]
    finally:
        tokenizer.padding_side = "right"
    return {
        f"{field}_{side}": batch[field]
        for side, batch in zip("abn", batches)
        for field in ("input_ids", "attention_mask")
    }


def _forward_and_grads(model, inputs):
    model.zero_grad()
    out = model(**inputs)
    loss = out.similarity.sum() + (out.embeddings_a @ out.embeddings_n.T).sum()
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return out, grads


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert"])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("plan", [{"max_texts": 4}, {"max_tokens": 20}])
def test_sub_batches_give_the_embeddings_and_gradients_of_one_call(
    tmp_path, word_tokenizer, family, padding_side, plan
):
    model = SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, family))
    model.set_sub_batching(**{"max_tokens": None, **plan})
    model.eval()  # no dropout: the two ways must agree up to float rounding
    inputs = _sides(word_tokenizer, TEXTS_A, TEXTS_B, NEGATIVES, padding_side=padding_side)
    sorted_out, sorted_grads = _forward_and_grads(model, inputs)
    model.set_sub_batching(max_tokens=0)
    plain_out, plain_grads = _forward_and_grads(model, inputs)
    for key in ("embeddings_a", "embeddings_b", "embeddings_n", "similarity"):
        torch.testing.assert_close(getattr(sorted_out, key), getattr(plain_out, key), atol=1e-6, rtol=1e-5)
    assert sorted_grads.keys() == plain_grads.keys() and sorted_grads
    for name, grad in plain_grads.items():
        torch.testing.assert_close(sorted_grads[name], grad, atol=1e-6, rtol=1e-4, msg=name)


def test_sub_batches_run_the_encoder_on_short_padding(tmp_path, word_tokenizer):
    """Each encoder call sees at most sub_batch_size texts, padded to the longest of them only."""
    model = SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, "bert"), sub_batch_size=3)
    assert (model.sub_batch_tokens, model.sub_batch_size) == ("auto", 3)  # an explicit count wins over "auto"
    inputs = _sides(word_tokenizer, TEXTS_A, TEXTS_B)
    calls = []
    model.encoder.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(kwargs["attention_mask"].clone()), with_kwargs=True
    )
    model(**inputs)
    assert [mask.shape[0] for mask in calls] == [3, 3, 3, 1]
    assert all(bool(mask[:, -1].any()) for mask in calls)  # no all-padding column
    padded = sum(mask.numel() for mask in calls)
    one_call_each = inputs["attention_mask_a"].numel() + inputs["attention_mask_b"].numel()
    assert padded < one_call_each


def test_lstm_ignores_sub_batch_size(tiny_lstm, word_tokenizer):
    inputs = _sides(word_tokenizer, TEXTS_A, TEXTS_B)
    tiny_lstm.set_sub_batching(max_tokens=4, max_texts=1)  # would cut every text into its own call
    calls = []
    tiny_lstm.encoder.register_forward_pre_hook(lambda module, args: calls.append(args[0].shape[0]))
    out = tiny_lstm(**inputs)
    assert calls == [len(TEXTS_A), len(TEXTS_B)]  # one whole call per side: packed sequences, no sub-batches
    torch.testing.assert_close(out.embeddings_a, tiny_lstm.embed(inputs["input_ids_a"], inputs["attention_mask_a"]))


def test_token_budget_cuts_calls_by_padded_tokens(tmp_path, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, "bert"), sub_batch_tokens=16)
    inputs = _sides(word_tokenizer, TEXTS_A, TEXTS_B)
    calls = []
    model.encoder.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(kwargs["attention_mask"].clone()), with_kwargs=True
    )
    model(**inputs)
    assert sum(mask.shape[0] for mask in calls) == 10 and len(calls) > 1
    # Every call within the budget, except a lone text longer than it.
    assert all(mask.numel() <= 16 or mask.shape[0] == 1 for mask in calls)


@pytest.mark.parametrize(
    ("lengths", "rules", "sizes"),
    [
        ([1, 2, 3, 4, 5], {"max_texts": 2}, [2, 2, 1]),
        ([2, 2, 2, 2, 8, 9], {"max_tokens": 8}, [4, 1, 1]),  # 4 × 2 fits; 9 alone exceeds the budget
        ([3, 3, 3, 3], {"max_tokens": 100, "max_texts": 3}, [3, 1]),
        ([0, 0, 1], {"max_tokens": 1}, [1, 1, 1]),  # an empty text still counts as one column
        ([], {"max_tokens": 8}, []),
    ],
)
def test_plan_sub_batches(lengths, rules, sizes):
    assert plan_sub_batches(lengths, **rules) == sizes


def test_auto_budget_is_on_for_cpus_only():
    assert resolve_token_budget("auto", None, torch.device("cpu")) == (CPU_TOKEN_BUDGET, None)
    with torch.no_grad():  # encode and evaluation: larger calls
        assert resolve_token_budget("auto", None, torch.device("cpu")) == (CPU_INFERENCE_TOKEN_BUDGET, None)
    assert resolve_token_budget("auto", None, torch.device("meta")) == (None, None)
    assert resolve_token_budget("auto", 0, torch.device("cpu")) == (None, None)  # 0: off, as documented
    assert resolve_token_budget(0, None, torch.device("cpu")) == (None, None)
    assert resolve_token_budget(512, 8, torch.device("cpu")) == (512, 8)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "32"])
def test_set_sub_batching_rejects_bad_values(tmp_path, word_tokenizer, bad):
    model = SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, "bert"))
    with pytest.raises(ValueError, match="sub_batch_size"):
        model.set_sub_batching(max_texts=bad)
    with pytest.raises(ValueError, match="sub_batch_tokens"):
        model.set_sub_batching(max_tokens=bad)


def test_sub_batching_is_not_saved_with_the_model(tmp_path, word_tokenizer):
    """A checkpoint saved with CPU sub-batches must not impose them on whoever loads it (e.g. on a GPU)."""
    model = SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, "bert"), sub_batch_size=32)
    model.save_pretrained(tmp_path / "saved")
    assert "sub_batch_size" not in (tmp_path / "saved" / "config.json").read_text()
    loaded = SiameseModel.from_pretrained(tmp_path / "saved")
    assert (loaded.sub_batch_tokens, loaded.sub_batch_size) == ("auto", None)
    # A config written before the change still loads, and its value is dropped.
    legacy = SiameseConfig(encoder_type="lstm", sub_batch_size=32)
    assert not hasattr(legacy, "sub_batch_size")


def test_encoder_dropout_sets_every_dropout_of_the_encoder(tmp_path, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, "bert"), encoder_dropout=0.0)
    assert model.encoder.config.hidden_dropout_prob == 0.0 and model.encoder.config.attention_probs_dropout_prob == 0.0
    assert model.config.encoder_config["hidden_dropout_prob"] == 0.0
    assert all(module.p == 0.0 for module in model.encoder.modules() if isinstance(module, torch.nn.Dropout))
    distil = SiameseModel.from_encoder_pretrained(
        _encoder_dir(tmp_path, word_tokenizer, "distilbert"), encoder_dropout=0.3
    )
    assert distil.encoder.config.dropout == 0.3 and distil.encoder.config.attention_dropout == 0.3


def test_encoder_dropout_must_be_a_probability(tmp_path, word_tokenizer):
    with pytest.raises(ValueError, match=r"encoder_dropout is a probability in \[0, 1\), got 1.5"):
        SiameseModel.from_encoder_pretrained(_encoder_dir(tmp_path, word_tokenizer, "bert"), encoder_dropout=1.5)


def test_encoder_kwargs_choose_the_attention_kernel(tmp_path, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(
        _encoder_dir(tmp_path, word_tokenizer, "bert"), encoder_kwargs={"attn_implementation": "eager"}
    )
    assert model.encoder.config._attn_implementation == "eager"
