"""benchmarks/common/harness.py: the one way benchmark scripts name their command and write their tables."""

from __future__ import annotations

import json

import pytest

from benchmarks.common import harness

NOTEBOOK = """# Benchmarks

## Search (`search_scale.py`)

| config | recall |
|---|---|
| exact | 1.000 |

Notes under the search table.

## Training

| recipe | AP |
|---|---|
| lstm | 0.775 |
"""


def test_rows_go_under_their_own_table_not_at_the_end(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(NOTEBOOK, encoding="utf-8")
    harness.add_table_rows(
        "## Search (`search_scale.py`)", "| config | recall |", ["| faiss | 0.951 |"], section="", readme=readme
    )
    lines = readme.read_text(encoding="utf-8").splitlines()
    assert lines[lines.index("| exact | 1.000 |") + 1] == "| faiss | 0.951 |"
    assert lines[-1] == "| lstm | 0.775 |"


def test_a_notebook_without_the_heading_gets_the_section_first(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n", encoding="utf-8")
    section = "## LoRA memory\n\nWhat it measures.\n\n| model | peak |\n|---|---|\n"
    harness.add_table_rows(
        "## LoRA memory", "| model | peak |", ["| minilm | 1.2 GB |"], section=section, readme=readme
    )
    text = readme.read_text(encoding="utf-8")
    assert text.endswith("| model | peak |\n|---|---|\n| minilm | 1.2 GB |\n")


def test_a_missing_table_is_one_line_naming_it(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(NOTEBOOK, encoding="utf-8")
    with pytest.raises(SystemExit, match=r"has no table '\| model \| peak \|' under '## Training'"):
        harness.add_table_rows("## Training", "| model | peak |", ["| x |"], section="", readme=readme)
    with pytest.raises(SystemExit, match="no table starting with '| nothing'"):
        harness.insert_table_row(readme, "| nothing", "| x |\n")


def test_the_shown_command_names_the_script_from_the_repository_without_append():
    script = harness.BENCHMARKS / "search" / "search_scale.py"
    shown = harness.command_line(str(script), ["--num_texts", "1000", "--append", "--config", "exact"])
    assert shown == "python benchmarks/search/search_scale.py --num_texts 1000 --config exact"


def test_tables_and_results_files(tmp_path, capsys):
    table = harness.markdown_table(["config", "recall"], [["exact", 1.0], ["faiss", None]])
    assert table == ["| config | recall |", "|---|---|", "| exact | 1.0 |", "| faiss |  |"]
    harness.write_results(tmp_path, "run", {"command": "python x.py", "recall": 0.9}, table, note="2 cores")
    assert json.loads((tmp_path / "run.json").read_text()) == {"command": "python x.py", "recall": 0.9}
    assert (tmp_path / "run.md").read_text().splitlines()[0] == "`python x.py` (2 cores)"
    assert "| exact | 1.0 |" in capsys.readouterr().out
