"""Fixtures of the service tests: the tiny model and a LanceDB index grouped, built once per module."""

from __future__ import annotations

import pytest

from tests.service.running_service import READ_KEY, WRITE_KEY, tiny_model_dir


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    return tiny_model_dir(tmp_path_factory.mktemp("serve_model"), word_tokenizer)


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("serve_keys") / "keys.txt"
    path.write_text(f"# the service's keys\nread:{READ_KEY}\nwrite:{WRITE_KEY}\n", encoding="utf-8")
    return path
