"""Package faces that import a name's module only when the name is first used (PEP 562).

A family's `__init__` names its trainer, its model and its exports; importing them all at once would load
transformers' Trainer (and with it accelerate) for a user who only loads a model, and would tie the package
faces into import loops. `importlib`'s own `LazyLoader` defers whole modules, not names, so this is written here.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: each name in `exports` comes from the module it maps to."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # looked up once
        return value

    def __dir__() -> list[str]:
        return sorted(set(exports) | set(importlib.import_module(package).__dict__))

    return __getattr__, __dir__


def lazy_package(
    package: str, names_by_module: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """
    A package face's `__getattr__`, `__dir__` and `__all__` from the names each of its modules gives (a module named
    from the package, `.trainer`, or whole): one table a face, one line a module.
    """
    exports = {
        name: importlib.util.resolve_name(module, package) if module.startswith(".") else module
        for module, names in names_by_module.items()
        for name in names
    }
    return (*lazy_exports(package, exports), list(exports))
