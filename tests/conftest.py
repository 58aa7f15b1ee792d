"""Shared fixtures: tiny models and tokenizers, offline."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from hfsiamese import SiameseConfig, SiameseModel  # noqa: E402
from hfsiamese.training.word_tokenizer import train_word_tokenizer  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
QQP_FILE = REPO_ROOT / "recipes" / "data" / "qqp_dev.tsv"

TEXTS = [
    "how do i learn python ?",
    "what is the best way to learn python ?",
    "how can i lose weight fast ?",
    "what is the fastest way to lose weight ?",
    "why is the sky blue ?",
    "what makes the sky look blue ?",
    "how do i cook rice ?",
    "what is the capital of france ?",
]


@pytest.fixture(scope="session")
def word_tokenizer():
    return train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)


@pytest.fixture
def tiny_lstm(word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0
    )
    return SiameseModel(config)


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, word_tokenizer):
    """A randomly initialised 2-layer BERT saved as a local "pretrained" checkpoint, with a tokenizer."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(word_tokenizer),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    path = tmp_path_factory.mktemp("tiny_bert")
    BertModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path
