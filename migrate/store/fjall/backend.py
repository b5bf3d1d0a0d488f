"""Which implementation of the hot paths this process uses: the C twin or pure Python.

Both twins (``_python`` and ``_c``) implement :class:`Twin` with identical results and
identical errors (``tests/fjall/test_twins.py`` runs them against each other on every
fixture and on damaged inputs).  The C twin is used when its extension was built, unless
``BBG_MIGRATE_PURE=1`` (the rule of :mod:`bbg_core.twins`); :func:`resolve` picks one by
name (tests, benchmarks).
"""

from __future__ import annotations

from bbg_core.twins import Twins
from migrate.store.fjall import _python
from migrate.store.fjall._api import Twin

#: Both twins (``TWINS.python``, ``TWINS.c``: None when not built) and the choice.
TWINS: Twins[Twin] = Twins("Fjall", _python, "migrate.store.fjall._c")

#: The twin this process uses by default: "c" or "python".
BACKEND = TWINS.name

#: The twins this installation has.
available = TWINS.available
#: The twin called ``name`` (None: the default); ValueError if it is not available.
resolve = TWINS.resolve
#: Make ``name`` the default twin (None: the process's own); returns the previous.
set_default = TWINS.set_default


def default() -> Twin:
    """The twin in use now (:func:`set_default` may have changed it)."""
    return TWINS.default
