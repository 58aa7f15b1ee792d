"""The two families are siblings: nothing under hfsiamese/cross_encoder/ imports hfsiamese.bi_encoder (what both
share lives in hfsiamese/base/ or hfsiamese/utils/)."""

from __future__ import annotations

import ast
from pathlib import Path

import hfsiamese.cross_encoder

FAMILY = Path(hfsiamese.cross_encoder.__file__).parent


def _imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_the_cross_encoder_imports_nothing_of_the_bi_encoder() -> None:
    found = [
        f"{path.name}: {name}"
        for path in sorted(FAMILY.glob("*.py"))
        for name in _imported_modules(path)
        if name == "hfsiamese.bi_encoder" or name.startswith("hfsiamese.bi_encoder.")
    ]
    assert len(list(FAMILY.glob("*.py"))) > 3  # the family's modules were read
    assert found == []
