"""A full scan of a redb file: every entry of every table, every page verified, timed.

Operators run it (``bbg-migrate redb scan``) to check a legacy file end to end before a
migration; the benchmark uses it too.  The document it returns is ``schemas/redb-scan``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from itertools import chain
from typing import Any

from importers.redb.reader import open_redb


def _rate(entries: int, seconds: float) -> float:
    return round(entries / seconds, 1) if seconds > 0 else 0.0


def scan(
    path: str | os.PathLike[str],
    *,
    backend: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Read every pair of every table of ``path`` (and walk its system trees), verifying every
    page; per table and in total: entries, key+value bytes, seconds, entries/s.

    The total ``seconds`` include opening the file (header, commit selection, table tree).
    Raises what :func:`open_redb` and iteration raise (``RedbCorrupt`` naming the page).
    ``progress(entries, key+value bytes)``, both counted over every table so far, after each
    batch the reader yields.
    """
    started = clock()
    seen_entries = seen_bytes = 0
    with open_redb(path, backend=backend) as db:
        tables: list[dict[str, Any]] = []
        for info in db.tables():
            t0 = clock()
            entries = size = 0
            for batch in db.iter_batches(info.name):
                entries += len(batch)
                size += sum(map(len, chain.from_iterable(batch)))
                if progress is not None:
                    progress(seen_entries + entries, seen_bytes + size)
            seen_entries += entries
            seen_bytes += size
            seconds = clock() - t0
            tables.append(
                {
                    "name": info.name,
                    "kind": info.kind,
                    "entries": entries,
                    "key_value_bytes": size,
                    "seconds": round(seconds, 6),
                    "entries_per_s": _rate(entries, seconds),
                }
            )
        db.verify_system()
        pages = db.pages_read
        h = db.header
        reader = db.backend
    seconds = clock() - started
    entries = sum(t["entries"] for t in tables)
    return {
        "kind": "redb-scan",
        "path": str(path),
        "reader": reader,
        "format_version": h.format_version,
        "transaction_id": h.transaction_id,
        "file_size": h.file_size,
        "pages_read": pages,
        "tables": tables,
        "entries": entries,
        "key_value_bytes": sum(t["key_value_bytes"] for t in tables),
        "seconds": round(seconds, 6),
        "entries_per_s": _rate(entries, seconds),
    }
