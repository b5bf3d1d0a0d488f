"""The run lock: one pipeline step at a time per store, for the whole step.

SQLite's write lock serialises single transactions, so two ``run``s into one store would
interleave page by page.  For two runs of the *same* import (content-identical sources at two
paths) that is wrong: the second one activates the import while the first still stages it,
and the first then fails ("import ... is active, not staging").  So every pipeline step that
writes (``run``, ``seal``, ``stage``, ``validate``, ``activate``, ``discard``) holds the run
lock of the store from its first write to its end; a second one waits, then finds the import
as the first left it (active: the same receipt).

The lock is an exclusive ``flock`` on ``.bbg-run.lock`` in the store directory.  The file
exists only while a step holds it: the holder removes it before letting go, and a waiter
that wakes on a removed file takes the lock again on the new one (the usual lock-file
dance), so a refused step leaves the directory as it found it.  A file left by a killed step
holds no lock (the kernel drops it with the process) and is reused, then removed.

It is not taken on the database file itself: closing any descriptor of that file would drop
this process's SQLite (POSIX) locks on it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bbg_core.errors import StoreError
from bbg_core.files import PRIVATE_FILE

RUN_LOCK = ".bbg-run.lock"


def _open_locked(path: Path) -> int:
    """An open descriptor of ``path`` holding its exclusive flock (waits for it)."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, PRIVATE_FILE)
        except OSError as exc:
            raise StoreError(
                f"{path}: cannot open the store's run lock: {exc.strerror}", path=str(path)
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                return -1  # a filesystem without flock: SQLite's own locks still apply
            raise StoreError(f"{path}: cannot lock: {exc.strerror}", path=str(path)) from exc
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the holder removed it as we waited: lock the next one


@contextmanager
def run_lock(directory: Path) -> Iterator[None]:
    """Hold the store's run lock for the block (waiting for another holder to finish)."""
    path = directory / RUN_LOCK
    fd = _open_locked(path)
    try:
        yield
    finally:
        if fd >= 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # while still held: a waiter re-checks the inode
            os.close(fd)
