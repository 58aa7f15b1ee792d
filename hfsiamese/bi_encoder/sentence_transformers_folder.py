"""Reading a sentence-transformers model's own configuration, so that training starts from the model its authors made.

A sentence-transformers folder (or Hub repository) is a `modules.json` listing its modules in order: a
`Transformer` (the `AutoModel` and its `sentence_bert_config.json`: `max_seq_length`, `do_lower_case`), a
`Pooling` (its mode and whether prompt tokens are pooled), optional `Dense` layers (weights beside their
config) and a `Normalize`; `config_sentence_transformers.json` holds the prompts, the default prompt and
the similarity function. sentence-transformers itself is not needed to read them (it is an optional extra):
the files are plain JSON and safetensors, read here by hand for that reason.

This is the library's reader, used when a model is built (`hfsiamese.bi_encoder.model_building`, the
distillation teacher); it does not travel with checkpoints: what it reads is stored in `SiameseConfig`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.utils import cached_file

from hfsiamese.models.siamese.configuration_siamese import DENSE_ACTIVATIONS

MODULES_FILE = "modules.json"
MODEL_CONFIG_FILE = "config_sentence_transformers.json"
TRANSFORMER_CONFIG_FILE = "sentence_bert_config.json"

# sentence-transformers' pooling mode names (and the flags of its older configs) → SiameseConfig.pooling's.
POOLING_MODES = {
    "cls": "cls",
    "max": "max",
    "mean": "mean",
    "mean_sqrt_len_tokens": "mean_sqrt_len",
    "weightedmean": "weighted_mean",
    "lasttoken": "last_token",
}
_LEGACY_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
MODULE_KINDS = ("Transformer", "Pooling", "Dense", "Normalize")


@dataclass
class SentenceTransformersSettings:
    """What a sentence-transformers folder says about its model, in `SiameseConfig`'s terms."""

    source: str
    transformer_subfolder: str = ""
    pooling: str | None = None
    include_prompt: bool = True
    dense_layers: list[dict[str, Any]] = field(default_factory=list)
    dense_weights: list[dict[str, torch.Tensor]] = field(default_factory=list)
    normalize: bool = False
    max_seq_length: int | None = None
    do_lower_case: bool = False
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str | None = None

    def describe(self) -> str:
        """One line for the training log: what was taken from the folder."""
        parts = [f"pooling {self.pooling}"]
        if self.dense_layers:
            parts.append(" → ".join(_dense_text(d) for d in self.dense_layers))
        parts.append("Normalize" if self.normalize else "no Normalize")
        if self.max_seq_length:
            parts.append(f"max_seq_length {self.max_seq_length}")
        if self.prompts:
            parts.append(f"prompts {sorted(self.prompts)} (default {self.default_prompt_name!r})")
        if self.similarity_fn_name:
            parts.append(f"similarity {self.similarity_fn_name}")
        return ", ".join(parts)


def _dense_text(layer: dict[str, Any]) -> str:
    return f"Dense {layer['in_features']}→{layer['out_features']} ({layer['activation']})"


def unfaithful_loading_warning(
    source: str | os.PathLike,
    *,
    pooling: str,
    dense_layers: list[dict[str, Any]] | None,
    default_prompt_name: str | None,
) -> str | None:
    """
    The warning `SiameseModel.from_encoder_pretrained` gives when `source` is a sentence-transformers model
    whose own pooling, Dense layers or default prompt differ from the ones given (None where none differ, or
    `source` has no `modules.json`): its embeddings would differ from `SentenceTransformer(source)`'s, silently.
    Normalize is not compared: hfsiamese's embeddings are always unit vectors, so cosine scores agree.
    """
    try:
        settings = read_sentence_transformers_folder(source)
    except ValueError as err:
        return (
            f"{source} is a sentence-transformers model that hfsiamese cannot reproduce ({err}); "
            "from_encoder_pretrained wraps its Transformer alone, so its embeddings differ from SentenceTransformer's"
        )
    if settings is None:
        return None
    own = []
    if settings.pooling != pooling:
        own.append(f"pooling {settings.pooling!r}, not {pooling!r}")
    if settings.dense_layers != list(dense_layers or []):
        own.append(" → ".join(_dense_text(d) for d in settings.dense_layers) or "no Dense layer")
    if settings.default_prompt_name != default_prompt_name and settings.default_prompt_name is not None:
        own.append(f"default prompt {settings.default_prompt_name!r}")
    if not own:
        return None
    return (
        f"{source} is a sentence-transformers model ({'; '.join(own)}) that from_encoder_pretrained does not take, "
        f"so its embeddings differ from SentenceTransformer's: load it with SiameseModel.from_sentence_transformers"
    )


def _file(source: str, name: str, **hub: Any) -> str | None:
    """Path of `name` in the folder or Hub repository `source` (downloaded or cached), or None where it has none."""
    return cached_file(
        source, name, _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False, **hub
    )


def _json(source: str, name: str, **hub: Any) -> dict[str, Any] | list[Any] | None:
    path = _file(source, name, **hub)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not readable JSON ({err})") from err


def read_sentence_transformers_folder(source: str | os.PathLike, **hub: Any) -> SentenceTransformersSettings | None:
    """
    The sentence-transformers configuration of `source` (a folder or Hub id), or None when it has no
    `modules.json` (a plain `AutoModel` checkpoint). A module hfsiamese cannot reproduce exactly (a
    `Router`, `StaticEmbedding`, `Dense` with a residual, a custom activation, pooling without the prompt's
    tokens while a prompt is set) is a ValueError naming it: training a different model than the one chosen
    would be silent otherwise.
    """
    source = str(source)
    modules = _json(source, MODULES_FILE, **hub)
    if modules is None:
        return None
    where = os.path.join(source, MODULES_FILE)
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m for m in modules):
        raise ValueError(f"{where}: expected a list of modules with a 'type' each")
    settings = SentenceTransformersSettings(source=source)
    kinds = [str(module["type"]).rsplit(".", 1)[-1] for module in modules]
    unknown = [module["type"] for module, kind in zip(modules, kinds, strict=True) if kind not in MODULE_KINDS]
    if unknown:
        raise ValueError(
            f"{where}: module {unknown[0]!r} has no hfsiamese counterpart (supported: {', '.join(MODULE_KINDS)})"
        )
    if not kinds or kinds[0] != "Transformer" or kinds.count("Transformer") != 1:
        raise ValueError(f"{where}: the first module, and only it, must be a Transformer (found {kinds})")
    order = [kind for kind in kinds if kind != "Dense"]
    if order not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ValueError(
            f"{where}: modules in the order {kinds}; hfsiamese reproduces Transformer → Pooling → Dense… → Normalize"
        )
    if kinds.index("Pooling") > min((i for i, k in enumerate(kinds) if k == "Dense"), default=len(kinds)):
        raise ValueError(f"{where}: a Dense module before the Pooling has no hfsiamese counterpart")
    for module, kind in zip(modules, kinds, strict=True):
        subfolder = str(module.get("path") or "")
        if kind == "Transformer":
            settings.transformer_subfolder = subfolder
            _read_transformer(settings, subfolder, hub)
        elif kind == "Pooling":
            settings.pooling, settings.include_prompt = _read_pooling(source, subfolder, hub)
        elif kind == "Dense":
            layer, weights = _read_dense(source, subfolder, hub)
            settings.dense_layers.append(layer)
            settings.dense_weights.append(weights)
        else:
            settings.normalize = True
    _read_model_config(settings, hub)
    if settings.prompts and not settings.include_prompt:
        raise ValueError(
            f"{where}: its Pooling leaves the prompt's tokens out (include_prompt: false, INSTRUCTOR-style), "
            "which hfsiamese does not reproduce yet; start from its Transformer folder with a pooling of your choice instead"
        )
    if settings.do_lower_case:
        raise ValueError(
            f"{os.path.join(source, settings.transformer_subfolder, TRANSFORMER_CONFIG_FILE)}: do_lower_case true "
            "(texts lowercased before the tokenizer) is not reproduced by hfsiamese; lowercase the data yourself and start "
            "from the Transformer folder"
        )
    return settings


def _read_transformer(settings: SentenceTransformersSettings, subfolder: str, hub: dict[str, Any]) -> None:
    config = _json(
        settings.source,
        os.path.join(subfolder, TRANSFORMER_CONFIG_FILE) if subfolder else TRANSFORMER_CONFIG_FILE,
        **hub,
    )
    config = config if isinstance(config, dict) else {}
    length = config.get("max_seq_length")
    if length is None:
        # sentence-transformers 6 saves it as the tokenizer's model_max_length instead (a huge number where unset).
        tokenizer_config = _json(settings.source, os.path.join(subfolder, "tokenizer_config.json"), **hub)
        length = tokenizer_config.get("model_max_length") if isinstance(tokenizer_config, dict) else None
        length = length if isinstance(length, int) and length < 1_000_000 else None
    settings.max_seq_length = int(length) if isinstance(length, int) and length > 0 else None
    settings.do_lower_case = bool(config.get("do_lower_case", False))


def _read_pooling(source: str, subfolder: str, hub: dict[str, Any]) -> tuple[str, bool]:
    name = os.path.join(subfolder, "config.json")
    config = _json(source, name, **hub)
    if not isinstance(config, dict):
        raise ValueError(f"{os.path.join(source, name)}: the Pooling module has no config")
    modes = config.get("pooling_mode")
    if modes is None:  # configs written before sentence-transformers 6: one flag per mode
        modes = [mode for flag, mode in _LEGACY_POOLING_FLAGS.items() if config.get(flag)] or ["mean"]
    modes = [modes] if isinstance(modes, str) else list(modes)
    unknown = [mode for mode in modes if mode not in POOLING_MODES]
    if unknown:
        raise ValueError(
            f"{os.path.join(source, name)}: pooling mode {unknown[0]!r} is not one of {sorted(POOLING_MODES)}"
        )
    return "+".join(POOLING_MODES[mode] for mode in modes), bool(config.get("include_prompt", True))


def _read_dense(source: str, subfolder: str, hub: dict[str, Any]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    name = os.path.join(subfolder, "config.json")
    config = _json(source, name, **hub)
    where = os.path.join(source, name)
    if not isinstance(config, dict):
        raise ValueError(f"{where}: the Dense module has no config")
    if config.get("use_residual"):
        raise ValueError(f"{where}: a Dense module with a residual connection has no hfsiamese counterpart")
    activation = str(config.get("activation_function") or "torch.nn.modules.activation.Tanh").rsplit(".", 1)[-1]
    if activation not in DENSE_ACTIVATIONS:
        raise ValueError(
            f"{where}: activation {config.get('activation_function')!r} is not one of torch.nn's {DENSE_ACTIVATIONS}"
        )
    layer = {
        "in_features": int(config["in_features"]),
        "out_features": int(config["out_features"]),
        "bias": bool(config.get("bias", True)),
        "activation": activation,
    }
    weights_path = _file(source, os.path.join(subfolder, "model.safetensors"), **hub)
    if weights_path is None:
        raise ValueError(
            f"{os.path.join(source, subfolder)}: the Dense module's weights are not in model.safetensors "
            "(hfsiamese loads no pickled weights: convert pytorch_model.bin to safetensors first)"
        )
    from safetensors.torch import load_file

    weights = load_file(weights_path)
    expected = {"linear.weight"} | ({"linear.bias"} if layer["bias"] else set())
    if set(weights) != expected:
        raise ValueError(f"{weights_path}: expected the tensors {sorted(expected)}, found {sorted(weights)}")
    return layer, weights


def _read_model_config(settings: SentenceTransformersSettings, hub: dict[str, Any]) -> None:
    config = _json(settings.source, MODEL_CONFIG_FILE, **hub)
    if not isinstance(config, dict):
        return
    prompts = config.get("prompts") or {}
    settings.prompts = {str(k): str(v) for k, v in prompts.items()} if isinstance(prompts, dict) else {}
    default = config.get("default_prompt_name")
    settings.default_prompt_name = default if default in settings.prompts else None
    settings.similarity_fn_name = config.get("similarity_fn_name")


__all__ = ["SentenceTransformersSettings", "read_sentence_transformers_folder", "unfaithful_loading_warning"]
