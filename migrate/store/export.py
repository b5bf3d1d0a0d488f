"""The store's records of a transfer source: the export seal and what sealing reads.

A store sealed as the source of a BBG → BBG transfer holds one row in ``bbg_import_v1_export``
(older stores lack the table: the sealing transaction creates it from ``schemas/store.sql``):
the 32-byte target, nonce, prior and manifest, and the seal's facts as canonical JSON.  The
transfer (:mod:`migrate.transfer.source`) decides what to seal; this module reads and writes
the record, and the counter, heads and pages sealing and copying read.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import schemas
from migrate.store.tx import check_table

EXPORT_TABLE = "bbg_import_v1_export"


def export_row(db: Any) -> tuple[bytes, bytes, bytes, bytes, str] | None:
    """``(target, nonce, prior, manifest, detail JSON)`` of the seal, or None (none recorded,
    or the table is absent: a store from before the transfer existed)."""
    exists = db.one(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (EXPORT_TABLE,)
    )
    if exists is None:
        return None
    row = db.one(f"SELECT target, nonce, prior, manifest, detail FROM {EXPORT_TABLE} WHERE id = 1")
    if row is None:
        return None
    return row[0], row[1], row[2], row[3], row[4]


def _export_table_sql() -> str:
    """The CREATE statement of the export table, from the store's SQL."""
    buf = ""
    for line in schemas.sql("store").splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if f"CREATE TABLE IF NOT EXISTS {EXPORT_TABLE}" in buf:
                return "\n".join(
                    ln for ln in buf.splitlines() if not ln.lstrip().startswith("--")
                ).strip()
            buf = ""
    raise AssertionError(f"schemas/store.sql has no {EXPORT_TABLE}")


def write_export(
    tx: Any, target: bytes, nonce: bytes, prior: bytes, manifest: bytes, detail: str
) -> None:
    """Record the seal in ``tx`` (creating the table in a store that lacks it)."""
    tx.execute(_export_table_sql())
    tx.execute(
        f"INSERT INTO {EXPORT_TABLE} (id, target, nonce, prior, manifest, detail, "
        "transaction_no) VALUES (1, ?, ?, ?, ?, ?, ?)",
        (target, nonce, prior, manifest, detail, tx.number),
    )


def counter(db: Any) -> tuple[str, int]:
    """``(store id, last transaction)`` of the store."""
    row = db.one("SELECT store_id, last_transaction FROM bbg_storage_v1 WHERE id = 1")
    assert row is not None, "a BBG store has its bbg_storage_v1 row"
    return str(row[0]), int(row[1])


def head_value(db: Any, namespace: bytes) -> bytes | None:
    """The stored bytes of ``namespace``'s head, or None."""
    row = db.one("SELECT value FROM application_heads WHERE key = ?", (namespace,))
    return None if row is None else bytes(row[0])


def head_count(db: Any) -> int:
    """How many namespaces have a head."""
    row = db.one("SELECT count(*) FROM application_heads")
    return 0 if row is None else int(row[0])


def rows_after(db: Any, table: str, after: bytes, limit: int) -> list[tuple[Any, Any]]:
    """At most ``limit`` rows of the application ``table`` with keys past ``after``."""
    return list(db.rows(
        f"SELECT key, value FROM {check_table(table)} WHERE key > ? ORDER BY key LIMIT ?",
        (after, limit),
    ))  # fmt: skip
