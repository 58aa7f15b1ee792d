"""Import paths of the release before the package was filed by model family, kept one release.

`import hfsiamese.trainer.siamese_trainer` (or `from hfsiamese.trainer import SiameseTrainer`, as the README of
0.1 showed) still works, with a `FutureWarning` naming the new path: a finder on `sys.meta_path` answers for
the old names only, so nothing else is slowed or changed. The names and their sunset are the deprecation table's
(`hfsiamese.utils.deprecation`). An old module name gives the new module itself
(so objects pickled under the old name and `mock.patch` targets resolve to the same objects); an old package gives
a face that hands on the names it used to export. Written here because the standard library offers no alias
for a moved module, and the names must resolve before anything else is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

from hfsiamese.utils.deprecation import MOVED_MODULES, MOVED_PACKAGES, Kind, warn_deprecated

__all__ = ["MOVED_MODULES", "MOVED_PACKAGES", "install"]


def _warn(kind: Kind, old: str) -> None:
    warn_deprecated(kind, old, stacklevel=4)  # the importing code


class _PackageFace(types.ModuleType):
    """An old package: hands on each name it used to export from where the name lives now."""

    def __getattr__(self, name: str) -> Any:
        new_module = MOVED_PACKAGES[self.__name__].get(name)
        if new_module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        _warn("package name", f"{self.__name__}.{name}")
        value = getattr(importlib.import_module(new_module), name)
        setattr(self, name, value)  # `from old import name` looks the name up twice: warn once
        return value


class _MovedLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in MOVED_PACKAGES:
            face = _PackageFace(spec.name, f"Moved: see {sorted(set(MOVED_PACKAGES[spec.name].values()))}.")
            face.__path__ = []  # a package, so that its old submodules import too
            return face
        _warn("module", spec.name)
        return importlib.import_module(MOVED_MODULES[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module was created whole."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED_MODULES or fullname in MOVED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _MovedLoader(), is_package=fullname in MOVED_PACKAGES)
        return None


def install() -> None:
    """Answer for the old paths (once per process)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
