"""
What a long test says about its own run (the docs and README runs: the blocks run and skipped, those no expectation
checks, the slowest), as a section of the session's summary. Under pytest-xdist a test's own printing stays in its
worker process and never reaches the output a CI page shows; a note recorded with `record_property(RUN_NOTE, text)`
travels with the test's report to the process that prints the summary. Loaded by tests/conftest.py.
"""

from __future__ import annotations

import pytest

RUN_NOTE = "run_note"


class RunNotes:
    """Collects the notes of the tests' call reports and prints them after the run."""

    def __init__(self) -> None:
        self.notes: list[tuple[str, str]] = []  # (node id, text)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.notes += [(report.nodeid, str(value)) for name, value in report.user_properties if name == RUN_NOTE]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.notes:
            return
        terminalreporter.section("what the docs and README runs ran", sep="-")
        for nodeid, text in self.notes:
            terminalreporter.line(f"{nodeid}:")
            for line in text.splitlines():
                terminalreporter.line(f"  {line}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(RunNotes(), "run-notes")
