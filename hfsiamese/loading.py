"""
The one way hfsiamese loads a model folder (or Hub id): `load_model` reads its config.json once and returns the
object for what it holds: a bi-encoder (`SiameseModel`), a bi-encoder's ONNX export (`OnnxSiameseModel`) or OpenVINO
export (`OpenVinoSiameseModel`), or a cross-encoder (`CrossEncoder`, with torch, onnxruntime or OpenVINO inside). A folder that is none of these is a one-line error.

An ONNX export of either family is marked by the `onnx` entry of its config.json (`hfsiamese.utils.onnx_runtime`).
A bi-encoder's export also has `model_type` `"siamese_onnx"`, which routes transformers' `AutoModel` (and the
`question-duplicates` pipeline) to `OnnxSiameseModel`; an export whose config.json has that `model_type` but no `onnx`
entry loads as one too. An OpenVINO export is marked the same way by its `openvino` entry
(`hfsiamese.utils.openvino_runtime`), a bi-encoder's by `model_type` `"siamese_openvino"` too.

The other loaders are this one with fewer families: `load_siamese_model` (what `DuplicateIndex`, `hfsiamese search`
and the web app call) refuses a cross-encoder, which cannot embed texts; `hfsiamese.loading.load_pair_model`
(`hfsiamese evaluate`, `hfsiamese calibrate`) is `load_model`; `hfsiamese.distillation.load_teacher` loads a saved
bi-encoder with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hfsiamese.bi_encoder.onnx_model import OnnxSiameseConfig, OnnxSiameseModel
from hfsiamese.bi_encoder.openvino_model import OpenVinoSiameseConfig, OpenVinoSiameseModel
from hfsiamese.cross_encoder.config_kind import is_cross_encoder_config, is_cross_encoder_folder
from hfsiamese.models.siamese.configuration_siamese import SiameseConfig
from hfsiamese.models.siamese.safe_loading import clear_loading_errors
from hfsiamese.utils.onnx_runtime import onnx_entry
from hfsiamese.utils.openvino_runtime import openvino_entry

# What a model folder can hold, as `model_kind` names it.
BI_ENCODER, BI_ENCODER_ONNX, CROSS_ENCODER = "bi-encoder", "bi-encoder ONNX export", "cross-encoder"
BI_ENCODER_OPENVINO = "bi-encoder OpenVINO export"
# The runtimes a folder's model runs on, as `runtime_options` is keyed (the `backend` names but "auto").
RUNTIMES = ("pytorch", "onnx", "openvino")
# Options of `from_pretrained` that say where config.json is (the rest go to the model class only).
_CONFIG_LOCATION_OPTIONS = ("revision", "cache_dir", "token", "local_files_only", "force_download", "subfolder")


def config_values(name_or_path: str | os.PathLike, **kwargs: Any) -> dict[str, Any]:
    """
    The values of the config.json of a local folder or a Hub id (`kwargs`: `from_pretrained` options; those saying
    where the file is are used). A folder without one, unreadable JSON, or an uncached Hub id offline: a one-line error.
    """
    source = str(name_or_path)
    if os.path.isdir(source):
        config_file = Path(source, kwargs.get("subfolder") or "", "config.json")
        if not config_file.is_file():
            raise FileNotFoundError(
                f"{source} holds no config.json: it is no model folder (hfsiamese train and save_pretrained write one)"
            )
        try:
            return json.loads(config_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"{config_file} is not valid JSON: {err}") from err
    from transformers import PretrainedConfig

    location = {key: kwargs[key] for key in _CONFIG_LOCATION_OPTIONS if key in kwargs}
    with clear_loading_errors(source, "config.json", what="model"):
        values, _ = PretrainedConfig.get_config_dict(source, **location)
    return values


def model_kind(config: Any) -> str | None:
    """
    What a config (a transformers config or its dict) describes: `BI_ENCODER`, `BI_ENCODER_ONNX`,
    `BI_ENCODER_OPENVINO`, `CROSS_ENCODER`, or None.
    """
    values = config if isinstance(config, dict) else config.to_dict()
    if is_cross_encoder_config(values):  # any runtime: `CrossEncoder.from_pretrained` reads its `onnx`/`openvino` entry
        return CROSS_ENCODER
    if openvino_entry(values) or values.get("model_type") == OpenVinoSiameseConfig.model_type:
        return BI_ENCODER_OPENVINO
    if onnx_entry(values) or values.get("model_type") == OnnxSiameseConfig.model_type:
        return BI_ENCODER_ONNX
    if values.get("model_type") == SiameseConfig.model_type:
        return BI_ENCODER
    return None


def is_onnx_folder(name_or_path: str | os.PathLike) -> bool:
    """Does `name_or_path` name a local folder holding an ONNX export (of a bi-encoder or a cross-encoder)?"""
    if not (Path(name_or_path) / "config.json").is_file():
        return False
    values = config_values(name_or_path)
    return bool(onnx_entry(values)) or model_kind(values) == BI_ENCODER_ONNX


def exported_format(name_or_path: str | os.PathLike) -> str | None:
    """`"onnx"` or `"openvino"` when `name_or_path` names a local folder holding such an export (either family), else None."""
    if not (Path(name_or_path) / "config.json").is_file():
        return None
    return _format_of(config_values(name_or_path))


def _format_of(values: dict[str, Any]) -> str | None:
    """`"onnx"` or `"openvino"` when a config's values describe such an export (either family), else None."""
    if openvino_entry(values) or model_kind(values) == BI_ENCODER_OPENVINO:
        return "openvino"
    return "onnx" if onnx_entry(values) or model_kind(values) == BI_ENCODER_ONNX else None


def runtime_kwargs(
    name_or_path: str | os.PathLike, runtime_options: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any]:
    """The entry of `runtime_options` (checked) for the runtime the folder or Hub id `name_or_path` runs on: for a
    loader that reads the folder itself (`CrossEncoder.from_pretrained` as a reranker). Nothing read without options."""
    options = check_runtime_options(runtime_options)
    if not options:
        return {}
    return options.get(_format_of(config_values(name_or_path)) or "pytorch", {})


def check_runtime_options(runtime_options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """`runtime_options` as a dict, its keys checked against `RUNTIMES` (a one-line error names a wrong one)."""
    options = {runtime: dict(values) for runtime, values in (runtime_options or {}).items()}
    unknown = sorted(set(options) - set(RUNTIMES))
    if unknown:
        raise ValueError(f"runtime_options are keyed by runtime, one of {RUNTIMES}: {unknown} is none")
    return options


def load_model(
    folder_or_hub_id: str | os.PathLike,
    *,
    backend: str | None = None,
    runtime_options: Mapping[str, Mapping[str, Any]] | None = None,
    **kwargs: Any,
) -> Any:
    """
    The model a folder or Hub id holds, for either family: `SiameseModel` (a bi-encoder checkpoint: safetensors
    only), `OnnxSiameseModel` (its ONNX export; needs onnxruntime), `OpenVinoSiameseModel` (its OpenVINO export; needs
    openvino), or `CrossEncoder` (a cross-encoder checkpoint or its ONNX or OpenVINO export). `kwargs` go to that
    class's `from_pretrained` (e.g. `providers`, `session_options` for an ONNX export; `ov_config` for an OpenVINO
    one). A folder that holds none of these is a one-line ValueError.

    `backend="auto"` (a local folder): of the folder and the exports in its subfolders, the one that scores pairs
    fastest on this CPU, timed once and kept (`hfsiamese.backend_choice`); `"pytorch"`, `"onnx"` or `"openvino"`:
    the same among that runtime's only; None loads the folder as it is.

    `runtime_options`: options for the runtime that turns out to run the model, keyed by runtime (`RUNTIMES`), for a
    caller that does not know which one `backend="auto"` will choose, e.g. an ONNX session without thread spinning,
    `{"onnx": {"session_options": hfsiamese.utils.onnx_runtime.session_options(thread_spinning=False)}}` (what
    `hfsiamese serve` passes); the other runtimes' entries are not used.

    Examples:

    ```python
    >>> from hfsiamese import load_model
    >>> model = load_model("outputs/lstm_qqp_int8")  # or a PyTorch folder, or a cross-encoder's
    >>> model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])
    ```
    """
    options = check_runtime_options(runtime_options)
    return _load(
        chosen_folder(folder_or_hub_id, backend),
        (BI_ENCODER, BI_ENCODER_ONNX, BI_ENCODER_OPENVINO, CROSS_ENCODER),
        options,
        **kwargs,
    )


def chosen_folder(name_or_path: str | os.PathLike, backend: str | None) -> str | os.PathLike:
    """
    The folder to load for `backend`: `name_or_path` itself (None), or the one `backend` ("auto", or a runtime:
    "pytorch", "onnx", "openvino") chooses in it.
    """
    if backend is None:
        return name_or_path
    from hfsiamese.backend_choice import BACKENDS, choose_backend

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None (the folder as it is), got {backend!r}")
    if not os.path.isdir(name_or_path):
        raise ValueError(f"backend={backend!r} chooses among a local folder's exports: {name_or_path} is no folder")
    return choose_backend(name_or_path, load=load_model, backend=backend).path


def load_siamese_model(
    name_or_path: str | os.PathLike,
    *,
    backend: str | None = None,
    runtime_options: Mapping[str, Mapping[str, Any]] | None = None,
    **kwargs: Any,
) -> Any:
    """
    A Siamese model from a folder or Hub id: `OnnxSiameseModel` for an ONNX export (needs onnxruntime),
    `OpenVinoSiameseModel` for an OpenVINO export (needs openvino), else `SiameseModel` (`AutoModel.from_pretrained`,
    safetensors only). `kwargs` go to that class's `from_pretrained`.
    `load_model` for bi-encoders only: a cross-encoder, which cannot embed texts, is refused. `backend`: as for
    `load_model`, and so are `runtime_options`.
    """
    options = check_runtime_options(runtime_options)
    return _load(
        chosen_folder(name_or_path, backend), (BI_ENCODER, BI_ENCODER_ONNX, BI_ENCODER_OPENVINO), options, **kwargs
    )


def _load(
    name_or_path: str | os.PathLike, kinds: tuple[str, ...], runtime_options: dict[str, dict[str, Any]], **kwargs: Any
) -> Any:
    """The model of `name_or_path` if its config describes one of `kinds`, else the one-line error saying what it is;
    `runtime_options[runtime]` join `kwargs` for the runtime the folder runs on."""
    source = str(name_or_path)
    values = config_values(source, **kwargs)
    kind = model_kind(values)
    if kind == CROSS_ENCODER and kind not in kinds:
        raise ValueError(
            f"{source} is a cross-encoder: it scores pairs but cannot embed texts for search; give a bi-encoder here "
            "and the cross-encoder as the reranker (cross_encoder=..., --cross_encoder)"
        )
    if kind is None:
        raise ValueError(
            f"{source} is neither a hfsiamese bi-encoder nor a cross-encoder (PyTorch or ONNX): its config.json describes "
            f"a {values.get('model_type')!r} model with architectures {values.get('architectures')}; start one from it "
            "with hfsiamese train (model_name_or_path) or CrossEncoder.from_base_model"
        )
    kwargs = {**runtime_options.get(_format_of(values) or "pytorch", {}), **kwargs}
    if kind == CROSS_ENCODER:
        from hfsiamese.cross_encoder.model import (
            CrossEncoder,  # imported when first needed: `import hfsiamese` stays light
        )

        return CrossEncoder.from_pretrained(source, **kwargs)
    if kind == BI_ENCODER_ONNX:
        return OnnxSiameseModel.from_pretrained(source, **kwargs)
    if kind == BI_ENCODER_OPENVINO:
        return OpenVinoSiameseModel.from_pretrained(source, **kwargs)
    from transformers import AutoModel

    return AutoModel.from_pretrained(source, **kwargs)


def load_pair_model(
    name_or_path: str | os.PathLike,
    *,
    backend: str | None = None,
    runtime_options: Mapping[str, Mapping[str, Any]] | None = None,
    **kwargs: Any,
) -> Any:
    """
    A model that scores pairs (`score_pairs`, `predict`, `calibrate`), for the tools that only score pairs
    (`hfsiamese evaluate`, `hfsiamese calibrate`): `load_model`, which loads a cross-encoder, a Siamese checkpoint
    or the ONNX export of either (`backend`, `runtime_options`: as for `load_model`).
    """
    return load_model(name_or_path, backend=backend, runtime_options=runtime_options, **kwargs)


__all__ = [
    "BI_ENCODER",
    "BI_ENCODER_ONNX",
    "BI_ENCODER_OPENVINO",
    "CROSS_ENCODER",
    "RUNTIMES",
    "check_runtime_options",
    "runtime_kwargs",
    "chosen_folder",
    "config_values",
    "exported_format",
    "is_cross_encoder_config",
    "is_cross_encoder_folder",
    "load_pair_model",
    "is_onnx_folder",
    "load_model",
    "load_siamese_model",
    "model_kind",
]
