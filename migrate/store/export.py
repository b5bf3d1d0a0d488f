"""The store's records of a transfer (source and target), on either engine.

**Source.** A store sealed as the source of a BBG → BBG transfer holds one row in
``bbg_import_v1_export`` (older stores lack the table: the sealing transaction creates it from
``schemas/store.sql``): the 32-byte target, nonce, prior and manifest, and the seal's facts as
canonical JSON.  On the Fjall engine (the real BBG database) the seal is bbg's own key,
``bbg_import_v1["application-export"] = target ‖ nonce ‖ prior ‖ manifest`` (128 bytes,
cyberia-to/bbg ``rs/src/storage/application/transfer.rs``, ``archive.rs`` ``SEAL``), written
in the sealing batch with ``status = "export-v1"``; the records beside the keyspace keep the
same row with the facts (so an interrupted seal whose batch landed but whose records did not
is recognised: :func:`keyspace_seal` returns it without facts).

**Target.** bbg's ``prepare_target`` keeps, for good, per source namespace
``bbg_import_v1['s' ‖ namespace] = manifest``, and per transfer ``'u' ‖ manifest = target`` and
``'t' ‖ manifest = cursor`` (:func:`source_key`, :func:`target_key`, :func:`cursor_key`).  A
Fjall target holds exactly these keys; a SQLite target keeps the reservation as a fence
record and the cursor in its records.

The transfer (:mod:`migrate.transfer`) decides what to write; this module reads and writes
the keys and records, and the counter, heads and pages sealing and copying read.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import schemas
from migrate.store import bbg_changes, bbgdb

EXPORT_TABLE = "bbg_import_v1_export"
#: bbg's seal key in ``bbg_import_v1`` (``archive.rs`` ``SEAL``) and its value's length.
SEAL_KEY = b"application-export"
SEAL_LEN = 128


def source_key(namespace: bytes) -> bytes:
    """``'s' ‖ namespace``: a transferred namespace's reservation (value: the manifest)."""
    return b"s" + namespace


def cursor_key(manifest: bytes) -> bytes:
    """``'t' ‖ manifest``: the transfer's copy cursor in the target."""
    return b"t" + manifest


def target_key(manifest: bytes) -> bytes:
    """``'u' ‖ manifest``: the target a transfer was prepared for."""
    return b"u" + manifest


def is_keyspace(db: Any) -> bool:
    """True when ``db`` (a handle, view or write transaction) reads the real BBG database."""
    from migrate.store.keyspace import FjallTx, KeyspaceRows
    from migrate.store.keyspace_store import FjallStore

    return isinstance(db, KeyspaceRows | FjallTx | FjallStore)


def keyspace_seal(db: Any) -> bytes | None:
    """bbg's 128-byte seal in a Fjall store, or None."""
    return db.live_get(bbgdb.MIGRATION, SEAL_KEY)  # type: ignore[no-any-return]


#: :func:`bbg_last_transaction` of a SQLite store that records no change id.
UNKNOWN = bbg_changes.UNKNOWN


def bbg_last_transaction(db: Any) -> bytes | None | str:
    """bbg's ``last_transaction`` (the change id of the store's last transaction that changed
    bbg's tables), None when there was none; on a SQLite store as it recorded it
    (:mod:`migrate.store.bbg_changes`), :data:`UNKNOWN` when it recorded none (a store
    written before it did, or restored)."""
    if not is_keyspace(db):
        return bbg_changes.recorded(db)
    value: bytes | None = db.live_get(bbgdb.METADATA, bbgdb.LAST_TRANSACTION)
    return value


def seal_change_id(seal: bytes) -> bytes:
    """The change id of bbg's sealing transaction (the seal and ``status = export-v1``): a
    sealed Fjall source whose ``last_transaction`` is still this was not written since."""
    return bbgdb.change_id({(bbgdb.MIGRATION, SEAL_KEY): seal,
                            (bbgdb.MIGRATION, bbgdb.STATUS): b"export-v1"})  # fmt: skip


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
    """Record the seal in ``tx`` (creating the table in a store that lacks it); on a Fjall
    store also bbg's key (the keyspace is the truth, the row keeps the seal's facts)."""
    if is_keyspace(tx):
        tx.put_raw(bbgdb.MIGRATION, SEAL_KEY, target + nonce + prior + manifest)
    else:  # the row is bbg's key: part of the sealing transaction's change id
        tx.note_change(bbgdb.MIGRATION, SEAL_KEY, target + nonce + prior + manifest)
    tx.execute(_export_table_sql())
    tx.execute(
        f"INSERT INTO {EXPORT_TABLE} (id, target, nonce, prior, manifest, detail, "
        "transaction_no) VALUES (1, ?, ?, ?, ?, ?, ?)",
        (target, nonce, prior, manifest, detail, tx.number),
    )


def record_export(
    tx: Any, target: bytes, nonce: bytes, prior: bytes, manifest: bytes, detail: str
) -> None:
    """Record (or replace) the seal's row in the records only: the facts of a Fjall seal whose
    keyspace batch landed and whose records did not (bbg's key is not written again)."""
    tx.execute(_export_table_sql())
    tx.execute(
        f"INSERT INTO {EXPORT_TABLE} (id, target, nonce, prior, manifest, detail, transaction_no) "
        "VALUES (1, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET target = excluded.target, "
        "nonce = excluded.nonce, prior = excluded.prior, manifest = excluded.manifest, "
        "detail = excluded.detail, transaction_no = excluded.transaction_no",
        (target, nonce, prior, manifest, detail, tx.number),
    )


def counter(db: Any) -> tuple[str, int]:
    """``(store id, last transaction)`` of the store."""
    row = db.one("SELECT store_id, last_transaction FROM bbg_storage_v1 WHERE id = 1")
    assert row is not None, "a BBG store has its bbg_storage_v1 row"
    return str(row[0]), int(row[1])


def head_value(db: Any, namespace: bytes) -> bytes | None:
    """The stored bytes of ``namespace``'s head, or None (either engine)."""
    value: bytes | None = db.live_get("application_heads", namespace)
    return value


def head_count(db: Any, at_most: int) -> int:
    """How many namespaces have a head, counted up to ``at_most`` + 1."""
    return sum(1 for _ in db.live_rows("application_heads", limit=at_most + 1))


def rows_after(db: Any, table: str, after: bytes, limit: int) -> list[tuple[bytes, bytes]]:
    """At most ``limit`` rows of the application ``table`` with keys past ``after`` (either
    engine; ``after`` empty: from the first key)."""
    return list(db.live_rows(table, after=after or None, limit=limit))


def reserve_source(tx: Any, namespace: bytes, manifest: bytes, import_id: str) -> None:
    """Reserve a transferred namespace in the target for good (bbg ``prepare_target``): on a
    Fjall store bbg's key ``'s' ‖ namespace = manifest``; on either engine a fence record
    naming the transfer, so GraphPort writes to it are Fenced from now on (bbg
    ``apply_checked``: an ``'s'`` key present → Fenced), as bbg never removes the key."""
    from migrate.store import markers

    if is_keyspace(tx):
        tx.put_raw(bbgdb.MIGRATION, source_key(namespace), manifest)
    markers.put_fence(
        tx, namespace, import_id,
        f"transferred into this store by transfer {import_id} (bbg keeps "
        "bbg_import_v1['s' || namespace] and refuses writes to it for good)",
    )  # fmt: skip


def put_cursor(tx: Any, manifest: bytes, cursor: bytes) -> None:
    """bbg's ``'t' ‖ manifest`` cursor in a Fjall target (a SQLite target keeps the cursor in
    its records only)."""
    if is_keyspace(tx):
        tx.put_raw(bbgdb.MIGRATION, cursor_key(manifest), cursor)


def put_target(tx: Any, manifest: bytes, target: bytes) -> None:
    """bbg's ``'u' ‖ manifest = target`` in a Fjall target (a SQLite target keeps the target
    in the transfer's seal record)."""
    if is_keyspace(tx):
        tx.put_raw(bbgdb.MIGRATION, target_key(manifest), target)
