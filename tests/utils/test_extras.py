"""
Every install hint works as printed: each `pip install ...` in the package source, its templates and the
Markdown docs names packages that pyproject.toml really depends on (hfsiamese is not on the package index,
so `pip install "hfsiamese[lora]"` is refused), extras that exist (`pip install -e ".[lora]"`), or the
project's own repository; and every `install_hint("...")` names an extra of pyproject.toml.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from hfsiamese.utils import extras
from hfsiamese.utils.extras import REPOSITORY_URL, install_hint

REPO_ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
CORE: list[str] = PYPROJECT["project"]["dependencies"]
KNOWN = {canonicalize_name(Requirement(req).name) for req in CORE + [r for reqs in EXTRAS.values() for r in reqs]}

# The words of a pip command: quoted words or bare ones, up to whatever ends the command in prose or a string.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PIP_INSTALL = re.compile(r"pip install((?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`()&;,#]+))+)")
WORD = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`()&;,#]+")
INSTALL_HINT_CALL = re.compile(r"install_hint\(\s*[\"']([^\"']+)[\"']\s*\)")
# Python-string escapes that end up around a quoted word in the source (`"\"peft>=1\""`).
STRING_QUOTES = "\"'\\"


def hint_files() -> list[Path]:
    package = REPO_ROOT / "hfsiamese"
    # extras.py builds the hints (tested below), its `pip install` strings are templates.
    files = [path for path in sorted(package.rglob("*.py")) if path.name != "extras.py"] + sorted(package.rglob("*.md"))
    return files + sorted(REPO_ROOT.glob("*.md")) + sorted((REPO_ROOT / "docs").rglob("*.md"))


def problems_of(command_words: list[str]) -> list[str]:
    """What in the words after `pip install` would not install as printed ([] when all would)."""
    problems = []
    words = iter(command_words)
    for word in words:
        word = word.strip(STRING_QUOTES)
        if word in {"-e", "--editable"}:
            target = next(words, "").strip(STRING_QUOTES)
            match = re.fullmatch(r"\.(?:\[([^\]]*)\])?", target)
            if match is None:
                problems.append(f"-e {target!r}: not this checkout ('.' or '.[extra]')")
            else:
                problems += [
                    f"no extra {name!r}" for name in (match[1] or "").split(",") if name and name not in EXTRAS
                ]
            continue
        if word == "--index-url":  # only PyTorch's CPU wheels: the public index's Linux torch is the CUDA build
            url = next(words, "").strip(STRING_QUOTES)
            if url != TORCH_CPU_INDEX:
                problems.append(f"--index-url {url!r}: not PyTorch's CPU wheel index {TORCH_CPU_INDEX}")
            continue
        if word.startswith("-"):
            problems.append(f"option {word!r}: a hint installs packages, nothing else")
            continue
        if word.startswith("git+"):
            if word != f"git+{REPOSITORY_URL}":
                problems.append(f"{word!r}: not the project's repository {REPOSITORY_URL}")
            continue
        try:
            requirement = Requirement(word)
        except InvalidRequirement:
            problems.append(f"{word!r}: not a requirement pip reads")
            continue
        name = canonicalize_name(requirement.name)
        if name == "hfsiamese":
            if requirement.url != f"git+{REPOSITORY_URL}":
                problems.append(f"{word!r}: hfsiamese is not on the package index (git+{REPOSITORY_URL})")
            problems += [f"no extra {extra!r}" for extra in requirement.extras if extra not in EXTRAS]
        elif name not in KNOWN:
            problems.append(f"{word!r}: not a dependency in pyproject.toml")
    return problems


def collected_hints() -> list[tuple[str, list[str]]]:
    found = []
    for path in hint_files():
        text = path.read_text(encoding="utf-8")
        for match in PIP_INSTALL.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            # `name @ git+url` is one requirement written as three words.
            joined = re.sub(r"\s+@\s+", "@", match[1])
            found.append((f"{path.relative_to(REPO_ROOT)}:{line}", WORD.findall(joined)))
    return found


def test_the_collector_finds_the_hints():
    places = {place.split(":")[0] for place, _ in collected_hints()}
    assert "README.md" in places  # the install commands of the Quick start at least
    assert len(collected_hints()) >= 5


@pytest.mark.parametrize(
    ("place", "words"), collected_hints(), ids=lambda value: value if isinstance(value, str) else ""
)
def test_each_install_hint_installs_as_printed(place, words):
    assert problems_of(words) == [], place


@pytest.mark.parametrize(
    "words",
    [
        ['"hfsiamese[lora]"'],  # not on the package index
        ["peft-nonexistent"],
        ["-e", '".[no-such-extra]"'],
        ["git+https://example.com/other/repo"],
        ["torch==2.13.0", "--index-url", "https://example.com/simple"],
        ['"hfsiamese[nope] @ git+https://github.com/hfsiamese/hfsiamese"'],
    ],
)
def test_the_check_refuses_hints_that_cannot_work(words):
    assert problems_of(words) != []


def test_install_hint_calls_name_existing_extras():
    calls = []
    for path in sorted((REPO_ROOT / "hfsiamese").rglob("*.py")):
        calls += [(path.name, extra) for extra in INSTALL_HINT_CALL.findall(path.read_text(encoding="utf-8"))]
    assert len(calls) >= 8
    assert [call for call in calls if call[1] not in EXTRAS] == []


def _metadata_from_pyproject() -> list[str]:
    """Requires-Dist lines as an install of this checkout would write them."""
    lines = list(CORE)
    for extra, requirements in EXTRAS.items():
        lines += [f'{requirement}; extra == "{extra}"' for requirement in requirements]
    return lines


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_install_hint_names_the_packages_of_the_extra(extra, monkeypatch):
    monkeypatch.setattr(extras.metadata, "requires", lambda name: _metadata_from_pyproject())
    hint = install_hint(extra)
    command, clone = re.fullmatch(r"(pip install [^(]+) \(from a clone: (pip install -e \S+)\)", hint).groups()
    assert clone == f'pip install -e ".[{extra}]"'
    words = WORD.findall(command.removeprefix("pip install"))
    assert problems_of(words) == []
    named = {canonicalize_name(Requirement(word.strip('"')).name) for word in words}
    assert named == {canonicalize_name(Requirement(req).name) for req in EXTRAS[extra]}


def test_install_hint_quotes_version_specifiers(monkeypatch):
    monkeypatch.setattr(extras.metadata, "requires", lambda name: ["torch>=2", 'peft>=0.13,<1; extra == "lora"'])
    assert install_hint("lora") == 'pip install "peft>=0.13,<1" (from a clone: pip install -e ".[lora]")'


def test_install_hint_without_an_installed_hfsiamese_gives_the_clone_command(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(extras.metadata, "requires", not_installed)
    assert install_hint("lora") == f'pip install -e ".[lora]" (in a clone of {REPOSITORY_URL})'
