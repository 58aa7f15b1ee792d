"""Writing benchmark results into benchmarks/README.md: markdown tables, appended sections, table rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent / "README.md"


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The lines of a markdown table; None cells are left empty."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join("" if cell is None else str(cell) for cell in row) + " |")
    return lines


def append_section(lines: Sequence[str], readme: Path = README) -> None:
    """Append `lines` (a heading, a table, notes) at the end of the README."""
    with readme.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def insert_table_row(readme: Path, header_prefix: str, line: str) -> None:
    """Add `line` as the last row of the table whose header starts with `header_prefix` (not at the
    file's end, where later sections would separate it from its table)."""
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, text in enumerate(lines) if text.startswith(header_prefix)]
    if not starts:
        raise SystemExit(f"{readme} has no table starting with {header_prefix!r}")
    end = starts[0]
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines.insert(end, line)
    readme.write_text("".join(lines), encoding="utf-8")
