"""`run_recipe`: a recipe's error as one line and an exit status; the traceback only when asked for."""

import sys
import warnings

import pytest

from hfsiamese.cli.command_line import UsageError, error_line, one_line_warning, run_recipe


@pytest.fixture(autouse=True)
def restore_warning_format(monkeypatch):
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # run_recipe replaces it for the process


def run(main, monkeypatch, capsys, argv=(), **env):
    monkeypatch.setattr(sys, "argv", ["recipe.py", *argv])
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        run_recipe(main)
    return exited.value.code, capsys.readouterr().err


def fail(err):
    def main():
        raise err

    return main


def test_error_is_one_line_with_status_1(monkeypatch, capsys):
    code, err = run(fail(ValueError("data.csv: invalid label 'maybe'\n  in data row 2")), monkeypatch, capsys)
    assert (code, err) == (1, "error: data.csv: invalid label 'maybe' in data row 2\n")


def test_usage_error_has_status_2_and_success_0(monkeypatch, capsys):
    assert run(fail(UsageError("unrecognized arguments: --max_step 5")), monkeypatch, capsys)[0] == 2
    assert run(lambda: {"ok": 1}, monkeypatch, capsys) == (0, "")


def test_debug_flag_or_variable_lets_the_traceback_through(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(sys, "argv", ["recipe.py", "--debug", "--x", "1"])
    with pytest.raises(ValueError, match="boom"):
        run_recipe(lambda: seen.append(list(sys.argv)) or fail(ValueError("boom"))())
    assert seen == [["recipe.py", "--x", "1"]]  # --debug is the command's, not the recipe's flag
    monkeypatch.setattr(sys, "argv", ["recipe.py"])
    monkeypatch.setenv("HFSIAMESE_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        run_recipe(fail(ValueError("boom")))


def test_only_the_first_process_prints(monkeypatch, capsys):
    assert run(fail(ValueError("same on every rank")), monkeypatch, capsys, RANK="1") == (1, "")


def test_messages_of_os_and_key_errors_read_as_sentences():
    assert (
        error_line(FileNotFoundError(2, "No such file or directory", "x.tsv"))
        == "error: x.tsv: No such file or directory"
    )
    assert error_line(KeyError("no column 'q1'")) == "error: no column 'q1'"
    assert error_line(RuntimeError()) == "error: RuntimeError"


def test_warnings_print_as_one_line():
    text = one_line_warning(UserWarning("62 of 18000 texts\nwere truncated"), UserWarning, "train.py", 78)
    assert text == "warning: 62 of 18000 texts were truncated\n"
