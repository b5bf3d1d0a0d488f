"""``snapshot``: every retained row of a store as bbg-snapshot/1 NDJSON (docs/snapshot1.md).

Lines (each canonical JSON, LF-terminated; each carries ``h``, the first 16 hex digits of
SHA-256 over the line's canonical JSON without ``h``, so a damaged byte names its line):

1. header ``{"bbg": "snapshot/1", "format": 2, "basis_tx": <last ledger transaction>,
   "store_id", "hash_suite", "h"}``;
2. the creation time ``{"created_at": <µs since the epoch, UTC>, "h"}`` — the only line that
   differs between two snapshots of one state, and the only line the footer's SHA-256 leaves
   out, so the rest of the file is a pure function of the store's state;
3. one record per row of the five application tables, archive order (``ARCHIVE_ORDER``), key order:
   ``{"table", "key", "value", "h"}`` (hex);
4. one record per row of every other retained table (the transaction ledger and its heads and
   rows, retention boundaries and excised ids, status marker, fences, imports, seals,
   receipts, journal, and any table a later schema adds), by table name, rows ordered by all
   columns: ``{"table", "row": {column: int | text | {"hex": blob} | null}, "h"}``;
5. the storage record ``{"table": "bbg_storage_v1", "row": {"hash_suite",
   "last_transaction"}, "h"}``;
6. footer ``{"bbg": "end", "counts": {table: rows}, "records": n, "archive_digest_sha256",
   "sha256": <SHA-256 over the bytes of every prior line but line 2, LF included>, "h"}``.

``restore`` rebuilds the same store (same store id, same ledger), so snapshot → restore →
snapshot gives the same bytes except line 2.  Not retained: in-flight import machinery
(``bbg_import_v1_staged``, ``_staged_namespaces``, ``_cursors``).  A store with an import in
state ``staging`` is refused: finish or discard it.  The snapshot is read from one read
transaction on a read-only connection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from bbg_core.errors import StoreRefused
from fences import generations
from migrate.progress import Observer, counter
from migrate.share.common import canonical, damaged_reads, require_ledger, require_sound
from migrate.store import clock, imports, ledger, leftovers, storage_row
from migrate.store.catalog import columns, ordered_rows, row_count, table_names
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.connection import Connection
from migrate.store.digest import archive_digest
from migrate.store.readonly import open_sqlite_readonly
from migrate.store.tables import StoreTables

FORMAT = "snapshot/1"
REPORT_EVERY = 1024  # lines between two progress reports
SNAPSHOT_FORMAT = 2  # version 1 (no ledger, basis event id) is not read any more
STORAGE = storage_row.STORAGE
IN_FLIGHT = frozenset(
    {"bbg_import_v1_staged", "bbg_import_v1_staged_namespaces", "bbg_import_v1_cursors"}
)


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


def snapshot_lines(conn: Connection, created_at: int) -> Iterator[bytes]:
    """Every line of the snapshot of ``conn`` (call inside a read transaction)."""
    generations.require_readable(conn, sealed_ok=True)
    require_ledger(conn)
    staging_refused(conn)
    digest = hashlib.sha256()
    counts: dict[str, int] = {}

    def emit(doc: dict[str, Any]) -> bytes:
        line = sealed(doc)
        digest.update(line)
        return line

    info = storage_info(conn)
    yield emit({"bbg": FORMAT, "format": SNAPSHOT_FORMAT, "basis_tx": ledger.last_tx(conn),
                "store_id": info[0], "hash_suite": info[1]})  # fmt: skip
    yield sealed({"created_at": created_at})  # the time line: not in the footer's digest
    tables = StoreTables(conn)
    for table in ARCHIVE_ORDER:
        counts[table] = 0
        for key, value in tables.rows(table):
            counts[table] += 1
            yield emit({"table": table, "key": key.hex(), "value": value.hex()})
    yield from record_lines(conn, emit, counts)
    yield sealed(
        {
            "bbg": "end",
            "counts": counts,
            "records": sum(counts.values()),
            "archive_digest_sha256": archive_digest(tables).hex(),
            "sha256": digest.hexdigest(),
        }
    )


def storage_info(conn: Any) -> tuple[Any, ...]:
    """``(store_id, hash_suite)`` of the store's storage row."""
    return storage_row.id_and_suite(conn)


def staging_refused(conn: Any) -> None:
    """StoreRefused when an import of the store is still staging (staged rows are not
    retained state)."""
    staging = leftovers.a_staging_import(conn)
    if staging is not None:
        raise StoreRefused(
            f"{conn.path}: import {staging} is still staging; finish it, or give it up "
            f"with {imports.discard_command(conn.path.parent, staging)}, before taking a "
            "snapshot (staged rows are not retained state)",
            path=str(conn.path),
            import_id=staging,
        )


def record_lines(
    conn: Any, emit: Callable[[dict[str, Any]], bytes], counts: dict[str, int]
) -> Iterator[bytes]:
    """The lines of every other retained table (lines 4), then the storage record (line 5)."""
    for table in retained_tables(conn):
        names = columns(conn, table)
        counts[table] = 0
        for row in ordered_rows(conn, table, names):
            counts[table] += 1
            cells = dict(zip(names, map(encode_cell, row), strict=True))
            yield emit({"table": table, "row": cells})
    storage = storage_row.suite_and_last(conn)
    counts[STORAGE] = 1
    suite = {"hash_suite": storage[0], "last_transaction": storage[1]}
    yield emit({"table": STORAGE, "row": suite})


def line_count(conn: Connection) -> int:
    """The lines :func:`snapshot_lines` will write (header, time, a record per row of every
    carried table, the storage record, footer): a total for progress, from row counts."""
    return sum(row_count(conn, t) for t in [*ARCHIVE_ORDER, *retained_tables(conn)]) + 4


def write_sqlite_snapshot(
    store_dir: Path,
    out: BinaryIO,
    *,
    created_at: int | None = None,
    progress: Observer | None = None,
) -> dict[str, Any]:
    """Write the snapshot of the SQLite store in ``store_dir`` to ``out``; returns a summary.
    ``progress``: an observer (stage ``snapshot``, lines written out of the lines due)."""
    when = clock.now_us() if created_at is None else created_at
    with open_sqlite_readonly(store_dir) as conn, conn.read(), damaged_reads(conn.path):
        require_sound(conn, "exported")
        total = None if progress is None else line_count(conn)
        lines, size = write_lines(snapshot_lines(conn, when), out, progress, total)
    return {"kind": "bbg-snapshot", "lines": lines, "bytes": size}


def write_lines(
    source: Iterator[bytes], out: BinaryIO, progress: Observer | None, total: int | None
) -> tuple[int, int]:
    """Write the lines of ``source`` to ``out``; ``(lines, bytes)``."""
    lines = size = 0
    report = None if progress is None else counter(progress, "snapshot", total, "lines")
    for line in source:
        out.write(line)
        lines += 1
        size += len(line)
        if report is not None and not lines % REPORT_EVERY:
            report(lines)
    if report is not None:
        report(lines)
    out.flush()
    return lines, size
