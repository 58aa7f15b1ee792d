"""
The order tests are handed out in: a test marked `@pytest.mark.runs_first` (many minutes: the docs and README runs) is
collected ahead of the others. Under pytest-xdist (`-n 2 --dist loadfile`, pyproject.toml) the modules go to the
workers in collection order, so such a test starts at once and the other worker runs the rest of the suite beside
it; collected last, it would run alone at the end. Loaded by tests/conftest.py.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "runs_first: a test of many minutes, collected first so that under pytest-xdist it starts at once, beside "
        "the rest of the suite (tests/plugins/run_order.py)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `runs_first` tests ahead of the others (a stable sort: the rest keep their order)."""
    items.sort(key=lambda item: item.get_closest_marker("runs_first") is None)
