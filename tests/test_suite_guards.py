"""
The suite's own guards, shown on inner pytest sessions (pytester): a hang is stopped and named, a skip off the
allow-list fails the session (tests/plugins/skip_allowlist.py), an optional backend that cannot be imported is
an error. The inner sessions use this session's settings (pyproject.toml), with shorter limits.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT
from tests.plugins.skip_allowlist import ALLOWED_SKIP_PREFIXES

ALLOW_LIST = ("-p", "tests.plugins.skip_allowlist")


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")  # the inner session's rootdir is its own folder, whatever lies above it
    return pytester


def test_the_suite_runs_under_its_guards(request):
    config = request.config
    assert config.pluginmanager.has_plugin("skip-ledger")
    assert float(config.getini("timeout")) > 0 and config.getini("timeout_method") == "signal"
    assert config.getini("faulthandler_exit_on_timeout") is True
    # The backstop comes after every test's own limit, or it would end the session before that test's report.
    backstop = float(config.getini("faulthandler_timeout"))
    marks = [
        int(n)
        for path in (REPO_ROOT / "tests").rglob("*.py")
        for n in re.findall(r"mark\.timeout\((\d+)", path.read_text())
    ]
    assert marks and max([*marks, float(config.getini("timeout"))]) < backstop


def test_a_hanging_test_fails_by_name_and_the_session_goes_on(inner, request):
    inner.makepyfile(
        """
        import time

        def test_waits_forever():
            time.sleep(3600)

        def test_after_it():
            pass
        """
    )
    method = request.config.getini("timeout_method")
    result = inner.runpytest_subprocess("-o", "timeout=2", "-o", f"timeout_method={method}", timeout=120)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*Timeout (>2.0s) from pytest-timeout*", "FAILED *::test_waits_forever*"])


def test_a_hang_no_signal_reaches_ends_the_session_with_every_stack(inner, request):
    """Where pytest-timeout's SIGALRM cannot interrupt the test (here: blocked), faulthandler's backstop ends it."""
    inner.makepyfile(
        """
        import signal
        import time

        def test_deaf_to_signals():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        """
    )
    exit_on_timeout = str(request.config.getini("faulthandler_exit_on_timeout")).lower()
    result = inner.runpytest_subprocess(
        "-o", "timeout=1", "-o", f"timeout_method={request.config.getini('timeout_method')}",
        "-o", "faulthandler_timeout=4", "-o", f"faulthandler_exit_on_timeout={exit_on_timeout}", timeout=120,
    )  # fmt: skip
    assert result.ret not in (0, None)
    result.stderr.fnmatch_lines(["Timeout (0:00:04)!*", "*in test_deaf_to_signals*"])


def test_a_skip_off_the_allow_list_fails_the_session(inner):
    inner.makepyfile(
        """
        import pytest

        def test_passes():
            pass

        def test_needs_a_backend():
            pytest.skip("the backend is not installed")

        @pytest.mark.xfail(reason="flaky", strict=False)
        def test_expected_to_fail():
            assert False
        """
    )
    result = inner.runpytest_inprocess(*ALLOW_LIST)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "*skips not on the allow-list*",
            "*::test_needs_a_backend: the backend is not installed",
            "*::test_expected_to_fail: xfail: flaky",
            "2 skip(s) fail this session*",
        ]
    )


@pytest.mark.parametrize("prefix", ALLOWED_SKIP_PREFIXES)
def test_a_skip_on_the_allow_list_does_not(inner, prefix):
    inner.makepyfile(
        f"""
        import pytest

        def test_passes():
            pass

        @pytest.mark.skipif(True, reason="{prefix} what the test needs")
        def test_needs_the_machine():
            pass
        """
    )
    result = inner.runpytest_inprocess(*ALLOW_LIST)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=1)
    assert "skips not on the allow-list" not in result.stdout.str()


def test_a_module_skipped_whole_fails_the_session(inner):
    """`pytest.importorskip` at module level: the whole file one "skipped" line, and a session that ran nothing."""
    inner.makepyfile(
        test_backend="""
        import pytest

        pytest.importorskip("a_backend_that_is_not_installed")

        def test_uses_it():
            pass
        """
    )
    result = inner.runpytest_inprocess(*ALLOW_LIST)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["test_backend.py: could not import 'a_backend_that_is_not_installed'*"])


def test_an_optional_backend_that_cannot_be_imported_is_an_error(inner):
    """The suite imports the backends of the test extra plainly: one that installs but fails to import is an error."""
    inner.makepyfile(
        broken_backend="raise ImportError('libbackend.so: cannot open shared object file')",
        test_backend="""
        import broken_backend

        def test_uses_it():
            pass
        """,
    )
    result = inner.runpytest_inprocess(*ALLOW_LIST)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting test_backend.py*", "*ImportError: libbackend.so*"])


def test_a_runs_first_test_is_collected_ahead_of_the_others(inner):
    """Under xdist the modules go out in collection order: the docs run, marked, must lead it, not close it."""
    inner.makepyfile(
        test_a="""
        def test_quick():
            pass
        """,
        test_b="""
        import pytest

        def test_before_it():
            pass

        @pytest.mark.runs_first
        def test_of_many_minutes():
            pass
        """,
    )
    result = inner.runpytest_inprocess("-p", "tests.plugins.run_order", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    collected = [line for line in result.stdout.lines if "::" in line]
    assert collected == ["test_b.py::test_of_many_minutes", "test_a.py::test_quick", "test_b.py::test_before_it"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two xdist workers"])
def test_a_run_note_reaches_the_sessions_summary_from_any_worker(inner, workers, monkeypatch):
    """The docs and README runs' own counts (blocks run, skipped, slowest): printed by the test, they stayed in its
    xdist worker; recorded as a run note, the summary of the session shows them."""
    inner.makepyfile(
        test_noted="""
        from tests.plugins.run_notes import RUN_NOTE

        def test_long_run(record_property):
            record_property(RUN_NOTE, "docs test: 3 commands/blocks run, 1 blocks skipped\\nslowest blocks: a.md:1 9 s")
        """
    )
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the inner processes import this suite's plugin
    result = inner.runpytest_subprocess("-p", "tests.plugins.run_notes", "-p", "no:cacheprovider", *workers)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*what the docs and README runs ran*", "test_noted.py::test_long_run:", "  docs test: 3 commands/blocks run*",
         "  slowest blocks: a.md:1 9 s"]
    )  # fmt: skip


def test_ci_runs_both_parts_of_the_suite(request):
    """`slow` splits the suite for the quick loop only: CI's command (README's test command, which .ci/run runs)
    selects no marker and deselects nothing, so the slow part runs on every CI run."""
    assert any(line.startswith("slow:") for line in request.config.getini("markers"))
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    command = readme.split("<!-- test-command -->")[1].split("<!-- /test-command -->")[0]
    pytest_part = command[command.index("-m pytest") + len("-m pytest") :]
    assert not re.search(r"(^|\s)(-m|-k|--deselect|--ignore)\b", pytest_part), pytest_part
    addopts = " ".join(request.config.getini("addopts"))
    assert not re.search(r"(^|\s)(-m|-k|--deselect|--ignore)\b", addopts), addopts
