"""Tests of the benchmark scripts, each run as a user runs it on a tiny model."""

from __future__ import annotations

from pathlib import Path

import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer


def save_tiny_lstm(questions: list[str], folder: Path) -> Path:
    """A seeded random LSTM bi-encoder with a vocabulary of the questions' own words (distinct questions, distinct
    embeddings: no ties for a top-k to order), saved with its tokenizer to `folder`."""
    tokenizer = train_word_tokenizer(questions, vocab_size=5000, model_max_length=64)
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=16, hidden_size=16, pad_token_id=0
    )
    SiameseModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
