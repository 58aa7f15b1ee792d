"""
Loading a Siamese model from safetensors only, with errors that name the file at fault.

Unpickling a weights file can run arbitrary code, so pickled weights are refused before anything is
read. What transformers would pass with a warning (tensors left random) or report without naming the
file (a truncated or corrupted `model.safetensors`, weights holding NaN/inf, an uncached Hub id under
offline mode) becomes an error naming the file. This file travels with every checkpoint as remote code
(the modeling file imports it relatively), so it may import only torch, transformers and the standard
library.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

# Weight files that are pickles: unpickling one can run arbitrary code, so they are never read.
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
_ENV_TRUE = {"1", "ON", "YES", "TRUE"}
SAFETENSORS_ONLY = "Siamese models load safetensors weights only (use_safetensors=False would unpickle)"


def env_flag_set(*names: str) -> bool:
    """Whether any of these environment variables is set to a true value (1/ON/YES/TRUE, as huggingface_hub reads them)."""
    return any(os.environ.get(name, "").upper() in _ENV_TRUE for name in names)


def offline_mode_set() -> bool:
    """
    HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE as set now. `hfsiamese.hub_access.hub_offline` says more (it also
    reads `datasets`), but this file runs as remote code where `datasets` may not be installed.
    """
    return env_flag_set("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def not_cached_message(what: str, name: str) -> str:
    """The one error text for a Hub id that offline mode cannot serve from the local cache."""
    return (
        f"cannot load the {what} {name!r}: offline mode is set (HF_HUB_OFFLINE=1) and it is not (or not whole) in the "
        "local Hugging Face cache; pass a local folder, or download it once with network access"
    )


def refuse_pickle_loading(kwargs: dict[str, Any]) -> None:
    """Refuse, and drop from `kwargs`, `use_safetensors=False`: it would unpickle."""
    if kwargs.pop("use_safetensors", None) is False:
        raise ValueError(SAFETENSORS_ONLY)


def weights_file(name_or_path: str, kwargs: dict[str, Any]) -> str:
    """
    The safetensors file (or shard index) that `from_pretrained` will read, for error messages.

    For a local folder it also refuses, before anything is read, a folder that holds only pickled
    weights; transformers would otherwise fall back to them, or say only that a file is missing.
    """
    subfolder = kwargs.get("subfolder")
    folder = os.path.join(name_or_path, subfolder) if subfolder else name_or_path
    if not os.path.isdir(folder):
        if os.path.isabs(name_or_path) or name_or_path.startswith((".", "~")) or name_or_path.count("/") > 1:
            raise FileNotFoundError(f"model folder not found: {folder}")
        return f"{SAFE_WEIGHTS_NAME} of {name_or_path!r}"
    for name in (SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    pickled = sorted(name for name in os.listdir(folder) if name.endswith(_PICKLE_SUFFIXES))
    if pickled:
        raise ValueError(
            f"{os.path.join(folder, pickled[0])}: refusing to load pickled weights ({', '.join(pickled)}); Siamese "
            f"models load from {SAFE_WEIGHTS_NAME} only, since unpickling a file can run arbitrary code. If you "
            f"trust its origin, convert it once: safetensors.torch.save_file(torch.load(path, weights_only=True), "
            f"'{SAFE_WEIGHTS_NAME}')"
        )
    raise FileNotFoundError(
        f"{folder} holds no {SAFE_WEIGHTS_NAME}: is it a saved model folder? (files: {sorted(os.listdir(folder))})"
    )


def _is_safetensors_error(err: BaseException | None) -> bool:
    # Matched by name: this file may import only torch and transformers (see the module docstring).
    while err is not None:
        if type(err).__name__ == "SafetensorError":
            return True
        err = err.__cause__ or err.__context__
    return False


@contextmanager
def clear_loading_errors(name_or_path: str, weights: str, *, what: str = "model") -> Iterator[None]:
    """Re-raise the loaders' terse errors (an unnamed SafetensorError, a generic offline message) naming the file."""
    try:
        yield
    except Exception as err:
        if _is_safetensors_error(err):
            raise ValueError(
                f"{weights}: not a readable safetensors file ({err}); it is truncated or corrupted: "
                "save or download it again"
            ) from err
        if isinstance(err, OSError) and not os.path.exists(name_or_path) and offline_mode_set():
            raise OSError(not_cached_message(what, name_or_path)) from err
        if isinstance(err, RuntimeError) and "ignore_mismatched_sizes" in str(err):
            raise ValueError(
                f"{weights}: tensor shapes differ from those its config describes (see the load report above): "
                "the weights and config.json belong to different models"
            ) from err
        raise


def check_complete(info: dict[str, Any], weights: str) -> None:
    """Tensors the file lacks would be left random: an incomplete file, or another model's weights."""
    if info["missing_keys"]:
        missing = sorted(info["missing_keys"])
        raise ValueError(
            f"{weights} lacks {len(missing)} tensor(s) of this model ({', '.join(missing[:5])}): they would be "
            "left random. The file is incomplete or holds another model's weights"
        )


def check_finite(model: nn.Module, weights: str) -> None:
    """NaN/inf weights: bytes flipped in the file (safetensors has no checksum) or a run that diverged."""
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and tensor.device.type != "meta" and not torch.isfinite(tensor).all():
            raise ValueError(
                f"{weights}: tensor {name!r} holds NaN or infinite values; the file is corrupted (or was saved "
                "from a run that diverged): save or download it again"
            )


class SafetensorsLoadingMixin:
    """`from_pretrained` with safetensors weights only and errors naming the file (mixed into `SiameseModel`)."""

    @classmethod
    def from_pretrained(
        cls, pretrained_model_name_or_path: str | os.PathLike | None, *model_args: Any, **kwargs: Any
    ) -> Any:
        """
        [`PreTrainedModel.from_pretrained`] with safetensors weights only and errors naming the file.

        Pickled weights (`pytorch_model.bin`) are refused, since unpickling can run code. What
        transformers would pass with a warning (missing tensors left random, another model type's
        config) or report without the file's name (a truncated or corrupted `model.safetensors`,
        weights holding NaN/inf) is a ValueError naming the file; under HF_HUB_OFFLINE=1 a Hub id
        that is not cached fails at once, saying so.
        """
        refuse_pickle_loading(kwargs)
        if pretrained_model_name_or_path is None:  # weights given as state_dict=...: nothing on disk to check
            return super().from_pretrained(pretrained_model_name_or_path, *model_args, use_safetensors=True, **kwargs)
        source = str(pretrained_model_name_or_path)
        weights = weights_file(source, kwargs)
        want_info = kwargs.pop("output_loading_info", False)
        with clear_loading_errors(source, weights):
            model, info = super().from_pretrained(
                pretrained_model_name_or_path, *model_args, use_safetensors=True, output_loading_info=True, **kwargs
            )
        check_complete(info, weights)
        check_finite(model, weights)
        return (model, info) if want_info else model


__all__ = [
    "SafetensorsLoadingMixin",
    "check_complete",
    "check_finite",
    "clear_loading_errors",
    "offline_mode_set",
    "refuse_pickle_loading",
    "weights_file",
]
