"""``snapshot``: every retained row of a store as bbg-snapshot/1 NDJSON.

Lines (each canonical JSON, LF-terminated; each carries ``h``, the first 16 hex digits of
SHA-256 over the line's canonical JSON without ``h``, so a damaged byte names its line):

1. header ``{"bbg": "snapshot/1", "basis": <last event id of tail, or null>,
   "created_at": <µs since the epoch, UTC>, "h"}`` — ``created_at`` is the only field that
   differs between two snapshots of one state;
2. one record per row of the five application tables, archive order (§6), key order:
   ``{"table", "key", "value", "h"}`` (hex);
3. one record per row of every other retained table (status marker, fences, imports, seals,
   receipts, journal, and any table a later schema adds), by table name, rows ordered by all
   columns: ``{"table", "row": {column: int | text | {"hex": blob} | null}, "h"}``;
4. the storage record ``{"table": "bbg_storage_v1", "row": {"hash_suite",
   "last_transaction"}, "h"}`` (the store id is not retained: a restored store is a new store);
5. footer ``{"bbg": "end", "counts": {table: rows}, "records": n, "archive_digest_sha256",
   "sha256": <SHA-256 over the bytes of every prior line, LF included>, "h"}``.

Not retained: in-flight import machinery (``bbg_import_v1_staged``, ``_staged_namespaces``,
``_cursors``).  A store with an import in state ``staging`` is refused: finish or discard it.
The snapshot is read from one read transaction on a read-only connection.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from bbg_core.errors import StoreRefused
from fences import generations
from migrate.share.common import (
    canonical,
    damaged_reads,
    open_readonly,
    require_sound,
    table_names,
)
from migrate.share.events import commit_event_id, rows_events
from migrate.store import imports
from migrate.store.codec import ARCHIVE_ORDER, CLAIMS, CONTENT
from migrate.store.connection import Connection
from migrate.store.digest import archive_digest
from migrate.store.tables import StoreTables

FORMAT = "snapshot/1"
STORAGE = "bbg_storage_v1"
IN_FLIGHT = frozenset(
    {"bbg_import_v1_staged", "bbg_import_v1_staged_namespaces", "bbg_import_v1_cursors"}
)
_BY_INDEX_DESC = ", ".join(f"substr(value, {40 - i}, 1) DESC" for i in range(8))


def line_hash(doc: dict[str, Any]) -> str:
    """The ``h`` of a snapshot line: SHA-256 of its canonical JSON without ``h``, 16 hex."""
    body = {k: v for k, v in doc.items() if k != "h"}
    return hashlib.sha256(canonical(body)).hexdigest()[:16]


def sealed(doc: dict[str, Any]) -> bytes:
    """``doc`` with its ``h`` added, as a canonical line."""
    return canonical({**doc, "h": line_hash(doc)})


def encode_cell(value: Any) -> Any:
    """A column value as JSON: ints and text as is, blobs as ``{"hex": ...}``."""
    if isinstance(value, bytes | memoryview):
        return {"hex": bytes(value).hex()}
    return value


def retained_tables(conn: Connection) -> list[str]:
    """The tables a snapshot carries besides the five and the storage row, by name."""
    skip = set(ARCHIVE_ORDER) | IN_FLIGHT | {STORAGE}
    return [t for t in table_names(conn) if t not in skip]


def columns(conn: Connection, table: str) -> list[str]:
    """Column names of ``table`` in declared order."""
    return [str(r[1]) for r in conn.rows(f"PRAGMA table_info({table})")]


def basis_event(conn: Connection) -> str | None:
    """The id of the last event ``tail`` would print, or None for an empty store."""
    for table in (CLAIMS, CONTENT):
        last: str | None = None
        for _, event in rows_events(conn, tables=(table,), last_bucket=True):
            last = str(event["event"])
        if last is not None:
            return last
    row = conn.one("SELECT key FROM application_heads ORDER BY key DESC LIMIT 1")
    if row is None:
        return None
    ns = bytes(row[0])
    req = conn.one(
        "SELECT key FROM application_requests WHERE key > ? AND key <= ? "
        f"ORDER BY {_BY_INDEX_DESC} LIMIT 1",
        (ns, ns + b"\xff" * 32),
    )
    return None if req is None else commit_event_id(ns, bytes(req[0])[32:])


def snapshot_lines(conn: Connection, created_at: int) -> Iterator[bytes]:
    """Every line of the snapshot of ``conn`` (call inside a read transaction)."""
    generations.require_readable(conn)
    staging = conn.one("SELECT import_id FROM bbg_import_v1_imports WHERE state = 'staging'")
    if staging is not None:
        raise StoreRefused(
            f"{conn.path}: import {staging[0]} is still staging; finish it, or give it up "
            f"with {imports.discard_command(conn.path.parent, staging[0])}, before taking a "
            "snapshot (staged rows are not retained state)",
            path=str(conn.path),
            import_id=staging[0],
        )
    digest = hashlib.sha256()
    counts: dict[str, int] = {}

    def emit(doc: dict[str, Any]) -> bytes:
        line = sealed(doc)
        digest.update(line)
        return line

    yield emit({"bbg": FORMAT, "basis": basis_event(conn), "created_at": created_at})
    tables = StoreTables(conn)
    for table in ARCHIVE_ORDER:
        counts[table] = 0
        for key, value in tables.rows(table):
            counts[table] += 1
            yield emit({"table": table, "key": key.hex(), "value": value.hex()})
    for table in retained_tables(conn):
        names = columns(conn, table)
        counts[table] = 0
        order = ", ".join(str(i + 1) for i in range(len(names)))
        for row in conn.rows(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}"):
            counts[table] += 1
            cells = dict(zip(names, map(encode_cell, row), strict=True))
            yield emit({"table": table, "row": cells})
    storage = conn.one(f"SELECT hash_suite, last_transaction FROM {STORAGE} WHERE id = 1")
    assert storage is not None
    counts[STORAGE] = 1
    suite = {"hash_suite": storage[0], "last_transaction": storage[1]}
    yield emit({"table": STORAGE, "row": suite})
    yield sealed(
        {
            "bbg": "end",
            "counts": counts,
            "records": sum(counts.values()),
            "archive_digest_sha256": archive_digest(tables).hex(),
            "sha256": digest.hexdigest(),
        }
    )


def write_snapshot(
    store_dir: Path, out: BinaryIO, *, created_at: int | None = None
) -> dict[str, Any]:
    """Write the snapshot of the store in ``store_dir`` to ``out``; returns a summary."""
    when = time.time_ns() // 1000 if created_at is None else created_at
    lines = size = 0
    with open_readonly(store_dir) as conn, conn.read(), damaged_reads(conn.path):
        require_sound(conn, "exported")
        for line in snapshot_lines(conn, when):
            out.write(line)
            lines += 1
            size += len(line)
    out.flush()
    return {"kind": "bbg-snapshot", "lines": lines, "bytes": size}
