import pytest
import torch
from transformers import AutoConfig, AutoModel

from hfsiamese import SiameseConfig, SiameseModel


def _batch(tokenizer, texts):
    return tokenizer(texts, padding=True, return_tensors="pt")


@pytest.mark.parametrize("pooling", ["mean", "max", "last"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_padding_never_leaks(word_tokenizer, pooling, bidirectional):
    torch.manual_seed(0)
    config = SiameseConfig(
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        num_layers=2,
        bidirectional=bidirectional,
        pooling=pooling,
    )
    model = SiameseModel(config).eval()
    text = "how do i learn python ?"
    alone = _batch(word_tokenizer, [text])
    padded = word_tokenizer([text], padding="max_length", max_length=12, return_tensors="pt")
    with_long = _batch(word_tokenizer, [text, "what is the best way to learn python ? really the best"])
    e_alone = model.embed(**alone)
    assert torch.allclose(e_alone, model.embed(**padded)[0:1], atol=1e-6)
    assert torch.allclose(e_alone, model.embed(**with_long)[0:1], atol=1e-6)
    assert torch.allclose(e_alone.norm(dim=-1), torch.ones(1), atol=1e-5)


def test_lstm_rejects_left_padding(tiny_lstm):
    ids = torch.tensor([[0, 5, 6], [4, 5, 6]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    with pytest.raises(ValueError, match="right-padded"):
        tiny_lstm.embed(ids, mask)


def test_forward_outputs_cosine_of_embeddings(tiny_lstm, word_tokenizer):
    a = _batch(word_tokenizer, ["how do i learn python ?", "why is the sky blue ?"])
    b = _batch(word_tokenizer, ["what is the best way to learn python ?", "how do i cook rice ?"])
    out = tiny_lstm(
        input_ids_a=a["input_ids"],
        attention_mask_a=a["attention_mask"],
        input_ids_b=b["input_ids"],
        attention_mask_b=b["attention_mask"],
    )
    assert out.similarity.shape == (2,)
    expected = torch.nn.functional.cosine_similarity(out.embeddings_a, out.embeddings_b)
    assert torch.allclose(out.similarity, expected, atol=1e-6)
    assert out.similarity.abs().max() <= 1.0 + 1e-6


def test_shared_encoder_gives_symmetric_scores(tiny_lstm, word_tokenizer):
    texts_a = ["how do i learn python ?", "why is the sky blue ?"]
    texts_b = ["what is the best way to learn python ?", "how do i cook rice ?"]
    assert torch.allclose(
        tiny_lstm.similarity(texts_a, texts_b, word_tokenizer),
        tiny_lstm.similarity(texts_b, texts_a, word_tokenizer),
        atol=1e-6,
    )


def test_encode_keeps_input_order_and_matches_embed(tiny_lstm, word_tokenizer):
    texts = ["why is the sky blue ?", "how do i learn python ? really now", "rice"]
    encoded = tiny_lstm.encode(texts, word_tokenizer, batch_size=2)
    for i, text in enumerate(texts):
        single = tiny_lstm.embed(**_batch(word_tokenizer, [text]))[0]
        assert torch.allclose(encoded[i], single, atol=1e-6)
    assert torch.allclose(tiny_lstm.encode(_batch(word_tokenizer, texts)), encoded, atol=1e-6)
    with pytest.raises(TypeError, match="list of texts"):
        tiny_lstm.encode("one string", word_tokenizer)


def test_projection_changes_dimension(word_tokenizer):
    model = SiameseModel(
        SiameseConfig(
            vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, bidirectional=True, projection_dim=5
        )
    )
    assert model.config.sentence_embedding_dim == 5
    assert model.encode(["why is the sky blue ?"], word_tokenizer).shape == (1, 5)


def test_predict_needs_threshold(tiny_lstm, word_tokenizer):
    with pytest.raises(ValueError, match="threshold"):
        tiny_lstm.predict(["a"], ["b"], word_tokenizer)
    tiny_lstm.config.threshold = 0.5
    out = tiny_lstm.predict(["how do i learn python ?"], ["how do i learn python ?"], word_tokenizer)
    assert out["is_duplicate"].tolist() == [True]


@pytest.mark.parametrize(
    "bad", [dict(encoder_type="cnn"), dict(pooling="cls"), dict(threshold=1.5), dict(encoder_type="transformer")]
)
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        SiameseConfig(**bad)


def test_lstm_round_trip_with_auto_classes(tiny_lstm, word_tokenizer, tmp_path):
    tiny_lstm.config.threshold = 0.3
    tiny_lstm.save_pretrained(tmp_path)
    word_tokenizer.save_pretrained(tmp_path)
    files = {p.name for p in tmp_path.iterdir()}
    assert {"model.safetensors", "config.json", "modeling_siamese.py", "configuration_siamese.py"} <= files
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in files)
    config = AutoConfig.from_pretrained(tmp_path)
    assert config.auto_map == {
        "AutoConfig": "configuration_siamese.SiameseConfig",
        "AutoModel": "modeling_siamese.SiameseModel",
    }
    reloaded = AutoModel.from_pretrained(tmp_path)
    assert isinstance(reloaded, SiameseModel) and reloaded.config.threshold == 0.3
    texts_a, texts_b = ["how do i learn python ?"], ["why is the sky blue ?"]
    # The reloaded model finds its tokenizer beside the weights.
    assert torch.allclose(
        reloaded.similarity(texts_a, texts_b), tiny_lstm.similarity(texts_a, texts_b, word_tokenizer), atol=1e-6
    )


def test_transformer_encoder_round_trip_without_base_folder(tiny_bert_dir, tmp_path, word_tokenizer):
    import shutil

    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    base = AutoModel.from_pretrained(tiny_bert_dir)
    batch = _batch(word_tokenizer, ["how do i learn python ?", "why is the sky blue ?"])
    expected = torch.nn.functional.normalize(
        (base(**batch).last_hidden_state * batch["attention_mask"][..., None]).sum(1)
        / batch["attention_mask"].sum(1, keepdim=True),
        dim=-1,
    )
    assert torch.allclose(model.embed(**batch), expected, atol=1e-5)
    copy = tmp_path / "base"
    shutil.copytree(tiny_bert_dir, copy)
    model = SiameseModel.from_encoder_pretrained(str(copy), pooling="cls")
    model.save_pretrained(tmp_path / "siamese")
    shutil.rmtree(copy)  # the checkpoint must not need the base model's folder
    reloaded = AutoModel.from_pretrained(tmp_path / "siamese")
    assert reloaded.config.pooling == "cls"
    assert torch.allclose(reloaded.embed(**batch), model.embed(**batch), atol=1e-6)


def test_classifier_head_logits_and_probabilities(word_tokenizer, tmp_path):
    torch.manual_seed(0)
    config = SiameseConfig(
        vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, classifier_head=True, classifier_hidden_size=5
    )
    model = SiameseModel(config).eval()
    a = _batch(word_tokenizer, ["how do i learn python ?", "why is the sky blue ?"])
    b = _batch(word_tokenizer, ["what is the best way to learn python ?", "how do i cook rice ?"])
    out = model(
        input_ids_a=a["input_ids"],
        attention_mask_a=a["attention_mask"],
        input_ids_b=b["input_ids"],
        attention_mask_b=b["attention_mask"],
    )
    assert out.logits.shape == (2, 2)
    u, v = out.embeddings_a, out.embeddings_b
    assert torch.allclose(out.logits, model.classifier.layers(torch.cat([u, v, (u - v).abs(), u * v], dim=-1)))
    model.config.threshold = 0.5
    predicted = model.predict(
        ["how do i learn python ?", "why is the sky blue ?"],
        ["what is the best way to learn python ?", "how do i cook rice ?"],
        word_tokenizer,
    )
    assert torch.allclose(predicted["probabilities"], out.logits.softmax(-1), atol=1e-5)
    assert torch.equal(predicted["is_duplicate"], predicted["probabilities"][:, 1] >= 0.5)
    model.save_pretrained(tmp_path)
    reloaded = AutoModel.from_pretrained(tmp_path)
    assert reloaded.classifier is not None
    assert torch.allclose(reloaded.classifier.layers[0].weight, model.classifier.layers[0].weight)


def test_explicit_negatives_share_the_encoder(tiny_lstm, word_tokenizer):
    a = _batch(word_tokenizer, ["how do i learn python ?"])
    n = _batch(word_tokenizer, ["why is the sky blue ?"])
    out = tiny_lstm(
        input_ids_a=a["input_ids"],
        input_ids_b=a["input_ids"],
        input_ids_n=n["input_ids"],
        attention_mask_n=n["attention_mask"],
    )
    assert torch.allclose(out.embeddings_n, tiny_lstm.embed(**n), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# One-shot classification against a labelled support set
# ---------------------------------------------------------------------------------------------
SUPPORT_TEXTS = [
    "how do i learn python ?",
    "why is the sky blue ?",
    "how can i lose weight fast ?",
    "how do i cook rice ?",
]
SUPPORT_LABELS = ["python", "sky", "weight", "python"]


def test_classify_nearest_matches_a_brute_force_loop(tiny_lstm, word_tokenizer):
    queries = [
        "what is the best way to learn python ?",
        "what makes the sky look blue ?",
        "what is the capital of france ?",
    ]
    out = tiny_lstm.classify(queries, SUPPORT_TEXTS, SUPPORT_LABELS, word_tokenizer, threshold=float("-inf"))
    q = tiny_lstm.encode(queries, word_tokenizer)
    s = tiny_lstm.encode(SUPPORT_TEXTS, word_tokenizer)
    for i in range(len(queries)):
        sims = [float(q[i] @ s[j]) for j in range(len(SUPPORT_TEXTS))]
        best = max(range(len(sims)), key=sims.__getitem__)
        assert out["labels"][i] == SUPPORT_LABELS[best]
        assert int(out["support_indices"][i]) == best
        assert out["scores"][i].item() == pytest.approx(sims[best], abs=1e-6)
        # per class: the best score among that class's examples
        assert out["class_scores"][i, 0].item() == pytest.approx(max(sims[0], sims[3]), abs=1e-6)
    assert out["classes"] == ["python", "sky", "weight"]


def test_classify_centroid_uses_normalised_class_means(tiny_lstm, word_tokenizer):
    queries = ["how do i learn python ?"]
    out = tiny_lstm.classify(
        queries, SUPPORT_TEXTS, SUPPORT_LABELS, word_tokenizer, strategy="centroid", threshold=-1.0
    )
    q = tiny_lstm.encode(queries, word_tokenizer)[0]
    s = tiny_lstm.encode(SUPPORT_TEXTS, word_tokenizer)
    python_centroid = torch.nn.functional.normalize(s[0] + s[3], dim=0)
    assert out["class_scores"][0, 0].item() == pytest.approx(float(q @ python_centroid), abs=1e-6)
    assert out["class_scores"][0, 1].item() == pytest.approx(float(q @ s[1]), abs=1e-6)
    assert "support_indices" not in out
    assert out["labels"][0] == out["classes"][int(out["class_scores"][0].argmax())]


def test_classify_says_none_of_them_below_the_threshold(tiny_lstm, word_tokenizer):
    tiny_lstm.config.threshold = 0.5
    out = tiny_lstm.classify(
        ["how do i learn python ?", "what is the capital of france ?"],
        SUPPORT_TEXTS,
        SUPPORT_LABELS,
        word_tokenizer,
        unknown_label="none",
    )
    assert out["labels"][0] == "python"  # identical to a support text: score 1
    expected = "none" if out["scores"][1] < 0.5 else SUPPORT_LABELS[int(out["support_indices"][1])]
    assert out["labels"][1] == expected
    everything_rejected = tiny_lstm.classify(
        ["how do i learn python ?"], SUPPORT_TEXTS, SUPPORT_LABELS, word_tokenizer, threshold=1.01
    )
    assert everything_rejected["labels"] == [None]


def test_classify_with_a_head_scores_by_its_probability(word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, classifier_head=True
    )
    model = SiameseModel(config)
    queries = ["why is the sky blue ?", "how do i cook rice ?"]
    out = model.classify(queries, SUPPORT_TEXTS, SUPPORT_LABELS, word_tokenizer, threshold=0.0)
    for i, query in enumerate(queries):
        probabilities = model.score_pairs([query] * len(SUPPORT_TEXTS), SUPPORT_TEXTS, word_tokenizer)
        assert out["scores"][i].item() == pytest.approx(probabilities.max().item(), abs=1e-6)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(support_labels=["a"]), "same length"),
        (dict(support_texts=[], support_labels=[]), "support set is empty"),
        (dict(strategy="vote"), "strategy must be"),
        (dict(threshold=None), "no threshold"),
    ],
)
def test_classify_rejects_bad_input(tiny_lstm, word_tokenizer, kwargs, error):
    arguments = dict(
        texts=["why is the sky blue ?"],
        support_texts=SUPPORT_TEXTS[:2],
        support_labels=SUPPORT_LABELS[:2],
        threshold=0.0,
    )
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=error):
        tiny_lstm.classify(tokenizer=word_tokenizer, **arguments)
