"""Every `hfsiamese COMMAND --flag ...` that a message, help text, docstring, shipped config, README or run summary
shows names a real command and flags that command takes: a command shown to a user works as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hfsiamese.cli.main import COMMANDS, main as cli_main
from hfsiamese.training.run_summary import run_summary
from tests.conftest import REPO_ROOT

# `hfsiamese WORD` not inside a name (hfsiamese.cli, 'hfsiamese[lora]', path/hfsiamese), then the rest of that
# command: up to a backtick, a quote, a closing bracket or the end of the line.
MENTION = re.compile(r"(?<![\w.\[/-])hfsiamese (?P<word>[a-z][a-z_-]*)(?P<rest>[^`'\"\)\n]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")
SOURCES = [*sorted((REPO_ROOT / "hfsiamese").rglob("*.py")), *sorted((REPO_ROOT / "hfsiamese").rglob("*.yaml")),
           *sorted((REPO_ROOT / "hfsiamese" / "templates").glob("*.md")), REPO_ROOT / "README.md",
           *sorted((REPO_ROOT / "docs").rglob("*.md"))]  # fmt: skip


@pytest.fixture(scope="module")
def options():
    """Each command's flags, read from its --help."""
    found = {}
    for command in COMMANDS:
        with pytest.MonkeyPatch.context() as patch:
            import io
            import sys

            out = io.StringIO()
            patch.setattr(sys, "stdout", out)
            with pytest.raises(SystemExit):
                cli_main([command, "--help"])
        found[command] = set(FLAG.findall(out.getvalue())) | {"--debug", "--list-configs", "--list_configs", "--flag"}
    return found


def command_part(rest: str) -> str:
    """The words of `rest` that belong to the command: flags, their values and one leading positional (a config);
    the first other word starts prose ("hfsiamese export from the saved folder ...")."""
    kept: list[str] = []
    for word in rest.split():
        if not (word.startswith("-") or not kept or kept[-1].startswith("--")):
            break
        kept.append(word)
    return " " + " ".join(kept) if kept else ""


def mentions(text: str) -> list[tuple[str, str]]:
    """The (command word, its arguments) of each `hfsiamese WORD ...` in `text` that reads as a command."""
    found = []
    for match in MENTION.finditer(text):
        if text[match.end() :].lstrip("\n").startswith("error:"):  # a shown refusal ("$ hfsiamese train --max_step 10")
            continue
        word, rest = match["word"], command_part(match["rest"].replace("[", " ").replace("]", " "))
        if word in COMMANDS or rest.lstrip().startswith("-"):  # prose ("hfsiamese is ...") is not a command
            found.append((word, rest))
    return found


def check(commands: list[tuple[str, str]], options: dict[str, set[str]], where: str) -> None:
    for word, rest in commands:
        assert word in COMMANDS, f"{where}: `hfsiamese {word}` is no command (commands: {', '.join(COMMANDS)})"
        unknown = set(FLAG.findall(rest)) - options[word]
        assert not unknown, f"{where}: `hfsiamese {word}{rest}` uses flags the command does not take: {sorted(unknown)}"


def test_the_mentions_are_found():
    text = "run `hfsiamese train minilm_qqp --max_steps 3`; hfsiamese is a library; pip install 'hfsiamese[lora]'"
    assert mentions(text) == [("train", " minilm_qqp --max_steps 3")]
    assert mentions("`hfsiamese export` from the saved folder rather than --x") == [("export", "")]
    assert mentions("hfsiamese export from the saved folder rather than --x") == [("export", " from")]
    assert mentions("hfsiamese trian --max_steps 3") == [("trian", " --max_steps 3")]
    assert mentions("$ hfsiamese train --max_step 10\nerror: ... --max_step ...") == []  # the error it shows


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_command_shown_in_the_sources_parses(path: Path, options):
    check(mentions(path.read_text(encoding="utf-8")), options, str(path.relative_to(REPO_ROOT)))


@pytest.mark.parametrize("reranker", [False, True])
@pytest.mark.parametrize(
    "typed", [None, ["minilm_qqp", "--train_file", "my pairs.tsv", "--max_steps", "3", "--split_seed=4"]]
)
def test_every_next_command_of_the_run_summary_parses(reranker, typed, options, tmp_path, monkeypatch):
    from hfsiamese.cli.configs import DEFAULT_CONFIG
    from hfsiamese.cli.split import held_out_command

    monkeypatch.chdir(tmp_path)
    metrics = {"eval_average_precision": 0.8, "eval_accuracy": 0.7, "eval_threshold": 0.5, "train_runtime": 3.0}
    split_command = None if typed is None else held_out_command(typed, DEFAULT_CONFIG)
    summary = run_summary(
        tmp_path / "outputs" / "run",
        metrics,
        corpus_file=tmp_path / "pairs.tsv",
        reranker=reranker,
        split_command=split_command,
    )
    if typed is not None:  # the data flags only, the config as typed, quoted for the shell
        assert (
            split_command
            == "hfsiamese split minilm_qqp --train_file 'my pairs.tsv' --split_seed=4 --output_file HELD_OUT_PAIRS.jsonl"
        )
        assert f"`{split_command}`" in summary
    shown = mentions(summary)
    assert [word for word, _ in shown] == ["evaluate", "split", "search"]
    check(shown, options, "the run summary")
