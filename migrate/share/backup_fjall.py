"""``backup DEST`` of a store on the Fjall engine (the real BBG database), live.

A consistent point-in-time copy, written as a **new keyspace** -- not a file copy of a
directory its owner keeps changing:

1. refuse if ``DEST`` (or ``DEST.bbg-migrate``) exists: never overwrite;
2. open the store read-only (:func:`~migrate.store.keyspace_store.open_fjall_view`): one
   point-in-time snapshot of the keyspace, without taking ``bbg.lock`` -- the owner (bbg, or
   this toolkit's writer) keeps appending meanwhile -- and one read transaction of the
   toolkit's records when they exist, taken just before it (``records_first``);
3. stream that state as snapshot/1 lines (:mod:`.snapshot_fjall`) straight into a restore
   into a new Fjall store (:mod:`.restore_fjall`), built aside in a temporary sibling
   ``.DEST.backup-*`` marked as ours (:class:`.publish.Aside`): bulk segments, bbg's layout
   (directory 0700, ``bbg.lock`` 0600), the records beside it;
4. verify by reading the new keyspace back (every partition's rows, the links, the archive
   digest, the content check, the ledger's end: what a restore checks), fsync, and publish by
   rename (records first, then the keyspace; :meth:`.publish.Aside.publish`).

The copy holds every partition exactly as the snapshot saw it: the backup equals the store at
one seqno.  What a killed backup left is removed by the next backup to ``DEST``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreError
from migrate.progress import Observer
from migrate.share.common import MAX_LINE
from migrate.share.publish import Aside, new_destination
from migrate.share.restore import read_head
from migrate.share.restore_fjall import load_fjall
from migrate.share.snapshot_fjall import fjall_snapshot_lines, records_state
from migrate.store import bbgdb, clock
from migrate.store.keyspace_store import open_fjall_view


class _Lines:
    """The lines of an iterator as the stream a restore reads (``readline``)."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines

    def readline(self, _limit: int = -1) -> bytes:
        return next(self._lines, b"")


def _size(*roots: Path) -> int:
    total = 0
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            total += sum(os.lstat(os.path.join(dirpath, name)).st_size for name in files)
    return total


def backup_fjall(store_dir: Path, dest: Path, *, progress: Observer | None = None
                 ) -> dict[str, Any]:  # fmt: skip
    """Back the Fjall store in ``store_dir`` up into the new store directory ``dest``
    (module docstring).  ``progress``: unused for now (the copy reports no stages)."""
    new_destination(dest, "backup", fjall=True)
    start = time.monotonic()
    with Aside(dest, "backup") as aside:
        try:
            with open_fjall_view(store_dir, records_first=True) as view:
                state = records_state(view)
                marker = view.live_get(bbgdb.METADATA, bbgdb.LAST_TRANSACTION)
                stream = _Lines(fjall_snapshot_lines(view, clock.now_us()))
                header, digest, read = read_head(stream, MAX_LINE)  # type: ignore[arg-type]
                summary = load_fjall(stream, aside, header, digest, read, MAX_LINE,  # type: ignore[arg-type]
                                     None)  # fmt: skip
            size = _size(aside.store, aside.records)
            aside.publish("backup", into_empty=False)
        except OSError as exc:
            raise StoreError(f"{dest}: backup failed: {exc}", path=str(dest)) from exc
    del progress
    return {
        "kind": "bbg-backup",
        "source": str(store_dir),
        "dest": str(dest),
        "bytes": size,
        "seconds": round(time.monotonic() - start, 6),
        "archive_digest_sha256": summary["archive_digest_sha256"],
        "last_transaction": summary["basis_tx"],
        "engine": "fjall",
        "records": state,
        "bbg_last_transaction": None if marker is None else marker.hex(),
    }
