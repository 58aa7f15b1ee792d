"""`save_pretrained` onto a path that is a file is refused in one line (transformers only logs an error and returns, so
the caller believed the model saved), the file left as it was; the retry into a folder saves. Both families save through
the one check (`hfsiamese.models.siamese.hub_sharing.check_save_directory`)."""

from __future__ import annotations

import pytest

from hfsiamese import CrossEncoder, SiameseModel
from tests.helpers import folder_state


@pytest.mark.parametrize("family", ["tiny_lstm", "tiny_cross_encoder"])
def test_save_pretrained_onto_a_file_is_refused_and_the_file_kept(family, request, tmp_path):
    model = request.getfixturevalue(family)
    (tmp_path / "model").write_text("the user's notes")
    before = folder_state(tmp_path)
    with pytest.raises(FileExistsError, match=r"^save_directory .*model exists and is not a folder: choose a folder$"):
        model.save_pretrained(tmp_path / "model")
    assert folder_state(tmp_path) == before
    model.save_pretrained(tmp_path / "saved")  # the retry
    reloaded = type(model).from_pretrained(tmp_path / "saved")
    assert isinstance(reloaded, (SiameseModel, CrossEncoder))
    settings = [{k: v for k, v in m.config.to_dict().items() if k != "_name_or_path"} for m in (reloaded, model)]
    assert settings[0] == settings[1]
