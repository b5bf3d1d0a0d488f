"""Creating a store safely, and removing again only a store nobody else has touched.

The protocol every read-write open follows (:func:`migrate.store.open_store`):

* **the directory lock**: a handle holds a *shared* ``flock`` on the store directory for its
  whole life; creating the database file needs the *exclusive* lock;
* **creation** (under the exclusive lock): the file is built under a temporary name
  (``.bbg.sqlite3.new-*``: schema committed, WAL checkpointed, fsynced) and only then linked
  into place and the directory fsynced, so a crash never leaves a ``bbg.sqlite3`` without a
  schema.  Temporary files left by a killed creator are removed then: nobody else can be
  creating while the lock is held, so they are provably abandoned;
* **a provisional store** (:func:`migrate.store.store.provisional_store`, used by ``apply``
  into a path that did not exist): the creator keeps the exclusive lock for its whole work.
  If the work fails it removes what it created -- and only that: no other handle can have
  the store open (they wait for the shared lock), the store id is still the one it made and
  no transaction was committed since.  A process that waited then sees the directory gone
  and starts again.

A directory that exists, is not empty and holds no BBG store is refused (``--store /`` or a
project folder named by mistake): a store is created only in a new or empty directory.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bbg_core.errors import Locked, StoreError, StoreRefused
from bbg_core.files import PRIVATE_DIR, fsync_dir, fsync_file
from migrate.store import layout
from migrate.store.connection import Connection
from migrate.store.engine import engine_of

TEMP_PREFIX = f".{layout.DB_NAME}.new-"
_SIDE_FILES = ("-wal", "-shm", "-journal")
_POLL = 0.02


def _unlink_db(path: Path) -> None:
    for suffix in ("", *_SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


@dataclass
class DirLock:
    """A held ``flock`` on a store directory (shared, or exclusive while creating)."""

    directory: Path
    fd: int
    exclusive: bool
    created_dir: bool = False
    created_store: str | None = None  # the store id, when this lock's holder created the file

    def share(self) -> None:
        """Trade the exclusive lock for a shared one (the store is ready for others)."""
        if self.exclusive and self.fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_SH)
            self.exclusive = False

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def has_store_file(db: Path) -> bool:
    """True when ``db`` holds something (an empty file, left by an older build killed while
    creating it, with no WAL beside it, holds nothing and is replaced)."""
    for path in (db, Path(f"{db}-wal")):
        try:
            if path.stat().st_size > 0:
                return True
        except FileNotFoundError:
            continue
    return db.is_symlink()


def _same_dir(directory: Path, fd: int) -> bool:
    """True while the path still names the directory ``fd`` was opened on (not removed)."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino) and mine.st_nlink > 0


def _try_flock(fd: int, how: int) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            return True  # a filesystem without flock: SQLite's own locks still apply
        raise
    return True


def _is_new_destination(directory: Path) -> bool:
    """True when ``directory`` holds nothing but (abandoned) creation leftovers."""
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise StoreError(f"{directory}: cannot list: {exc.strerror}", path=str(directory)) from exc
    return all(n.startswith(TEMP_PREFIX) for n in names)


def check_destination(directory: Path) -> None:
    """StoreRefused unless ``directory`` is absent, empty, a file-less store dir, or a store.

    Read-only (``plan`` calls it to predict what ``run`` would say).
    """
    if directory.is_symlink() and not directory.exists():
        raise StoreRefused(f"{directory}: a dangling symbolic link, not a store directory",
                           path=str(directory))  # fmt: skip
    if not directory.exists():
        return
    if not directory.is_dir():
        raise StoreRefused(f"{directory}: is a file, not a store directory", path=str(directory))
    if engine_of(directory) is not None:
        return
    db = directory / layout.DB_NAME
    if db.exists() or db.is_symlink():
        return
    if not _is_new_destination(directory):
        raise StoreRefused(
            f"{directory}: not a BBG store and not empty; a store is created only in a new or "
            "empty directory. Name another --store",
            path=str(directory),
        )


def _open_dir(directory: Path, create: bool) -> tuple[int, bool]:
    made = False
    if create:
        try:
            os.mkdir(directory, PRIVATE_DIR)
            made = True
        except FileExistsError:
            pass
        except FileNotFoundError:
            try:
                directory.parent.mkdir(parents=True, exist_ok=True)
                os.mkdir(directory, PRIVATE_DIR)
                made = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise StoreError(f"{directory}: cannot create: {exc.strerror}",
                                 path=str(directory)) from exc  # fmt: skip
        except OSError as exc:
            raise StoreError(f"{directory}: cannot create: {exc.strerror}",
                             path=str(directory)) from exc  # fmt: skip
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise layout.no_store(directory) from exc
    except NotADirectoryError as exc:
        raise StoreRefused(f"{directory}: is a file, not a store directory",
                           path=str(directory)) from exc  # fmt: skip
    except OSError as exc:
        raise StoreError(f"{directory}: cannot open: {exc.strerror}", path=str(directory)) from exc
    return fd, made


def acquire(
    directory: Path,
    *,
    create: bool,
    hash_suite: str,
    timeout: float,
    keep_exclusive: bool = False,
) -> DirLock:
    """Lock the store directory for a handle, creating the store first if asked and absent.

    Returns with a shared lock (``keep_exclusive``: the exclusive one when this call created
    the store, for :func:`migrate.store.store.provisional_store`).  Locked if another process
    keeps the store locked exclusively (it is being created) longer than ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    db = directory / layout.DB_NAME
    lock: DirLock | None = None
    try:
        while True:
            if lock is None or not _same_dir(directory, lock.fd):
                if lock is not None:
                    lock.release()
                if create:
                    check_destination(directory)
                elif not db.exists():
                    raise layout.no_store(directory, f" ({layout.DB_NAME} missing)",
                                          create_hint=True)  # fmt: skip
                fd, made = _open_dir(directory, create)
                lock = DirLock(directory, fd, exclusive=False, created_dir=made)
            # The directory stays open while waiting: who waits for a store is visible.
            if _lock_once(lock, db, create=create, hash_suite=hash_suite,
                          keep_exclusive=keep_exclusive):  # fmt: skip
                return lock
            if time.monotonic() > deadline:
                raise Locked(
                    f"{directory}: another process keeps the store locked while it creates it; "
                    "wait for it to finish, then rerun",
                    path=str(directory),
                )
            time.sleep(_POLL)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _lock_once(
    lock: DirLock, db: Path, *, create: bool, hash_suite: str, keep_exclusive: bool
) -> bool:
    """One attempt: True with the lock held, False to wait and start again."""
    usable = has_store_file(db)
    if usable or not create:
        if not _try_flock(lock.fd, fcntl.LOCK_SH):
            return False
        if _same_dir(lock.directory, lock.fd) and (usable or db.exists()):
            return True
        fcntl.flock(lock.fd, fcntl.LOCK_UN)
        return False
    if not _try_flock(lock.fd, fcntl.LOCK_EX):
        return False
    lock.exclusive = True
    if not _same_dir(lock.directory, lock.fd):
        fcntl.flock(lock.fd, fcntl.LOCK_UN)
        lock.exclusive = False
        return False
    # Under the exclusive lock: nobody else is creating, nobody has the store open.
    if not has_store_file(db):
        check_destination(lock.directory)
        lock.created_store = _create_file(lock.directory, hash_suite)
    else:
        lock.created_dir = False
    if not (keep_exclusive and lock.created_store is not None):
        lock.share()
    return True


def _create_file(directory: Path, hash_suite: str) -> str:
    """Build the database under a temporary name and link it into place; its store id."""
    db = directory / layout.DB_NAME
    for name in os.listdir(directory):
        if name.startswith(TEMP_PREFIX) and not name.endswith(_SIDE_FILES):
            _unlink_db(directory / name)  # abandoned by a killed creator (we hold the lock)
    tmp = directory / f"{TEMP_PREFIX}{uuid.uuid4().hex[:16]}"
    try:
        conn = Connection(tmp)
        try:
            layout.create_schema(conn, hash_suite)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            row = conn.one("SELECT store_id FROM bbg_storage_v1 WHERE id = 1")
            assert row is not None
            store_id = str(row[0])
        finally:
            conn.close()
        fsync_file(tmp)
        if db.exists():  # an empty file left by an older build's crash: replace it
            os.replace(tmp, db)
        else:
            try:
                os.link(tmp, db)  # never replaces a file that appeared meanwhile
            except FileExistsError:
                raise
            except OSError:
                os.replace(tmp, db)  # a filesystem without hard links (we hold the lock)
            else:
                os.unlink(tmp)
        fsync_dir(directory)
    except OSError as exc:
        _unlink_db(tmp)
        raise StoreError(f"{db}: cannot create the store: {exc.strerror or exc}",
                         path=str(db)) from exc  # fmt: skip
    except BaseException:
        _unlink_db(tmp)
        raise
    return store_id


def remove_if_untouched(lock: DirLock) -> bool:
    """Remove the store ``lock``'s holder created, if nobody committed to it; True if removed.

    Call with every connection of this process to the store closed, the exclusive lock held.
    """
    if not lock.exclusive or lock.created_store is None or not _same_dir(lock.directory, lock.fd):
        return False
    db = lock.directory / layout.DB_NAME
    try:
        conn = Connection(db)
        try:
            row = conn.one("SELECT store_id, last_transaction FROM bbg_storage_v1 WHERE id = 1")
        finally:
            conn.close()
    except StoreError:
        return False
    if row is None or (str(row[0]), int(row[1])) != (lock.created_store, 1):
        return False
    _unlink_db(db)
    if lock.created_dir:
        with contextlib.suppress(OSError):
            os.rmdir(lock.directory)  # only if empty: never what someone else put there
    with contextlib.suppress(OSError):
        fsync_dir(lock.directory.parent if lock.created_dir else lock.directory)
    return True
