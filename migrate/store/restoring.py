"""The writes of a restore into a new SQLite store (:mod:`migrate.share.restore`).

A restore fills a pristine store from a snapshot inside one write transaction; the share
layer decides what each snapshot line means, and these functions are the only place that
knows how a SQLite store holds it:

* :func:`insert_record` -- one row of a retained records table, by column name;
* :func:`take_identity` -- the snapshot's ledger replaces the new store's (its ledger tables
  emptied) and its store id becomes the store's;
* :func:`set_storage` -- the storage row's hash suite and last transaction;
* :func:`set_status` / :func:`add_fence` -- bbg's status marker and a fence of a Fjall
  store's snapshot, as a SQLite store keeps them;
* :func:`ledger_catch_up` -- one ledger transaction naming what the ledger does not (rows a
  Fjall store published in bulk, whose records never named them).
"""

from __future__ import annotations

from typing import Any

from migrate.store import ledger
from migrate.store.connection import Connection
from migrate.store.storage_row import STORAGE
from migrate.store.tx import Tx


def insert_record(tx: Tx, table: str, names: list[str], values: list[Any]) -> None:
    """One row of ``table`` with these column ``names`` and ``values``."""
    tx.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
        values,
    )


def take_identity(conn: Connection, store_id: Any) -> None:
    """Empty the new store's ledger (a snapshot carries the whole ledger, creation included)
    and give the store the snapshot's ``store_id``."""
    for table in ledger.TABLES:
        conn.execute(f"DELETE FROM {table}")
    conn.execute(f"UPDATE {STORAGE} SET store_id = ? WHERE id = 1", (store_id,))


def set_storage(conn: Connection, hash_suite: Any, last_transaction: Any) -> None:
    """The storage row's hash suite and last transaction."""
    conn.execute(
        f"UPDATE {STORAGE} SET hash_suite = ?, last_transaction = ? WHERE id = 1",
        (hash_suite, last_transaction),
    )


def set_status(conn: Connection, marker: str | None, generation: str, now: int) -> None:
    """The status row (None: no status row); an existing row keeps its generation and
    transaction."""
    if marker is None:
        conn.execute("DELETE FROM bbg_import_v1")
        return
    conn.execute(
        "INSERT INTO bbg_import_v1 (id, status, generation, transaction_no) "
        "VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET status = excluded.status",
        (marker, generation, now),
    )


def add_fence(conn: Connection, namespace: bytes, reason: str, now: int) -> None:
    """A fence record for ``namespace`` (no import wrote it), unless one exists."""
    conn.execute(
        "INSERT INTO bbg_import_v1_fences (namespace, import_id, reason, transaction_no) "
        "VALUES (?, '', ?, ?) ON CONFLICT (namespace) DO NOTHING",
        (namespace, reason, now),
    )


def ledger_catch_up(conn: Connection) -> int | None:
    """One ledger transaction (kind ``upgrade``, as ``upgrade`` records a store from before
    the ledger) recording the heads not where the ledger left them and the content or claim
    rows no transaction names; its number, or None when there was nothing to record."""
    number = ledger.last_tx(conn) + 1
    heads = conn.execute(
        f"INSERT INTO {ledger.HEADS} (tx, namespace, before, after, request) "
        f"SELECT ?, h.key, (SELECT l.after FROM {ledger.HEADS} AS l WHERE l.namespace = h.key "
        "ORDER BY l.tx DESC LIMIT 1), h.value, NULL FROM application_heads AS h "
        f"WHERE h.value IS NOT (SELECT l.after FROM {ledger.HEADS} AS l "
        "WHERE l.namespace = h.key ORDER BY l.tx DESC LIMIT 1)",
        (number,),
    ).rowcount
    rows = conn.execute(
        f"INSERT INTO {ledger.ROWS} (tx, tbl, key) SELECT ?, 0, key FROM application_content "
        "WHERE key NOT IN (SELECT value FROM application_history) "
        f"AND key NOT IN (SELECT key FROM {ledger.ROWS} WHERE tbl = 0)",
        (number,),
    ).rowcount
    rows += conn.execute(
        f"INSERT INTO {ledger.ROWS} (tx, tbl, key) SELECT ?, 1, key "
        f"FROM application_unique_claims WHERE key NOT IN (SELECT key FROM {ledger.ROWS} "
        "WHERE tbl = 1)",
        (number,),
    ).rowcount
    if not (heads or rows):
        return None
    ledger.append(conn, number, "upgrade", None, [])
    conn.execute(f"UPDATE {STORAGE} SET last_transaction = ? WHERE id = 1", (number,))
    return number
