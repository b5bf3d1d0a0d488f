"""Module namespaces that import what they export on first use (start-up time).

A reader package (``importers.signal_log``...) offers its public names at the top, but
``detect`` needs only its sniffing module: importing every decoder, encoder and report
behind ``import importers.frame_log`` would cost it most of its budget.  A module lists where
each public name is defined and sets ``__getattr__`` to one of the functions below (PEP 562);
a name is imported, once, when first read.  Type checkers read the same names from the
module's ``if TYPE_CHECKING:`` block; tests (test_startup.py, test_api.py) check that the two
agree.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any


def lazy_names(owner: str, where: Mapping[str, tuple[str, str]]) -> Callable[[str], object]:
    """A module ``__getattr__`` for the module ``owner``: ``where`` maps each public name to
    ``(module, attribute)``, the attribute it stands for (under another name if need be)."""

    def __getattr__(name: str) -> object:
        try:
            module, attribute = where[name]
        except KeyError:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute)
        setattr(importlib.import_module(owner), name, value)
        return value

    return __getattr__


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """A package ``__getattr__`` for ``package``: ``exports`` maps each sub-module (its name
    inside the package) to the public names it defines (under the same names)."""
    where = {name: (f"{package}.{module}", name) for module, names in exports.items()
             for name in names}  # fmt: skip
    _names_over_modules(package, frozenset(where))
    return lazy_names(package, where)


def _names_over_modules(package: str, names: frozenset[str]) -> None:
    """Keep each of ``names`` meaning the name it exports, never a sub-module of the same name
    (``migrate.share``'s ``doctor`` is :func:`migrate.share.health.doctor`, and
    ``migrate/share/doctor.py`` a module).  Importing a sub-module sets it as an attribute of
    its package, which an eager ``from .health import doctor`` then replaced; the package's
    module class leaves that attribute unset instead, so the name is looked up on first use.
    ``from package.doctor import x`` and :func:`importlib.import_module` find sub-modules in
    ``sys.modules``, not as attributes."""

    class _Package(types.ModuleType):
        def __setattr__(self, name: str, value: object) -> None:
            if (name in names and isinstance(value, types.ModuleType)
                    and value.__name__ == f"{package}.{name}"):  # fmt: skip
                return
            super().__setattr__(name, value)

    sys.modules[package].__class__ = _Package


class LazyMapping(Mapping[str, Any]):
    """The mapping ``attribute`` of ``module``, imported when first read: a caller can hand it
    to code that may never read it (``inspect`` of a file reads no BBG store's sections)."""

    def __init__(self, module: str, attribute: str) -> None:
        self._where = (module, attribute)

    @functools.cached_property
    def _mapping(self) -> Mapping[str, Any]:
        module, attribute = self._where
        found: Mapping[str, Any] = getattr(importlib.import_module(module), attribute)
        return found

    def __getitem__(self, key: str) -> Any:
        return self._mapping[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)
