"""docs/architecture.md against the tree: every file it names exists, and every module of the package is named."""

from __future__ import annotations

import ast
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


# The import that runs back up, as the page describes it: `model.calibrate` fits with the installed library.
UP_THE_FLOORS = {("models/siamese/calibration.py", "calibration_fitting.py")}


def _floors(text: str) -> dict[str, int]:
    """The page's floors table: room (`cli/`, `loading.py`) -> floor."""
    section = text.split("## Floors", 1)[1].split("\n## ", 1)[0]
    floors = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            floors.update({room: int(cells[0]) for room in re.findall(r"`([\w./]+)`", cells[1])})
    return floors


def _room(module: str) -> str:
    """The room of a module of the package: its folder under hfsiamese/, or its file at the root."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def _imports(path) -> list[str]:
    """Every hfsiamese module `path` imports, at the top or inside a function (absolute imports: the package's own)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return [name for name in names if name == "hfsiamese" or name.startswith("hfsiamese.")]


def floor_breaks(imports: dict[str, list[str]], floors: dict[str, int]) -> list[str]:
    """`file -> module` for each import from a higher floor than the file's room, and each room with no floor."""
    problems = []
    for file, modules in sorted(imports.items()):
        source = _room("hfsiamese." + file.removesuffix(".py").replace("/", ".")) if "/" in file else file
        for module in modules:
            target = _room(module)
            if target == source or (file, target) in UP_THE_FLOORS:
                continue
            unplaced = [room for room in (source, target) if room not in floors]
            if unplaced:
                problems.append(f"{file} -> {module}: {unplaced} on no floor of docs/architecture.md")
            elif floors[target] > floors[source]:
                problems.append(f"{file} (floor {floors[source]}) -> {module} (floor {floors[target]})")
    return problems


def test_imports_run_down_the_floors():
    floors = _floors(DOC.read_text(encoding="utf-8"))
    assert floors, "docs/architecture.md has no floors table"
    imports = {str(path.relative_to(PACKAGE)): _imports(path) for path in PACKAGE.rglob("*.py")}
    problems = floor_breaks(imports, floors)
    assert not problems, "imports that run up the floors of docs/architecture.md:\n" + "\n".join(problems)


def test_an_import_from_a_higher_floor_is_found():
    floors = {"cli/": 2, "data/": 1, "utils/": 0}
    assert floor_breaks({"data/views.py": ["hfsiamese.utils.console"]}, floors) == []
    assert floor_breaks({"utils/console.py": ["hfsiamese.data.views"]}, floors) == [
        "utils/console.py (floor 0) -> hfsiamese.data.views (floor 1)"
    ]
    assert "on no floor" in floor_breaks({"data/views.py": ["hfsiamese.search.app"]}, floors)[0]


MAX_MODULE_LINES = 450  # issue 49: small modules with one job; a module past this is split by what it does


def test_no_module_of_the_package_is_over_the_line_limit():
    lines = {str(path.relative_to(PACKAGE)): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    assert {name: count for name, count in lines.items() if count > MAX_MODULE_LINES} == {}
