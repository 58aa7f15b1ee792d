"""docs/architecture.md against the tree: every file it names exists, and every module of the package is named."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "docs" / "architecture.md"
PACKAGE = REPO_ROOT / "hfsiamese"


def _table_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| `") or line.startswith("| root")
    ]


def _named_files(cell: str) -> set[str]:
    """`name.py` and `folder/` in a cell (whole paths `hfsiamese/...` are the first test's)."""
    return set(re.findall(r"`(\w+\.py|\w+/)`", cell))


def test_every_path_the_page_names_exists():
    text = DOC.read_text(encoding="utf-8")
    paths = set(re.findall(r"(?<![\w/])(hfsiamese/[\w/]*\w(?:\.py)?)", text))
    missing = sorted(path for path in paths if not (REPO_ROOT / path).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_file_a_folder_row_lists_is_in_that_folder():
    missing = []
    for row in _table_rows(DOC.read_text(encoding="utf-8")):
        if len(row) == 3 and row[0].startswith("`") and row[0].endswith("/`"):  # | `folder/` | job | files |
            folder = PACKAGE / row[0].strip("`")
            present = {p.name for p in folder.rglob("*.py")} | {p.name + "/" for p in folder.rglob("*") if p.is_dir()}
        elif row[0] == "root":
            folder = PACKAGE
            present = {p.name for p in PACKAGE.glob("*.py")}
        else:  # | `file.py`, `other.py` | holds |: the travelling folder
            folder = PACKAGE / "models" / "siamese"
            present = {p.name for p in folder.glob("*.py")}
            missing += [f"models/siamese: {name}" for name in _named_files(row[0]) if name not in present]
            continue
        missing += [f"{folder.relative_to(PACKAGE)}: {name}" for name in _named_files(row[2]) if name not in present]
    assert not missing, f"docs/architecture.md lists files that are not there: {missing}"


def test_every_module_of_the_package_is_named():
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"[\w]+\.py", text))
    # The local `evaluate` modules (metrics/<name>/<name>.py) are named by their folder.
    modules = {
        p.name for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and p.parent.parent != PACKAGE / "metrics"
    }
    unnamed = sorted(modules - named)
    assert not unnamed, f"modules docs/architecture.md does not name (add them where they live): {unnamed}"
