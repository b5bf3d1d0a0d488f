"""Which implementation of the hot paths this process uses: the C twin or pure Python.

Both twins (``_python`` and ``_c``) implement :class:`Twin` with identical results and
identical errors (``tests/fjall/test_twins.py`` runs them against each other on every
fixture and on damaged inputs).  The C twin is used when its extension was built, unless
``BBG_MIGRATE_PURE=1``; :func:`resolve` picks one by name (tests, benchmarks).
"""

from __future__ import annotations

import importlib
import os

from migrate.store.fjall._api import Twin


def _load() -> tuple[Twin, Twin | None]:
    from migrate.store.fjall import _python

    try:
        c: Twin = importlib.import_module("migrate.store.fjall._c")
    except ImportError:  # not built: the pure-Python twin takes over
        return _python, None
    return _python, c


python_impl, c_impl = _load()
PURE = os.environ.get("BBG_MIGRATE_PURE") == "1"
_default: Twin = python_impl if c_impl is None or PURE else c_impl

#: The twin this process uses by default: "c" or "python".
BACKEND = _default.NAME


def available() -> list[str]:
    return ["python"] + (["c"] if c_impl is not None else [])


def resolve(name: str | None = None) -> Twin:
    """The twin called ``name`` (None: the default); ValueError if it is not available."""
    if name is None:
        return _default
    if name == "python":
        return python_impl
    if name == "c":
        if c_impl is None:
            raise ValueError("the Fjall C extension is not built (pure-Python install)")
        return c_impl
    raise ValueError(f"unknown Fjall backend {name!r} (python or c)")


def set_default(name: str | None) -> str:
    """Make ``name`` the default twin (None: the process's own); returns the previous."""
    global _default
    previous = _default.NAME
    _default = resolve(name) if name is not None else resolve(BACKEND)
    return previous


def default() -> Twin:
    return _default
