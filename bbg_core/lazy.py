"""Package namespaces that import their modules on first use (start-up time).

A reader package (``importers.signal_log``...) offers its public names at the top, but
``detect`` needs only its sniffing module: importing every decoder, encoder and report
behind ``import importers.frame_log`` would cost it most of its budget.  A package lists
which module defines each public name and sets ``__getattr__ = lazy_exports(__name__, ...)``
(PEP 562); the names are imported, once, when first read.  Type checkers read the same
imports from the package's ``if TYPE_CHECKING:`` block; tests/test_startup.py checks the two
lists name the same things.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each sub-module (its name
    inside the package) to the public names it defines."""
    where = {name: f"{package}.{module}" for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
