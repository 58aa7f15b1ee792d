"""`save_pretrained` onto a path that is a file is refused in one line (transformers only logs an error and returns, so
the caller believed the model saved), the file left as it was; the retry into a folder saves."""

from __future__ import annotations

import pytest

from hfsiamese import SiameseModel
from tests.helpers import folder_state


def test_save_pretrained_onto_a_file_is_refused_and_the_file_kept(tiny_lstm, tmp_path):
    (tmp_path / "model").write_text("the user's notes")
    before = folder_state(tmp_path)
    with pytest.raises(FileExistsError, match=r"^save_directory .*model exists and is not a folder: choose a folder$"):
        tiny_lstm.save_pretrained(tmp_path / "model")
    assert folder_state(tmp_path) == before
    tiny_lstm.save_pretrained(tmp_path / "saved")  # the retry
    assert SiameseModel.from_pretrained(tmp_path / "saved").config.hidden_size == tiny_lstm.config.hidden_size
