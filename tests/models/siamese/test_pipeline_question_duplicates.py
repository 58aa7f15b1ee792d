"""The `question-duplicates` pipeline, with hfsiamese imported and from a checkpoint where it is not."""

import json

import pytest
import torch
from transformers import pipeline

from hfsiamese import QuestionDuplicatesPipeline, SiameseConfig, SiameseModel
from hfsiamese.models.siamese.pipeline_question_duplicates import PIPELINE_TASK
from tests.fixtures import PAIRS, expected_scores
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese

PIPELINE_CHILD = BLOCK_HFSIAMESE + r"""
import json
from transformers import pipeline

results = {}
for folder in sys.argv[2:]:
    pipe = pipeline("question-duplicates", model=folder, trust_remote_code=True)
    out = pipe([tuple(pair) for pair in json.loads(sys.argv[1])], batch_size=2)
    results[folder] = {"out": out, "pipeline": type(pipe).__module__, "model": type(pipe.model).__module__}
print(json.dumps(results))
"""


def save_checkpoint(model, tokenizer, folder, threshold=0.3):
    model.config.threshold = threshold
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_saved_checkpoint_declares_the_pipeline(tiny_lstm, word_tokenizer, tmp_path):
    folder = save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "ckpt")
    config = json.loads((folder / "config.json").read_text())
    assert config["custom_pipelines"] == {
        PIPELINE_TASK: {"impl": "pipeline_question_duplicates.QuestionDuplicatesPipeline", "pt": ["AutoModel"], "type": "text"}
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
    config = SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, classifier_head=True, threshold=0.5)
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


def test_pipeline_loads_without_hfsiamese(tiny_lstm, tiny_bert_dir, word_tokenizer, tmp_path):
    transformer = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), pooling="cls", projection_dim=8)
    folders = {
        "lstm": save_checkpoint(tiny_lstm, word_tokenizer, tmp_path / "lstm"),
        "transformer": save_checkpoint(transformer, word_tokenizer, tmp_path / "transformer"),
    }
    child = run_without_hfsiamese(PIPELINE_CHILD, [json.dumps(PAIRS), *folders.values()], tmp_path)
    for name, model in (("lstm", tiny_lstm), ("transformer", transformer)):
        result = child[str(folders[name])]
        assert result["pipeline"].startswith("transformers_modules") and result["model"].startswith("transformers_modules")
        expected = expected_scores(model, word_tokenizer)
        assert [o["score"] for o in result["out"]] == pytest.approx(expected, abs=1e-5)
        assert [o["is_duplicate"] for o in result["out"]] == [s >= 0.3 for s in expected]


def test_a_calibrated_pipeline_gives_probabilities_and_takes_a_probability_threshold(tiny_lstm, word_tokenizer, tmp_path):
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
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), prompts={"q": "why "}, default_prompt_name="q").eval()
    model.config.threshold = 0.1
    pipe = pipeline(PIPELINE_TASK, model=model, tokenizer=word_tokenizer)
    a, b = PAIRS[0]
    full = model.encode([a, b], word_tokenizer)  # prompted by default, like the pipeline
    assert pipe((a, b))["score"] == pytest.approx(float(full[0] @ full[1]), abs=1e-6)
    short = model.encode([a, b], word_tokenizer, truncate_dim=5)
    assert pipe((a, b), truncate_dim=5)["score"] == pytest.approx(float(short[0] @ short[1]), abs=1e-6)
