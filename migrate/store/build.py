"""Building a new store aside and publishing it with one rename (``run`` into a new store).

When the destination of a migration does not exist yet, or is an empty directory, nothing
there has to be kept: the store is built in a sibling directory nobody opens
(``.NAME.bbg-build-PID-RANDOM`` beside the destination ``NAME``), its rows loaded straight
into the five tables while the source is read and checked, and then published with one
``rename(2)`` of that directory onto the destination (file and directories fsynced first,
the parent after).  Readers see no store, then the complete one; a crash at any point leaves
no store (and a build directory that the next run removes); an invalid source removes the
build and leaves the destination exactly as it was.

* **Writes without fsync while building** (``synchronous = OFF``): a crash loses the whole
  build, never a store, so durability is bought once, at the end (checkpoint, fsync of the
  file and of the directory, then the rename).  Pages of ≤ 512 rows / 32 MiB are still each
  one transaction (the unit of memory), just not each an fsync.
* **Publishing** takes the destination's directory lock exclusively (so no process is
  creating a store in it meanwhile), checks it is still empty, renames the build over it
  (``rename`` replaces an empty directory atomically) and fsyncs the parent.  A destination
  that is no longer empty (another process created a store there meanwhile) is not touched:
  :meth:`Build.publish` returns False and the caller migrates into that store the usual way.
  A process that was waiting for the old directory's lock sees it replaced and starts again
  (:func:`migrate.store.creation.acquire`).
* **Abandoned builds** (a killed run) are removed by the next build beside the same
  destination: a build directory whose process is gone and whose lock is free.

The commit hook of :mod:`migrate.store.connection` (fault injection, None normally) is also
called around the publishing rename: it is the build's commit.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import queue
import shutil
import threading
import time
import uuid
from pathlib import Path

from bbg_core.closing import Closing
from bbg_core.errors import StoreError
from bbg_core.files import PRIVATE_DIR, fsync_dir, fsync_file
from migrate.store import bbg_changes, layout
from migrate.store.connection import Connection
from migrate.store.opening import open_store
from migrate.store.pages import PageLoader
from migrate.store.store import Store

_MARK = ".bbg-build-"
# SQLite page size of a built store, and the page cache of its loader (KiB).
BUILD_PAGE_SIZE = 16384
BUILD_CACHE_KIB = 16 * 1024
_LOCK_WAIT = 30.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prefix(directory: Path) -> str:
    return f".{directory.name}{_MARK}"


def can_build(directory: Path) -> bool:
    """True when a migration into ``directory`` may build aside and publish by rename: the
    directory is absent or empty, and its parent is an existing directory we may write."""
    parent = directory.parent
    if directory.is_symlink() or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return False
    if not directory.exists():
        return True
    try:
        return directory.is_dir() and not os.listdir(directory)
    except OSError:
        return False


def remove_abandoned(directory: Path) -> None:
    """Remove build directories left beside ``directory`` by killed runs."""
    prefix = _prefix(directory)
    try:
        names = os.listdir(directory.parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        try:
            pid = int(name[len(prefix):].split("-", 1)[0])
        except ValueError:
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        path = directory.parent / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # someone still uses it
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)


class Build(Closing):
    """A store being built beside ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path, *, records: bool = False) -> None:
        self.directory = directory
        #: The records of a Fjall store (its bbg rows live in the keyspace, not here).
        self.records = records
        remove_abandoned(directory)
        self.path = directory.parent / f"{_prefix(directory)}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        os.mkdir(self.path, PRIVATE_DIR)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # In use while this process lives (its pid is in the name), then while the store
        # handle below holds the directory's shared lock.
        self.store: Store | None = None
        self._loader: Loader | None = None
        try:
            conn = Connection(self.path / layout.DB_NAME)
            try:
                # Larger pages: content values of 200 B - 4 KiB then fit in their leaf instead
                # of spilling to overflow pages (about half the file, half the writes).
                conn.execute(f"PRAGMA page_size = {BUILD_PAGE_SIZE}")
                layout.create_schema(conn, layout.DEFAULT_HASH_SUITE)
                if not records:
                    # The loader's rows go in outside any transaction's record: bbg's change id
                    # is unknown until a transaction of the store records one.
                    bbg_changes.forget(conn)
            finally:
                conn.close()
        except BaseException:
            self.discard()
            raise

    def close(self) -> None:
        """Leaving ``with``: :meth:`discard` (a published build is gone already)."""
        self.discard()

    def loader(self, page_rows: int, page_bytes: int) -> Loader:
        """A loader of rows into this build's five tables, one page per transaction (call
        :meth:`Loader.finish` before using the store; :meth:`discard` stops it)."""
        self._loader = Loader(self.path / layout.DB_NAME, page_rows, page_bytes)
        return self._loader

    def open(self) -> Store:
        """The built store's handle, once every page is loaded (for the final transaction)."""
        if self._loader is not None:
            self._loader.check()
            self._loader = None
        if self.store is None:
            self.store = open_store(self.path)
            self.store.bbg_tables = not self.records
        return self.store

    def discard(self) -> None:
        """Remove the build (idempotent; a published build is gone already)."""
        if self._loader is not None:
            with contextlib.suppress(BaseException):
                self._loader.finish()
            self._loader = None
        if self.store is not None:
            self.store.close()
            self.store = None
        if self._fd >= 0:
            shutil.rmtree(self.path, ignore_errors=True)
            os.close(self._fd)
            self._fd = -1

    def publish(self) -> bool:
        """Make the build durable and rename it onto the destination; False (nothing done)
        when the destination is no longer empty."""
        self.open().end_build()
        assert self.store is not None
        self.store.close()
        self.store = None
        db = self.path / layout.DB_NAME
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{db}{suffix}")  # checkpointed and closed: nothing in them
        fsync_file(db)
        fsync_dir(self.path)
        target = self._lock_target()
        if target is None:
            return False
        fd, made = target
        try:
            hook = Connection.commit_hook
            if hook is not None:
                hook("before")
            try:
                os.rename(self.path, self.directory)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                    if made:
                        with contextlib.suppress(OSError):
                            os.rmdir(self.directory)
                    return False
                raise StoreError(
                    f"{self.directory}: cannot publish the new store: {exc.strerror}",
                    path=str(self.directory),
                ) from exc
            fsync_dir(self.directory.parent)
            if hook is not None:
                hook("after")
        finally:
            os.close(fd)
        os.close(self._fd)
        self._fd = -1
        return True

    def _lock_target(self) -> tuple[int, bool] | None:
        """The destination directory (made if absent), locked exclusively and still empty;
        None when it holds something now."""
        made = False
        try:
            os.mkdir(self.directory, PRIVATE_DIR)
            made = True
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreError(f"{self.directory}: cannot create: {exc.strerror}",
                             path=str(self.directory)) from exc  # fmt: skip
        try:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
            fd = os.open(self.directory, flags)
        except OSError:
            return None
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or (
                    time.monotonic() > deadline
                ):
                    os.close(fd)
                    return None
                time.sleep(0.02)
        try:
            st, mine = os.stat(self.directory, follow_symlinks=False), os.fstat(fd)
            empty = (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino) and not os.listdir(
                self.directory
            )
        except OSError:
            empty = False
        if not empty:
            os.close(fd)
            return None
        return fd, made


class Loader(PageLoader):
    """Rows into the five tables of a store being built, one bounded page per transaction,
    written on a thread of their own (SQLite works without the GIL), so loading overlaps the
    checks of the pass that reads the source.

    :meth:`tee` passes a table's rows through unchanged while queueing them for the writer
    (at most ``QUEUED`` pages in flight: memory stays bounded); :meth:`finish` waits for the
    writer and raises what it met.  ``rows`` counts what SQLite inserted per table.
    """

    QUEUED = 2

    def __init__(self, db: Path, page_rows: int, page_bytes: int) -> None:
        super().__init__(page_rows, page_bytes)
        self._db = db
        self._queue: queue.Queue[tuple[str, list[tuple[bytes, bytes]]] | None] = queue.Queue(
            self.QUEUED
        )
        self._thread: threading.Thread | None = threading.Thread(
            target=self._write, name="bbg-build-writer", daemon=True
        )
        self._thread.start()

    def _deliver(self, table: str, batch: list[tuple[bytes, bytes]]) -> bool:
        self._queue.put((table, batch))
        return True

    def _write(self) -> None:
        conn: Connection | None = None
        try:
            conn = Connection(self._db)
            # The only connection: no journal (a failed build is removed whole, never rolled
            # back), no fsync (durability is bought once, at publication).
            conn.execute("PRAGMA journal_mode = OFF").fetchall()
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KIB}")
            while (item := self._queue.get()) is not None:
                table, batch = item
                with conn.write(action="load", table=table):
                    before = conn.one("SELECT total_changes()")
                    conn.executemany(f"INSERT INTO {table} (key, value) VALUES (?, ?)", batch)
                    after = conn.one("SELECT total_changes()")
                assert before is not None and after is not None
                self.rows[table] += int(after[0]) - int(before[0])
            conn.execute("PRAGMA journal_mode = WAL").fetchall()  # a store is WAL
        except BaseException as exc:
            self._error = exc
            while self._queue.get() is not None:
                pass  # let the reader finish its pass; it raises this at its next page
        finally:
            if conn is not None:
                conn.close()

    def finish(self) -> None:
        """Wait until every page is written (what the writer met is raised by :meth:`check`)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None


def open_build(directory: Path, *, records: bool = False) -> Build:
    """Start building a store for ``directory`` (see :func:`can_build`); ``records``: the
    records of a Fjall store."""
    return Build(directory, records=records)


__all__ = ["Build", "Loader", "can_build", "open_build", "remove_abandoned"]
