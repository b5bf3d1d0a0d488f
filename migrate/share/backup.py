"""``backup DEST``: a verified copy of a live store, published atomically, never overwriting.

Steps: refuse if ``DEST`` exists; make a temporary sibling directory ``.DEST.backup-*``; copy the
database into it with SQLite's online backup API from a read-only connection (one step, one read
transaction: a consistent committed state even while another process writes); verify the copy
(``PRAGMA integrity_check`` plus the full :func:`migrate.share.doctor.doctor` report must be
healthy); fsync the file and the temporary directory; rename it to ``DEST``; fsync the parent.
On any failure the temporary directory is removed and ``DEST`` never appears.  The
temporary directory stays locked while the backup runs (:func:`bbg_core.files.owned_tempdir`),
so what a killed backup left is provably abandoned: the next backup to ``DEST`` removes it,
and ``doctor`` reports it.  ``DEST`` is a
store directory, so ``bbg-migrate --store DEST doctor`` checks the backup.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreError, UsageError, ValidationFailed
from bbg_core.files import disown, fsync_dir, fsync_file, owned_tempdir, sweep
from migrate.progress import CountCallback, Observer, counter
from migrate.share.doctor import doctor
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
    db_file(store_dir)  # StoreRefused when there is no store to back up
    dest = Path(dest)
    if dest.exists() or dest.is_symlink():
        raise UsageError(
            f"{dest}: already exists; backup never overwrites, name a new directory",
            path=str(dest),
        )
    parent = dest.parent if str(dest.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{parent}: no such directory for the backup", path=str(dest))
    start = time.monotonic()
    prefix = f".{dest.name}.backup-"
    try:
        sweep(parent, prefix)  # what killed backups to this DEST left (their owners are gone)
        aside = owned_tempdir(parent, prefix)
        tmp = aside.__enter__()
    except OSError as exc:
        raise StoreError(f"{parent}: cannot create a temporary directory: {exc}") from exc
    try:
        copy = tmp / DB_NAME
        with open_sqlite_readonly(store_dir) as conn:
            conn.backup_into(copy, _pages(progress))
        report = doctor(tmp, progress=progress)
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
        disown(tmp)
        fsync_dir(tmp)
        if dest.exists():  # appeared while we copied: still never overwrite
            raise UsageError(f"{dest}: appeared during the backup; not overwritten")
        os.rename(tmp, dest)
        fsync_dir(parent)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"{dest}: backup failed: {exc}", path=str(dest)) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        aside.__exit__(None, None, None)
    return {
        "kind": "bbg-backup",
        "source": str(store_dir),
        "dest": str(dest),
        "bytes": size,
        "seconds": round(time.monotonic() - start, 6),
        "archive_digest_sha256": report["tables"]["archive_digest_sha256"],
        "last_transaction": report["store"]["last_transaction"],
    }
