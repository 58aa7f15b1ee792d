"""The Hugging Face Hub in offline mode: tell whether it is set (also as `datasets` and `huggingface_hub` read it at import), and fail at once, naming the model, when a Hub id cannot be served."""

from __future__ import annotations

import os
from pathlib import Path

from hfsiamese.models.siamese.safe_loading import env_flag_set, not_cached_message


class HubUnreachableError(ConnectionError, ValueError):
    """The Hub cannot be reached (offline mode or no network); both a ConnectionError and a ValueError."""


def hub_offline() -> bool:
    """
    Whether offline mode is set: HF_HUB_OFFLINE / HF_DATASETS_OFFLINE / TRANSFORMERS_OFFLINE now,
    or as `huggingface_hub` and `datasets` read them at import (they read them only once).
    """
    import datasets
    from huggingface_hub import constants

    return (
        env_flag_set("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
        or bool(constants.HF_HUB_OFFLINE)
        or bool(datasets.config.HF_HUB_OFFLINE)
    )


def looks_like_local_path(name: str) -> bool:
    """
    Whether a name that does not exist was meant as a local folder: it starts like a path (`/`, `.`,
    `~`) or lies in a folder that exists here (`outputs/lstm_qq`, a typo of `outputs/lstm_qqp`). A Hub
    id `owner/name` has no such folder beside it.
    """
    if name.startswith(("/", ".", "~")) or os.sep in name.replace("/", "") or name.count("/") > 1:
        return True
    parent = os.path.dirname(name)
    return bool(parent) and os.path.isdir(parent)


def require_local_or_cached(
    name_or_path: str | Path, *, what: str = "model", filename: str = "config.json", saved_folder: bool = False
) -> None:
    """
    Fail at once, naming it, on a model that cannot be served: a local folder that does not exist
    (online too: the Hub would answer "repository not found" for a typo), offline a Hub id whose
    `filename` is not in the local cache, and with `saved_folder` (a model the user saved, not a path
    handed on to another loader) a folder without `filename` or a file given for the folder. transformers' own error in that case names neither the id
    nor offline mode.
    """
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    name = str(name_or_path)
    if os.path.isdir(name):
        if saved_folder and not os.path.isfile(os.path.join(name, filename)):
            raise FileNotFoundError(
                f"{name} is not a {what} folder: it holds no {filename} (the folder hfsiamese train or "
                "save_pretrained writes has one)"
            )
        return
    if os.path.exists(name):
        if saved_folder:
            raise NotADirectoryError(f"{name} is a file: the {what} is the folder it was saved to")
        return
    if looks_like_local_path(name):
        raise FileNotFoundError(f"{what} not found: no such folder: {name}")
    if not hub_offline():
        return
    try:
        cached = try_to_load_from_cache(name, filename)
    except HFValidationError as err:  # not a Hub id: a path that is not there
        raise FileNotFoundError(f"{what} not found: {name} is neither a local folder nor a Hub id") from err
    if not isinstance(cached, str):
        raise HubUnreachableError(not_cached_message(what, name))
