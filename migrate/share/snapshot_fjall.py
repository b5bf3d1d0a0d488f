"""``snapshot`` of a store on the Fjall engine (the real BBG database): snapshot/1 format 3.

The lines are those of a SQLite store's snapshot (:mod:`migrate.share.snapshot`,
docs/snapshot1.md) with three differences, so that the snapshot restores into either engine:

* the header says ``"format": 3``, ``"engine": "fjall"`` and whether the toolkit's records
  (``DIR.bbg-migrate/``) exist: ``"records": "present"`` or ``"absent"`` (a store the cyber
  code wrote has none: then ``basis_tx`` is 0, ``store_id`` null, and no record lines or
  storage record follow);
* after the five tables, every row of every other partition of the keyspace (bbg's markers
  and fences in ``bbg_import_v1``, its change ids in ``bbg_storage_v1``, and whatever else
  bbg keeps), by partition name then key: ``{"partition", "key", "value", "h"}`` (hex);
* the footer adds ``"partitions": {name: rows}`` for those lines (every partition, 0
  included); ``records`` counts them too.

Everything is read from one point-in-time snapshot of the keyspace (no lock taken: the
owner may keep writing) and one read transaction of the records, taken just before it
(:func:`~migrate.store.keyspace_store.open_fjall_view` ``records_first``: the keyspace may
hold rows of a transaction the records do not name yet, as after a crash, never the other
way round).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from fences import generations
from migrate.progress import Observer
from migrate.share.common import require_ledger
from migrate.share.snapshot import (
    FORMAT,
    line_count,
    record_lines,
    sealed,
    staging_refused,
    storage_info,
    write_lines,
)
from migrate.store import clock, layout, ledger
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.digest import archive_digest
from migrate.store.engine import records_dir
from migrate.store.keyspace import FjallView
from migrate.store.keyspace_store import open_fjall_view
from migrate.store.tables import StoreTables

FJALL_FORMAT = 3
PRESENT, ABSENT = "present", "absent"


def records_state_of(directory: Path) -> str:
    """``present`` when the store has the toolkit's records beside it, else ``absent``."""
    return PRESENT if (records_dir(directory) / layout.DB_NAME).exists() else ABSENT


def records_state(view: FjallView) -> str:
    """:func:`records_state_of` the store ``view`` reads."""
    return records_state_of(view.directory)


def fjall_snapshot_lines(view: FjallView, created_at: int) -> Iterator[bytes]:
    """Every line of the snapshot of the Fjall store ``view`` reads (inside a read of its
    records: ``view.read()``, or a view opened ``records_first``)."""
    generations.require_readable(view)
    state = records_state(view)
    records = view.records
    if state == PRESENT:
        require_ledger(records)
        staging_refused(records)
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    parts: dict[str, int] = {}

    def emit(doc: dict[str, Any]) -> bytes:
        line = sealed(doc)
        digest.update(line)
        return line

    if state == PRESENT:
        info = storage_info(records)
        basis, store_id, suite = ledger.last_tx(records), info[0], info[1]
    else:
        basis, store_id, suite = 0, None, layout.DEFAULT_HASH_SUITE
    yield emit({"bbg": FORMAT, "format": FJALL_FORMAT, "engine": "fjall", "records": state,
                "basis_tx": basis, "store_id": store_id, "hash_suite": suite})  # fmt: skip
    yield sealed({"created_at": created_at})
    for table in ARCHIVE_ORDER:
        counts[table] = 0
        for key, value in view.live_rows(table):
            counts[table] += 1
            yield emit({"table": table, "key": key.hex(), "value": value.hex()})
    for name in sorted(view.partitions() - set(ARCHIVE_ORDER)):
        parts[name] = 0
        for key, value in view.live_rows(name):
            parts[name] += 1
            yield emit({"partition": name, "key": key.hex(), "value": value.hex()})
    if state == PRESENT:
        yield from record_lines(records, emit, counts)
    yield sealed(
        {
            "bbg": "end",
            "counts": counts,
            "partitions": parts,
            "records": sum(counts.values()) + sum(parts.values()),
            "archive_digest_sha256": archive_digest(StoreTables(view)).hex(),
            "sha256": digest.hexdigest(),
        }
    )


def fjall_line_count(view: FjallView) -> int:
    """The lines :func:`fjall_snapshot_lines` writes, for progress: counted by a pass over the
    keyspace snapshot (bbg keeps no row counts)."""
    rows = sum(1 for name in view.partitions() for _ in view.live_rows(name))
    if records_state(view) == PRESENT:
        return rows + line_count(view.records)  # its five tables are empty: header ... footer
    return rows + 3


def write_fjall_snapshot(
    store_dir: Path,
    out: BinaryIO,
    *,
    created_at: int | None = None,
    progress: Observer | None = None,
) -> dict[str, Any]:
    """Write the snapshot of the Fjall store in ``store_dir`` to ``out``; returns a summary
    (``records``: whether the toolkit's records were there to carry)."""
    when = clock.now_us() if created_at is None else created_at
    with open_fjall_view(store_dir, records_first=True) as view:
        total = None if progress is None else fjall_line_count(view)
        state = records_state(view)
        lines, size = write_lines(fjall_snapshot_lines(view, when), out, progress, total)
    return {"kind": "bbg-snapshot", "lines": lines, "bytes": size, "engine": "fjall",
            "records": state}  # fmt: skip
