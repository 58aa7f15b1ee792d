"""The serve command's truncation log (hfsiamese/service/truncation_log.py): the first cut shown, every cut counted,
other warnings untouched."""

from __future__ import annotations

import warnings

from hfsiamese.models.siamese.token_fields import warn_truncated
from hfsiamese.service.truncation_log import TruncationLog, install


def test_the_first_cut_is_shown_every_cut_counted_and_other_warnings_pass():
    counted: list[int] = []
    shown: list[str] = []
    log = TruncationLog(counted.append, lambda message, *rest, **options: shown.append(str(message)))
    log("3 of 20 texts were longer than max_length=48 tokens and were truncated", UserWarning, "f.py", 1)
    log("1 of 20 texts were longer than max_length=48 tokens and were truncated", UserWarning, "f.py", 1)
    log("2 of 8 pairs were longer than max_length=128 tokens and were truncated", UserWarning, "f.py", 1)
    log("something else", UserWarning, "f.py", 2)
    assert counted == [3, 1, 2]
    assert len(shown) == 2 and shown[0].startswith("3 of 20 texts") and "hfsiamese_truncated_texts_total" in shown[0]
    assert shown[1] == "something else"


def test_installed_it_sees_repeats_of_one_message(monkeypatch):
    counted: list[int] = []
    shown: list[str] = []
    with warnings.catch_warnings():  # install changes the process's warnings: only inside this block
        warnings.simplefilter("default")
        monkeypatch.setattr(warnings, "showwarning", lambda message, *rest, **options: shown.append(str(message)))
        install(counted.append)
        for _ in range(3):  # the same text each time: the default filter would show (and so count) it once
            warn_truncated(1, 5, 48)
        warnings.warn("a user's own warning", UserWarning, stacklevel=1)
    assert counted == [1, 1, 1] and len(shown) == 2 and shown[1] == "a user's own warning"
