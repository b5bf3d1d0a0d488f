"""Opening and creating a store on the Fjall engine (:mod:`migrate.store.keyspace`).

* :func:`create_keyspace` makes a new, empty BBG database exactly as bbg's own engine does
  when it opens a path that does not exist (``backend_fjall.rs``): the directory (mode
  0700), ``bbg.lock`` (mode 0600) and a Fjall keyspace with bbg's 33 partitions.  It is
  built under a temporary sibling name and renamed into place, so a crash leaves no store or
  an empty complete one.
* :func:`open_fjall_store` opens it for writing: the writer session takes ``bbg.lock``
  (exclusive, as bbg's owner holds it; :class:`~bbg_core.errors.Locked` while another
  process -- bbg itself or another run of this toolkit -- holds it, after waiting up to the
  busy timeout) and the records beside it are opened (created on first use).
* :func:`open_fjall_view` is the read-only handle: no lock is taken, the keyspace is read
  as one point-in-time snapshot even while its owner writes, and a store without records
  (one the cyber code wrote) reads as one with no imports.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bbg_core.errors import CommitUnknown, FjallError, FjallRefused, Locked, StoreRefused
from bbg_core.files import fsync_dir, fsync_file, owned_tempdir, sweep
from fences import generations
from migrate.store import bbgdb, creation, guard, layout, sanity
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.connection import DEFAULT_BUSY_TIMEOUT, Connection
from migrate.store.engine import FJALL, records_dir
from migrate.store.fjall import open_keyspace
from migrate.store.fjall.session import KeyspaceWriter, open_writer
from migrate.store.fjall.writer import build_keyspace
from migrate.store.keyspace import FjallTx, FjallView, KeyspaceRows, empty_records, records_sql
from migrate.store.store import Store
from migrate.store.tables import StagedTables, StoreTables
from migrate.store.tx import Tx

_POLL = 0.05


def create_keyspace(directory: Path) -> None:
    """A new empty BBG database at ``directory`` (absent, or an empty directory).

    Built inside a temporary sibling ``.NAME.bbg-new-*`` that this process marks as its own
    and keeps locked while it lives (:func:`bbg_core.files.owned_tempdir`); what a killed
    creation left is removed by the next one (:func:`bbg_core.files.sweep`: only a marked
    directory whose owner is gone -- never a folder that merely matches the name)."""
    parent = directory.parent if str(directory.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)  # as a SQLite store's creation does
    prefix = f".{directory.name}.bbg-new-"
    sweep(parent, prefix)
    with owned_tempdir(parent, prefix) as work:
        try:
            tmp = work / "keyspace"
            build_keyspace(tmp, {name: () for name in bbgdb.PARTITIONS}, dir_mode=bbgdb.DIR_MODE)
            lock = tmp / bbgdb.LOCK_NAME
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         bbgdb.LOCK_MODE)  # fmt: skip
            os.close(fd)
            fsync_file(lock)
            fsync_dir(tmp)
            try:
                os.rename(tmp, directory)  # replaces an empty directory, never a full one
            except OSError as exc:
                raise StoreRefused(
                    f"{directory}: not empty and not a BBG store; a store is created only in a "
                    "new or empty directory. Name another --store", path=str(directory),
                ) from exc  # fmt: skip
            fsync_dir(parent)
        finally:
            shutil.rmtree(work, ignore_errors=True)


class FjallStore(Store):
    """A read-write handle of a store on the Fjall engine (see the module docstring)."""

    engine = FJALL

    def __init__(self, directory: Path, conn: Connection, writer: KeyspaceWriter,
                 reader_generation: str, generation: str,
                 lock: creation.DirLock | None) -> None:  # fmt: skip
        super().__init__(directory, conn, reader_generation, generation, lock)
        self.writer = writer
        self._rows: KeyspaceRows | None = None

    # -- the snapshot reads go through -----------------------------------------------------
    def rows_view(self) -> KeyspaceRows:
        """The keyspace as of this handle's last commit (re-read after every batch).
        CommitUnknown once an earlier commit's outcome is unknown: the handle reads nothing
        more, as it writes nothing more, until reopened."""
        if self._conn.poisoned is not None:
            self._conn.execute("SELECT 1")  # raises the handle's CommitUnknown
        if self._rows is None:
            self._rows = KeyspaceRows(self.writer.reader(), self.directory)
        return self._rows

    def _forget(self) -> None:
        if self._rows is not None:
            self._rows.close()
            self._rows = None

    def close(self, *, keep_lock: bool = False) -> None:
        try:
            self._forget()
            self.writer.close()
        finally:
            super().close(keep_lock=keep_lock)

    @property
    def path(self) -> Path:
        return self.directory

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        return super().one(records_sql(self.directory, sql), params)

    def live_get(self, table: str, key: bytes) -> bytes | None:
        return self.rows_view().live_get(table, key)

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
        return self.rows_view().live_rows(table, prefix=prefix, after=after, limit=limit)

    def read_status(self) -> tuple[str | None, str]:
        return self.rows_view().status()

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        from migrate.store.keyspace import _fence_record

        return _fence_record(self.rows_view(), self._conn, namespace)

    # -- writing -----------------------------------------------------------------------------
    def _new_tx(self, number: int, **kw: Any) -> Tx:
        owner = guard.read(self.directory)
        if owner is not None and owner.get("import_id") != kw.get("ref"):
            raise guard.refusal(self.directory, owner)  # only its own import writes on
        self._forget()  # a transaction reads the keyspace as it is now
        return FjallTx(self._conn, number, self.rows_view(), **kw)

    def publish_bulk(self, import_id: str, progress: Callable[[int, int], None] | None = None
                     ) -> None:  # fmt: skip
        """Publish ``import_id``'s staged rows as new segments of the five partitions, for an
        activation too big for one batch.  Under the import's guard (bbg refuses to open the
        store until the activation's last transaction removes it): rows that live only in
        the journals are flushed first (:meth:`KeyspaceWriter.flush`), then each table's rows
        are published in key order (new segments, ``levels`` swapped).  A rerun after a crash
        publishes them again: the same bytes, the newest seqno."""
        from migrate.store import imports

        guard.take(self.directory, import_id, guard.ACTIVATE)
        self._forget()
        self.writer.flush()
        done = 0
        for table in ARCHIVE_ORDER:
            report = self.writer.publish(table, imports.staged_rows(self._conn, import_id, table))
            done += int(report.get("rows", 0))
            if progress is not None:
                progress(done, 0)
        self._forget()

    def _before_commit(self, tx: Tx) -> None:
        """The batch goes to the keyspace first, then the records commit: a crash between
        leaves the rows in the keyspace that the rerun finds there (module docstring of
        :mod:`migrate.store.keyspace`).  The commit hook (fault injection) is called around
        the batch as around a COMMIT: a failure there leaves the outcome unknown."""
        assert isinstance(tx, FjallTx)
        items = tx.batch()
        if not items:
            return
        self._forget()
        hook = self._conn.commit_hook
        try:
            if hook is not None:
                hook("before")
            self.writer.append(items)
            if hook is not None:
                hook("after")
        except (FjallRefused, Locked):
            raise  # refused before a byte was written: the records roll back too
        except BaseException as exc:
            # The batch may or may not be on disk: this handle does nothing more.  An I/O
            # error becomes CommitUnknown; a signal (KeyboardInterrupt ...) keeps its meaning,
            # the handle poisoned all the same (as at the records' COMMIT).
            what = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
            unknown = CommitUnknown(
                f"{self.directory}: writing a batch failed ({what}); its outcome is unknown. "
                "Reopen the store and resolve the request (or rerun: every step checks what "
                "the store holds)", path=str(self.directory), **tx.context,
            )  # fmt: skip
            self._conn.poisoned = unknown
            if isinstance(exc, OSError | FjallError):
                raise unknown from exc
            raise

    @contextmanager
    def snapshot(self, import_id: str | None = None) -> Iterator[StoreTables | StagedTables]:
        self._conn.execute("SELECT 1")  # refuses if this handle is poisoned
        records = Connection(self.db_path, readonly=True)
        try:
            if import_id is not None:
                with records.read():
                    yield StagedTables(records, import_id)
                return
            view = FjallView(self.writer.reader(), self.directory, records)
            records = None  # type: ignore[assignment]  # the view closes it
            try:
                with view.records.read():
                    yield StoreTables(view)
            finally:
                view.close()
        finally:
            if records is not None:
                records.close()

    def info(self) -> dict[str, Any]:
        doc = super().info()
        marker, reached = self.read_status()
        last = self.live_get(bbgdb.METADATA, bbgdb.LAST_TRANSACTION)
        doc.update(engine=FJALL, status=marker, generation=reached,
                   bbg_last_transaction=None if last is None else last.hex())  # fmt: skip
        return doc


def writer_session(directory: Path, timeout: float) -> KeyspaceWriter:
    """The writer session, waiting up to ``timeout`` seconds for ``bbg.lock``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return open_writer(directory, create_lock=True)
        except Locked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_POLL)


def open_fjall_store(
    directory: Path,
    *,
    create: bool,
    reader_generation: str,
    maintenance: bool,
    hash_suite: str,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    keep_exclusive: bool = False,
    writer: KeyspaceWriter | None = None,
) -> FjallStore:
    """Open (``create``: make first, when absent) the Fjall store at ``directory``.
    ``keep_exclusive``: keep the records' directory locked exclusively when this call
    created the records (for :func:`migrate.store.opening.provisional_store`, which removes
    them again when nothing was committed: a refused ``apply`` into a store the cyber code
    wrote leaves no records beside it).  ``writer``: a writer session of the existing store
    this process holds already (the handle takes it over, and closes it when refused)."""
    from migrate.store.engine import engine_of

    if writer is None:
        if engine_of(directory) is None:
            if not create:
                raise layout.no_store(directory, create_hint=True)
            creation.check_destination(directory)
            create_keyspace(directory)
        writer = writer_session(directory, busy_timeout)
    lock: creation.DirLock | None = None
    conn: Connection | None = None
    try:
        records = records_dir(directory)
        lock = creation.acquire(records, create=True, hash_suite=hash_suite,
                                timeout=busy_timeout, keep_exclusive=keep_exclusive)  # fmt: skip
        db = records / layout.DB_NAME
        layout.check_header(db)
        conn = Connection(db, busy_timeout=busy_timeout)
        version = layout.check_identity(conn, allow_pre_ledger=maintenance)
        sanity.check_bookkeeping(conn)
        layout.check_hash_suite(conn)  # as a SQLite store's open does
        store = FjallStore(directory, conn, writer, reader_generation, "original", lock)
        store.schema_version = version
        if not maintenance:
            refuse_guarded(directory)
        marker, generation = store.read_status()
        store.generation = generation
        if not maintenance:
            store.generation = generations.require_readable(store, reader_generation)
        return store
    except BaseException:
        if conn is not None:
            conn.close()
        if lock is not None:
            lock.release()
        writer.close()
        raise


def refuse_guarded(directory: Path) -> None:
    """StoreRefused when an import guard beside ``directory`` says a migration into it is
    incomplete and it is not one of this toolkit's (bbg refuses to open such a store; an
    interrupted import of this toolkit's is let in, and only its own rerun may write)."""
    owner = guard.read(directory)
    if owner is not None and owner.get("tool") != guard.TOOL:
        raise guard.refusal(directory, owner)


@contextmanager
def open_fjall_view(
    directory: Path, *, check: bool = True, records_first: bool = False
) -> Iterator[FjallView]:
    """A read-only handle of the Fjall store at ``directory`` (no lock taken, nothing
    written; see the module docstring).

    ``records_first``: the records' read transaction is taken *before* the keyspace's
    snapshot and held for the handle's life (do not call ``view.read()`` then), so the two
    agree as a crash would leave them: the toolkit writes the keyspace first, so the
    keyspace may hold rows of a transaction the records do not name yet, never the other
    way round (``snapshot`` and ``backup`` of a live store)."""
    records = records_dir(directory)
    conn: Connection
    if (records / layout.DB_NAME).exists():
        db = records / layout.DB_NAME
        layout.check_header(db)
        conn = Connection(db, readonly=True)
        try:
            layout.require_bbg(conn)
            if check:
                sanity.check_bookkeeping(conn)
        except BaseException:
            conn.close()
            raise
    else:
        conn = empty_records()
    held = ExitStack()
    try:
        if records_first:
            held.enter_context(conn.read())
        ks = open_keyspace(directory)
    except BaseException:
        held.close()
        conn.close()
        raise
    view = FjallView(ks, directory, conn)
    try:
        yield view
    finally:
        try:
            held.close()
        finally:
            view.close()


def is_records_dir(directory: Path) -> Path | None:
    """The Fjall store whose records ``directory`` is, or None (refuse to open records as a
    store of their own)."""
    name = directory.name
    if not name.endswith(".bbg-migrate"):
        return None
    store = directory.with_name(name[: -len(".bbg-migrate")])
    from migrate.store.engine import engine_of

    return store if engine_of(store) == FJALL else None


__all__ = ["FjallStore", "create_keyspace", "open_fjall_store", "open_fjall_view"]

