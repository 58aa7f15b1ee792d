"""The inference API with a probability calibration: `probability` beside the scores, thresholds given as probabilities."""

import datasets
import pytest
import torch

from hfsiamese import SiameseModel
from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator
from tests.conftest import TEXTS
from tests.fixtures import PAIRS

PLATT = {"method": "platt", "coef": 6.0, "intercept": -1.0}


def _sides(pairs=PAIRS):
    return [a for a, _ in pairs], [b for _, b in pairs]


def test_predict_adds_the_calibrated_probability_and_decides_by_it(tiny_lstm, word_tokenizer):
    tiny_lstm.config.threshold = 0.0
    plain = tiny_lstm.predict(*_sides(), word_tokenizer)
    assert "probability" not in plain
    with pytest.raises(ValueError, match="probability_threshold needs a model calibrated to probabilities"):
        tiny_lstm.predict(*_sides(), word_tokenizer, probability_threshold=0.5)

    tiny_lstm.config.calibration = PLATT
    out = tiny_lstm.predict(*_sides(), word_tokenizer)
    expected = torch.sigmoid(6.0 * out["scores"].double() - 1.0).float()
    assert torch.allclose(out["probability"], expected, atol=1e-6)
    assert torch.equal(out["is_duplicate"], out["scores"] >= 0.0)  # the stored score threshold by default
    p = _between(out["probability"].tolist())  # a probability threshold that splits the pairs
    decided = tiny_lstm.predict(*_sides(), word_tokenizer, probability_threshold=p)
    assert decided["is_duplicate"].tolist() == (out["probability"] >= p).tolist()
    assert 0 < decided["is_duplicate"].sum() < len(PAIRS)
    assert torch.allclose(tiny_lstm.duplicate_probabilities(*_sides(), word_tokenizer), out["probability"])
    with pytest.raises(ValueError, match="not both"):
        tiny_lstm.predict(*_sides(), word_tokenizer, threshold=0.1, probability_threshold=0.5)


def test_classify_gives_each_texts_probability_and_takes_a_probability_threshold(tiny_lstm, word_tokenizer):
    tiny_lstm.config.calibration = {"method": "isotonic", "scores": [-0.5, 0.5, 0.9], "probabilities": [0.0, 0.4, 1.0]}
    support, labels = TEXTS[:4], ["a", "a", "b", "b"]
    out = tiny_lstm.classify(TEXTS[4:], support, labels, word_tokenizer, threshold=-1.0)
    calibrator = ScoreCalibrator.from_config(tiny_lstm.config)
    assert torch.allclose(out["probability"], calibrator.probability(out["scores"]))
    p = _between(out["probability"].tolist())
    decided = tiny_lstm.classify(TEXTS[4:], support, labels, word_tokenizer, probability_threshold=p)
    known = [label is not None for label in decided["labels"]]
    assert known == (out["probability"] >= p).tolist()


def _between(probabilities):
    """A probability threshold halfway between two middle distinct values: no pair sits on the cut."""
    values = sorted(set(probabilities))
    middle = len(values) // 2
    return (values[middle - 1] + values[middle]) / 2


def test_the_default_prompt_goes_before_every_text_as_in_training(tiny_bert_dir, word_tokenizer):
    from hfsiamese.data import tokenize_pairs

    model = SiameseModel.from_encoder_pretrained(
        str(tiny_bert_dir), prompts={"query": "why ", "other": "how "}, default_prompt_name="query"
    ).eval()
    texts = ["is the sky blue ?", "do i cook rice ?"]
    prompted = model.encode(texts, word_tokenizer)
    assert torch.allclose(prompted, model.encode(["why " + t for t in texts], word_tokenizer, prompt=""))
    assert torch.allclose(
        model.encode(texts, word_tokenizer, prompt_name="other"),
        model.encode(["how " + t for t in texts], word_tokenizer, prompt=""),
    )
    assert not torch.allclose(prompted, model.encode(texts, word_tokenizer, prompt=""))
    pairs = datasets.Dataset.from_dict({"question1": texts, "question2": texts[::-1], "label": [1, 0]})
    tokenized = tokenize_pairs(pairs, word_tokenizer, prompt=model.config.prompt_text())
    assert tokenized["input_ids_a"] == word_tokenizer(["why " + t for t in texts])["input_ids"]


def test_truncate_dim_keeps_the_first_dimensions_renormalised(tiny_bert_dir, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir)).eval()
    full = model.encode(["why is the sky blue ?", "how do i cook rice ?"], word_tokenizer)
    short = model.encode(["why is the sky blue ?", "how do i cook rice ?"], word_tokenizer, truncate_dim=8)
    assert short.shape == (2, 8) and torch.allclose(short, torch.nn.functional.normalize(full[:, :8], dim=-1))
    with pytest.raises(ValueError, match="truncate_dim must be an integer from 1 to the embedding size 16, got 17"):
        model.encode(["a"], word_tokenizer, truncate_dim=17)


def test_truncated_scores_are_refused_where_a_classification_head_scores(tiny_bert_dir, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), classifier_head=True).eval()
    with pytest.raises(ValueError, match="truncate_dim: this model scores pairs with its classification head"):
        model.score_pairs(["why is the sky blue ?"], ["how do i cook rice ?"], word_tokenizer, truncate_dim=8)
