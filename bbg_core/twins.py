"""Choosing between a C twin and its pure-Python twin: one rule for every hot path.

A hot path (the redb reader, hemera, the Fjall codec) has a C twin, built with cffi when a
compiler was at hand, and a pure-Python twin with identical results and errors.  The C twin
is used when its module imports (an extension not built raises ImportError: the pure twin
takes over, setup.py's fallback rule), unless ``BBG_MIGRATE_PURE=1``.  :class:`Twins` holds
the pair and the choice; its ``name`` ("c" or "python") is what ``bbg-migrate --version``
reports for that path.
"""

from __future__ import annotations

import importlib
import os
from typing import Generic, TypeVar, cast

#: The environment variable that makes every hot path run its pure-Python twin.
PURE_ENV = "BBG_MIGRATE_PURE"

T = TypeVar("T")


def pure() -> bool:
    """True when ``BBG_MIGRATE_PURE=1``: the pure-Python twins even where C is built."""
    return os.environ.get(PURE_ENV) == "1"


class Twins(Generic[T]):
    """The two twins of one hot path, ``label`` in messages (e.g. ``redb``): ``python``,
    ``c`` (None when its module ``c_module`` does not import), the process's ``default``
    and its ``name``; ``pure`` says ``BBG_MIGRATE_PURE=1`` was set."""

    def __init__(self, label: str, python: T, c_module: str) -> None:
        self.label = label
        self.python = python
        self.c: T | None
        try:
            self.c = cast(T, importlib.import_module(c_module))
        except ImportError:  # extension not built: the pure twin takes over
            self.c = None
        self.pure = pure()
        self.default: T = python if self.c is None or self.pure else self.c
        #: The twin this process uses by default: "c" or "python".
        self.name = self._name_of(self.default)

    def _name_of(self, impl: T) -> str:
        return "c" if self.c is not None and impl is self.c else "python"

    def available(self) -> list[str]:
        """The twins this installation has."""
        return ["python"] + (["c"] if self.c is not None else [])

    def resolve(self, name: str | None = None) -> T:
        """The twin called ``name`` (None: the default); ValueError if it is not available."""
        if name is None:
            return self.default
        if name == "python":
            return self.python
        if name == "c":
            if self.c is None:
                raise ValueError(f"the {self.label} C extension is not built (pure-Python install)")
            return self.c
        raise ValueError(f"unknown {self.label} backend {name!r} (python or c)")

    def set_default(self, name: str | None) -> str:
        """Make ``name`` the default (None: the process's own); returns the previous one."""
        previous = self._name_of(self.default)
        self.default = self.resolve(name if name is not None else self.name)
        return previous


__all__ = ["PURE_ENV", "Twins", "pure"]
