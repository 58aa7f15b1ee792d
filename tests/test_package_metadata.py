"""pyproject.toml tells the truth: one version, the Python floor the tools and classifiers agree on, typed."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import hfsiamese

REPO_ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def floor() -> Version:
    """The lowest Python that requires-python admits (">=3.11" -> 3.11)."""
    (spec,) = SpecifierSet(PROJECT["requires-python"])
    assert spec.operator == ">=", "requires-python is a floor"
    return Version(spec.version)


def test_the_version_is_written_once():
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "hfsiamese.__version__"}
    # setuptools reads it without importing the package (no torch at build time): a plain string literal.
    tree = ast.parse((REPO_ROOT / "hfsiamese" / "__init__.py").read_text(encoding="utf-8"))
    literals = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert literals == [hfsiamese.__version__]
    Version(hfsiamese.__version__)  # PEP 440


def test_the_python_floor_is_the_one_the_tools_check():
    minor = f"{floor().major}.{floor().minor}"
    assert sys.version_info >= (floor().major, floor().minor)
    assert PYPROJECT["tool"]["ruff"]["target-version"] == f"py{floor().major}{floor().minor}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == minor
    versions = {
        c.rsplit(" :: ", 1)[1]
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert min(versions, key=Version) == minor


def test_typed_and_described():
    assert (REPO_ROOT / "hfsiamese" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["hfsiamese"]
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert {"Homepage", "Repository", "Changelog"} <= set(PROJECT["urls"])
    assert (REPO_ROOT / "CHANGELOG.md").is_file() and (REPO_ROOT / "CONTRIBUTING.md").is_file()


def test_libraries_whose_private_or_fast_moving_api_is_used_have_an_upper_bound():
    requirements = {Requirement(r).name: Requirement(r) for r in PROJECT["dependencies"]}
    extras = PROJECT["optional-dependencies"]
    for extra in ("lora", "app", "lancedb", "lexical", "sentence-transformers", "mteb"):
        requirements |= {Requirement(r).name: Requirement(r) for r in extras[extra]}
    bounded = ("transformers", "peft", "gradio", "lancedb", "bm25s", "sentence-transformers", "huggingface-hub", "mteb")
    for name in bounded:
        assert any(spec.operator == "<" for spec in requirements[name].specifier), name
    # The test extra installs what the extras allow, no wider: the suite tests the range users get.
    for requirement in map(Requirement, extras["test"]):
        if requirement.name in bounded:
            assert requirement.specifier == requirements[requirement.name].specifier, requirement.name


def test_the_lower_bounds_job_takes_its_bounds_from_pyproject():
    # CI runs it after the suite, beside lint, docs and wheel.
    ci_run = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^for check in .*\blower_bounds\b.*; do$", ci_run, re.MULTILINE)
    job = (REPO_ROOT / ".ci" / "lower_bounds").read_text(encoding="utf-8")
    # The install: the project itself at its lowest allowed versions, read by uv from pyproject.toml ...
    assert re.search(r'uv" pip install .*--resolution lowest-direct -e "\$repo\[\$extras\]"', job)
    # ... and no second list of versions: the only pins are torch (as README's test command installs it) and uv.
    pins = re.findall(r"([A-Za-z0-9_.-]+)(==|>=|<=|~=)([0-9][^\s\"'`)]*)", job)
    assert {name for name, _, _ in pins} == {"torch", "uv"}, pins
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    (torch_pin,) = {f"torch=={v}" for n, op, v in pins if n == "torch" and op == "=="}
    assert torch_pin in readme.split("<!-- test-command -->")[1].split("<!-- /test-command -->")[0]
    # The test tools and extras it names are in pyproject.toml, which gives their bounds.
    tools = re.search(r'^test_tools="([^"]+)"$', job, re.MULTILINE).group(1).split()
    test_extra = {Requirement(r).name for r in PROJECT["optional-dependencies"]["test"]}
    assert set(tools) <= test_extra
    extras = re.search(r'^extras="([^"]+)"$', job, re.MULTILINE).group(1).split(",")
    assert set(extras) <= set(PROJECT["optional-dependencies"])
