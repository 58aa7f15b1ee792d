"""The `question-duplicates` pipeline, with hfsiamese imported and from a checkpoint where it is not."""

import json

import pytest
import torch
from transformers import pipeline

from hfsiamese import QuestionDuplicatesPipeline, SiameseConfig, SiameseModel
from hfsiamese.models.siamese.pipeline_question_duplicates import PIPELINE_TASK
from tests.fixtures import PAIRS, expected_scores
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese

PIPELINE_CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
from transformers import pipeline

results = {}
for folder in sys.argv[2:]:
    pipe = pipeline("question-duplicates", model=folder, trust_remote_code=True)
    out = pipe([tuple(pair) for pair in json.loads(sys.argv[1])], batch_size=2)
    results[folder] = {"out": out, "pipeline": type(pipe).__module__, "model": type(pipe.model).__module__}
print(json.dumps(results))
"""
)


def save_checkpoint(model, tokenizer, folder, threshold=0.3):
    model.config.threshold = threshold
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_saved_checkpoint_declares_the_pipeline(tiny_lstm, word_tokenizer, tmp_path):
    folder = save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "ckpt")
    config = json.loads((folder / "config.json").read_text())
    assert config["custom_pipelines"] == {
        PIPELINE_TASK: {
            "impl": "pipeline_question_duplicates.QuestionDuplicatesPipeline",
            "pt": ["AutoModel"],
            "type": "text",
        }
    }
    assert (folder / "pipeline_question_duplicates.py").is_file()


def test_scores_and_decisions_match_the_model(tiny_lstm, word_tokenizer, tmp_path):
    folder = save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "ckpt", threshold=0.0)
    pipe = pipeline(PIPELINE_TASK, model=str(folder), trust_remote_code=True)
    expected = expected_scores(tiny_lstm, word_tokenizer)

    single = pipe(PAIRS[0])
    assert set(single) == {"score", "is_duplicate"} and isinstance(single["score"], float)
    assert single["score"] == pytest.approx(expected[0], abs=1e-6)

    mixed = [PAIRS[0], {"text": PAIRS[1][0], "text_pair": PAIRS[1][1]}, list(PAIRS[2]), PAIRS[3]]
    for batch_size in (1, 2):  # batches of 2 pad the two sides of pairs of different lengths
        out = pipe(mixed, batch_size=batch_size)
        assert [o["score"] for o in out] == pytest.approx(expected, abs=1e-6)
        assert [o["is_duplicate"] for o in out] == [s >= 0.0 for s in expected]

    strict = pipe(PAIRS, threshold=max(expected) + 1e-3)
    assert not any(o["is_duplicate"] for o in strict)
    assert [o["score"] for o in pipe(iter_pairs())] == pytest.approx(expected, abs=1e-6)


def iter_pairs():
    yield from PAIRS


def test_registered_pipeline_takes_a_model_object(tiny_lstm, word_tokenizer):
    tiny_lstm.config.threshold = 0.1
    pipe = pipeline(PIPELINE_TASK, model=tiny_lstm, tokenizer=word_tokenizer)
    assert type(pipe) is QuestionDuplicatesPipeline
    assert pipe(PAIRS[1])["score"] == pytest.approx(expected_scores(tiny_lstm, word_tokenizer)[1], abs=1e-6)


def test_classification_head_scores_are_probabilities(word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, classifier_head=True, threshold=0.5
    )
    model = SiameseModel(config).eval()
    out = pipeline(PIPELINE_TASK, model=model, tokenizer=word_tokenizer)(PAIRS)
    a, b = zip(*PAIRS)
    probabilities = model.predict(list(a), list(b), word_tokenizer)["probabilities"][:, 1].tolist()
    assert [o["score"] for o in out] == pytest.approx(probabilities, abs=1e-6)


@pytest.mark.parametrize(
    "bad, match",
    [
        ("how do i learn python ?", "pair of texts"),
        (["how do i learn python ?", "why is the sky blue ?"], "pair of texts"),
        ([("a", "b", "c")], "pair of texts"),
        ({"text": "a", "pair": "b"}, "'text' and 'text_pair'"),
        (("a", 3), "must be strings"),
    ],
)
def test_bad_inputs_are_named(tiny_lstm, word_tokenizer, bad, match):
    tiny_lstm.config.threshold = 0.1
    pipe = pipeline(PIPELINE_TASK, model=tiny_lstm, tokenizer=word_tokenizer)
    with pytest.raises(ValueError, match=match):
        pipe(bad)


def test_missing_threshold_and_unknown_parameters(tiny_lstm, word_tokenizer):
    assert tiny_lstm.config.threshold is None
    pipe = pipeline(PIPELINE_TASK, model=tiny_lstm, tokenizer=word_tokenizer)
    with pytest.raises(ValueError, match="no threshold"):
        pipe(PAIRS[0])
    assert pipe(PAIRS[0], threshold=-1.0)["is_duplicate"] is True
    with pytest.raises(TypeError, match="top_k"):
        pipe(PAIRS[0], threshold=0.5, top_k=2)
    with pytest.raises(ValueError, match=r"threshold is a cosine similarity and must lie in \[-1, 1\], got 5"):
        pipe(PAIRS[0], threshold=5)  # it called every pair a non-duplicate


@pytest.mark.slow
def test_pipeline_loads_without_hfsiamese(tiny_lstm, tiny_bert_dir, word_tokenizer, tmp_path):
    transformer = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), pooling="cls", projection_dim=8)
    folders = {
        "lstm": save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "lstm"),
        "transformer": save_checkpoint(transformer, word_tokenizer, tmp_path / "transformer"),
    }
    child = run_without_hfsiamese(PIPELINE_CHILD, [json.dumps(PAIRS), *folders.values()], tmp_path)
    for name, model in (("lstm", tiny_lstm), ("transformer", transformer)):
        result = child[str(folders[name])]
        assert result["pipeline"].startswith("transformers_modules") and result["model"].startswith(
            "transformers_modules"
        )
        expected = expected_scores(model, word_tokenizer)
        assert [o["score"] for o in result["out"]] == pytest.approx(expected, abs=1e-5)
        assert [o["is_duplicate"] for o in result["out"]] == [s >= 0.3 for s in expected]


def test_a_calibrated_pipeline_gives_probabilities_and_takes_a_probability_threshold(
    tiny_lstm, word_tokenizer, tmp_path
):
    tiny_lstm.config.calibration = {"method": "platt", "coef": 6.0, "intercept": -1.0}
    folder = save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "ckpt", threshold=0.99)
    pipe = pipeline(PIPELINE_TASK, model=str(folder), trust_remote_code=True)
    expected = tiny_lstm.predict([a for a, _ in PAIRS], [b for _, b in PAIRS], word_tokenizer)
    out = pipe(PAIRS)
    assert [o["probability"] for o in out] == pytest.approx(expected["probability"].tolist(), abs=1e-6)
    p = _between(expected["probability"].tolist())
    decided = pipe(PAIRS, probability_threshold=p)
    assert [o["is_duplicate"] for o in decided] == (expected["probability"] >= p).tolist()
    assert [o["is_duplicate"] for o in out] == [o["score"] >= 0.99 for o in out]  # the stored threshold otherwise
    with pytest.raises(ValueError, match="not both"):
        pipe(PAIRS[0], threshold=0.1, probability_threshold=0.5)


def _between(probabilities):
    """A probability threshold halfway between two middle distinct values: no pair sits on the cut."""
    values = sorted(set(probabilities))
    middle = len(values) // 2
    return (values[middle - 1] + values[middle]) / 2


def test_prompt_and_truncate_dim_score_as_encode_does(tiny_bert_dir, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(
        str(tiny_bert_dir), prompts={"q": "why "}, default_prompt_name="q"
    ).eval()
    model.config.threshold = 0.1
    pipe = pipeline(PIPELINE_TASK, model=model, tokenizer=word_tokenizer)
    a, b = PAIRS[0]
    full = model.encode([a, b], word_tokenizer)  # prompted by default, like the pipeline
    assert pipe((a, b))["score"] == pytest.approx(float(full[0] @ full[1]), abs=1e-6)
    short = model.encode([a, b], word_tokenizer, truncate_dim=5)
    assert pipe((a, b), truncate_dim=5)["score"] == pytest.approx(float(short[0] @ short[1]), abs=1e-6)


class RecordingCrossEncoder:
    """A duck-typed cross-encoder whose scores the test sets (one per pair, by its texts), recording each call."""

    def __init__(self, scores, threshold=None, calibration=None):
        from types import SimpleNamespace

        self.scores, self.calls = scores, []
        self.config = SimpleNamespace(threshold=threshold, calibration=calibration)

    def score_pairs(self, texts_a, texts_b, **kwargs):
        self.calls.append((list(texts_a), list(texts_b), kwargs))
        return torch.tensor([self.scores[(a, b)] for a, b in zip(texts_a, texts_b)])


def test_a_cross_encoder_scores_and_decides_the_pairs(tiny_lstm, word_tokenizer):
    tiny_lstm.config.threshold = -1.0  # the Siamese model would call every pair a duplicate
    scores = dict(zip(PAIRS, [0.9, 0.2, 0.7, 0.4]))
    cross = RecordingCrossEncoder(scores, threshold=0.5)
    pipe = pipeline(PIPELINE_TASK, model=tiny_lstm, tokenizer=word_tokenizer)
    out = pipe(PAIRS, cross_encoder=cross, batch_size=2)
    assert [o["score"] for o in out] == pytest.approx([0.9, 0.2, 0.7, 0.4])
    assert [o["is_duplicate"] for o in out] == [True, False, True, False]
    assert [len(a) for a, _, _ in cross.calls] == [2, 2]  # one score_pairs call per batch, the texts as given
    assert {pair for a, b, _ in cross.calls for pair in zip(a, b)} == set(PAIRS)
    assert pipe(PAIRS[1], cross_encoder=cross, threshold=0.1)["is_duplicate"] is True  # a threshold in its unit
    assert pipe(PAIRS[0], cross_encoder=cross, max_length=12)["score"] == pytest.approx(0.9)
    assert cross.calls[-1][2] == {"max_length": 12}  # tokens of both texts together, the cross-encoder's
    assert pipe(PAIRS[1])["is_duplicate"] is True  # without it, the Siamese model again

    calibrated = RecordingCrossEncoder(scores, calibration={"method": "platt", "coef": 10.0, "intercept": -5.0})
    built = pipeline(PIPELINE_TASK, model=tiny_lstm, tokenizer=word_tokenizer, cross_encoder=calibrated)
    with pytest.raises(ValueError, match="no threshold"):  # the cross-encoder's threshold, not the model's -1.0
        built(PAIRS)
    out = built(PAIRS, probability_threshold=0.5)  # P >= 0.5 is score >= 0.5 for this map
    assert [o["probability"] for o in out] == pytest.approx(
        [float(torch.sigmoid(torch.tensor(10 * s - 5))) for s in scores.values()]
    )
    assert [o["is_duplicate"] for o in out] == [True, False, True, False]


def test_the_real_cross_encoder_in_the_pipeline(tiny_lstm, word_tokenizer, tiny_cross_encoder, tmp_path):
    with torch.no_grad():  # the random tiny model scores every pair about alike: spread its scores
        tiny_cross_encoder.model.classifier.weight.mul_(200.0)
    a, b = (list(side) for side in zip(*PAIRS))
    expected = tiny_cross_encoder.score_pairs(a, b)
    values = expected.sort().values
    cut = int((values[1:] - values[:-1]).argmax())  # the threshold in the widest gap: no pair sits near it
    tiny_cross_encoder.config.threshold = float(values[cut] + values[cut + 1]) / 2
    # From a saved checkpoint's own (travelling) pipeline file, as a user without hfsiamese would run it.
    folder = save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "ckpt")
    pipe = pipeline(PIPELINE_TASK, model=str(folder), trust_remote_code=True, cross_encoder=tiny_cross_encoder)
    assert type(pipe).__module__.startswith("transformers_modules")
    for batch_size in (1, 3):
        out = pipe(PAIRS, batch_size=batch_size)
        assert [o["score"] for o in out] == pytest.approx(expected.tolist(), abs=1e-5)
        assert [o["is_duplicate"] for o in out] == (expected >= tiny_cross_encoder.config.threshold).tolist()


def test_a_cross_encoder_option_is_checked(tiny_lstm, word_tokenizer):
    tiny_lstm.config.threshold = 0.1
    pipe = pipeline(PIPELINE_TASK, model=tiny_lstm, tokenizer=word_tokenizer)
    with pytest.raises(TypeError, match="score_pairs"):
        pipe(PAIRS[0], cross_encoder="not a model")
    cross = RecordingCrossEncoder(dict(zip(PAIRS, [0.9, 0.2, 0.7, 0.4])), threshold=0.5)
    with pytest.raises(ValueError, match="truncate_dim"):
        pipe(PAIRS[0], cross_encoder=cross, truncate_dim=4)
