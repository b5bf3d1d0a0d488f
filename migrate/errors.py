"""The error tree, re-exported for library callers (``from migrate.errors import ...``).

It lives in :mod:`bbg_core.errors` so that ``importers/`` and ``fences/`` can raise the same
errors without importing ``migrate/``.
"""

from bbg_core.errors import *  # noqa: F403
from bbg_core.errors import EXIT_CODES, __all__  # noqa: F401
