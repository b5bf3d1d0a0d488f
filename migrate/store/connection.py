"""One SQLite connection to a store file: pragmas, transactions, and error translation.

This is the only module that catches ``sqlite3.Error`` for the store; everything above it
sees :mod:`bbg_core.errors` classes.  Write transactions are ``BEGIN IMMEDIATE`` … ``COMMIT``
(the write lock is taken up front, so two writers serialise instead of deadlocking on a lock
upgrade).  An error *at* ``COMMIT`` means the outcome is unknown: the connection is poisoned
and every later call raises :class:`~bbg_core.errors.CommitUnknown`.

Fault injection: ``Connection.commit_hook`` (``None`` normally) is called with ``"before"``
just before ``COMMIT`` and ``"after"`` just after it succeeded.  A hook that raises
``OSError`` or ``sqlite3.Error`` is treated exactly like an I/O error at ``COMMIT`` (``"before"``:
the transaction is rolled back; ``"after"``: it is durable but the caller never heard).
Tests use it to exercise the real CommitUnknown path without patching the store's logic.

Read-only handles (``Connection(path, readonly=True)``: ``inspect``, ``plan``, ``doctor``,
``tail``, ``snapshot``) never create, change or remove a file, whatever the store's state; they
work on a read-only directory and on read-only media.  :func:`readonly_uri` picks the open:

* nobody has the store open and there is no ``-wal``, or one too short to hold a single frame
  (empty, or a header alone): ``immutable=1`` (the main file is the whole committed state; no
  lock, no ``-wal``/``-shm`` is created -- and such a ``-wal`` is left in place: SQLite's
  close would "checkpoint" an empty WAL and delete it, even on a ``mode=ro`` handle);
* a ``-wal`` with frames is left behind (a crashed writer) but nobody has the store open: the
  WAL is read
  into private memory (``vfs=unix-none`` + ``locking_mode=EXCLUSIVE``: no ``-shm`` is touched);
* another connection has the store open (this process, or another one holding the ``-shm``
  lock): ``mode=ro`` through its ``-shm``, so the reader sees a consistent committed state
  while the writer goes on (``live=True`` does this too: a follower must see later commits;
  it may create SQLite's ``-wal``/``-shm`` like any WAL reader, unless the directory cannot be
  written at all, where there will be no later commits).

Every read-only handle also runs with ``PRAGMA query_only`` and an authorizer that denies any
statement that would write (:func:`_deny_writes`), so a write is refused by construction at
three levels (the file descriptor, the pragma, the authorizer).  The URI is built with
:func:`urllib.parse.quote`, so ``?``, ``#`` and ``%`` in a path cannot change its meaning.
:meth:`Connection.backup_into` wraps SQLite's online backup API.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from bbg_core.errors import CommitUnknown, Locked, MigrateError, StoreError, StoreRefused
from bbg_core.files import fsync_file
from migrate.store import live, markers

CommitPhase = Literal["before", "after"]
CommitHook = Callable[[CommitPhase], None]
Params = tuple[Any, ...] | list[Any]

DEFAULT_BUSY_TIMEOUT = 30.0
ROWS_BYTES = 4 * 1024 * 1024  # about how many bytes of rows :meth:`Connection.rows` holds
BACKUP_STEP_PAGES = 256  # pages per online-backup step when progress is reported (1 MiB at 4 KiB)


def translate(
    exc: sqlite3.Error | OSError, path: Path, action: str, **context: Any
) -> MigrateError:
    """The project error for a foreign ``exc`` raised while doing ``action`` on ``path``."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return Locked(
            f"{path}: the store is locked by another process ({action}: {text}); "
            "wait for it to finish or stop it",
            path=str(path),
            **context,
        )
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
        return StoreRefused(
            f"{path}: not a readable SQLite database ({text}); is this the right store?",
            path=str(path),
            **context,
        )
    return StoreError(f"{path}: {action} failed: {text}", path=str(path), **context)



class Connection:
    """A store connection (``isolation_level=None``: we issue BEGIN/COMMIT ourselves)."""

    # Fault injection for tests only (see the module docstring); instances may override it.
    commit_hook: CommitHook | None = None

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        readonly: bool = False,
        live: bool = False,
    ) -> None:
        """``readonly``: open with ``mode=ro``; ``live`` (with ``readonly``): never
        ``immutable``, for a long-lived reader that must see later commits (``tail --follow``).
        """
        self.path = path
        self.readonly = readonly
        self.poisoned: CommitUnknown | None = None
        self._registered: Path | None = None
        try:
            if readonly:
                uri, private_wal = readonly_uri(path, live=live)
                self._db = sqlite3.connect(
                    uri,
                    uri=True,
                    timeout=busy_timeout,
                    isolation_level=None,
                    check_same_thread=True,
                )
            else:
                self._registered = _register_writer(path)
                self._db = sqlite3.connect(
                    path, timeout=busy_timeout, isolation_level=None, check_same_thread=True
                )
        except (sqlite3.Error, OSError) as exc:
            self._unregister()
            raise translate(exc, path, "open") from exc
        if readonly:
            try:
                if private_wal:
                    # Before the first read: the WAL index then lives in private memory.
                    self._db.execute("PRAGMA locking_mode = EXCLUSIVE").fetchall()
                self._db.execute("PRAGMA query_only = 1")
            except sqlite3.Error as exc:
                self._db.close()
                raise translate(exc, path, "open read-only") from exc
            self._db.set_authorizer(_deny_writes)
            return
        try:
            # FULL: a COMMIT that returned is on disk (WAL fsync per commit).
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            self._db.close()
            self._unregister()
            raise translate(exc, path, "configure") from exc

    def _unregister(self) -> None:
        if self._registered is not None:
            _unregister_writer(self._registered)
            self._registered = None

    # -- plumbing -----------------------------------------------------------------------
    def _check(self) -> None:
        if self.poisoned is not None:
            raise CommitUnknown(
                f"{self.path}: an earlier commit's outcome is unknown; reopen the store and "
                "resolve that request before doing anything else",
                **{"path": str(self.path), **self.poisoned.context},
            )

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        """Run one statement (errors translated)."""
        self._check()
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "query") from exc

    def executemany(self, sql: str, rows: Any) -> int:
        """Run one statement for each parameter row; the rows they changed (as ``rowcount``:
        not counting what triggers did)."""
        self._check()
        try:
            return self._db.executemany(sql, rows).rowcount
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "query") from exc

    def one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        row: tuple[Any, ...] | None = self.execute(sql, params).fetchone()
        return row

    def rows(self, sql: str, params: Params = (), batch: int = 512) -> Iterator[tuple[Any, ...]]:
        """Stream a query's rows in batches of at most ``batch`` rows and about
        ``ROWS_BYTES`` bytes (bounded memory: a content value may be 16 MiB, so a batch
        starts at one row and grows only while its rows stay small)."""
        cur = self.execute(sql, params)
        size = 1
        try:
            while True:
                try:
                    chunk = cur.fetchmany(size)
                except sqlite3.Error as exc:
                    raise translate(exc, self.path, "read") from exc
                if not chunk:
                    return
                yield from chunk
                if size < batch or len(chunk) > 1:
                    held = sum(len(v) for row in chunk for v in row if isinstance(v, bytes | str))
                    if held * 2 <= ROWS_BYTES:
                        size = min(batch, size * 2)
                    elif held > ROWS_BYTES:
                        size = max(1, size // 2)
        finally:
            try:
                cur.close()
            except sqlite3.ProgrammingError:
                pass  # the connection was closed first: the cursor went with it

    # -- bbg's rows (:mod:`migrate.store.live`) -----------------------------------------
    def live_get(self, table: str, key: bytes) -> bytes | None:
        """The value under ``key`` in ``table``, or None."""
        return live.sql_get(self, table, key)

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
        """The rows of ``table`` (prefix, strictly after ``after``) in key order."""
        return live.sql_rows(self, table, prefix=prefix, after=after, limit=limit)

    # -- the fence and generation records (:mod:`migrate.store.markers`, for fences/) -----
    def read_status(self) -> tuple[str | None, str]:
        """``(status marker or None, generation column)``."""
        return markers.read_status(self)

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        """The fence of ``namespace``, or None."""
        return markers.fence_record(self, namespace)

    @property
    def in_transaction(self) -> bool:
        return self._db.in_transaction

    # -- transactions -------------------------------------------------------------------
    @contextmanager
    def write(self, **context: Any) -> Iterator[Callable[[], None]]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on any exception.

        Yields ``mark_clean``: a body that wrote nothing calls it so the transaction ends in
        ROLLBACK (no COMMIT, so nothing can be "unknown" about it).
        """
        self._check()
        if self._db.in_transaction:
            raise StoreError(f"{self.path}: a transaction is already open on this handle")
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "begin write", **context) from exc
        clean = False

        def mark_clean() -> None:
            nonlocal clean
            clean = True

        try:
            yield mark_clean
        except BaseException:
            self._rollback()
            raise
        if clean:
            self._rollback()
            return
        self._commit(context)

    @contextmanager
    def staging_sync(self) -> Iterator[None]:
        """Commits inside are atomic but not each fsynced (``synchronous = NORMAL``; WAL only):
        for inert, resumable staging pages, each committed with its cursor.  A SIGKILL loses
        nothing committed (it is in the log); a power loss may roll back the last pages, never
        tear one -- the rerun stages them again.  Leaving the block normally fsyncs the log
        once (every page committed inside is then durable); FULL again in any case."""
        if self._db.in_transaction:
            raise StoreError(f"{self.path}: a transaction is open on this handle")
        wal = str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
        if wal:
            self._db.execute("PRAGMA synchronous = NORMAL")
        try:
            yield
            if wal:
                # A checkpoint may have removed the log: then nothing is left to sync.
                fsync_file(Path(f"{self.path}-wal"), missing_ok=True)
        finally:
            if wal:
                self._db.execute("PRAGMA synchronous = FULL")

    @contextmanager
    def read(self) -> Iterator[None]:
        """A read snapshot: every query inside sees the same committed state."""
        self._check()
        try:
            self._db.execute("BEGIN DEFERRED")
            # The snapshot starts at the first read; take it now, not lazily.
            # (from the schema table: a damaged store table must not stop a read, e.g. doctor)
            self._db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            self._rollback()
            raise translate(exc, self.path, "begin read") from exc
        try:
            yield
        finally:
            self._rollback()

    def _rollback(self) -> None:
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                # SQLite may already have rolled back after an I/O error; nothing to undo.
                pass

    def _commit(self, context: dict[str, Any]) -> None:
        hook = self.commit_hook
        try:
            if hook is not None:
                hook("before")
            self._db.execute("COMMIT")
            if hook is not None:
                hook("after")
        except BaseException as exc:
            # Whatever interrupted COMMIT (I/O error, a signal), nobody knows if it landed.
            self._rollback()
            self.poisoned = CommitUnknown(
                f"{self.path}: COMMIT failed ({exc!r}); the outcome is unknown. Reopen the "
                "store and resolve the request to learn whether it was written",
                **{"path": str(self.path), **context},
            )
            if isinstance(exc, sqlite3.Error | OSError):
                raise self.poisoned from exc
            raise  # KeyboardInterrupt and the like keep their meaning; the handle is poisoned

    def backup_into(
        self, dest: Path, progress: Callable[[int, int], None] | None = None
    ) -> None:
        """Copy the whole database into the new file ``dest`` with SQLite's online backup API.

        Without ``progress``: one step (``pages=-1``), inside one read transaction.  With
        ``progress(pages copied, pages in all)``: steps of :data:`BACKUP_STEP_PAGES` pages,
        all inside one read transaction this connection holds open from the first step to the
        last, so the copy is the same consistent committed state either way, even while other
        processes keep writing (WAL readers do not block writers).
        """
        self._check()
        try:
            target = sqlite3.connect(dest, isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise translate(exc, dest, "create backup file") from exc
        try:
            if progress is None:
                self._db.backup(target, pages=-1)
            else:

                def step(status: int, remaining: int, total: int) -> None:
                    progress(total - remaining, total)

                with self.read():
                    row = self._db.execute("PRAGMA page_count").fetchone()
                    progress(0, int(row[0]))
                    self._db.backup(target, pages=BACKUP_STEP_PAGES, progress=step)
        except (sqlite3.Error, OSError) as exc:
            raise translate(exc, self.path, "online backup", dest=str(dest)) from exc
        finally:
            target.close()

    def close(self) -> None:
        """Close the connection (rolls back an open transaction)."""
        self._rollback()
        self._db.close()
        self._unregister()


# Read-write connections this process has open, by resolved path: a read-only open in the
# same process must coordinate with them through the -shm (fcntl locks do not show our own).
_WRITERS: dict[Path, int] = {}
_WRITERS_LOCK = threading.Lock()


def _register_writer(path: Path) -> Path:
    key = Path(os.path.abspath(path))
    with _WRITERS_LOCK:
        _WRITERS[key] = _WRITERS.get(key, 0) + 1
    return key


def _unregister_writer(key: Path) -> None:
    with _WRITERS_LOCK:
        left = _WRITERS.get(key, 0) - 1
        if left > 0:
            _WRITERS[key] = left
        else:
            _WRITERS.pop(key, None)


# The unix VFS's "dead man switch": every connection holds a read lock on this byte of the
# -shm file while it has the database open (os_unix.c: UNIX_SHM_DMS = (22 + 8) * 4 + 8).
_SHM_DMS_BYTE = 128


def store_in_use(path: Path) -> bool:
    """True when some connection has the database ``path`` open (this process or another).

    Another process is seen through its lock on the ``-shm`` file (probed with ``F_GETLK``,
    which takes no lock and needs no write access).  Where the probe is not available
    (not Linux), assume the store is in use: the reader then joins the -shm protocol.
    """
    with _WRITERS_LOCK:
        if Path(os.path.abspath(path)) in _WRITERS:
            return True
    shm = f"{path}-shm"
    try:
        fd = os.open(shm, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        if not sys.platform.startswith("linux"):
            return True
        # struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len,
        # pid_t l_pid (native alignment pads it like the C struct).
        probe = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, _SHM_DMS_BYTE, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, probe)
        held: int = struct.unpack("hhqqi", answer)[0]
        return held != fcntl.F_UNLCK
    except OSError:
        return True
    finally:
        os.close(fd)


def readonly_uri(path: Path, *, live: bool = False) -> tuple[str, bool]:
    """The ``file:`` URI that opens ``path`` without creating or changing any file, and
    whether the WAL must be read into private memory (see the module docstring)."""
    from urllib.parse import quote

    base = f"file:{quote(os.path.abspath(path))}?mode=ro"
    # A follower joins the -shm protocol to see later commits -- unless no one can write
    # here at all (read-only media), where there will be none.
    live = live and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)
    if live or store_in_use(path):
        return base, False
    if _wal_frames_possible(f"{path}-wal"):
        return base + "&vfs=unix-none", True
    return base + "&immutable=1", False


# A WAL frame is a 24-byte header and a page (512 bytes at least) after the 32-byte file header.
_SHORTEST_WAL_WITH_A_FRAME = 32 + 24 + 512


def _wal_frames_possible(wal: str) -> bool:
    """Whether ``wal`` exists and is long enough to hold a frame (an unreadable one: assume so,
    and let the open report it)."""
    try:
        return os.stat(wal).st_size >= _SHORTEST_WAL_WITH_A_FRAME
    except FileNotFoundError:
        return False
    except OSError:
        return True


# Authorizer action codes that only read (sqlite3.h); everything else is denied.
_READ_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_FUNCTION,
        sqlite3.SQLITE_TRANSACTION,
        sqlite3.SQLITE_SAVEPOINT,
        sqlite3.SQLITE_RECURSIVE,
    }
)
# Pragmas that take an argument yet only report (``PRAGMA table_info(t)``).
_REPORTING_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "integrity_check",
        "quick_check",
        "foreign_key_check",
    }
)


def _deny_writes(action: int, arg1: str | None, arg2: str | None, *_: object) -> int:
    """SQLite authorizer of read-only handles: reads pass, anything that could write is denied
    (including ATTACH, which could create a file, and pragmas that set a value)."""
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg2 is None or arg1 in _REPORTING_PRAGMAS):
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY
