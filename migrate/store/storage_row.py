"""bbg's storage row in a SQLite store (``bbg_storage_v1``, row ``id = 1``): the store id, the
hash suite of its content ids and its last transaction.

:data:`STORAGE` is the table's one name in the store layer (bbg's metadata table on both
engines, :data:`migrate.store.bbgdb.METADATA`); the reads the share commands need:

* :func:`id_and_suite` -- ``(store_id, hash_suite)`` (a snapshot's header);
* :func:`suite_and_last` -- ``(hash_suite, last_transaction)`` (a snapshot's storage record);
* :func:`first_row` -- ``(store_id, hash_suite, last_transaction)`` of the table's first row
  whatever its id, or None (``doctor`` reports what is there).
"""

from __future__ import annotations

from typing import Any, Protocol

from migrate.store import bbgdb

STORAGE = bbgdb.METADATA


class _Reader(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


def id_and_suite(db: _Reader) -> tuple[Any, ...]:
    """``(store_id, hash_suite)`` of the storage row."""
    info = db.one(f"SELECT store_id, hash_suite FROM {STORAGE} WHERE id = 1")
    assert info is not None
    return tuple(info)


def suite_and_last(db: _Reader) -> tuple[Any, ...]:
    """``(hash_suite, last_transaction)`` of the storage row."""
    storage = db.one(f"SELECT hash_suite, last_transaction FROM {STORAGE} WHERE id = 1")
    assert storage is not None
    return tuple(storage)


def first_row(db: _Reader) -> tuple[Any, ...] | None:
    """``(store_id, hash_suite, last_transaction)`` of the table's first row, or None."""
    return db.one(f"SELECT store_id, hash_suite, last_transaction FROM {STORAGE}")
