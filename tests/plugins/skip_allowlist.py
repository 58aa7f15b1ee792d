"""
Skips that are counted: a session in which a test was skipped for a reason that is not a fact of the machine
named on the allow-list below (or xfailed: never allowed) ends with a failing exit status, and its summary lists
each such test with its reason. So a whole area cannot go quiet with CI green: an optional backend of the `test` extra that
installs but fails to import, a browser that failed to install, a package left out of the test environment.

The allow-list: a skip reason must start with one of these prefixes, then say what the test needs, e.g.
`pytest.mark.skipif(not sys.platform.startswith("linux"), reason="not Linux: reads /proc/stat")`.

    not Linux:                      the test reads what only Linux has (/proc)
    no CUDA GPU:                    the test needs a CUDA device the machine lacks
    no non-loopback IPv4 address:   the machine has no network address to try besides 127.0.0.1
    not on this CPU:                a CPU capability above the machine's, which caps cannot emulate
                                    (tests/test_cpu_capabilities.py)
    the machine's own CPU kind:     a capped run of the machine's own capability: the plain run is that run

Anything else (a missing or broken package, a missing program, "not implemented yet") is a failure to fix, by
installing it in the `test` extra (pyproject.toml) or .ci/run, not a skip. Loaded by tests/conftest.py; one
session can leave it out with `-p no:tests.plugins.skip_allowlist`.
"""

from __future__ import annotations

import pytest

ALLOWED_SKIP_PREFIXES = (
    "not Linux:",
    "no CUDA GPU:",
    "no non-loopback IPv4 address:",
    "not on this CPU:",
    "the machine's own CPU kind:",
)


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason a skipped (or xfailed) report gives, without pytest's "Skipped: " prefix."""
    if hasattr(report, "wasxfail"):  # never allowed: a test expected to fail checks nothing
        return f"xfail: {report.wasxfail}" if report.wasxfail else "xfail"
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ").removeprefix("Skipped")


def is_allowed(reason: str) -> bool:
    return reason.startswith(ALLOWED_SKIP_PREFIXES)


class SkipLedger:
    """Collects the skips not on the allow-list, fails the session on them and lists them in the summary."""

    def __init__(self) -> None:
        self.refused: list[tuple[str, str]] = []  # (node id, reason)

    def _note(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if report.skipped:
            reason = skip_reason(report)
            if not is_allowed(reason):
                self.refused.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)  # a module-level skip: the whole file

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.refused and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.refused:
            return
        terminalreporter.section("skips not on the allow-list", sep="=", red=True, bold=True)
        for nodeid, reason in self.refused:
            terminalreporter.line(f"{nodeid}: {reason}")
        terminalreporter.line(
            f"{len(self.refused)} skip(s) fail this session: only a reason starting with one of "
            f"{', '.join(map(repr, ALLOWED_SKIP_PREFIXES))} may skip (tests/plugins/skip_allowlist.py)"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SkipLedger(), "skip-ledger")
