"""A command's --help states each option's default once: the field's own words, argparse's value where they say none,
and the value a recipe config sets, named with that config."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.cli.command_parser import SAYS_ITS_DEFAULT, command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags


@dataclass
class Options:
    pairs: str | None = field(default=None, metadata={"help": "Pair file (default: the embedded QQP pairs)."})
    steps: int = field(default=3, metadata={"help": "Training steps."})
    weight: float = field(default=0.1, metadata={"help": "Ranking weight (default 0.1)."})
    model: str | None = field(default=None, metadata={"help": "A model folder."})


def help_of(parser) -> dict[str, str]:
    """Each option's help, by its flag."""
    return {flag.lstrip("-"): text.split(" ", 1)[1] for flag, text in option_helps(parser.format_help()).items()}


def test_a_default_is_said_once_and_never_as_none():
    helps = help_of(command_parser(Options, prog="x"))
    assert helps["pairs"] == "PAIRS Pair file (default: the embedded QQP pairs)."  # nothing added to words saying it
    assert helps["steps"] == "STEPS Training steps. (default: 3)"  # argparse's value where the help says none
    assert helps["weight"] == "WEIGHT Ranking weight (default 0.1)."
    assert helps["model"] == "MODEL A model folder."  # not "(default: None)"


def test_a_value_a_config_sets_is_named_with_the_config(tmp_path):
    config = tmp_path / "small.yaml"
    config.write_text("steps: 7\nweight: 0.05\n")
    parser = command_parser(Options, prog="x")
    (options,) = parse_config_and_flags(parser, [str(config)])
    assert (options.steps, options.weight) == (7, 0.05)
    helps = help_of(parser)
    assert helps["steps"] == "STEPS Training steps. (set by small.yaml: 7)"
    assert helps["weight"] == "WEIGHT Ranking weight (default 0.1). (set by small.yaml: 0.05)"  # the field's, the run's
    assert helps["pairs"] == "PAIRS Pair file (default: the embedded QQP pairs)."


def option_helps(text: str) -> dict[str, str]:
    """Each option of a --help text (its first flag) -> its help, whitespace collapsed."""
    blocks = re.split(r"\n  (?=-)", text.split("\noptions:\n", 1)[-1])
    return {block.split()[0].rstrip(","): " ".join(block.split()) for block in blocks if block.startswith("-")}


@pytest.mark.parametrize("command", sorted(set(cli_main.COMMANDS) - {"env", "configs"}))
def test_no_command_says_an_option_defaults_to_none_or_says_it_twice(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main([command, "--help"])
    assert exit_info.value.code == 0
    helps = option_helps(capsys.readouterr().out)
    assert len(helps) > 5
    for option, text in helps.items():
        assert "(default: None)" not in text, f"hfsiamese {command} {option}: {text}"
        added = re.search(r"\(default: [^()]*\)$", text)  # argparse's, at the end: only after words saying none
        assert added is None or not SAYS_ITS_DEFAULT.search(text[: added.start()]), (
            f"hfsiamese {command} {option}: {text}"
        )


@pytest.mark.parametrize(
    ("config", "value"), [(None, "multiple_negatives_ranking"), ("minilm_qqp", "hard_negative_triplet")]
)
def test_train_help_shows_what_the_config_it_would_run_sets(config, value, capsys):
    with pytest.raises(SystemExit):
        cli_main.main(["train", *([config] if config else []), "--help"])
    ranking_loss = option_helps(capsys.readouterr().out)["--ranking_loss"]
    assert ranking_loss.endswith(f"(set by {config or 'lstm_qqp'}.yaml: {value})"), ranking_loss
