"""``snapshot``, ``restore`` and ``backup`` on either engine: which engine's code runs.

* ``snapshot`` reads the store on its own engine: a SQLite store as snapshot/1 format 2
  (:mod:`.snapshot`), a Fjall store as format 3 (:mod:`.snapshot_fjall`).
* ``restore`` builds the new store on the engine new stores get (``--engine`` /
  ``BBG_MIGRATE_ENGINE``, else Fjall): a Fjall store's snapshot restores into either engine
  (:mod:`.restore_fjall`, :func:`.restore.load_sqlite`), a SQLite store's into SQLite.
* ``backup`` copies the store on its own engine (:mod:`.backup`).

Both ``restore`` and ``backup`` build aside and publish by rename (:mod:`.publish`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

from bbg_core.errors import StoreError, UsageError
from migrate.progress import Observer, counter, stream_size
from migrate.share.common import MAX_LINE
from migrate.share.publish import Aside, clear_abandoned_records
from migrate.share.restore import load_sqlite, pristine, read_head
from migrate.share.restore_again import already_restored
from migrate.share.restore_fjall import load_fjall
from migrate.share.snapshot import write_sqlite_snapshot
from migrate.share.snapshot_fjall import FJALL_FORMAT, write_fjall_snapshot
from migrate.store.engine import ENGINE_ENV, FJALL, default_engine, engine_of, records_dir


def write_snapshot(
    store_dir: Path,
    out: BinaryIO,
    *,
    created_at: int | None = None,
    progress: Observer | None = None,
) -> dict[str, Any]:
    """Write the snapshot of the store in ``store_dir`` to ``out``; returns a summary.
    ``progress``: an observer (stage ``snapshot``, lines written out of the lines due)."""
    if engine_of(Path(store_dir)) == FJALL:
        return write_fjall_snapshot(Path(store_dir), out, created_at=created_at,
                                    progress=progress)  # fmt: skip
    return write_sqlite_snapshot(store_dir, out, created_at=created_at, progress=progress)


def restore(
    stream: BinaryIO,
    dest: Path,
    *,
    max_line: int = MAX_LINE,
    progress: Observer | None = None,
) -> dict[str, Any]:
    """Restore the snapshot read from ``stream`` into the new store directory ``dest`` (on
    the engine new stores get).  ``progress``: an observer (stage ``restore``, bytes read
    out of the stream's size when it is a regular file, unknown for a pipe).  A rerun after
    a kill that came after the publication finds DEST holding exactly this snapshot's store
    and reports it (``already_restored``), writing nothing (:mod:`.restore_again`)."""
    dest = Path(dest)
    if engine_of(dest) is not None:
        done = already_restored(stream, dest, max_line, write_snapshot)
        if done is not None:
            return done
    pristine(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{parent}: no such directory for the restore", path=str(dest))
    clear_abandoned_records(dest)
    if os.path.lexists(records_dir(dest)):
        raise UsageError(f"{records_dir(dest)}: records of another store are in the way; "
                         "restore needs a pristine destination", path=str(dest))  # fmt: skip
    with Aside(dest, "restore") as aside:
        try:
            report = counter(progress, "restore", stream_size(stream), "bytes")
            header, digest, read = read_head(stream, max_line)
            load = load_sqlite
            if default_engine() == FJALL:
                if header["format"] != FJALL_FORMAT:
                    raise UsageError(
                        f"{dest}: a snapshot of a SQLite store (format {header['format']}) "
                        "restores into a SQLite store only in this version, and a new store "
                        "would be made on the Fjall engine (the default); pass --engine sqlite "
                        f"(or set {ENGINE_ENV}=sqlite)", path=str(dest), engine=FJALL,
                    )  # fmt: skip
                load = load_fjall
            summary = load(stream, aside, header, digest, read, max_line, report)
            pristine(dest)  # still pristine: never replace what appeared meanwhile
            aside.publish("restore")
        except OSError as exc:
            raise StoreError(f"{dest}: restore failed: {exc}", path=str(dest)) from exc
    return {**summary, "dest": str(dest)}
