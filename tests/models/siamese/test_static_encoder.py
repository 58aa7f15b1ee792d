"""The static encoder (`encoder_type="static"`): padding invariance, pooling, gradients, saving, building, training."""

import datasets
import pytest
import torch
from transformers import AutoModel

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.model_building import build_model_and_tokenizer
from hfsiamese.bi_encoder.sentence_transformers_export import check_export
from hfsiamese.models.siamese.static_encoder import StaticEncoder
from hfsiamese.training.arguments import ModelArguments
from tests.conftest import TEXTS
from tests.fixtures import tiny_training_args, trainer_on_tiny_pairs

TEXT = "how do i learn python ?"
LONGER = "what is the best way to learn python ? really the best"


def static_model(tokenizer, pooling="mean", **config):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="static", vocab_size=len(tokenizer), embedding_dim=8, pooling=pooling, pad_token_id=0, **config
    )
    return SiameseModel(config)


@pytest.mark.parametrize("pooling", ["mean", "weighted_mean"])
def test_padding_never_changes_a_text_vector(word_tokenizer, pooling):
    model = static_model(word_tokenizer, pooling, projection_dim=6).eval()
    with torch.no_grad():  # weights away from their uniform start, so that weighted_mean really weighs
        if model.encoder.token_weights is not None:
            model.encoder.token_weights.weight.normal_(0, 2)
    alone = model.embed(**word_tokenizer([TEXT], return_tensors="pt"))
    padded = model.embed(**word_tokenizer([TEXT], padding="max_length", max_length=14, return_tensors="pt"))
    with_long = model.embed(**word_tokenizer([TEXT, LONGER], padding=True, return_tensors="pt"))
    word_tokenizer.padding_side = "left"
    try:
        left = model.embed(**word_tokenizer([TEXT, LONGER], padding=True, return_tensors="pt"))
    finally:
        word_tokenizer.padding_side = "right"
    for other in (padded, with_long[:1], left[:1]):
        assert torch.allclose(alone, other, atol=1e-6)
    assert torch.allclose(alone.norm(dim=-1), torch.ones(1), atol=1e-5)


def test_mean_pooling_is_the_mean_of_the_token_vectors(word_tokenizer):
    model = static_model(word_tokenizer).eval()
    ids = word_tokenizer([TEXT], return_tensors="pt")["input_ids"]
    expected = torch.nn.functional.normalize(model.encoder.embeddings.weight[ids[0]].mean(dim=0), dim=-1)
    assert torch.allclose(model.embed(ids), expected.unsqueeze(0), atol=1e-6)


def test_weighted_mean_follows_the_learned_token_weights(word_tokenizer):
    model = static_model(word_tokenizer, "weighted_mean").eval()
    ids = word_tokenizer([TEXT], return_tensors="pt")["input_ids"]
    # At initialisation every weight is about softplus(0): the plain mean.
    plain = torch.nn.functional.normalize(model.encoder.embeddings.weight[ids[0]].mean(dim=0), dim=-1)
    assert torch.allclose(model.embed(ids)[0], plain, atol=0.05)
    python = word_tokenizer.convert_tokens_to_ids("python")
    with torch.no_grad():
        model.encoder.token_weights.weight[python] = 50.0  # "python" outweighs every other token
    weights = torch.nn.functional.softplus(model.encoder.token_weights.weight[ids[0], 0])
    vectors = model.encoder.embeddings.weight[ids[0]]
    expected = torch.nn.functional.normalize((weights[:, None] * vectors).sum(dim=0) / weights.sum(), dim=-1)
    embedding = model.embed(ids)[0]
    assert torch.allclose(embedding, expected, atol=1e-6)
    python_vector = torch.nn.functional.normalize(vectors[ids[0] == python][0], dim=-1)
    assert embedding @ python_vector > 0.99 > plain @ python_vector


def test_an_empty_text_gets_a_finite_vector(word_tokenizer):
    model = static_model(word_tokenizer, "weighted_mean").eval()
    batch = word_tokenizer(["", TEXT], padding=True, return_tensors="pt")
    embeddings = model.embed(**batch)
    assert torch.isfinite(embeddings).all() and embeddings[0].abs().sum() == 0


def test_gradients_reach_token_vectors_weights_and_projection_but_not_padding(word_tokenizer):
    model = static_model(word_tokenizer, "weighted_mean", projection_dim=6).train()
    a = word_tokenizer([TEXT, "why is the sky blue ?"], padding=True, return_tensors="pt")
    b = word_tokenizer([LONGER, "how do i cook rice ?"], padding=True, return_tensors="pt")
    out = model(
        input_ids_a=a["input_ids"], attention_mask_a=a["attention_mask"],
        input_ids_b=b["input_ids"], attention_mask_b=b["attention_mask"],
    )  # fmt: skip
    (1 - out.similarity).sum().backward()
    encoder = model.encoder
    for parameter in (encoder.embeddings.weight, encoder.token_weights.weight, model.projection.weight):
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0
    python = word_tokenizer.convert_tokens_to_ids("python")
    assert encoder.embeddings.weight.grad[python].abs().sum() > 0
    assert encoder.embeddings.weight.grad[word_tokenizer.pad_token_id].abs().sum() == 0


@pytest.mark.parametrize("pooling", ["mean", "weighted_mean"])
def test_inference_sums_in_one_kernel_to_the_training_product(word_tokenizer, pooling):
    """Eval mode pools with `embedding_bag` (lookup and weighted sum fused), training with the product over the
    token vectors (dropout acts on them): the same vectors, gradients included, padding and empty texts alike."""
    model = static_model(word_tokenizer, pooling)
    with torch.no_grad():
        if model.encoder.token_weights is not None:
            model.encoder.token_weights.weight.normal_(0, 2)
    batch = word_tokenizer(["", TEXT, LONGER], padding=True, return_tensors="pt")
    encoder = model.encoder
    encoder.dropout.p = 0.0  # the product without dropout: what inference must equal
    results = {}
    for training in (True, False):
        encoder.train(training)
        encoder.zero_grad()
        pooled = encoder(batch["input_ids"], batch["attention_mask"])
        pooled.pow(2).sum().backward()
        grads = [p.grad.clone() for p in encoder.parameters()]
        results[training] = (pooled.detach(), grads)
    (train_out, train_grads), (eval_out, eval_grads) = results[True], results[False]
    assert torch.allclose(eval_out, train_out, atol=1e-6) and eval_out[0].abs().sum() == 0
    for train_grad, eval_grad in zip(train_grads, eval_grads, strict=True):
        assert torch.allclose(eval_grad, train_grad, atol=1e-6)
    no_tokens = torch.zeros(2, 0, dtype=torch.long)  # a batch of empty texts from a tokenizer adding no tokens
    assert encoder.eval()(no_tokens, no_tokens).shape == (2, 8) and encoder(no_tokens, no_tokens).abs().sum() == 0


def test_a_traced_graph_keeps_the_product_not_the_fused_kernel(word_tokenizer):
    """An export traces the eval forward: its graph must hold plain ops (ONNX has no fused EmbeddingBag: a loop)."""
    model = static_model(word_tokenizer, "weighted_mean").eval()
    batch = word_tokenizer([TEXT, LONGER], padding=True, return_tensors="pt")
    traced = torch.jit.trace(model.encoder, (batch["input_ids"], batch["attention_mask"]))
    kinds = {node.kind() for node in traced.inlined_graph.nodes()}
    assert "aten::einsum" in kinds and "aten::embedding_bag" not in kinds
    with torch.no_grad():
        assert torch.allclose(traced(batch["input_ids"], batch["attention_mask"]), model.encoder(**batch), atol=1e-6)


def test_no_sub_batching_and_forward_matches_embed(word_tokenizer):
    model = static_model(word_tokenizer).eval()
    model.set_sub_batching(max_tokens=4)  # a transformer's runtime choice: no effect on a static encoder
    a = word_tokenizer([TEXT, LONGER], padding=True, return_tensors="pt")
    b = word_tokenizer(["why is the sky blue ?", "how do i cook rice ?"], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(
            input_ids_a=a["input_ids"], attention_mask_a=a["attention_mask"],
            input_ids_b=b["input_ids"], attention_mask_b=b["attention_mask"],
        )  # fmt: skip
        assert torch.allclose(out.embeddings_a, model.embed(**a), atol=1e-6)
        assert torch.allclose(out.embeddings_b, model.embed(**b), atol=1e-6)
    encoded = model.encode([TEXT, LONGER], word_tokenizer, batch_size=1)
    assert torch.allclose(encoded, out.embeddings_a, atol=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "weighted_mean"])
def test_save_and_reload(word_tokenizer, tmp_path, pooling):
    model = static_model(word_tokenizer, pooling, projection_dim=4).eval()
    model.config.threshold = 0.5
    model.save_pretrained(tmp_path)
    word_tokenizer.save_pretrained(tmp_path)
    assert (tmp_path / "static_encoder.py").is_file()  # travels as remote code
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    assert isinstance(loaded.encoder, StaticEncoder) and loaded.config.pooling == pooling
    assert torch.allclose(loaded.encode(TEXTS), model.encode(TEXTS, word_tokenizer), atol=1e-6)


def test_config_names_the_poolings_and_the_embedding_size():
    with pytest.raises(ValueError, match="weighted_mean"):
        SiameseConfig(encoder_type="static", pooling="max")
    assert SiameseConfig(encoder_type="static", embedding_dim=12).sentence_embedding_dim == 12
    assert SiameseConfig(encoder_type="static", embedding_dim=12, projection_dim=5).sentence_embedding_dim == 5


def test_built_from_model_arguments_with_its_own_vocabulary():
    pairs = datasets.Dataset.from_dict({"question1": TEXTS[0::2], "question2": TEXTS[1::2], "label": [1] * 4})
    args = ModelArguments(
        encoder_type="static", pooling="weighted_mean", embedding_dim=8, vocab_size=100, max_length=16
    )
    model, tokenizer = build_model_and_tokenizer(args, pairs)
    assert isinstance(model.encoder, StaticEncoder) and model.config.encoder_type == "static"
    assert model.config.vocab_size == len(tokenizer) and "python" in tokenizer.get_vocab()
    model.check_tokenizer(tokenizer)
    with pytest.raises(ValueError, match="config.vocab_size"):
        model.check_tokenizer(
            build_model_and_tokenizer(ModelArguments(vocab_size=100, max_length=16), pairs.select(range(2)))[1]
        )


def test_trains_with_the_siamese_trainer(word_tokenizer, tmp_path):
    model = static_model(word_tokenizer, "weighted_mean")
    before = model.encoder.token_weights.weight.detach().clone()
    trainer = trainer_on_tiny_pairs(model, word_tokenizer, tiny_training_args(tmp_path, max_steps=4))
    trainer.train()
    assert not torch.equal(before, model.encoder.token_weights.weight)
    assert 0.0 <= trainer.evaluate()["eval_average_precision"] <= 1.0


def test_sentence_transformers_export_is_refused_clearly(word_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="only transformer encoders export.*'static'"):
        check_export(static_model(word_tokenizer), tmp_path / "st")
