"""Fixtures of the service tests: the tiny model and a LanceDB index grouped, built once per module."""

from __future__ import annotations

import pytest

from tests.service.running_service import tiny_model_dir, write_keys_file


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    return tiny_model_dir(tmp_path_factory.mktemp("serve_model"), word_tokenizer)


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory):
    return write_keys_file(tmp_path_factory.mktemp("serve_keys") / "keys.txt")
