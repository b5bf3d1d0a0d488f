"""Which reader backend a file is read with: the C path (cffi) or the pure-Python twin.

The C path is used when its extension was built, unless ``BBG_MIGRATE_PURE=1`` (the rule of
:mod:`bbg_core.twins`); both give identical results (tests run the whole redb suite against
each).  ``open_redb(path, backend="python"|"c")`` picks one for a single file;
:func:`set_default` changes the default (for tests and benchmarks).
"""

from __future__ import annotations

from bbg_core.twins import Twins
from importers.redb import _python
from importers.redb._api import Backend

TWINS: Twins[Backend] = Twins("redb", _python, "importers.redb._c")
python_impl: Backend = TWINS.python
c_impl: Backend | None = TWINS.c
PURE = TWINS.pure

#: The backend this process uses by default: "c" or "python".
BACKEND = TWINS.name

#: The backends this installation has.
available = TWINS.available
#: The backend called ``name`` (None: the default); ValueError if it is not available.
resolve = TWINS.resolve
#: Make ``name`` the default backend (None: the process's own); returns the previous.
set_default = TWINS.set_default
