"""
The one way a benchmark takes its arguments, names its machine and writes its results.

Every script runs as `python benchmarks/<folder>/<script>.py ...` and puts the repository on `sys.path` first thing
(`benchmarks.*` imports). Its figures go out as JSON lines on stdout (`emit`) and, where it keeps a table in the lab
notebook `benchmarks/README.md`, as markdown rows there (`markdown_table`, `add_table_rows`, `append_section`), each
row naming the date, the machine and the command that produced it (`today`, `machine`, `command_line`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1]
REPO = BENCHMARKS.parent
#: The lab notebook: every run described in full, dated (docs/benchmarks-history.md includes it).
README = BENCHMARKS / "README.md"
#: The pairs `recipes/train.py` trains on when a config names no train_file or dataset_name.
EMBEDDED_PAIRS = REPO / "recipes" / "data" / "qqp_dev.tsv"
TRAIN_SCRIPT = REPO / "recipes" / "train.py"


def argument_parser(doc: str | None, *, append: bool = False, **options: Any) -> argparse.ArgumentParser:
    """A script's parser: its docstring as the description (kept as written); `append` adds `--append`."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter, **options)
    if append:
        parser.add_argument("--append", action="store_true", help="add the results to benchmarks/README.md")
    return parser


def machine() -> str:
    """`<cores> cores, <CPU model>` (the model from /proc/cpuinfo where there is one)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}"


def today() -> str:
    """The date a row is stamped with (ISO)."""
    return dt.date.today().isoformat()


def script_path(script: str) -> str:
    """`benchmarks/<folder>/<script>.py`: a script's path from the repository, as the notebook's commands name it."""
    return Path(script).resolve().relative_to(REPO).as_posix()


def command_line(script: str, argv: Sequence[str] | None = None) -> str:
    """`python benchmarks/<folder>/<script>.py ARGS` as the notebook shows it: its arguments (`sys.argv[1:]` by
    default) without `--append`."""
    arguments = sys.argv[1:] if argv is None else argv
    return " ".join(["python", script_path(script), *(a for a in arguments if a != "--append")])


def emit(row: dict[str, Any], **dumps: Any) -> None:
    """One result row as a JSON line on stdout, flushed (a driver or a log reads it as it comes)."""
    print(json.dumps(row, **dumps), flush=True)


def write_json(path: str | Path, value: Any) -> None:
    """A whole report as indented JSON (a run's results file)."""
    Path(path).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def write_results(folder: Path, name: str, result: dict[str, Any], table: Sequence[str], note: str) -> None:
    """
    A run's results in one place: FOLDER/NAME.json (all of `result`), FOLDER/NAME.md (`` `command` (note) `` over the
    markdown `table`, ready for the notebook) and that markdown on stdout.
    """
    write_json(folder / f"{name}.json", result)
    markdown = [f"`{result['command']}` ({note})", "", *table]
    (folder / f"{name}.md").write_text("\n".join(markdown) + "\n", encoding="utf-8")
    print("\n".join(markdown))


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The lines of a markdown table; None cells are left empty."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join("" if cell is None else str(cell) for cell in row) + " |")
    return lines


def append_section(lines: Sequence[str], readme: Path = README) -> None:
    """Append `lines` (a heading, a table, notes) at the end of the notebook."""
    with readme.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def add_table_rows(heading: str, header: str, rows: Sequence[str], section: str, readme: Path = README) -> None:
    """
    Add `rows` as the last rows of the table whose header line is `header`, the first such table after `heading` (not
    at the file's end, where later sections would separate them from their table). A notebook without `heading` gets
    `section` (the heading, its text, the header and its rule) appended first.
    """
    text = readme.read_text(encoding="utf-8") if readme.exists() else "# Benchmarks\n"
    if heading not in text:
        text = text.rstrip("\n") + "\n\n" + section.strip("\n") + "\n"
    lines = text.splitlines()
    try:
        at = lines.index(header, lines.index(heading)) + 2
    except ValueError:
        raise SystemExit(f"{readme} has no table {header!r} under {heading!r}") from None
    while at < len(lines) and lines[at].startswith("|"):
        at += 1
    lines[at:at] = rows
    readme.write_text("\n".join(lines) + "\n", encoding="utf-8")


def insert_table_row(readme: Path, header_prefix: str, line: str) -> None:
    """Add `line` as the last row of the first table whose header starts with `header_prefix`."""
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, text in enumerate(lines) if text.startswith(header_prefix)]
    if not starts:
        raise SystemExit(f"{readme} has no table starting with {header_prefix!r}")
    end = starts[0]
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines.insert(end, line)
    readme.write_text("".join(lines), encoding="utf-8")
