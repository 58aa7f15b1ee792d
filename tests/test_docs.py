"""The documentation site as a user reads it: every bash and Python block of docs/, page by page in the site's order.

The blocks run as tests/test_readme.py runs the README's (its block reader, its command rewriting and its fresh copy
of the repository are imported from there, so both tests shorten trainings and drop install steps alike): files
carry over from page to page (the Quickstart trains the model later guides use), Python names do not (each page
defines what its own snippets use, as for a reader who opens one page in a new interpreter). A block the test
cannot run says why in the page, right above it: `<!-- readme-test: skip <reason> -->`. A training command that is
already short and must run as written (e.g. to draw a validation curve, which the test's `--eval_strategy no`
would remove) says so: `<!-- docs-test: as written <reason> -->`.

The site itself (`mkdocs build --strict`: broken links, unresolved API references) is built by `.ci/docs`, which
installs the `docs` extra first; here the commands reference generator (`docs/hooks/reference_pages.py`) is
checked against the code without mkdocs.
"""

from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib.util
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.helpers import offline_env
from tests.plugins.run_notes import RUN_NOTE
from tests.test_readme import (  # noqa: F401  (repo_copy: a fixture)
    DOCS_EXPECTATIONS,
    readme_blocks,
    repo_copy,
    run_python_block,
    run_shell_command,
    runnable,
    runnable_texts,
    shell_commands,
    unmatched,
)

DOCS = REPO_ROOT / "docs"
MKDOCS_YML = REPO_ROOT / "mkdocs.yml"
AS_WRITTEN_MARKER = re.compile(r"<!--\s*docs-test:\s*as written\b.*?-->")
INSTALL_ONLY = re.compile(r"^\s*(python3? -m venv\b|\S*pip install\b)")


# Why a docs block may be left out of the docs test: its marker says why, in words a user accepts (what the test's
# machine cannot give it: the Hub, GPUs, a server that runs until stopped, ...), and names its twin, which must
# exist: the test that runs the same command (`twin: tests/x.py::test_y`), the page (`twin: docs/x.md`), or the CI
# script (`twin: .ci/x`). "Needs a file no page writes" or "has its own section" once hid a command that failed
# (issue 48): such a block is made to run instead.
TWIN = re.compile(
    r"\btwin: (?:(?P<test_file>tests/[\w/]+\.py)::(?P<test>test_\w+)|(?P<page>docs/[\w/.-]+\.md)|(?P<script>\.ci/\w+))"
)


def skip_reason_problem(reason: str) -> str | None:
    """What is wrong with a skip marker's reason (None: nothing): no reason besides the twin, or no twin that exists."""
    twin = TWIN.search(reason)
    if twin is None:
        return "names no twin (twin: tests/x.py::test_y, docs/x.md or .ci/x)"
    if not reason[: twin.start()].strip(" ;,(") and not reason[twin.end() :].strip(" ;,()"):
        return "says nothing but its twin: say why the block cannot run here"
    if twin["page"] or twin["script"]:
        where = twin["page"] or twin["script"]
        return None if (REPO_ROOT / where).is_file() else f"its twin {where} does not exist"
    path = REPO_ROOT / twin["test_file"]
    if not path.is_file() or not re.search(rf"^def {twin['test']}\(", path.read_text(encoding="utf-8"), re.MULTILINE):
        return f"its twin {twin['test_file']}::{twin['test']} does not exist"
    return None


def test_every_skip_marker_gives_a_reason_and_a_twin_that_exists():
    pages = [*page_order(), REPO_ROOT / "README.md"]
    bad = [
        f"{page.relative_to(REPO_ROOT).as_posix()}:{block.line}: {block.skip!r}: {problem}"
        for page in pages
        for block in readme_blocks(page.read_text(encoding="utf-8"))
        if block.skip is not None and (problem := skip_reason_problem(block.skip)) is not None
    ]
    assert not bad, "\n".join(bad)


def test_a_skip_reason_without_a_twin_or_with_a_missing_one_is_refused():
    assert (
        skip_reason_problem("needs the Hub: network; twin: tests/test_docs.py::test_every_page_is_in_the_nav") is None
    )
    assert skip_reason_problem("the test suite itself; twin: .ci/run runs it") is None
    assert "names no twin" in skip_reason_problem("needs the Hub: network")
    assert "names no twin" in skip_reason_problem("takes a while")
    assert "says nothing but its twin" in skip_reason_problem("twin: tests/test_docs.py::test_every_page_is_in_the_nav")
    assert "does not exist" in skip_reason_problem("slow; twin: tests/test_docs.py::test_that_is_not_there")
    assert "does not exist" in skip_reason_problem("slow; twin: docs/guides/no-such-page.md")
    assert "does not exist" in skip_reason_problem("slow; twin: .ci/no_such_script")


def test_a_command_or_block_using_a_deprecated_form_fails(tmp_path):
    """An hfsiamese FutureWarning fails the block (the docs showed `--method platt` with the test green); another
    library's does not."""
    env = offline_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    deprecated = (
        "python -c \"from hfsiamese.utils.deprecation import warn_deprecated; warn_deprecated('option', '--method')\""
    )
    with pytest.raises(
        AssertionError, match=r"uses what hfsiamese deprecates: .*--method is renamed --calibration_method"
    ):
        run_shell_command(deprecated, deprecated, "page.md:1", tmp_path, env, set(), {}, timeout=300)
    other = "python -c \"import warnings; warnings.warn('x', FutureWarning)\""
    run_shell_command(other, other, "page.md:2", tmp_path, env, set(), {}, timeout=300)
    block = readme_blocks(
        "```python\nfrom hfsiamese.utils.deprecation import warn_deprecated\nwarn_deprecated('option', '--method')\n```\n"
    )[0]
    with pytest.raises(AssertionError, match="uses what hfsiamese deprecates"):
        run_python_block(block, "page.md:3", {}, tmp_path, set(), {})


def test_the_extras_table_lists_every_extra():
    """installation.md's table of extras names each extra pyproject.toml defines (it lacked `mteb` and `lexical`)."""
    import tomllib

    extras = set(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    table = set(re.findall(r"^\| `([\w-]+)` \|", (DOCS / "get-started" / "installation.md").read_text(), re.MULTILINE))
    assert extras - table == set(), "extras missing from docs/get-started/installation.md's table"
    assert table - extras == set(), "extras in docs/get-started/installation.md's table that pyproject.toml lacks"


def nav_pages(nav: list) -> list[str]:
    """The page paths of an mkdocs `nav`, in reading order."""
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += nav_pages(value)
        elif isinstance(value, str) and value.endswith(".md"):
            pages.append(value)
    return pages


def site_config() -> dict:
    return yaml.safe_load(MKDOCS_YML.read_text(encoding="utf-8"))


def excluded(config: dict) -> set[str]:
    """The docs/ files `exclude_docs` keeps out of the site (its plain `/path` lines)."""
    return {line.strip().lstrip("/") for line in config.get("exclude_docs", "").splitlines() if line.strip()}


def page_order() -> list[Path]:
    """Every markdown page of the site, in the navigation's order; generated pages have no file and no blocks."""
    return [DOCS / page for page in nav_pages(site_config()["nav"]) if (DOCS / page).is_file()]


def as_written(text: str, line: int) -> bool:
    """Whether the block opening at 1-based `line` carries the as-written marker right above it."""
    lines = text.splitlines()
    above = next((lines[j].strip() for j in range(line - 2, -1, -1) if lines[j].strip()), "")
    return bool(AS_WRITTEN_MARKER.search(above))


def test_every_page_is_in_the_nav():
    """A page outside the navigation would be neither read nor run; a nav entry without its file is a typo."""
    config = site_config()
    skip = excluded(config)
    in_nav = set(nav_pages(config["nav"]))
    on_disk = {
        path.relative_to(DOCS).as_posix()
        for path in DOCS.rglob("*.md")
        if not any(path.relative_to(DOCS).as_posix().startswith(prefix.rstrip("/")) for prefix in skip)
    }
    generated = {"reference/commands.md", "reference/configs.md"}
    assert on_disk - in_nav == set(), "pages missing from mkdocs.yml's nav"
    assert in_nav - on_disk - generated == set(), "nav entries without a page"


def test_as_written_marker_is_read_from_the_line_above():
    text = (
        "<!-- docs-test: as written (already short) -->\n```bash\nhfsiamese train --max_steps 3\n```\n```bash\nx\n```\n"
    )
    blocks = readme_blocks(text)
    assert [as_written(text, block.line) for block in blocks] == [True, False]


def load_hook():
    spec = importlib.util.spec_from_file_location("docs_reference_pages", DOCS / "hooks" / "reference_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_commands_reference_covers_every_command_and_option():
    """The generated commands page names every command and every option its dataclasses define."""
    hook = load_hook()
    if importlib.util.find_spec("hfsiamese.cli") is not None:
        from hfsiamese.cli.main import COMMANDS

        commands = set(COMMANDS) - {"env", "configs"}  # no options beyond --help
    else:  # before the hfsiamese command: the recipes are the commands
        names = {"evaluate_pairs": "evaluate", "silver_pairs": "silver-pairs"}
        commands = {names.get(path.stem, path.stem) for path in (REPO_ROOT / "recipes").glob("*.py")}
    assert commands - set(hook.COMMAND_ARGUMENTS) == set(), "commands missing from COMMAND_ARGUMENTS"
    page = hook.commands_page()
    for command, (_, specs) in hook.COMMAND_ARGUMENTS.items():
        assert f"## `hfsiamese {command}`" in page
        for spec in specs:
            cls = hook.import_object(spec)
            for field in dataclasses.fields(cls):
                if field.init and field.metadata.get("help") is not None:
                    assert f"`--{field.name}`" in page, f"{spec}: --{field.name} is not on the commands page"
    configs = hook.configs_page()
    for folder, _ in hook.CONFIG_FOLDERS:
        for path in (REPO_ROOT / folder).glob("*.yaml"):
            assert path.read_text(encoding="utf-8").rstrip() in configs


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("front_page", ["README.md"])
def test_front_page_links_resolve(front_page):
    """The README (and the front page that replaces it) links into the docs: every relative link names a file."""
    path = REPO_ROOT / front_page
    if not path.exists():
        assert front_page != "README.md"
        return  # the front page has been swapped in as README.md
    targets = [target for target in LINK.findall(path.read_text(encoding="utf-8")) if "://" not in target]
    missing = [target for target in targets if not (REPO_ROOT / target).exists()]
    assert missing == [], f"{front_page}: links to missing files"


METRIC_FILES = [
    REPO_ROOT / "hfsiamese" / "metrics" / "__init__.py",
    *sorted((REPO_ROOT / "hfsiamese" / "metrics").glob("*/*.py")),
]


@pytest.mark.parametrize("path", METRIC_FILES, ids=lambda path: path.parent.name)
def test_metric_examples_run(path):
    """The metrics' docstring examples (the API reference shows them) run as doctests: cheap, and they cannot rot.

    The losses' examples run in tests/losses/test_registry.py; the model, index, cross-encoder, ONNX and pipeline
    examples need a trained folder, and the docs' own blocks (test_docs_run_in_order) make the same calls on one.
    """
    import evaluate

    import hfsiamese.metrics

    texts = [
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ">>>" in node.value
    ]
    assert texts, f"{path}: no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for text in texts:
        globs = {"evaluate": evaluate, "hfsiamese": hfsiamese}
        runner.run(doctest.DocTestParser().get_doctest(text, globs, str(path), str(path), 0))
    assert runner.failures == 0 and runner.tries > 0


# Its own deadline: every page's blocks in order took 26 minutes on a 2-core machine at load 6 (the default is 600 s).
@pytest.mark.timeout(2700)
@pytest.mark.runs_first
@pytest.mark.slow
def test_docs_run_in_order(repo_copy, monkeypatch, record_property):  # noqa: F811 (repo_copy: the imported fixture)
    env = offline_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1"
    )
    env.pop("ACCELERATE_USE_CPU", None)
    assert shutil.which("hfsiamese", path=env["PATH"]), (
        "the docs run the `hfsiamese` command: install the package into this venv (pip install -e .) to put it on PATH"
    )
    monkeypatch.chdir(repo_copy)
    ran, skipped, met, unchecked = [], [], set(), []  # met: the DOCS_EXPECTATIONS entries checked
    took: list[tuple[float, str]] = []  # seconds a block took, printed for the slowest: where the suite's time goes
    for page in page_order():
        text = page.read_text(encoding="utf-8")
        namespace: dict[str, object] = {}  # each page defines the names its snippets use
        for block in readme_blocks(text):
            where = f"{page.relative_to(REPO_ROOT).as_posix()}:{block.line}"
            if block.skip:
                skipped.append(f"{where} ({block.language}): {block.skip}")
                continue
            started = time.perf_counter()
            if block.language == "python":
                if not run_python_block(block, where, namespace, repo_copy, met, DOCS_EXPECTATIONS):
                    unchecked.append(f"{where} (python): runs without error, nothing more promised")
                ran.append(where)
                took.append((time.perf_counter() - started, where))
                continue
            keep = as_written(text, block.line)
            for written in shell_commands(block.code):
                if keep:
                    steps = [step.strip() for step in written.split("&&") if not INSTALL_ONLY.match(step)]
                    command = " && ".join(steps) or None
                else:
                    command = runnable(written)
                if command is None:
                    continue
                if not run_shell_command(written, command, where, repo_copy, env, met, DOCS_EXPECTATIONS, timeout=900):
                    unchecked.append(f"{where}: `{written[:100]}` exits 0, nothing more checked")
                ran.append(where)
            took.append((time.perf_counter() - started, where))
    slowest = ", ".join(f"{where} {seconds:.0f} s" for seconds, where in sorted(took)[::-1][:12])
    note = [f"docs test: {len(ran)} commands/blocks run, {len(skipped)} blocks skipped"]
    note += [f"skipped {line}" for line in skipped] + [f"no expectation: {line}" for line in unchecked]
    record_property(RUN_NOTE, "\n".join([*note, f"slowest blocks: {slowest}"]))  # in the session's summary
    assert ran
    missed = sorted(set(DOCS_EXPECTATIONS) - met)
    assert not missed, f"docs expectations that met no block (edit DOCS_EXPECTATIONS in tests/test_readme.py): {missed}"


def test_every_docs_expectation_names_a_block_that_runs():
    """Fast, without running the docs: each DOCS_EXPECTATIONS entry finds a command or Python block of a page in the
    nav that the docs test runs (not one marked `readme-test: skip`); the checks' failures: tests/test_readme.py."""
    texts = [text for page in page_order() for text in runnable_texts(page.read_text(encoding="utf-8"))]
    assert unmatched(DOCS_EXPECTATIONS, texts) == [], "find no runnable docs block"
    skipped_only = "hfsiamese train --model_name_or_path x --output_dir outputs/y"
    assert unmatched(
        {r"--output_dir outputs/y$": lambda ran: None},
        runnable_texts(f"<!-- readme-test: skip z -->\n```bash\n{skipped_only}\n```\n"),
    )
