"""
Install hints for the optional extras, written once so that each works as printed.

hfsiamese is not on the package index, so installing `hfsiamese[lora]` by name fails. A hint names the
third-party packages an extra installs (read from the installed package's metadata, so it follows
pyproject.toml) and, for a clone, the editable install of the extra. `tests/utils/test_extras.py`
checks every `pip install` in the source and the README against pyproject.toml's extras.
"""

from __future__ import annotations

import re
from importlib import metadata

__all__ = ["REPOSITORY_URL", "extra_requirements", "install_hint"]

# Where hfsiamese itself installs from until it is on the package index: `pip install git+REPOSITORY_URL`.
REPOSITORY_URL = "https://github.com/hfsiamese/hfsiamese"

# `name>=1.0; extra == "lora"` in a Requires-Dist line: the requirement, and the extra it belongs to.
_REQUIRES_DIST = re.compile(r"""^(?P<requirement>[^;]+?)\s*;.*\bextra\s*==\s*["'](?P<extra>[^"']+)["']""")
# A requirement that a shell reads as one word without quotes: a bare name (no version operators).
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9._-]+$")


def extra_requirements(extra: str) -> list[str]:
    """The requirements (`"peft>=0.13"`) the installed hfsiamese lists for `extra`; [] when not installed or unknown."""
    try:
        requires = metadata.requires("hfsiamese") or []
    except metadata.PackageNotFoundError:  # run from a clone on sys.path, never installed
        return []
    found = []
    for line in requires:
        match = _REQUIRES_DIST.match(line)
        if match is not None and match["extra"] == extra:
            found.append(match["requirement"].replace(" ", ""))
    return found


def install_hint(extra: str) -> str:
    """
    `pip install "peft>=0.13" (from a clone: pip install -e ".[lora]")`: a command that installs `extra`'s
    packages as printed. Without installed metadata for it (a clone on sys.path), only the clone's command.
    """
    clone = f'pip install -e ".[{extra}]"'
    requirements = extra_requirements(extra)
    if not requirements:
        return f"{clone} (in a clone of {REPOSITORY_URL})"
    words = " ".join(req if _PLAIN_WORD.match(req) else f'"{req}"' for req in requirements)
    return f"pip install {words} (from a clone: {clone})"
