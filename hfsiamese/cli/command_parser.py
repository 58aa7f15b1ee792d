"""The parser every command builds: `HfArgumentParser` over its dataclasses, with help that states each default once.

`HfArgumentParser` appends argparse's "(default: X)" to every option's help. Where a field's help already says what
its default means ("Pair file (default: the embedded QQP pairs)"), that added "(default: None)" contradicted it, and
on an option left unset it names a Python value, not a behaviour. A recipe config's values become the parser's
defaults (`parse_config_and_flags`): those are what a run uses, so the help names the config that set them
("(set by lstm_qqp.yaml: multiple_negatives_ranking)") beside the field's own default. argparse has no formatter
that knows either, hence the small subclasses here.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from typing import Any

from transformers import HfArgumentParser

# The help already speaks of the default: "(default: ...)", "(default 0.1)", "default: ...", "defaults to ...".
SAYS_ITS_DEFAULT = re.compile(r"\(default\b|\bdefault:|\bdefaults? to\b", re.IGNORECASE)


class OptionHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: X)" only where it adds something; a value a config set, named with that config."""

    def __init__(self, prog: str, *, config_values: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(prog, **kwargs)
        self.config_values = dict(config_values or {})  # option dest -> the config file that set its default

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        source = self.config_values.get(action.dest)
        if source is not None:
            return f"{help_text} (set by {source}: %(default)s)".lstrip()
        if action.default is None or SAYS_ITS_DEFAULT.search(help_text):
            return action.help
        return super()._get_help_string(action)


class CommandParser(HfArgumentParser):
    """`HfArgumentParser` whose help is written by `OptionHelpFormatter`, knowing which defaults a config set."""

    def __init__(self, dataclass_types: type | Iterable[type], **kwargs: Any) -> None:
        self.config_values: dict[str, str] = {}  # option dest -> the config file that set its default
        kwargs.setdefault("formatter_class", OptionHelpFormatter)
        super().__init__(dataclass_types, **kwargs)

    def set_config_defaults(self, values: Mapping[str, Any], source: str) -> None:
        """A config's values as the defaults (flags given after it win), none of them demanded on the command line."""
        self.set_defaults(**values)
        for action in self._actions:
            if action.dest in values:
                action.required = False
                self.config_values[action.dest] = source

    def _get_formatter(self) -> argparse.HelpFormatter:
        if self.formatter_class is OptionHelpFormatter:
            return OptionHelpFormatter(prog=self.prog, config_values=self.config_values)
        return super()._get_formatter()


def command_parser(
    dataclass_types: type | Iterable[type], *, prog: str, description: str | None = None
) -> CommandParser:
    """The parser of the command `prog` over `dataclass_types`."""
    return CommandParser(dataclass_types, prog=prog, description=description)
