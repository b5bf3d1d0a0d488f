"""Which reader backend a file is read with: the C path (cffi) or the pure-Python twin.

The C path is used when its extension was built, unless ``BBG_MIGRATE_PURE=1``; both give
identical results (tests run the whole redb suite against each).  ``open_redb(path,
backend="python"|"c")`` picks one for a single file; :func:`set_default` changes the default
(for tests and benchmarks).
"""

from __future__ import annotations

import os

from importers.redb import _python
from importers.redb._api import Backend

python_impl: Backend = _python
c_impl: Backend | None
try:
    from importers.redb import _c

    c_impl = _c
except ImportError:  # extension not built: the twin takes over (setup.py's fallback rule)
    c_impl = None

PURE = os.environ.get("BBG_MIGRATE_PURE") == "1"
_default: Backend = python_impl if c_impl is None or PURE else c_impl

#: The backend this process uses by default: "c" or "python".
BACKEND = _default.NAME


def available() -> list[str]:
    """The backends this installation has."""
    return ["python"] + (["c"] if c_impl is not None else [])


def resolve(name: str | None = None) -> Backend:
    """The backend called ``name`` (None: the default); ValueError if it is not available."""
    if name is None:
        return _default
    if name == "python":
        return python_impl
    if name == "c":
        if c_impl is None:
            raise ValueError("the redb C extension is not built (pure-Python install)")
        return c_impl
    raise ValueError(f"unknown redb backend {name!r} (python or c)")


def set_default(name: str | None) -> str:
    """Make ``name`` the default backend (None: the process's own); returns the previous."""
    global _default
    previous = _default.NAME
    _default = resolve(name) if name is not None else resolve(BACKEND)
    return previous
