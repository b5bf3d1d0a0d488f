"""``backup DEST``: a verified copy of a live store, published atomically, never overwriting.

Steps (a SQLite store; a Fjall store: :mod:`migrate.share.backup_fjall`): refuse if ``DEST``
exists; make a temporary sibling directory ``.DEST.backup-*`` (:class:`migrate.share.publish.
Aside`: marked as ours, locked while the backup runs, so what a killed backup left is
provably abandoned: the next backup to ``DEST`` removes it, and ``doctor`` reports it); copy
the database into it with SQLite's online backup API from a read-only connection (one step,
one read transaction: a consistent committed state even while another process writes); verify
the copy (``PRAGMA integrity_check`` plus the full :func:`migrate.share.doctor.doctor` report
must be healthy); fsync the file; publish by rename (:meth:`Aside.publish`: fsync, rename to
``DEST``, fsync the parent, never over anything).  On any failure the temporary directory is
removed and ``DEST`` never appears.  ``DEST`` is a store directory, so
``bbg-migrate --store DEST doctor`` checks the backup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreError, ValidationFailed
from bbg_core.files import fsync_file
from migrate.progress import CountCallback, Observer, counter
from migrate.share.doctor import doctor
from migrate.share.publish import Aside, new_destination
from migrate.store.engine import FJALL, engine_of
from migrate.store.layout import DB_NAME
from migrate.store.readonly import db_file, open_sqlite_readonly


def _pages(observer: Observer | None) -> Callable[[int, int], None] | None:
    """Stage ``backup`` fed by SQLite's ``(pages copied, pages in all)``: first ``(0, the
    database's page count)``, which starts the stage with its total, then after each step."""
    if observer is None:
        return None
    count: CountCallback | None = None

    def report(done: int, total: int) -> None:
        nonlocal count
        if count is None:  # the first report: the stage starts, (0, total) reported
            count = counter(observer, "backup", total, "pages")
            if done == 0:
                return
        if count is not None:
            count(done)

    return report


def backup(store_dir: Path, dest: Path, *, progress: Observer | None = None) -> dict[str, Any]:
    """Back the store in ``store_dir`` up into the new store directory ``dest``.

    ``progress``: an observer; stage ``backup`` (database pages copied out of the pages in
    all, from SQLite's backup API), then the verification's stages (:func:`doctor`)."""
    dest = Path(dest)
    if engine_of(Path(store_dir)) == FJALL:
        from migrate.share.backup_fjall import backup_fjall

        return backup_fjall(Path(store_dir), dest, progress=progress)
    db_file(store_dir)  # StoreRefused when there is no store to back up
    new_destination(dest, "backup", fjall=False)
    start = time.monotonic()
    with Aside(dest, "backup") as aside:
        try:
            aside.store.mkdir()
            copy = aside.store / DB_NAME
            with open_sqlite_readonly(store_dir) as conn:
                conn.backup_into(copy, _pages(progress))
            report = doctor(aside.store, progress=progress)
            if not report["healthy"]:
                first = report["problems"][0]
                raise ValidationFailed(
                    f"{dest}: the backup copy failed verification ({first['code']}: "
                    f"{first['detail']}); nothing was published",
                    path=str(dest),
                    errors=report["problems"],
                )
            size = copy.stat().st_size
            fsync_file(copy)
            aside.publish("backup", into_empty=False)
        except OSError as exc:
            raise StoreError(f"{dest}: backup failed: {exc}", path=str(dest)) from exc
    return {
        "kind": "bbg-backup",
        "source": str(store_dir),
        "dest": str(dest),
        "bytes": size,
        "seconds": round(time.monotonic() - start, 6),
        "archive_digest_sha256": report["tables"]["archive_digest_sha256"],
        "last_transaction": report["store"]["last_transaction"],
    }
