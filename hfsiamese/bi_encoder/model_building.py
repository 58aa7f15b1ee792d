"""Building the model and tokenizer a training run starts from, as `ModelArguments` describe them.

Three starts: a fresh LSTM (or static encoder) whose word vocabulary is trained on the run's training
texts (once, on the main process, then shared), a pretrained transformer encoder (all-MiniLM-L6-v2 by default), or
a saved Siamese checkpoint to continue training.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
import numpy as np
import torch
from accelerate import PartialState
from accelerate.utils import broadcast
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedTokenizerBase

from hfsiamese.bi_encoder.decoder_tokens import ensure_eos_appended, ensure_pad_token
from hfsiamese.bi_encoder.lora import add_lora, refuse_lora
from hfsiamese.bi_encoder.pretrained_vectors import init_embeddings_from_glove
from hfsiamese.bi_encoder.sentence_transformers_folder import (
    SentenceTransformersSettings,
    read_sentence_transformers_folder,
)
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.models.siamese.configuration_siamese import ENCODER_TYPES, WORD_VOCABULARY_ENCODERS, SiameseConfig
from hfsiamese.models.siamese.modeling_siamese import SiameseModel
from hfsiamese.models.siamese.sub_batching import AUTO, TokenBudget, check_sub_batching
from hfsiamese.preparation.derived_cache import cached_word_tokenizer
from hfsiamese.utils.hub_access import require_local_or_cached
from hfsiamese.utils.minilm import resolve_minilm_path

if TYPE_CHECKING:
    from hfsiamese.base.model_arguments import ModelArguments
    from hfsiamese.losses.base import SiameseLoss

logger = logging.getLogger(__name__)

__all__ = [
    "build_model_and_tokenizer",
    "builds_word_vocabulary",
    "check_same_vocabulary",
    "is_base_encoder",
    "on_main_process_then_shared",
    "sentence_transformers_model",
    "word_vocabulary",
]

# What an LSTM (or static encoder) uses when the arguments leave them unset.
WORD_ENCODER_DEFAULTS = {"pooling": "mean", "max_length": 64}


def build_model_and_tokenizer(
    model_args: ModelArguments, train_pairs: datasets.Dataset, *, loss: SiameseLoss | None = None
) -> tuple[SiameseModel, PreTrainedTokenizerBase]:
    """
    A fresh Siamese model (LSTM or static encoder with a vocabulary trained on `train_pairs`, or a pretrained
    transformer encoder), or a saved Siamese checkpoint to continue from.

    A fresh model gets a pair classification head when `model_args.classifier_head` says so, or,
    left unset, when the `loss` trains on logits.
    """
    path = model_args.model_name_or_path
    if path is not None:
        require_local_or_cached(path)  # offline, a Hub id that is not cached fails here, saying so
    sub_batching = sub_batching_of(model_args)
    if path is not None and getattr(AutoConfig.from_pretrained(path), "model_type", None) == SiameseConfig.model_type:
        if model_args.encoder_dropout is not None:
            raise ValueError(
                "encoder_dropout applies when starting from a base encoder, not from a saved Siamese checkpoint"
            )
        refuse_lora(model_args, "a saved Siamese checkpoint")
        model = AutoModel.from_pretrained(path)
        if model_args.attn_implementation and model.config.encoder_type == "transformer":
            model.encoder.set_attn_implementation(model_args.attn_implementation)
        model.set_sub_batching(*sub_batching)
        return model, AutoTokenizer.from_pretrained(path)
    classifier_head = model_args.classifier_head
    if classifier_head is None:
        classifier_head = loss is not None and loss.uses_logits
    if model_args.encoder_type == "transformer":
        return _transformer(model_args, classifier_head, sub_batching)
    if model_args.encoder_type not in WORD_VOCABULARY_ENCODERS:
        raise ValueError(f"encoder_type must be one of {ENCODER_TYPES}, got {model_args.encoder_type!r}")
    if path is not None:
        raise ValueError(
            f"model_name_or_path {path} is a pretrained {AutoConfig.from_pretrained(path).model_type!r} model, but "
            f"encoder_type is {model_args.encoder_type!r}, whose vocabulary is trained from the data: pass "
            "--encoder_type transformer (or leave the config out: a pretrained model then gets the pretrained_qqp config)"
        )
    refuse_lora(model_args, f"encoder_type {model_args.encoder_type!r} (its vocabulary is trained from the data)")
    return _word_vocabulary_model(model_args, train_pairs, classifier_head)


def is_base_encoder(name_or_path: str) -> bool:
    """Is `name_or_path` a pretrained transformer to start from (not a saved Siamese checkpoint to continue)?"""
    require_local_or_cached(name_or_path)
    return getattr(AutoConfig.from_pretrained(name_or_path), "model_type", None) != SiameseConfig.model_type


def sentence_transformers_model(
    name_or_path: str, **model_arguments: Any
) -> tuple[SiameseModel, PreTrainedTokenizerBase]:
    """
    A sentence-transformers model (a folder or Hub id with a `modules.json`) as its authors configured it, the
    way `hfsiamese train` starts from one (`SiameseModel.from_sentence_transformers` is this, for users):
    one reader, so that a model loaded to embed and a model trained from the same folder cannot differ.
    `model_arguments` are `ModelArguments` fields (`pooling`, `max_length`, `prompt_name`, ...); given, each
    overrides the folder's own, logged as in training. A folder without `modules.json` is refused in one line:
    it names no pooling, and guessing one is what made `from_encoder_pretrained` differ silently.
    """
    from hfsiamese.base.model_arguments import ModelArguments  # the arguments import the model modules

    require_local_or_cached(name_or_path)
    model_args = ModelArguments(model_name_or_path=str(name_or_path), encoder_type="transformer", **model_arguments)
    return _transformer(model_args, bool(model_args.classifier_head), sub_batching_of(model_args), require_folder=True)


def sub_batching_of(model_args: ModelArguments) -> tuple[TokenBudget, int | None]:
    """`(max_tokens, max_texts)` for `SiameseModel.set_sub_batching` from the recipe's flags ("auto" or a count)."""
    tokens = model_args.sub_batch_tokens
    if isinstance(tokens, str) and tokens != AUTO:
        if not tokens.strip().isdigit():
            raise ValueError(f"sub_batch_tokens must be 'auto' or a non-negative integer, got {tokens!r}")
        tokens = int(tokens)
    check_sub_batching(tokens, model_args.sub_batch_size)
    return tokens, model_args.sub_batch_size


def _transformer(
    model_args: ModelArguments,
    classifier_head: bool,
    sub_batching: tuple[TokenBudget, int | None],
    *,
    require_folder: bool = False,
) -> tuple[SiameseModel, PreTrainedTokenizerBase]:
    """
    A pretrained encoder (the bundled MiniLM by default) under a fresh Siamese head, as its authors configured
    it where it is a sentence-transformers model (pooling, Dense layers, prompts, max_seq_length): flags given
    explicitly override that, and the log says so. `require_folder`: refuse a plain `AutoModel` checkpoint.
    """
    base = model_args.model_name_or_path or resolve_minilm_path()
    source = read_sentence_transformers_folder(base)
    if source is None and require_folder:
        raise ValueError(
            f"{base} has no modules.json, so it is not a sentence-transformers model: load it with "
            "SiameseModel.from_encoder_pretrained(path, pooling=...) and choose its pooling"
        )
    encoder_path = base
    if source is not None:
        logger.info("%s is a sentence-transformers model: %s", base, source.describe())
        if source.transformer_subfolder:
            encoder_path = str(Path(base) / source.transformer_subfolder) if Path(base).is_dir() else base
    tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    pooling = _chosen("pooling", model_args.pooling, source.pooling if source else None, base, default="mean")
    prompts = dict(source.prompts) if source else {}
    default_prompt_name = source.default_prompt_name if source else None
    if model_args.prompt is not None:
        prompts["prompt"] = model_args.prompt
        default_prompt_name = _chosen("default prompt", "prompt", default_prompt_name, base, default=None)
    elif model_args.prompt_name is not None:
        default_prompt_name = _chosen("default prompt", model_args.prompt_name, default_prompt_name, base, default=None)
    encoder_kwargs = {"attn_implementation": model_args.attn_implementation} if model_args.attn_implementation else {}
    if source is not None and source.transformer_subfolder and encoder_path == base:
        encoder_kwargs["subfolder"] = source.transformer_subfolder
    if source is not None:
        _warn_other_similarity(source)
    model = SiameseModel.from_encoder_pretrained(
        encoder_path,
        pooling=pooling,
        projection_dim=model_args.projection_dim,
        encoder_dropout=model_args.encoder_dropout,
        classifier_head=classifier_head,
        dense_layers=source.dense_layers if source else None,
        dense_weights=source.dense_weights if source else None,
        prompts=prompts,
        default_prompt_name=default_prompt_name,
        similarity_fn_name=(source.similarity_fn_name or "cosine") if source else "cosine",
        sub_batch_tokens=sub_batching[0],
        sub_batch_size=sub_batching[1],
        encoder_kwargs=encoder_kwargs,
        _sentence_transformers_settings_read=True,
    )
    # A decoder pooled by its last token must end every text with EOS, which many decoder tokenizers do not add.
    if str(pooling).split("+")[-1] == "last_token" and source is None and ensure_eos_appended(tokenizer):
        logger.info(
            "last_token pooling: %s's tokenizer now appends its EOS token %r to every text", base, tokenizer.eos_token
        )
    if ensure_pad_token(tokenizer):
        logger.info(
            "%s's tokenizer has no padding token: it pads with %r (never attended to)", base, tokenizer.pad_token
        )
    own_length = (
        min(source.max_seq_length, model.default_max_length(tokenizer)) if source and source.max_seq_length else None
    )
    max_length = _chosen(
        "max_length", model_args.max_length, own_length, base, default=model.default_max_length(tokenizer)
    )
    tokenizer.model_max_length = max_length
    model.config.max_seq_length = max_length
    return add_lora(model, model_args), tokenizer


def _chosen(name: str, given: object, own: object, base: str, *, default: object) -> object:
    """
    The value a setting takes: the one given (saying in the log when it overrides the model's own, with a
    warning where the two contradict, e.g. another pooling), else the model's own, else `default`.
    """
    if given is None:
        return own if own is not None else default
    if own is not None and given != own:
        message = "%s %r (given) overrides %s's own %r"
        if name == "pooling":
            logger.warning(
                message + ": the model was trained with the other, so its embeddings change meaning",
                name,
                given,
                base,
                own,
            )
        else:
            logger.info(message, name, given, base, own)
    return given


def _warn_other_similarity(source: SentenceTransformersSettings) -> None:
    """hfsiamese scores by cosine: equal to the source's own scores unless it compares unnormalised vectors otherwise."""
    name = source.similarity_fn_name or "cosine"
    if name != "cosine" and not (name == "dot" and source.normalize):
        logger.warning(
            "%s compares embeddings by %s similarity%s; hfsiamese scores pairs by cosine similarity, so its scores "
            "(and a threshold calibrated on them) differ from sentence-transformers' on this model",
            source.source,
            name,
            "" if source.normalize else " of unnormalised vectors",
        )


def vocabulary_sample(train_pairs: datasets.Dataset, limit: int) -> datasets.Dataset:
    """The training pairs a word vocabulary is trained on: all of them up to `limit` (0: no limit), else a sample of
    `limit` drawn with a fixed seed, in the rows' order (so that reading it stays sequential)."""
    if limit < 0:
        raise ValueError(f"vocabulary_sample_pairs must be 0 (all pairs) or more, got {limit}")
    if not limit or len(train_pairs) <= limit:
        return train_pairs
    rows = np.sort(np.random.default_rng(0).choice(len(train_pairs), size=limit, replace=False))
    return train_pairs.select(rows)


def builds_word_vocabulary(model_args: ModelArguments) -> bool:
    """Does a run with `model_args` start a fresh encoder whose word vocabulary is trained on its data (LSTM, static)?"""
    return model_args.model_name_or_path is None and model_args.encoder_type in WORD_VOCABULARY_ENCODERS


def word_vocabulary(model_args: ModelArguments, train_pairs: datasets.Dataset) -> PreTrainedTokenizerBase:
    """
    The word tokenizer a fresh LSTM or static encoder trains with: its vocabulary trained on (a sample of)
    `train_pairs`' texts with `model_args`' tokenizer options, kept in the prepared folder the pairs come from (read
    from there when a run, or `hfsiamese prepare`, saved it: `hfsiamese.preparation.derived_cache`).
    """
    sample = vocabulary_sample(train_pairs, model_args.vocabulary_sample_pairs)
    options = dict(
        vocab_size=model_args.vocab_size,
        min_frequency=model_args.min_frequency,
        model=model_args.tokenizer_model,
        lowercase=model_args.lowercase,
        model_max_length=model_args.max_length or WORD_ENCODER_DEFAULTS["max_length"],
    )

    def train() -> PreTrainedTokenizerBase:
        if sample is not train_pairs:
            logger.info(
                "word vocabulary: trained on a sample of %d of %d training pairs (--vocabulary_sample_pairs)",
                len(sample),
                len(train_pairs),
            )
        texts = (batch["question1"] + batch["question2"] for batch in sample.iter(batch_size=1000))
        return train_word_tokenizer(texts, **options)

    return cached_word_tokenizer(
        train_pairs,
        # (a sample's size joins the key; without one the key is the earlier releases', so their folders serve)
        options if sample is train_pairs else {**options, "sample_pairs": len(sample)},
        train,
    )


def _word_vocabulary_model(
    model_args: ModelArguments, train_pairs: datasets.Dataset, classifier_head: bool
) -> tuple[SiameseModel, PreTrainedTokenizerBase]:
    """An LSTM or static encoder whose vocabulary is trained on the training texts, its embeddings random or from GloVe."""
    tokenizer = on_main_process_then_shared(lambda: word_vocabulary(model_args, train_pairs))
    config = SiameseConfig(
        encoder_type=model_args.encoder_type,
        vocab_size=len(tokenizer),
        embedding_dim=model_args.embedding_dim,
        hidden_size=model_args.hidden_size,
        num_layers=model_args.num_layers,
        bidirectional=model_args.bidirectional,
        dropout=model_args.dropout,
        pooling=model_args.pooling or WORD_ENCODER_DEFAULTS["pooling"],
        projection_dim=model_args.projection_dim,
        classifier_head=classifier_head,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = SiameseModel(config)
    if model_args.embedding_init == "glove":
        coverage = init_embeddings_from_glove(
            model.get_input_embeddings(), tokenizer.get_vocab(), padding_idx=tokenizer.pad_token_id
        )
        logger.info("GloVe covers %.1f%% of the %d-token vocabulary", 100 * coverage, len(tokenizer))
    elif model_args.embedding_init != "random":
        raise ValueError(f"embedding_init must be 'random' or 'glove', got {model_args.embedding_init!r}")
    return model, tokenizer


def on_main_process_then_shared(build: Callable[[], PreTrainedTokenizerBase]) -> PreTrainedTokenizerBase:
    """
    Build a tokenizer (train the LSTM vocabulary) on the main process only and send it to the
    others, so that it is built once and every process holds the very same one. It travels as the
    JSON files `save_pretrained` writes: accelerate's `broadcast_object_list` would pickle it, and
    nothing here loads pickles.
    """
    state = PartialState()
    if state.is_main_process:
        logger.info("building the tokenizer on process %d of %d", state.process_index, state.num_processes)
    if state.num_processes == 1:
        return build()
    payload = b""
    if state.is_main_process:
        with tempfile.TemporaryDirectory() as folder:
            build().save_pretrained(folder)
            payload = json.dumps({p.name: p.read_text(encoding="utf-8") for p in Path(folder).iterdir()}).encode()
    size = broadcast(torch.tensor([len(payload)], dtype=torch.int64, device=state.device))
    buffer = torch.zeros(int(size.item()), dtype=torch.uint8, device=state.device)
    if state.is_main_process:
        buffer.copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
    files = json.loads(bytes(broadcast(buffer).cpu().numpy()).decode())
    with tempfile.TemporaryDirectory() as folder:  # every process, the main one too, loads the same files
        for name, text in files.items():
            (Path(folder) / name).write_text(text, encoding="utf-8")
        return AutoTokenizer.from_pretrained(folder)


def check_same_vocabulary(tokenizer: PreTrainedTokenizerBase, checkpoint: str) -> None:
    """Resuming rebuilds the run's vocabulary from its data: it must be the one the checkpoint was trained with."""
    if tokenizer.get_vocab() != AutoTokenizer.from_pretrained(checkpoint).get_vocab():
        raise ValueError(
            f"the vocabulary built now differs from the one saved in {checkpoint}: the data or the tokenizer "
            "options differ from the run being resumed; resume with that run's config and flags"
        )
