"""Output folders: a user's earlier run, report or index is never overwritten by surprise.

Every writer of a folder (the training output, an evaluation report, a saved index) refuses the
same two cases with the same words; `ensure_writable_folder` is that one check.
"""

from __future__ import annotations

from pathlib import Path


def ensure_writable_folder(path: str | Path, *, overwrite: bool = False, label: str = "", remedy: str) -> None:
    """
    Refuse a path that is a file, or a folder that already holds files unless `overwrite`.

    The errors read "`label` `path` exists and is not a folder" and "`label` `path` is not empty:
    `remedy`", so each caller says how to proceed in its own terms (a flag, an argument).
    """
    path = Path(path)
    named = f"{label} {path}" if label else str(path)
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{named} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise FileExistsError(f"{named} is not empty: {remedy}")


def ensure_writable_output_dir(output_dir: str | Path, *, overwrite: bool = False, resuming: bool = False) -> None:
    """Refuse to write into a non-empty folder unless asked: a user's earlier run must not be lost."""
    ensure_writable_folder(
        output_dir,
        overwrite=overwrite or resuming,
        label="output_dir",
        remedy="pass --overwrite_output_dir to write into it, --resume_from_checkpoint to continue the run there, "
        "or choose another --output_dir",
    )


__all__ = ["ensure_writable_folder", "ensure_writable_output_dir"]
