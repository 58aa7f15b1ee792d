"""Old import paths (the release before the package was filed by family) keep working one release, with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from hfsiamese.utils.moved_modules import MOVED_MODULES, MOVED_PACKAGES


@pytest.mark.slow
def test_the_readme_import_of_the_last_release_still_works_and_names_the_new_path():
    code = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    from hfsiamese.trainer import SiameseTrainer, SiameseTrainingArguments\n"
        "import hfsiamese\n"
        "assert SiameseTrainer is hfsiamese.SiameseTrainer and SiameseTrainingArguments is hfsiamese.SiameseTrainingArguments\n"
        "messages = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]\n"
        "assert len(messages) == 2, messages\n"
        "assert 'hfsiamese.trainer.SiameseTrainer moved to hfsiamese.bi_encoder.trainer.SiameseTrainer' in messages[0]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_every_moved_module_gives_its_new_module(old):
    new = importlib.import_module(MOVED_MODULES[old])
    with pytest.warns(FutureWarning, match=rf"{old} moved to {MOVED_MODULES[old]}"):
        sys.modules.pop(old, None)
        moved = importlib.import_module(old)
    assert moved is new


@pytest.mark.parametrize("package", sorted(MOVED_PACKAGES))
def test_every_old_package_hands_on_its_names_and_refuses_others(package):
    face = importlib.import_module(package)
    for name, module in MOVED_PACKAGES[package].items():
        face.__dict__.pop(name, None)
        with pytest.warns(FutureWarning, match=rf"{package}.{name} moved to {module}.{name}"):
            value = getattr(face, name)
        assert value is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nothing_here'"):
        face.nothing_here  # noqa: B018


@pytest.mark.slow
def test_a_new_path_never_warns():
    code = "import warnings\nwarnings.simplefilter('error', FutureWarning)\nimport hfsiamese.bi_encoder.trainer, hfsiamese.search.stores, hfsiamese.cli.main\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
