"""bbg's ``last_transaction`` on the SQLite engine: the change id of each write transaction.

bbg (cyberia-to/bbg ``rs/src/storage/database/mod.rs`` ``Database::transaction``,
``change_id``) gives every non-empty transaction an id over its changes and keeps the id of
the last one as ``bbg_storage_v1["last_transaction"]``; a transfer seal binds it as
``prior``.  The Fjall engine writes that key itself (:func:`migrate.store.bbgdb.with_markers`).
A SQLite store records the same id, computed by the same function
(:func:`migrate.store.bbgdb.change_id_of_sorted`), over the same changes:

* the rows of the five application tables, under the partition of the same name;
* the status marker (table ``bbg_import_v1``'s row) as ``bbg_import_v1["status"]``;
* the transfer seal (table ``bbg_import_v1_export``) as ``bbg_import_v1["application-export"]``
  = target ‖ nonce ‖ prior ‖ manifest (:func:`note`, from :mod:`migrate.store.export`).

Every insert, update (an overwritten head: recorded even when the bytes are the same, as the
Fjall engine records every ``set_head``) and delete of those rows is caught by TEMP triggers
of the writing connection (:func:`begin`, inside the SQLite transaction) into a TEMP table,
keyed by (partition, key) so the last change of a key wins; an immutable put of bytes already
there changes no row and is no change (as on the Fjall engine).  :func:`finish`, just before
``COMMIT``, computes the id when there was a change and keeps it in ``bbg_storage_v1``'s
column ``bbg_last_transaction``.  One SQLite transaction is one id, as one Fjall batch is
(``apply``'s several ledger entries in one SQLite transaction too).

The column's value: 32 bytes (the id), empty (no transaction changed bbg's tables yet: a
store made with this column), NULL or no column (unknown: a store written before this
release, a restored store -- snapshot/1 does not carry it -- or a built store whose rows were
loaded outside a transaction).  :func:`recorded` reads it; the next transaction that changes
bbg's tables records a known id again.  Outside this table nothing changes: event/1,
snapshot/1 (its storage record names its two columns), digests and receipts.  The records
of a Fjall store never record one (``Store.bbg_tables``): there bbg's key is the truth.
"""

from __future__ import annotations

from typing import Any

from migrate.store import bbgdb

COLUMN = "bbg_last_transaction"
_TABLE = "bbg_migrate_changes"
#: (SQLite table, partition, key expression, value expression) of each tracked table.
_TRACKED: tuple[tuple[str, str, str, str], ...] = tuple(
    (t, t, "{row}.key", "{row}.value") for t in bbgdb.APPLICATION_TABLES
) + ((bbgdb.MIGRATION, bbgdb.MIGRATION, "CAST('status' AS BLOB)", "CAST({row}.status AS BLOB)"),)
#: "unknown": the store keeps no id (see the module docstring).
UNKNOWN = "unknown"


def _statements() -> list[str]:
    out = [
        f"CREATE TEMP TABLE IF NOT EXISTS {_TABLE} (name BLOB NOT NULL, key BLOB NOT NULL, "
        "value BLOB, PRIMARY KEY (name, key)) WITHOUT ROWID"
    ]
    for i, (table, partition, key, value) in enumerate(_TRACKED):
        name = f"CAST('{partition}' AS BLOB)"
        # An upsert, not INSERT OR REPLACE: inside a trigger the outer statement's conflict
        # policy (e.g. an upsert's ABORT) overrides the trigger's own OR-clause.
        put = (f"INSERT INTO {_TABLE} (name, key, value) VALUES ({name}, {{k}}, {{v}}) "
               "ON CONFLICT (name, key) DO UPDATE SET value = excluded.value;")
        row_put = put.format(k=key.format(row="NEW"), v=value.format(row="NEW"))
        row_del = put.format(k=key.format(row="OLD"), v="NULL")
        for event, body in (("INSERT", row_put), ("UPDATE", row_del + " " + row_put),
                            ("DELETE", row_del)):  # fmt: skip
            out.append(
                f"CREATE TEMP TRIGGER IF NOT EXISTS bbg_migrate_change_{i}_{event.lower()} "
                f"AFTER {event} ON main.{table} BEGIN {body} END"
            )
    return out


_SQL = _statements()


def begin(db: Any) -> None:
    """Start catching ``db``'s changes to bbg's tables (inside its write transaction: a
    rolled-back transaction takes the triggers with it, so every transaction makes sure)."""
    for statement in _SQL:
        db.scratch(statement)
    db.scratch(f"DELETE FROM temp.{_TABLE}")


def note(db: Any, partition: str, key: bytes, value: bytes | None) -> None:
    """Record a change of bbg's ``partition[key]`` that no tracked table holds (None: removed)."""
    db.scratch(
        f"INSERT OR REPLACE INTO temp.{_TABLE} (name, key, value) VALUES (?, ?, ?)",
        (partition.encode(), key, value),
    )


def finish(db: Any) -> bytes | None:
    """Before ``COMMIT``: keep the change id of this transaction's changes (if any) as the
    store's ``last_transaction``; the id, or None when bbg's tables did not change."""
    changes = (
        (bytes(name).decode(), bytes(key), None if value is None else bytes(value))
        for name, key, value in db.rows(
            f"SELECT name, key, value FROM temp.{_TABLE} ORDER BY name, key"
        )
    )
    ident = bbgdb.change_id_of_sorted(changes)
    if ident is None:
        return None
    if not has_column(db):
        db.execute(f"ALTER TABLE {bbgdb.METADATA} ADD COLUMN {COLUMN} BLOB")
    db.execute(f"UPDATE {bbgdb.METADATA} SET {COLUMN} = ? WHERE id = 1", (ident,))
    db.scratch(f"DELETE FROM temp.{_TABLE}")
    return ident


def has_column(db: Any) -> bool:
    """Whether the store's storage row has the column (stores made before it lack it)."""
    return any(str(r[1]) == COLUMN for r in db.rows(f"PRAGMA table_info({bbgdb.METADATA})"))


def forget(db: Any) -> None:
    """Mark the id unknown (rows were written where no trigger saw them: a restore, a build)."""
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
