"""The web app names each result's duplicate group and canonical question, and lists the largest groups."""

from __future__ import annotations

import gradio as gr

from hfsiamese.cli.app_page import DuplicateSearch, build_app
from hfsiamese.search import DuplicateIndex
from tests.search.group_vectors import THRESHOLD, corpus, model


def grouped_app() -> DuplicateSearch:
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD)
    index.find_groups()
    return DuplicateSearch(index.model, index, k=3)


def test_search_results_name_their_group_and_canonical_question():
    app = grouped_app()
    _, table = app.search("python 3")
    header, _, first, second, third = table.splitlines()
    assert header.endswith("| group | canonical question |")
    assert first.endswith("| 9 | group 0 (3) | python 1 |")  # python 3 itself, in python 1's group of three
    assert "| group 0 (3) | python 1 |" in second and "| group 0 (3) | python 1 |" in third


def test_the_groups_tab_lists_the_largest_groups():
    app = grouped_app()
    listing = app.group_cells.largest()
    lines = listing.splitlines()
    assert lines[0] == "The 4 largest of 5 groups (guard `mean`):"
    assert lines[4] == "| 0 | 3 | python 1 | 0 |" and "| 2 | chain a | 1 |" in lines[5]
    blocks = build_app(app)
    assert any(isinstance(block, gr.Markdown) and block.value == listing for block in blocks.blocks.values())
    assert any(isinstance(block, gr.Tab) and block.label == "Groups" for block in blocks.blocks.values())


def test_an_index_without_groups_shows_none():
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD)
    app = DuplicateSearch(index.model, index, k=2)
    header = app.search("python 3")[1].splitlines()[0]
    assert "group" not in header and "canonical" not in header
    assert app.group_cells.largest().startswith("No duplicate groups yet: run `hfsiamese groups`")
