"""Building a run's model and tokenizer from ModelArguments: LSTM, transformer, saved checkpoint, head default."""

import datasets
import pytest
import torch

from hfsiamese import SiameseModel
from hfsiamese.bi_encoder.model_building import (
    build_model_and_tokenizer,
    check_same_vocabulary,
    on_main_process_then_shared,
)
from hfsiamese.losses import get_loss
from hfsiamese.training.arguments import ModelArguments
from tests.conftest import TEXTS

TINY_LSTM = dict(embedding_dim=8, hidden_size=6, vocab_size=100, max_length=16)


@pytest.fixture(scope="module")
def train_pairs():
    return datasets.Dataset.from_dict({"question1": TEXTS[0::2], "question2": TEXTS[1::2], "label": [1] * 4})


def test_lstm_learns_its_vocabulary_from_the_training_texts(train_pairs):
    model, tokenizer = build_model_and_tokenizer(ModelArguments(**TINY_LSTM), train_pairs)
    assert isinstance(model, SiameseModel) and model.config.encoder_type == "lstm"
    assert model.config.vocab_size == len(tokenizer) and "python" in tokenizer.get_vocab()
    assert tokenizer.model_max_length == 16 and model.config.pad_token_id == tokenizer.pad_token_id
    assert not model.config.classifier_head


def test_classifier_head_follows_the_loss_unless_set(train_pairs):
    logits_loss = get_loss("verification_identification")
    assert logits_loss.uses_logits and not get_loss("contrastive").uses_logits
    with_head, _ = build_model_and_tokenizer(ModelArguments(**TINY_LSTM), train_pairs, loss=logits_loss)
    without, _ = build_model_and_tokenizer(ModelArguments(**TINY_LSTM), train_pairs, loss=get_loss("contrastive"))
    forced_off, _ = build_model_and_tokenizer(
        ModelArguments(**TINY_LSTM, classifier_head=False), train_pairs, loss=logits_loss
    )
    assert (with_head.config.classifier_head, without.config.classifier_head, forced_off.config.classifier_head) == (
        True, False, False,
    )  # fmt: skip


def test_transformer_and_saved_checkpoint(train_pairs, tiny_bert_dir, tmp_path):
    args = ModelArguments(encoder_type="transformer", model_name_or_path=str(tiny_bert_dir), max_length=12)
    model, tokenizer = build_model_and_tokenizer(args, train_pairs)
    assert model.config.encoder_type == "transformer" and model.config.encoder_config["model_type"] == "bert"
    assert tokenizer.model_max_length == 12
    model.save_pretrained(tmp_path / "saved")
    tokenizer.save_pretrained(tmp_path / "saved")

    resumed, _ = build_model_and_tokenizer(
        ModelArguments(model_name_or_path=str(tmp_path / "saved"), sub_batch_tokens="512", sub_batch_size=16),
        train_pairs,
    )
    assert resumed.config.encoder_type == "transformer" and (resumed.sub_batch_tokens, resumed.sub_batch_size) == (
        512,
        16,
    )
    assert all(torch.equal(a, b) for a, b in zip(resumed.state_dict().values(), model.state_dict().values()))
    with pytest.raises(ValueError, match="encoder_dropout applies when starting from a base encoder"):
        build_model_and_tokenizer(
            ModelArguments(model_name_or_path=str(tmp_path / "saved"), encoder_dropout=0.0), train_pairs
        )


@pytest.mark.parametrize(
    "values,message",
    [
        ({"encoder_type": "gru"}, "encoder_type must be one of .*'static'"),
        ({"embedding_init": "w2v"}, "embedding_init must be"),
    ],
)
def test_unknown_choices_are_refused(train_pairs, values, message):
    with pytest.raises(ValueError, match=message):
        build_model_and_tokenizer(ModelArguments(**{**TINY_LSTM, **values}), train_pairs)


def test_resuming_with_another_vocabulary_is_refused(train_pairs, tmp_path):
    _, tokenizer = build_model_and_tokenizer(ModelArguments(**TINY_LSTM), train_pairs)
    tokenizer.save_pretrained(tmp_path / "same")
    check_same_vocabulary(tokenizer, str(tmp_path / "same"))
    _, smaller = build_model_and_tokenizer(ModelArguments(**{**TINY_LSTM, "vocab_size": 10}), train_pairs)
    smaller.save_pretrained(tmp_path / "other")
    with pytest.raises(ValueError, match="the vocabulary built now differs"):
        check_same_vocabulary(tokenizer, str(tmp_path / "other"))


def test_one_process_builds_the_tokenizer_itself(word_tokenizer):
    assert on_main_process_then_shared(lambda: word_tokenizer) is word_tokenizer


def test_sub_batching_flags_are_checked():
    from hfsiamese.bi_encoder.model_building import sub_batching_of

    assert sub_batching_of(ModelArguments()) == ("auto", None)
    assert sub_batching_of(ModelArguments(sub_batch_tokens="0")) == (0, None)
    with pytest.raises(ValueError, match="sub_batch_tokens must be 'auto' or a non-negative integer, got 'lots'"):
        sub_batching_of(ModelArguments(sub_batch_tokens="lots"))
