"""Configuration of a Siamese (bi-encoder) model.

This file is copied next to the weights by ``save_pretrained`` (``register_for_auto_class``), with the
siblings it imports relatively, so it imports nothing else from ``hfsiamese``: a checkpoint has to load
where only ``transformers`` is installed.
"""

from __future__ import annotations

import os
from typing import Any

from transformers import PretrainedConfig
from transformers.utils import CONFIG_NAME

from .score_calibrator import check_calibration
from .scoring import check_threshold

ENCODER_TYPES = ("lstm", "static", "transformer")
# Encoders whose vocabulary is trained with them (`hfsiamese.training.word_tokenizer`): the tokenizer IS their embedding table.
WORD_VOCABULARY_ENCODERS = ("lstm", "static")
LSTM_POOLINGS = ("mean", "max", "last")
STATIC_POOLINGS = ("mean", "weighted_mean")
TRANSFORMER_POOLINGS = ("mean", "cls")


class SiameseConfig(PretrainedConfig):
    r"""
    Configuration of [`SiameseModel`]: one encoder shared by both texts of a pair, whose pooled,
    L2-normalised outputs are compared by cosine similarity.

    Args:
        encoder_type (`str`, *optional*, defaults to `"lstm"`):
            `"lstm"` (embedding → LSTM on packed sequences → pooling), `"static"` (a bag of learned
            token vectors, pooled: no recurrence, the cheapest encoder) or `"transformer"` (any
            `AutoModel` architecture described by `encoder_config`).
        vocab_size (`int`, *optional*, defaults to 20000):
            Size of the LSTM's (or static encoder's) word vocabulary (the trained tokenizer's size). Unused for
            transformers.
        embedding_dim (`int`, *optional*, defaults to 128):
            Width of the LSTM's (or static encoder's) word embeddings.
        hidden_size (`int`, *optional*, defaults to 128):
            Hidden units of each LSTM direction.
        num_layers (`int`, *optional*, defaults to 1):
            Stacked LSTM layers.
        bidirectional (`bool`, *optional*, defaults to `False`):
            Run the LSTM in both directions and concatenate them.
        dropout (`float`, *optional*, defaults to 0.0):
            Dropout on the embeddings (LSTM and static) and between LSTM layers.
        pooling (`str`, *optional*, defaults to `"mean"`):
            How token states become one vector. LSTM: `"mean"`, `"max"` or `"last"` (final hidden
            state of each direction); static: `"mean"` or `"weighted_mean"` (a learned positive weight per
            vocabulary entry, SIF-like); transformer: `"mean"` or `"cls"`. Padding never takes part.
        projection_dim (`int`, *optional*):
            If set, a linear layer maps the pooled vector to this size before normalisation.
        encoder_config (`dict`, *optional*):
            The full config (`to_dict()`) of the transformer encoder, so that a saved checkpoint
            rebuilds its encoder without the base model's folder.
        classifier_head (`bool`, *optional*, defaults to `False`):
            Add a classification head on the pair features `[u, v, |u − v|, u * v]` (the
            verification + identification setting); `forward` then also returns `logits` of
            (not duplicate, duplicate) and `predict` class probabilities.
        classifier_hidden_size (`int`, *optional*):
            Hidden layer of the classification head (none by default: a single linear layer).
        threshold (`float`, *optional*):
            Score at or above which a pair is called a duplicate, in the unit of the pair score (cosine
            similarity, or the classification head's P(duplicate): see `scoring`); calibrated on
            validation data by the trainer, or on a new domain's pairs by `model.calibrate`.
        calibration (`dict`, *optional*):
            What `model.calibrate` fitted, as plain numbers (see `calibration`): its method, the data it
            saw, and for `"platt"`/`"isotonic"` the map from score to P(duplicate) that predictions apply.
        initializer_range (`float`, *optional*, defaults to 0.02):
            Standard deviation of the normal initialisation of embeddings and linear layers.
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token of the LSTM's (or static encoder's) vocabulary (its embedding is kept at zero).
    """

    model_type = "siamese"

    def __init__(
        self,
        encoder_type: str = "lstm",
        vocab_size: int = 20000,
        embedding_dim: int = 128,
        hidden_size: int = 128,
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
        pooling: str = "mean",
        projection_dim: int | None = None,
        encoder_config: dict[str, Any] | None = None,
        classifier_head: bool = False,
        classifier_hidden_size: int | None = None,
        threshold: float | None = None,
        calibration: dict[str, Any] | None = None,
        initializer_range: float = 0.02,
        pad_token_id: int = 0,
        **kwargs: Any,
    ) -> None:
        if encoder_type not in ENCODER_TYPES:
            raise ValueError(f"encoder_type must be one of {ENCODER_TYPES}, got {encoder_type!r}")
        poolings = {"lstm": LSTM_POOLINGS, "static": STATIC_POOLINGS}.get(encoder_type, TRANSFORMER_POOLINGS)
        if pooling not in poolings:
            raise ValueError(f"pooling {pooling!r} is not available for encoder_type={encoder_type!r}; choose from {poolings}")
        if encoder_type == "transformer" and encoder_config is None:
            # A transformer Siamese model without its encoder's config could not be rebuilt.
            raise ValueError(
                "encoder_type='transformer' needs encoder_config (the base model's config.to_dict()); "
                "use SiameseModel.from_encoder_pretrained(name_or_path) to build one from a checkpoint"
            )
        check_threshold(threshold)
        self.encoder_type = encoder_type
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        self.dropout = dropout
        self.pooling = pooling
        self.projection_dim = projection_dim
        self.encoder_config = encoder_config
        self.classifier_head = classifier_head
        self.classifier_hidden_size = classifier_hidden_size
        self.threshold = threshold
        self.calibration = check_calibration(calibration)
        self.initializer_range = initializer_range
        # Checkpoints saved before sub-batching became a runtime choice (SiameseModel.set_sub_batching) carry
        # `sub_batch_size`: drop it, so that a CPU-tuned value never slows the GPU user who loads them.
        kwargs.pop("sub_batch_size", None)
        super().__init__(pad_token_id=pad_token_id, **kwargs)

    @classmethod
    def get_config_dict(cls, pretrained_model_name_or_path: str | os.PathLike, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """
        Read the config dict, refusing one that describes another model type.

        transformers only warns when, say, a BERT `config.json` is loaded into this class, and the
        model would then be built from our defaults with random weights; here it is an error
        naming the file and the type found.
        """
        config_dict, unused = super().get_config_dict(pretrained_model_name_or_path, **kwargs)
        found = config_dict.get("model_type")
        if found != cls.model_type:
            what = f"model_type {found!r}" if found else "no model_type"
            raise ValueError(
                f"{_config_file(pretrained_model_name_or_path, kwargs)} has {what}, not {cls.model_type!r}: it is not "
                "the config of a Siamese model. Load it with the class of its own type (e.g. AutoModel), or build "
                "a Siamese model around that encoder with SiameseModel.from_encoder_pretrained"
            )
        return config_dict, unused

    @property
    def sentence_embedding_dim(self) -> int:
        """Size of the vector each text is mapped to."""
        if self.projection_dim:
            return self.projection_dim
        if self.encoder_type == "lstm":
            return self.hidden_size * (2 if self.bidirectional else 1)
        if self.encoder_type == "static":
            return self.embedding_dim
        return self.encoder_config["hidden_size"]


def _config_file(name_or_path: str | os.PathLike, kwargs: dict[str, Any]) -> str:
    """The config file a name resolves to, for error messages: a local path where there is one."""
    name = str(name_or_path)
    if os.path.isfile(name):
        return name
    file_name = kwargs.get("_configuration_file") or CONFIG_NAME
    if os.path.isdir(name):
        return os.path.join(name, kwargs.get("subfolder") or "", file_name)
    return f"{file_name} of {name!r}"


__all__ = ["SiameseConfig"]
