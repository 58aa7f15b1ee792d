"""A package face's names, one table line a module: each name loads from its module when first used."""

import sys
import types

import pytest

from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.lazy_exports import lazy_package


def test_lazy_package_resolves_relative_and_whole_module_names(monkeypatch):
    face, part = types.ModuleType("lazy_face"), types.ModuleType("lazy_face.part")
    face.__path__ = []  # a package, whose `.part` is lazy_face.part
    part.answer = 42
    monkeypatch.setitem(sys.modules, "lazy_face", face)
    monkeypatch.setitem(sys.modules, "lazy_face.part", part)
    getattr_, dir_, all_ = lazy_package(
        "lazy_face", {".part": ("answer",), "hfsiamese.utils.extras": ("install_hint",)}
    )
    assert all_ == ["answer", "install_hint"]
    assert getattr_("answer") == 42 and getattr_("install_hint") is install_hint
    assert face.install_hint is install_hint  # looked up once, then kept on the face
    assert {"answer", "install_hint"} <= set(dir_())
    with pytest.raises(AttributeError, match="module 'lazy_face' has no attribute 'nothing'"):
        getattr_("nothing")
