"""
hfsiamese models under MTEB (`hfsiamese.integrations.mteb`): `mteb.evaluate` runs the adapters on small tasks built
in memory (no Hub), and the scores say whether the embeddings and pair scores reached MTEB in the right order: a
model whose duplicates embed alike scores AP 1.0, the same pairs with their labels reversed far lower.
"""

from __future__ import annotations

import sys

import mteb
import pytest
import torch
from mteb.models.models_protocols import CrossEncoderProtocol, EncoderProtocol, SearchProtocol

from hfsiamese import SiameseConfig, SiameseModel, load_model
from hfsiamese.integrations import MtebBiEncoder, MtebCrossEncoder, pair_classification_task, retrieval_task, to_mteb
from hfsiamese.integrations.mteb import require_mteb
from tests.conftest import QQP_FILE, TEXTS

# Duplicates here are the same question twice: any encoder embeds them alike (cosine 1.0), and distinct questions
# not quite alike, so AP is 1.0 exactly when every pair's two embeddings reached MTEB side by side.
DUPLICATE_PAIRS = [(text, text) for text in TEXTS[:4]]
DISTINCT_PAIRS = [(TEXTS[4], TEXTS[5]), (TEXTS[6], TEXTS[7]), (TEXTS[0], TEXTS[2]), (TEXTS[1], TEXTS[3])]


def evaluate(model, task) -> dict:
    """The scores of `task`'s one split, evaluated with no result cache (nothing written under ~/.cache)."""
    result = mteb.evaluate(model, task, cache=None, show_progress_bar=False)
    (task_result,) = result.task_results
    (scores,) = task_result.scores["test"]
    return scores


def pairs_task(labels_of_duplicates: int = 1):
    pairs = DUPLICATE_PAIRS + DISTINCT_PAIRS
    labels = [labels_of_duplicates] * len(DUPLICATE_PAIRS) + [1 - labels_of_duplicates] * len(DISTINCT_PAIRS)
    return pair_classification_task([a for a, _ in pairs], [b for _, b in pairs], labels)


@pytest.fixture
def bi_encoder(tiny_lstm, word_tokenizer):
    return MtebBiEncoder(tiny_lstm, tokenizer=word_tokenizer)


@pytest.fixture(scope="module")
def spread_cross_encoder():
    """
    A random tiny cross-encoder whose scores differ from pair to pair (the shared one, initialised as BERT is, scores
    every pair within 1e-4 of 0.5): the one-logit BERT of `tiny_cross_encoder_dir`, with weights 25 times as wide.
    """
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from hfsiamese.cross_encoder.model import CrossEncoder
    from hfsiamese.utils.minilm import resolve_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, num_labels=1, initializer_range=0.5, architectures=["BertForSequenceClassification"],
    )  # fmt: skip
    return CrossEncoder(BertForSequenceClassification(config), tokenizer, pair_order="both")


def test_the_adapters_are_what_mteb_takes_them_for(bi_encoder, tiny_cross_encoder):
    # A bi-encoder is an encoder only: were it a cross-encoder too, pair-classification tasks would refuse it.
    assert isinstance(bi_encoder, EncoderProtocol)
    assert not isinstance(bi_encoder, CrossEncoderProtocol | SearchProtocol)
    cross = MtebCrossEncoder(tiny_cross_encoder)
    assert isinstance(cross, CrossEncoderProtocol)
    assert not isinstance(cross, EncoderProtocol | SearchProtocol)


def test_pair_classification_scores_duplicates_that_embed_alike_perfectly(bi_encoder):
    scores = evaluate(bi_encoder, pairs_task())
    assert scores["cosine_ap"] == pytest.approx(1.0)
    assert scores["similarity_ap"] == pytest.approx(1.0)  # the adapter's own similarity_pairwise
    assert scores["main_score"] == scores["max_ap"] == pytest.approx(1.0)

    reversed_labels = evaluate(bi_encoder, pairs_task(labels_of_duplicates=0))
    assert reversed_labels["cosine_ap"] < 0.8


def test_mteb_s_average_precision_is_hfsiamese_evaluate_s(word_tokenizer):
    """The same pairs, the same model: MTEB's cosine AP is the AP `hfsiamese evaluate` reports (one protocol)."""
    from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
    from hfsiamese.data import load_pairs
    from hfsiamese.evaluation import evaluate_pairs

    pairs = load_pairs(str(QQP_FILE)).select(range(120))
    tokenizer = train_word_tokenizer(
        list(pairs["question1"]) + list(pairs["question2"]), vocab_size=300, model_max_length=128
    )
    torch.manual_seed(0)
    model = SiameseModel(SiameseConfig(encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=16, hidden_size=8))
    # Pairs whose two questions tokenise alike score 1.0 give or take float rounding, which MTEB (float64 cosine) and
    # hfsiamese (float32) round apart, and AP counts tied scores differently from nearly tied ones: left out.
    untied = model.score_pairs(list(pairs["question1"]), list(pairs["question2"]), tokenizer) < 0.999
    pairs = pairs.select(untied.nonzero().flatten().tolist())
    task = pair_classification_task(pairs["question1"], pairs["question2"], pairs["label"])
    scores = evaluate(MtebBiEncoder(model, tokenizer=tokenizer), task)
    expected = evaluate_pairs(model, pairs, tokenizer, threshold=0.5)["average_precision"]
    assert 0.3 < expected < 0.95  # a random model: neither perfect nor degenerate, so agreeing means something
    assert scores["cosine_ap"] == pytest.approx(expected, abs=1e-6)


def test_retrieval_finds_each_query_s_own_text(bi_encoder):
    corpus = {f"d{i}": text for i, text in enumerate(TEXTS)}
    queries = {"q0": TEXTS[0], "q2": TEXTS[2], "q4": TEXTS[4]}
    own = evaluate(bi_encoder, retrieval_task(queries, corpus, {"q0": {"d0": 1}, "q2": {"d2": 1}, "q4": {"d4": 1}}))
    assert own["ndcg_at_10"] == pytest.approx(1.0)
    assert own["mrr_at_10"] == pytest.approx(1.0)
    # The same queries judged against someone else's text: the identical text outranks the relevant one.
    other = evaluate(bi_encoder, retrieval_task(queries, corpus, {"q0": {"d7": 1}, "q2": {"d5": 1}, "q4": {"d1": 1}}))
    assert other["mrr_at_10"] <= 0.5


def test_reranking_with_the_cross_encoder_follows_its_scores(spread_cross_encoder):
    """The candidate the model scores highest, marked relevant: MAP 1.0; the lowest: below it."""
    queries = {"q0": TEXTS[0], "q1": TEXTS[2]}
    corpus = {f"d{i}": text for i, text in enumerate(TEXTS[3:])}
    candidates = {query: list(corpus) for query in queries}
    best, worst = {}, {}
    for query_id, query in queries.items():
        scores = spread_cross_encoder.score_pairs([query] * len(corpus), list(corpus.values()))
        best[query_id] = {f"d{int(scores.argmax())}": 1}
        worst[query_id] = {f"d{int(scores.argmin())}": 1}

    cross = to_mteb(spread_cross_encoder)
    assert isinstance(cross, MtebCrossEncoder)
    top = evaluate(cross, retrieval_task(queries, corpus, best, candidates=candidates))
    assert top["map_at_1000"] == pytest.approx(1.0)
    bottom = evaluate(cross, retrieval_task(queries, corpus, worst, candidates=candidates))
    assert bottom["map_at_1000"] < 0.5


def test_the_model_s_own_batch_size_and_prompts_reach_encode(word_tokenizer, monkeypatch):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6,
        prompts={"query": "q ", "document": "d "},
    )  # fmt: skip
    model = SiameseModel(config)
    calls = []
    encode = model.encode

    def spy(texts, tokenizer=None, **options):
        calls.append((options["batch_size"], options["prompt_name"], len(texts)))
        return encode(texts, tokenizer, **options)

    monkeypatch.setattr(model, "encode", spy)
    task = retrieval_task({"q0": TEXTS[0]}, {"d0": TEXTS[0], "d1": TEXTS[1]}, {"q0": {"d0": 1}})
    evaluate(MtebBiEncoder(model, tokenizer=word_tokenizer, batch_size=3), task)
    assert sorted(calls, key=str) == sorted([(3, "query", 1), (3, "document", 2)], key=str)

    calls.clear()
    evaluate(MtebBiEncoder(model, tokenizer=word_tokenizer), pairs_task())  # no prompt type: the model's default
    assert calls == [(32, None, 8), (32, None, 8)]  # mteb.evaluate's batch size when none is set


def test_metadata_comes_from_the_checkpoint(tiny_lstm, word_tokenizer, tmp_path):
    saved_lstm = tmp_path / "tiny_lstm"
    tiny_lstm.save_pretrained(saved_lstm)
    word_tokenizer.save_pretrained(saved_lstm)
    adapter = to_mteb(str(saved_lstm))
    assert isinstance(adapter, MtebBiEncoder)
    meta = adapter.mteb_model_meta
    model = adapter.model
    assert meta.name == str(saved_lstm)
    assert meta.embed_dim == model.config.sentence_embedding_dim
    assert meta.max_tokens == model.default_max_length(word_tokenizer) == 16
    assert meta.n_parameters == sum(p.numel() for p in model.parameters())
    assert meta.framework == ["PyTorch", "Transformers"]
    assert meta.similarity_fn_name.value == "cosine"
    assert not meta.is_cross_encoder

    # The revision: the same weights give the same one, changed weights another, a given one wins.
    assert MtebBiEncoder(str(saved_lstm)).mteb_model_meta.revision == meta.revision
    retrained = load_model(saved_lstm)
    with torch.no_grad():
        next(retrained.parameters()).add_(0.01)
    assert MtebBiEncoder(retrained).mteb_model_meta.revision != meta.revision
    named = MtebBiEncoder(str(saved_lstm), revision="v1", name="me/lstm", truncate_dim=4).mteb_model_meta
    assert (named.revision, named.name, named.embed_dim) == ("v1", "me/lstm", 4)


def test_an_onnx_export_scores_as_its_pytorch_model(tiny_lstm, word_tokenizer, tmp_path):
    from hfsiamese.bi_encoder.onnx_export import export_onnx

    source, exported = tmp_path / "trained", tmp_path / "onnx"
    tiny_lstm.save_pretrained(source)
    word_tokenizer.save_pretrained(source)
    export_onnx(tiny_lstm.eval(), word_tokenizer, exported, source_dir=source)
    onnx_adapter = to_mteb(str(exported))
    meta = onnx_adapter.mteb_model_meta
    assert meta.framework == ["ONNX"] and meta.n_parameters is None  # its weights are in the graph
    assert meta.embed_dim == tiny_lstm.config.sentence_embedding_dim
    assert meta.revision == MtebBiEncoder(str(exported)).mteb_model_meta.revision  # the graph's bytes, read again

    task = pairs_task(labels_of_duplicates=0)  # duplicates labelled 0: an AP between 0 and 1, to compare
    onnx_scores = evaluate(onnx_adapter, task)
    torch_scores = evaluate(MtebBiEncoder(tiny_lstm, tokenizer=word_tokenizer), task)
    assert onnx_scores["cosine_ap"] == pytest.approx(torch_scores["cosine_ap"], abs=1e-6)


def test_cross_encoder_metadata(tiny_cross_encoder_dir, tiny_cross_encoder):
    meta = to_mteb(str(tiny_cross_encoder_dir)).mteb_model_meta
    assert meta.is_cross_encoder
    assert meta.name == str(tiny_cross_encoder_dir)
    assert meta.embed_dim is None and meta.similarity_fn_name is None
    assert meta.max_tokens == tiny_cross_encoder.default_max_length()
    assert meta.revision == MtebCrossEncoder(tiny_cross_encoder).mteb_model_meta.revision


def test_each_adapter_refuses_the_other_family(tiny_lstm, word_tokenizer, tiny_cross_encoder):
    with pytest.raises(TypeError, match="MtebCrossEncoder"):
        MtebBiEncoder(tiny_cross_encoder)
    with pytest.raises(TypeError, match="MtebBiEncoder"):
        MtebCrossEncoder(tiny_lstm)
    with pytest.raises(TypeError, match="neither"):
        to_mteb(object())
    with pytest.raises(ValueError, match="pass tokenizer"):
        MtebBiEncoder(tiny_lstm)  # built in memory, saved nowhere: no tokenizer to find
    with pytest.raises(ValueError, match="batch_size"):
        MtebBiEncoder(tiny_lstm, tokenizer=word_tokenizer, batch_size=0)
    with pytest.raises(ValueError, match="truncate_dim"):
        MtebBiEncoder(tiny_lstm, tokenizer=word_tokenizer, truncate_dim=7)  # wider than its 6 dimensions


def test_quantised_precision_is_refused(bi_encoder):
    with pytest.raises(ValueError, match="float32"):
        mteb.evaluate(
            bi_encoder, pairs_task(), cache=None, show_progress_bar=False, encode_kwargs={"precision": "int8"}
        )


def test_without_mteb_one_line_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mteb", None)  # `import mteb` raises ImportError
    with pytest.raises(ImportError, match=r"mteb package: .*\[mteb\]") as error:
        require_mteb()
    assert "\n" not in str(error.value)


def test_building_adapters_and_tasks_leaves_the_caller_s_seeds(tiny_lstm, word_tokenizer):
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    MtebBiEncoder(tiny_lstm, tokenizer=word_tokenizer)
    pairs_task()
    assert torch.equal(torch.rand(3), expected)
