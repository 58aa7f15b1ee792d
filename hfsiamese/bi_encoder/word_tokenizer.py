"""Word vocabularies for the LSTM encoder, trained with the `tokenizers` library.

A transformer encoder brings its own tokenizer; an LSTM learns its vocabulary from the training
texts. We train it with `tokenizers` (fast, serialisable) and wrap it as a
`PreTrainedTokenizerFast`, so it saves beside the model and `AutoTokenizer.from_pretrained` loads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
TOKENIZER_MODELS = ("wordlevel", "wordpiece")


def train_word_tokenizer(
    texts: Iterable[str] | Iterable[list[str]],
    *,
    vocab_size: int = 20000,
    min_frequency: int = 1,
    model: str = "wordlevel",
    lowercase: bool = True,
    model_max_length: int = 64,
) -> PreTrainedTokenizerFast:
    """
    Train a word-level (or WordPiece) vocabulary on `texts` (strings or batches of strings).

    `[PAD]` gets id 0 (the LSTM's `padding_idx`) and `[UNK]` id 1. Normalisation (NFKC, optional
    lowercasing) is part of the saved tokenizer, so inference applies exactly what training did.
    Padding is on the right, as packed LSTM sequences require. `model_max_length` is saved with
    the tokenizer: without it transformers assumes 1e30, and `encode` would pad a batch to its
    longest text, however long.
    """
    if model not in TOKENIZER_MODELS:
        raise ValueError(f"tokenizer model must be one of {TOKENIZER_MODELS}, got {model!r}")
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be at least 3 (pad, unk and one word), got {vocab_size}")
    if isinstance(model_max_length, bool) or not isinstance(model_max_length, int) or model_max_length < 1:
        raise ValueError(f"model_max_length must be a positive number of tokens, got {model_max_length!r}")
    special_tokens = [PAD_TOKEN, UNK_TOKEN]
    if model == "wordlevel":
        tokenizer = Tokenizer(models.WordLevel(unk_token=UNK_TOKEN))
        trainer = trainers.WordLevelTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens, show_progress=False
        )
    else:
        tokenizer = Tokenizer(models.WordPiece(unk_token=UNK_TOKEN))
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens, show_progress=False
        )
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(_as_batches(texts), trainer=trainer)
    if tokenizer.get_vocab_size() <= len(special_tokens):
        raise ValueError("no words left to build a vocabulary from: are the training texts empty?")
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD_TOKEN,
        unk_token=UNK_TOKEN,
        padding_side="right",
        model_max_length=model_max_length,
        model_input_names=["input_ids", "attention_mask"],
    )


def _as_batches(texts: Iterable[str] | Iterable[list[str]]) -> Iterator[list[str]]:
    for item in texts:
        yield [item] if isinstance(item, str) else list(item)


__all__ = ["train_word_tokenizer", "PAD_TOKEN", "UNK_TOKEN"]
