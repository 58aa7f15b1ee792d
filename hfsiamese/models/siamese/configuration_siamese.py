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
# A transformer's token states are pooled by one of these, or by several joined with "+" (e.g. "cls+mean": the
# vectors concatenated, in the order given), as sentence-transformers' `Pooling` module does.
TRANSFORMER_POOLINGS = ("mean", "cls", "max", "mean_sqrt_len", "weighted_mean", "last_token")
# The activations a Dense layer may name (torch.nn classes without arguments): a config is data, never code to import.
DENSE_ACTIVATIONS = ("Identity", "Tanh", "ReLU", "GELU", "Sigmoid", "SiLU", "Softplus", "ELU", "LeakyReLU")


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
            vocabulary entry, SIF-like); transformer: `"mean"`, `"cls"` (the first real token), `"max"`,
            `"mean_sqrt_len"` (the sum over the square root of the length), `"weighted_mean"` (weights
            1, 2, 3, ... by position: later tokens count more, for decoders) or `"last_token"` (the last real
            token, whichever side is padded: decoder embedders), or several joined with `"+"` (concatenated).
            Padding never takes part. These are sentence-transformers' `Pooling` modes, computed the same way.
        projection_dim (`int`, *optional*):
            If set, a linear layer maps the pooled vector (after `dense_layers`) to this size before normalisation.
        dense_layers (`list[dict]`, *optional*):
            Feed-forward layers applied to the pooled vector, in order, as sentence-transformers' `Dense`
            modules: each `{"in_features": int, "out_features": int, "bias": bool, "activation": str}` with
            `activation` one of `DENSE_ACTIVATIONS`. Taken from a sentence-transformers folder with its weights.
        max_seq_length (`int`, *optional*):
            Tokens kept per text by default (`encode`, the pipeline, the exports); unset: the tokenizer's
            `model_max_length`, at most 512 and the encoder's positions.
        prompts (`dict[str, str]`, *optional*):
            Named texts put before every input text (e.g. `{"query": "query: "}`), as sentence-transformers' prompts.
        default_prompt_name (`str`, *optional*):
            The prompt applied when none is named: in training, `encode`, `predict`, `DuplicateIndex`, the
            pipeline, ONNX serving and the sentence-transformers export alike. Unset: no prompt.
        similarity_fn_name (`str`, *optional*, defaults to `"cosine"`):
            The similarity the source model was made for (sentence-transformers' `similarity_fn_name`); pairs are
            scored by cosine similarity whatever it says (recorded so that the card and the export can say so).
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
        dense_layers: list[dict[str, Any]] | None = None,
        max_seq_length: int | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        similarity_fn_name: str = "cosine",
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
        check_pooling(encoder_type, pooling)
        if dense_layers and encoder_type != "transformer":
            raise ValueError(f"dense_layers apply to transformer encoders, not encoder_type={encoder_type!r}")
        dense_layers = check_dense_layers(dense_layers)
        if max_seq_length is not None and (
            isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int) or max_seq_length < 1
        ):
            raise ValueError(f"max_seq_length must be a positive number of tokens, got {max_seq_length!r}")
        prompts = dict(prompts or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
            raise ValueError(f"prompts must map names to texts, got {prompts!r}")
        if default_prompt_name is not None and default_prompt_name not in prompts:
            raise ValueError(f"default_prompt_name {default_prompt_name!r} is not one of the prompts {sorted(prompts)}")
        if encoder_type == "transformer" and encoder_config is None:
            # A transformer Siamese model without its encoder's config could not be rebuilt.
            raise ValueError(
                "encoder_type='transformer' needs encoder_config (the base model's config.to_dict()); "
                "use SiameseModel.from_encoder_pretrained(name_or_path) to build one from a checkpoint"
            )
        check_threshold(threshold)
        check_layer_sizes(encoder_type, embedding_dim=embedding_dim, hidden_size=hidden_size, num_layers=num_layers)
        if projection_dim is not None:
            check_layer_sizes(encoder_type, projection_dim=projection_dim)
        self.encoder_type = encoder_type
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        self.dropout = dropout
        self.pooling = pooling
        self.projection_dim = projection_dim
        self.dense_layers = dense_layers
        self.max_seq_length = max_seq_length
        self.prompts = prompts
        self.default_prompt_name = default_prompt_name
        self.similarity_fn_name = similarity_fn_name
        self.encoder_config = encoder_config
        self.classifier_head = classifier_head
        self.classifier_hidden_size = classifier_hidden_size
        self.threshold = threshold
        self.calibration = check_calibration(calibration)
        self.initializer_range = initializer_range
        # Checkpoints saved before sub-batching became a runtime choice (SiameseModel.set_sub_batching) carry
        # `sub_batch_size`: drop it, so that a CPU-tuned value never slows the GPU user who loads them.
        kwargs.pop("sub_batch_size", None)
        super().__init__(pad_token_id=pad_token_id, **kwargs)  # type: ignore[call-arg]  # taken by its **kwargs

    @classmethod
    def get_config_dict(
        cls, pretrained_model_name_or_path: str | os.PathLike, **kwargs: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
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
        if self.dense_layers:
            return self.dense_layers[-1]["out_features"]
        return self.pooled_dim

    @property
    def pooled_dim(self) -> int:
        """Size of the pooled vector, before any Dense layer or projection."""
        if self.encoder_type == "lstm":
            return self.hidden_size * (2 if self.bidirectional else 1)
        if self.encoder_type == "static":
            return self.embedding_dim
        return encoder_width(self.encoder_config) * len(self.pooling.split("+"))

    def prompt_text(self, prompt_name: str | None = None, prompt: str | None = None) -> str:
        """
        The text put before each input: `prompt` itself, else the prompt named `prompt_name`, else the default
        prompt (`default_prompt_name`), else none. An unknown name is an error naming the prompts there are.
        """
        if prompt is not None:
            if prompt_name is not None:
                raise ValueError("give prompt or prompt_name, not both")
            return prompt
        prompts = self.prompts or {}
        if prompt_name is None:
            return prompts.get(self.default_prompt_name, "") if self.default_prompt_name else ""
        if prompt_name not in prompts:
            raise ValueError(f"prompt_name {prompt_name!r} is not one of this model's prompts {sorted(prompts)}")
        return prompts[prompt_name]


# Hidden-size names of transformer configs, as `to_dict()` writes them (T5: d_model, DistilBERT: dim, GPT-2: n_embd).
_WIDTH_KEYS = ("hidden_size", "d_model", "dim", "n_embd")


def encoder_width(encoder_config: dict[str, Any]) -> int:
    """Width of a transformer encoder's token states, from its config dict."""
    for key in _WIDTH_KEYS:
        if isinstance(encoder_config.get(key), int):
            return encoder_config[key]
    raise ValueError(
        f"the encoder config (model_type {encoder_config.get('model_type')!r}) names none of {_WIDTH_KEYS}"
    )


# The sizes each encoder type builds its layers from (a transformer's come from its encoder_config).
_SIZED = {"lstm": ("embedding_dim", "hidden_size", "num_layers"), "static": ("embedding_dim",)}


def check_layer_sizes(encoder_type: str, **sizes: Any) -> None:
    """Refuse a size of the model below 1 by its own name (torch would name its layer's argument, e.g. input_size)."""
    for name, value in sizes.items():
        if name != "projection_dim" and name not in _SIZED.get(encoder_type, ()):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_pooling(encoder_type: str, pooling: str) -> None:
    """Refuse a pooling the encoder type has not (transformers may join several with "+")."""
    poolings = {"lstm": LSTM_POOLINGS, "static": STATIC_POOLINGS}.get(encoder_type, TRANSFORMER_POOLINGS)
    modes = pooling.split("+") if encoder_type == "transformer" and isinstance(pooling, str) else [pooling]
    if any(mode not in poolings for mode in modes) or len(set(modes)) != len(modes):
        raise ValueError(
            f"pooling {pooling!r} is not available for encoder_type={encoder_type!r}; choose from {poolings}"
        )


def check_dense_layers(layers: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The layers as plain dicts with every key, each one's input the previous one's output; else a ValueError naming the layer."""
    if not layers:
        return None
    checked = []
    for index, layer in enumerate(layers):
        try:
            entry = {
                "in_features": int(layer["in_features"]),
                "out_features": int(layer["out_features"]),
                "bias": bool(layer.get("bias", True)),
                "activation": str(layer.get("activation", "Identity")),
            }
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(
                f"dense_layers[{index}] needs integer in_features and out_features, got {layer!r}"
            ) from err
        if entry["activation"] not in DENSE_ACTIVATIONS:
            raise ValueError(
                f"dense_layers[{index}]: activation {entry['activation']!r} is not one of {DENSE_ACTIVATIONS}"
            )
        if checked and checked[-1]["out_features"] != entry["in_features"]:
            raise ValueError(
                f"dense_layers[{index}] takes {entry['in_features']} features but the layer before gives {checked[-1]['out_features']}"
            )
        checked.append(entry)
    return checked


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
