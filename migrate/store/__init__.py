"""The BBG destination store: one SQLite database in a directory.

Modules, by responsibility:

* :mod:`~migrate.store.store` — :func:`open_store` and the :class:`Store` handle (GraphPort
  ``head``/``history``/``resolve``/``commit``, ``transaction()``, ``snapshot()``, ``info()``);
* :mod:`~migrate.store.layout` — directory, file identity, schema creation, and the
  default-store guard (:func:`resolve_store_dir`, the only place it is enforced);
* :mod:`~migrate.store.graph` — the publication contract (checked inside one transaction);
* :mod:`~migrate.store.tx` — write transactions and immutable puts;
* :mod:`~migrate.store.imports` — seals, cursors, inert staging, activation, receipts, journal;
* :mod:`~migrate.store.tables` — live/staged tables as sorted row sources;
* :mod:`~migrate.store.digest` — the archive digest;
* :mod:`~migrate.store.codec` — key/value encodings of the five tables;
* :mod:`~migrate.store.connection` — the SQLite connection, transactions, error translation
  and the COMMIT fault-injection hook.

Link validation is :func:`migrate.rules.links.validate_links`; reader generations and fences are in
the :mod:`fences` package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bbg_core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers
    from migrate.store.codec import ARCHIVE_ORDER, Head
    from migrate.store.digest import archive_digest
    from migrate.store.layout import DB_NAME, resolve_store_dir
    from migrate.store.opening import open_store
    from migrate.store.store import Store
    from migrate.store.tables import StagedTables, StoreTables
    from migrate.store.tx import Tx

# Imported when first read (bbg_core.lazy): a module of this package (``layout``, ``codec``...)
# does not load both engines, and ``from migrate.store import imports`` only that module.
__getattr__ = lazy_exports(
    __name__,
    {
        "codec": ("ARCHIVE_ORDER", "Head"),
        "digest": ("archive_digest",),
        "layout": ("DB_NAME", "resolve_store_dir"),
        "opening": ("open_store",),
        "store": ("Store",),
        "tables": ("StagedTables", "StoreTables"),
        "tx": ("Tx",),
    },
)

__all__ = [
    "ARCHIVE_ORDER",
    "DB_NAME",
    "Head",
    "StagedTables",
    "Store",
    "StoreTables",
    "Tx",
    "archive_digest",
    "open_store",
    "resolve_store_dir",
]
