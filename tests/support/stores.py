"""Engine-neutral looks at a store from outside the tool, for tests.

A store is one of two engines (:mod:`migrate.store.engine`): ``sqlite`` (``bbg.sqlite3``
holds bbg's five tables and the toolkit's records) or ``fjall`` (the real BBG database: a
Fjall keyspace holding bbg's rows, the records in ``<store>.bbg-migrate/bbg.sqlite3``).
These helpers read and change a store behind the tool's back the same way on both, so a
test of pipeline behaviour checks the same facts whichever engine the suite runs on:

* :func:`engine_of`, :func:`records_db`, :func:`store_files`: what is where;
* :func:`live_rows`, :func:`live_get`, :func:`live_digest`, :func:`status`,
  :func:`last_transaction`: bbg's rows and markers as a reader of the engine sees them;
* :func:`records`, :func:`records_write`: the toolkit's records (SQL, either engine);
* :func:`dump`: every row the store holds, rows and records, for "nothing changed" checks;
* :func:`set_status`, :func:`put_raw`, :func:`put_rows`: tampering (SQLite: SQL in one
  transaction; Fjall: one batch appended to the keyspace, as a writer of the real database
  would);
  :func:`tx_put_raw`: the same inside a write transaction of an open handle (on Fjall the
  handle holds ``bbg.lock``, so nobody else may write while it is open).

None of them goes through the tool's own store code: on SQLite they are plain ``sqlite3``,
on Fjall the keyspace reader and writer of :mod:`migrate.store.fjall`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from migrate.rules.shape import DIGEST_ORDER
from migrate.store import bbgdb
from migrate.store.engine import FJALL, SQLITE, SQLITE_FILE, records_dir
from migrate.store.engine import engine_of as _engine_of
from migrate.store.fjall import append_batch, open_keyspace

FIVE = tuple(DIGEST_ORDER)
#: The archive digest of five empty tables.
EMPTY_DIGEST = hashlib.sha256(bytes(range(5))).hexdigest()


def engine_of(store_dir: Path) -> str | None:
    """``fjall``, ``sqlite`` or None (no store at ``store_dir``)."""
    return _engine_of(Path(store_dir))


def _engine(store_dir: Path) -> str:
    found = engine_of(store_dir)
    if found is None:
        raise AssertionError(f"{store_dir}: no store here")
    return found


def records_db(store_dir: Path) -> Path:
    """The SQLite file holding the toolkit's records of the store: ``bbg.sqlite3`` of a SQLite
    store, ``<store>.bbg-migrate/bbg.sqlite3`` of a Fjall store (the latter also when the
    store does not exist yet)."""
    if engine_of(store_dir) == SQLITE:
        return Path(store_dir) / SQLITE_FILE
    return records_dir(Path(store_dir)) / SQLITE_FILE


@contextmanager
def records(store_dir: Path) -> Iterator[sqlite3.Connection]:
    """A read-only ``sqlite3`` connection to the records database (:func:`records_db`)."""
    conn = sqlite3.connect(f"file:{records_db(store_dir)}?mode=ro", uri=True)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def records_write(store_dir: Path) -> Iterator[sqlite3.Connection]:
    """A ``sqlite3`` connection to the records database, inside one transaction committed at
    the end of the block (tampering with the toolkit's records)."""
    conn = sqlite3.connect(records_db(store_dir))
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def store_files(store_dir: Path) -> list[Path]:
    """Every file of the store, sorted: the store directory's and, for a Fjall store (or
    where one would keep them), the records directory's."""
    out: list[Path] = []
    for root in (Path(store_dir), records_dir(Path(store_dir))):
        if not root.is_dir():
            continue
        for dirpath, _dirs, files in os.walk(root):
            out.extend(Path(dirpath) / name for name in files)
    return sorted(out)


def live_rows(store_dir: Path, table: str) -> list[tuple[bytes, bytes]]:
    """The live rows of bbg's ``table`` in key order (on SQLite: one of the five tables)."""
    if _engine(store_dir) == FJALL:
        with open_keyspace(store_dir) as ks:
            if table not in ks.partitions():
                return []
            return [(bytes(k), bytes(v)) for k, v in ks.scan(table)]
    with records(store_dir) as conn:
        if table not in FIVE:
            raise ValueError(f"a SQLite store keeps bbg's rows of the five tables only: {table}")
        rows = conn.execute(f"SELECT key, value FROM {table} ORDER BY key")
        return [(bytes(k), bytes(v)) for k, v in rows]


def live_get(store_dir: Path, table: str, key: bytes) -> bytes | None:
    """The live value under ``key`` in bbg's ``table``, or None."""
    if _engine(store_dir) == FJALL:
        with open_keyspace(store_dir) as ks:
            return ks.get(table, key) if table in ks.partitions() else None
    return dict(live_rows(store_dir, table)).get(key)


def live_digest(store_dir: Path) -> str | None:
    """The archive digest (BRIEF §6) of the store's live five tables, computed here from the
    rows; None when there is no store at ``store_dir``."""
    if engine_of(store_dir) is None:
        return None
    h = hashlib.sha256()
    for ordinal, table in enumerate(FIVE):
        h.update(bytes([ordinal]))
        for key, value in live_rows(store_dir, table):
            h.update(len(key).to_bytes(8, "little") + key)
            h.update(len(value).to_bytes(8, "little") + value)
    return h.hexdigest()


def status(store_dir: Path) -> str | None:
    """The status marker (``bbg_import_v1["status"]`` / the SQLite ``status`` column)."""
    if _engine(store_dir) == FJALL:
        raw = live_get(store_dir, bbgdb.MIGRATION, bbgdb.STATUS)
        return None if raw is None else raw.decode("utf-8", "backslashreplace")
    with records(store_dir) as conn:
        row = conn.execute("SELECT status FROM bbg_import_v1").fetchone()
    return None if row is None or row[0] is None else str(row[0])


def last_transaction(store_dir: Path) -> int:
    """The toolkit's transaction counter (``bbg_storage_v1.last_transaction`` of the
    records): how many write transactions the toolkit committed."""
    with records(store_dir) as conn:
        row = conn.execute("SELECT last_transaction FROM bbg_storage_v1 WHERE id = 1").fetchone()
    return int(row[0])


def bookkeeping(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """The import bookkeeping of a store, without transaction numbers."""
    with records(store) as conn:
        q = {
            "imports": "SELECT import_id, state FROM bbg_import_v1_imports",
            "seals": "SELECT * FROM bbg_import_v1_seals",
            "cursors": "SELECT * FROM bbg_import_v1_cursors",
            "journal": "SELECT import_id, stage, detail FROM bbg_import_v1_journal ORDER BY stage",
            "receipts": "SELECT * FROM bbg_import_v1_receipts",
            "nonces": "SELECT * FROM bbg_import_v1_nonces",
            "staged": "SELECT count(*) FROM bbg_import_v1_staged",
            "status": "SELECT status, generation FROM bbg_import_v1",
        }
        return {name: conn.execute(sql).fetchall() for name, sql in q.items()}


def dump(store_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table the store holds: the SQLite file's tables (rows and records),
    and on Fjall also every partition of the keyspace (``fjall:<name>``) -- the store's whole
    logical content, for "nothing was written" checks."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    if records_db(store_dir).exists():
        with records(store_dir) as conn:
            tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            names = [r[0] for r in tables]
            for name in names:
                out[name] = sorted(conn.execute(f"SELECT * FROM {name}").fetchall())
    if engine_of(store_dir) == FJALL:
        with open_keyspace(store_dir) as ks:
            for name in ks.partitions():
                out[f"fjall:{name}"] = [(bytes(k), bytes(v)) for k, v in ks.scan(name)]
    return out


def _batch(store_dir: Path, changes: dict[tuple[str, bytes], bytes | None], markers: bool) -> None:
    full = bbgdb.with_markers(changes) if markers else dict(changes)
    append_batch(store_dir, [(t, k, v) for (t, k), v in sorted(full.items())])


def set_status(store_dir: Path, marker: str | None, generation: str | None = None) -> None:
    """Write the status marker directly, as bbg's own test does with
    ``tx.put(Migration, status)`` (Fjall: one batch with bbg's ``last_transaction``;
    SQLite: the ``bbg_import_v1`` row, its ``generation`` column ``generation`` or
    ``original``)."""
    if _engine(store_dir) == FJALL:
        value = None if marker is None else marker.encode()
        _batch(store_dir, {(bbgdb.MIGRATION, bbgdb.STATUS): value}, markers=True)
        return
    with records_write(store_dir) as conn:
        conn.execute(
            "INSERT INTO bbg_import_v1 (id, status, generation, transaction_no) "
            "VALUES (1, ?, ?, 0) ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
            "generation = excluded.generation",
            (marker, generation or "original"),
        )


def put_raw(store_dir: Path, table: str, key: bytes, value: bytes | None, *,
            markers: bool = False) -> None:  # fmt: skip
    """Put (``None``: remove) one of bbg's rows behind the tool's back, no rule checked
    (SQLite: the five tables, in one SQL transaction; Fjall: any partition, one batch,
    with bbg's marker rows when ``markers``)."""
    put_rows(store_dir, {(table, key): value}, markers=markers)


def put_rows(store_dir: Path, changes: dict[tuple[str, bytes], bytes | None], *,
             markers: bool = False) -> None:  # fmt: skip
    """:func:`put_raw` of every ``(table, key) -> value`` of ``changes`` at once: one SQL
    transaction on SQLite, one batch on Fjall (a writer putting many rows in one commit)."""
    if _engine(store_dir) == FJALL:
        _batch(store_dir, changes, markers=markers)
        return
    stray = sorted({table for table, _key in changes} - set(FIVE))
    if stray:
        raise ValueError(f"a SQLite store keeps bbg's rows of the five tables only: {stray[0]}")
    with records_write(store_dir) as conn:
        for (table, key), value in changes.items():
            if value is None:
                conn.execute(f"DELETE FROM {table} WHERE key = ?", (key,))
            else:
                conn.execute(f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)",
                             (key, value))  # fmt: skip


def prepare_activation(store: Any, import_id: str) -> None:
    """What the pipeline's activate stage does before ``imports.activate`` on a Fjall store
    (:func:`migrate.pipeline.stages.activate_stage`): the activation plan (new rows,
    conflicts) journaled first in its own transaction (``activating``), and rows beyond one
    batch published as segments.  Nothing on SQLite, where ``imports.activate`` publishes in
    the records' own transaction.  A Conflict the plan finds is raised here, nothing
    written."""
    from migrate.pipeline.stages import BATCH_BYTES, BATCH_ROWS
    from migrate.store import imports

    if store.engine != FJALL:
        return
    with store.transaction(import_id=import_id) as tx:
        if imports.journal_of(tx, import_id, "activating") is None:
            plan = imports.plan_activation(tx, import_id)
            plan["bulk"] = plan["rows"] > BATCH_ROWS or plan["bytes"] > BATCH_BYTES
            imports.journal(tx, import_id, "activating", plan)
    recorded = imports.journal_of(store, import_id, "activating")
    if recorded is not None and recorded["bulk"]:
        store.publish_bulk(import_id)


def tx_put_raw(tx: Any, table: str, key: bytes, value: bytes | None) -> None:
    """Put (``None``: remove) one of bbg's rows inside the write transaction ``tx`` of a store
    handle, no rule checked (damage on purpose)."""
    from migrate.store.keyspace import FjallTx

    if isinstance(tx, FjallTx):
        tx.put_raw(table, key, value)
        return
    if table not in FIVE:
        raise ValueError(f"a SQLite store keeps bbg's rows of the five tables only: {table}")
    if value is None:
        tx.delete(table, key)
    else:  # in the transaction's change id, as put_raw's row is in a Fjall batch
        tx.execute(f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)", (key, value))
        tx.note_change(table, key, value)


__all__ = [
    "EMPTY_DIGEST", "FIVE", "dump", "engine_of", "last_transaction", "live_digest", "live_get",
    "live_rows", "put_raw", "records", "records_db", "records_write", "set_status", "status",
    "prepare_activation", "store_files", "tx_put_raw",
]  # fmt: skip
