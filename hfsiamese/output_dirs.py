"""Output folders: a user's earlier run is never overwritten by surprise."""

from __future__ import annotations

from pathlib import Path


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
