"""`encoding_policy`: the travelling `encode` runs with the precision and threads its policy hook gives it."""

from __future__ import annotations

import pytest
import torch

from hfsiamese import library_hooks
from hfsiamese.models.siamese.encoding_policy import EncodePolicy, EncodePrecision, EncodingPolicyMixin
from hfsiamese.models.siamese.hub_sharing import HubSharingMixin
from hfsiamese.utils import core_sharing, encode_precision
from tests.conftest import TEXTS


@pytest.fixture
def folder_policy(monkeypatch):
    """The model classes as a checkpoint's own copies have them: the folder's policy, nothing installed."""
    monkeypatch.setattr(EncodingPolicyMixin, "encode_policy", EncodePolicy())


def test_import_hfsiamese_installs_the_library_hooks(tiny_lstm):
    assert isinstance(type(tiny_lstm).encode_policy, library_hooks.LibraryEncodePolicy)
    assert HubSharingMixin.card_builder is library_hooks.build_card


def test_the_folder_alone_decides_nothing(folder_policy, monkeypatch, tiny_lstm, word_tokenizer):
    monkeypatch.setattr(encode_precision, "_process_default", {"dtype": "auto"})  # as in a command: not asked here
    monkeypatch.setattr(core_sharing, "enabled", lambda: True)
    monkeypatch.setattr(encode_precision, "choose_encode_precision", lambda *a, **k: pytest.fail("measured"))
    monkeypatch.setattr(core_sharing, "CoreSharing", lambda *a, **k: pytest.fail("shared cores"))
    assert tiny_lstm.resolve_encode_dtype() is None
    choice = tiny_lstm.encode_precision()
    assert choice == EncodePrecision(
        None, "fp32: dtype='auto' is decided by hfsiamese's measurement, which is not imported here"
    )
    plain = tiny_lstm.encode(TEXTS, word_tokenizer)
    assert torch.equal(tiny_lstm.encode(TEXTS, word_tokenizer, dtype="auto"), plain)


def test_what_is_given_is_applied(folder_policy, monkeypatch, tiny_lstm, word_tokenizer):
    seen, embed = [], tiny_lstm._embed_batch

    def spy(features):
        seen.append(torch.is_autocast_enabled("cpu"))
        return embed(features)

    class Given(EncodePolicy):
        def default_dtype(self):
            return torch.bfloat16

    monkeypatch.setattr(tiny_lstm, "_embed_batch", spy)
    tiny_lstm.encode(TEXTS[:2], word_tokenizer, dtype=torch.bfloat16)
    monkeypatch.setattr(EncodingPolicyMixin, "encode_policy", Given())
    tiny_lstm.encode(TEXTS[:2], word_tokenizer)
    tiny_lstm.encode(TEXTS[:2], word_tokenizer, dtype=torch.float32)
    assert seen == [True, True, False]
