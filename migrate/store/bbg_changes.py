"""bbg's ``last_transaction`` on the SQLite engine: the change id of each write transaction.

bbg (cyberia-to/bbg ``rs/src/storage/database/mod.rs`` ``Database::transaction``,
``change_id``) gives every non-empty transaction an id over its changes and keeps the id of
the last one as ``bbg_storage_v1["last_transaction"]``; a transfer seal binds it as
``prior``.  The Fjall engine writes that key itself, from its batch
(:func:`migrate.store.bbgdb.with_markers`).  A SQLite store records the same id, computed by
the same function (:func:`migrate.store.bbgdb.change_id_of_sorted`), over the same changes:

* the rows of the five application tables, under the partition of the same name;
* the status marker (table ``bbg_import_v1``'s row) as ``bbg_import_v1["status"]``;
* the transfer seal (table ``bbg_import_v1_export``) as ``bbg_import_v1["application-export"]``
  = target ‖ nonce ‖ prior ‖ manifest (from :mod:`migrate.store.export`).

**Where the changes come from.** As on the Fjall engine, from the write transaction itself:
its :class:`~migrate.store.tx.Tx` tells its :class:`Changes` which of those rows it changed:

* an immutable put (``put``, ``put_many``) that added a row; one whose bytes were already
  there changed nothing and is no change (as on the Fjall engine);
* ``set_head`` and ``write_status``: always a change, even with the same bytes (an
  overwritten row; the Fjall engine records every ``set_head`` and status write too);
* a delete that removed a row (retention);
* the seal: the 128-byte value;
* an activation's bulk copy (``INSERT … SELECT`` of an import's staged rows): the staged
  keys not yet in the table, i.e. exactly the rows the copy adds (:meth:`Changes.bulk`).

**Keys, not values.** bbg's transaction keeps one change per (table, key), the last one
staged (a put stages the value, a removal None: ``Transaction::stage`` into a ``BTreeMap``,
cyberia-to/bbg ``rs/src/storage/database/transaction.rs``), and its id covers those.  Every
change of the five tables goes through the transaction, so the value bbg's id covers for a
changed key is the row as the transaction leaves it -- written twice: the second bytes;
written then deleted: no row, a removal; deleted then written: the row; copied by an
activation, then changed: the later change -- and no row means a removal.  So only the keys
are recorded, per table, and :meth:`Changes.finish` reads each one's value from the live
table (by key, in key order).  The two keys of ``bbg_import_v1`` (the status and the seal)
are no rows of a table of that name and are held with their value (two at most).

**Memory, and the one TEMP table.** No trigger copies rows, and a transaction runs no DDL or
``PRAGMA`` for the id (whether the storage row has the column is known once per handle).
Changed keys are held in memory up to :data:`SPILL_BYTES`.  Two kinds of transaction go past
that to one TEMP table of the connection (:func:`_spill_table`, keys only, kept until the id
is computed), and only they touch it:

* one whose held keys exceed the budget (a large ``apply`` or put loop): they go there;
* an activation: its ``INSERT … SELECT`` copies an import's staged rows inside SQLite and may
  be a whole 1 GB import.  One ``INSERT … SELECT`` records the keys the copy adds (the
  staged keys not yet in the table), without passing them through Python.

With the table in use the id is hashed from one ordered query per table (the keys joined
with the live table), in pieces (:func:`bbgdb.change_id_of_sorted`), so memory stays bounded
whatever the size of the transaction; values are read once, at the end, never copied.

:meth:`Changes.finish`, just before ``COMMIT``, computes the id when there was a change and
keeps it in ``bbg_storage_v1``'s column ``bbg_last_transaction``.  One SQLite transaction is
one id, as one Fjall batch is (``apply``'s several ledger entries in one SQLite transaction
too).

The column's value: 32 bytes (the id), empty (no transaction changed bbg's tables yet: a
store made with this column), NULL or no column (unknown: a store written before this
release, a restored store -- snapshot/1 does not carry it -- or a built store whose rows were
loaded outside a transaction).  :func:`recorded` reads it; the next transaction that changes
bbg's tables records a known id again.  Outside this table nothing changes: event/1,
snapshot/1 (its storage record names its two columns), digests and receipts.  The records
of a Fjall store never record one (``Store.bbg_tables``): there bbg's key is the truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from migrate.store import bbgdb

COLUMN = "bbg_last_transaction"
#: "unknown": the store keeps no id (see the module docstring).
UNKNOWN = "unknown"
#: Bytes of changed keys (and a per-key allowance) held in memory before they go to the TEMP
#: table (a file, read through SQLite's page cache).  Small: an ``apply`` of a long stream is
#: one transaction, and its memory must stay bounded by one event, not grow with the stream
#: (tests/share/test_stream_hostile.py).  About 65,000 keys of 32 bytes.
SPILL_BYTES = 8 << 20
#: A held key's bytes object and list slot beside its bytes (~48; a key recorded twice counts
#: twice: an overestimate, the spill comes sooner).
_PER_KEY = 64
_SPILL = "temp.bbg_migrate_changed_keys"
_IN = 500  # keys per ``IN (…)`` lookup of held keys' values
_TABLES = frozenset(bbgdb.APPLICATION_TABLES)
_ORDINAL = {t: i for i, t in enumerate(bbgdb.APPLICATION_TABLES)}  # a spilled key's table


class Changes:
    """The changes of one SQLite write transaction to bbg's rows (see the module docstring).

    ``db`` is the transaction's connection; ``storage`` the store handle's cache of whether
    the storage row has :data:`COLUMN` (a dict shared by the handle's transactions)."""

    def __init__(self, db: Any, storage: dict[str, bool]) -> None:
        self._db = db
        self._storage = storage
        self._keys: dict[str, list[bytes]] = {}  # table -> changed keys held in memory
        self._held_bytes = 0
        self._markers: dict[bytes, bytes | None] = {}  # bbg_import_v1's key -> value
        self._spilled = False

    def rows(self, table: str, keys: Iterable[bytes]) -> None:
        """The rows of ``table`` (one of the five) under ``keys`` changed (put, overwritten
        or removed) in this transaction: their values are read when the id is computed."""
        if table not in _TABLES:
            raise ValueError(f"{table!r} is not one of the five application tables")
        held = self._keys.setdefault(table, [])
        before = len(held)
        held.extend(keys)
        self._held_bytes += sum(map(len, held[before:])) + (len(held) - before) * _PER_KEY
        if self._held_bytes > SPILL_BYTES:
            self._spill()

    def marker(self, key: bytes, value: bytes | None) -> None:
        """``bbg_import_v1[key]`` (the status or the seal) is now ``value`` (None: removed)."""
        self._markers[key] = value

    def bulk(self, table: str, keys_sql: str, params: tuple[Any, ...]) -> None:
        """A bulk copy into ``table`` is about to add the rows whose keys ``keys_sql`` (one
        ``SELECT key … WHERE …`` with ``params``) selects: recorded by key, their values read
        from ``table`` when the id is computed."""
        self._spill()
        self._db.scratch(
            f"INSERT INTO {_SPILL} (tbl, key) SELECT ?, key FROM ({keys_sql}) WHERE true "
            "ON CONFLICT (tbl, key) DO NOTHING",
            (_ORDINAL[table], *params),
        )

    def _spill(self) -> None:
        if not self._spilled:
            for statement in _spill_table():
                self._db.scratch(statement)
            self._spilled = True
        for table, keys in self._keys.items():
            if keys:
                keys.sort()  # into the table's b-tree in order: about half the time
                ordinal = _ORDINAL[table]
                self._db.scratch_many(
                    f"INSERT INTO {_SPILL} (tbl, key) VALUES (?, ?) "
                    "ON CONFLICT (tbl, key) DO NOTHING",
                    ((ordinal, k) for k in keys),
                )
        self._keys.clear()
        self._held_bytes = 0

    def _values(self, table: str) -> Iterator[tuple[bytes, bytes | None]]:
        """``(key, value or None)`` of the changed keys of ``table`` in key order, the value
        as the transaction leaves it (read from the live table, a few rows at a time)."""
        if self._spilled:
            for key, value in self._db.rows(
                f"SELECT c.key, l.value FROM {_SPILL} AS c LEFT JOIN main.{table} AS l "
                "ON l.key = c.key WHERE c.tbl = ? ORDER BY c.key",
                (_ORDINAL[table],),
            ):
                yield bytes(key), None if value is None else bytes(value)
            return
        keys = sorted(set(self._keys.get(table, ())))
        for i in range(0, len(keys), _IN):
            chunk = keys[i : i + _IN]
            found = self._db.rows(
                f"SELECT key, value FROM main.{table} WHERE key IN "
                f"({', '.join('?' * len(chunk))}) ORDER BY key",
                chunk,
            )
            row = next(found, None)
            for key in chunk:  # both in key order: a merge
                if row is not None and bytes(row[0]) == key:
                    yield key, bytes(row[1])
                    row = next(found, None)
                else:
                    yield key, None

    def _sorted(self) -> Iterator[tuple[str, bytes, bytes | None]]:
        if self._spilled:
            self._spill()
        for partition in _PARTITIONS:
            if partition in _TABLES:
                for key, value in self._values(partition):
                    yield partition, key, value
            else:
                for key, value in sorted(self._markers.items()):
                    yield partition, key, value

    def finish(self) -> bytes | None:
        """Before ``COMMIT``: keep the change id of this transaction's changes (if any) as
        the store's ``last_transaction``; the id, or None when bbg's rows did not change."""
        ident = bbgdb.change_id_of_sorted(self._sorted())
        if self._spilled:
            self._db.scratch(f"DELETE FROM {_SPILL}")
        self._keys.clear()
        self._markers.clear()
        if ident is None:
            return None
        if not self._storage.get(COLUMN):
            if has_column(self._db):
                # Committed, and the tool never drops it: known for the handle's life (a
                # column this transaction adds is not: the transaction may still roll back).
                self._storage[COLUMN] = True
            else:
                self._db.execute(f"ALTER TABLE {bbgdb.METADATA} ADD COLUMN {COLUMN} BLOB")
        self._db.execute(f"UPDATE {bbgdb.METADATA} SET {COLUMN} = ? WHERE id = 1", (ident,))
        return ident


#: The partitions whose changes count, in bbg's order (name bytes): the five tables and
#: ``bbg_import_v1`` (the status and the seal).
_PARTITIONS: tuple[str, ...] = tuple(sorted([*bbgdb.APPLICATION_TABLES, bbgdb.MIGRATION]))


def _spill_table() -> list[str]:
    """The TEMP table of a transaction's spilled keys (module docstring); created by the
    first transaction of a connection that needs it (``IF NOT EXISTS``: one statement per
    such transaction, and only those)."""
    return [
        f"CREATE TABLE IF NOT EXISTS {_SPILL} (tbl INTEGER NOT NULL, key BLOB NOT NULL, "
        "PRIMARY KEY (tbl, key)) WITHOUT ROWID"
    ]


def has_column(db: Any) -> bool:
    """Whether the store's storage row has the column (stores made before it lack it)."""
    return any(str(r[1]) == COLUMN for r in db.rows(f"PRAGMA table_info({bbgdb.METADATA})"))


def forget(db: Any) -> None:
    """Mark the id unknown (rows were written where no transaction recorded them: a restore,
    a build)."""
    if has_column(db):
        db.execute(f"UPDATE {bbgdb.METADATA} SET {COLUMN} = NULL WHERE id = 1")


def recorded(db: Any) -> bytes | None | str:
    """The store's recorded ``last_transaction``: its 32 bytes, None (no transaction changed
    bbg's tables), or :data:`UNKNOWN`."""
    if not has_column(db):
        return UNKNOWN
    row = db.one(f"SELECT {COLUMN} FROM {bbgdb.METADATA} WHERE id = 1")
    if row is None or row[0] is None:
        return UNKNOWN
    value = bytes(row[0])
    return value if value else None
