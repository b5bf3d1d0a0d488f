"""``nohistory`` and ``excise`` on a store on the Fjall engine, with the bytes physically gone.

A Fjall tombstone hides a row but leaves its bytes in the segments and journals that held it,
so each verb here runs in two steps, both under ``bbg.lock`` (held by the store handle, as
bbg's owner holds it):

1. **the transaction**: the same plan as on SQLite (:mod:`migrate.store.retention`; the rows
   the verb removes become tombstones in one batch, its ledger row records ids and counts,
   never the bytes); a dry run rolls it back and stops there;
2. **the rewrite** (:func:`rewrite`): the whole keyspace is read as one snapshot (every
   partition's live rows, bbg's markers among them) and built again aside as bulk segments
   (:func:`~migrate.store.fjall.writer.build_keyspace`: every row at seqno 0, empty journals)
   inside a marked temporary sibling ``.NAME.bbg-rewrite-*``; its ``bbg.lock`` is locked,
   and the new directory is exchanged with the store in one ``renameat2(RENAME_EXCHANGE)``,
   so the path always holds the old store or the new one.  The old one, now in the
   temporary sibling, is removed; the records database is vacuumed (no free page keeps a
   removed row).  A crash before the exchange leaves the old store (tombstones in place once
   step 1 committed); after it, the new store and an abandoned temporary sibling.  A rerun of
   the same verb finds its ids already excised (or the boundary already set), removes what a
   killed rewrite left (:func:`bbg_core.files.sweep`) and rewrites again.

The rewrite renumbers the history into one batch: every row has seqno 0 afterwards, so a
``tail --since`` position taken on this store before it no longer applies (read from the
start again).  Unlike SQLite, excising a namespace writes no bbg fence (a Fjall fence holds a
transfer's subject and manifest); ``apply`` refuses the excised namespace all the same, from
the ledger (:func:`migrate.store.retention.refuse_excised`).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
from pathlib import Path
from typing import Any

from bbg_core.files import fsync_dir, fsync_file, owned_tempdir, sweep
from migrate.store import bbgdb
from migrate.store.fjall import build_keyspace, open_keyspace

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    """Swap the directories at ``a`` and ``b`` atomically (Linux ``renameat2``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),
                      _RENAME_EXCHANGE) != 0:  # fmt: skip
        err = ctypes.get_errno()
        raise OSError(err, f"renameat2(RENAME_EXCHANGE) {a} <-> {b}: {os.strerror(err)}")


def _prefix(store_dir: Path) -> str:
    return f".{store_dir.name}.bbg-rewrite-"


def sweep_rewrites(store_dir: Path) -> list[str]:
    """Remove what a killed rewrite of ``store_dir`` left beside it."""
    return sweep(store_dir.parent, _prefix(store_dir))


def rewrite(store: Any) -> dict[str, Any]:
    """Rebuild the keyspace of ``store`` (an open Fjall store handle: it holds ``bbg.lock``)
    from its live rows and swap it into place, then vacuum its records (module docstring).
    What it wrote: rows and bytes per partition."""
    store_dir = Path(store.path)
    sweep_rewrites(store_dir)
    parent = store_dir.parent
    with owned_tempdir(parent, _prefix(store_dir)) as work:
        lock_fd = -1
        try:
            new = work / "keyspace"
            with open_keyspace(store_dir) as ks:
                done = build_keyspace(new, {name: ks.scan(name) for name in ks.partitions()},
                                      dir_mode=bbgdb.DIR_MODE)  # fmt: skip
            lock = new / bbgdb.LOCK_NAME
            lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                              bbgdb.LOCK_MODE)  # fmt: skip
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fsync_file(lock)
            fsync_dir(new)
            _exchange(new, store_dir)
            fsync_dir(parent)
            fsync_dir(work)
            shutil.rmtree(work / "keyspace")
            fsync_dir(work)
            store._conn.execute("VACUUM")
            return done
        finally:
            if lock_fd >= 0:
                os.close(lock_fd)
            shutil.rmtree(work, ignore_errors=True)
