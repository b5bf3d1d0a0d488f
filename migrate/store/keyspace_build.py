"""Building a new BBG database aside and publishing it (``run`` into a new Fjall store).

What bbg's own converter (``migrate_redb``) leaves behind, built the fast way: the checking
pass over the source pushes each table's rows straight into sorted segments of a keyspace
nobody sees yet (:class:`~migrate.store.fjall.writer.KeyspaceBuilder`, under a locked
temporary sibling), with bbg's layout around them -- directory 0700, ``bbg.lock`` 0600, the
33 partitions -- and bbg's two marker transactions after them, as its converter ends: status
``copying``, then status ``complete``, each with its ``last_transaction`` change id.  The
toolkit's records of the import are built aside too (a SQLite records store,
:mod:`migrate.store.build`).

Publication, under the import guard ``<store>.bbg-importing`` that the caller took first
(:mod:`migrate.store.guard`; bbg refuses to open the destination while it exists):

1. the records are renamed into place (``<store>.bbg-migrate``);
2. the keyspace is renamed into place (``<store>``), the parent fsynced;
3. the caller removes the guard.

A crash leaves no destination, or one bbg refuses (the guard), which the rerun of the same
import -- and only it, the guard names it -- clears and builds again or, once both are in
place, finishes by removing the guard.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bbg_core.closing import Closing
from bbg_core.errors import StoreRefused
from bbg_core.files import fsync_dir, fsync_file
from migrate.store import bbgdb, build
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, engine_of, records_dir
from migrate.store.fjall.writer import KeyspaceBuilder
from migrate.store.keyspace_aside import AsideSegments
from migrate.store.pages import PageLoader
from migrate.store.store import Store


def _bbg_lock(path: Path) -> None:
    lock = path / bbgdb.LOCK_NAME
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, bbgdb.LOCK_MODE)
    os.close(fd)
    fsync_file(lock)


class _Builder(KeyspaceBuilder):
    """A keyspace built with bbg's lock file in it."""

    def before_rename(self, path: Path) -> None:
        _bbg_lock(path)


def conversion_batches() -> list[list[tuple[str, bytes, bytes | None]]]:
    """bbg's converter's own marker transactions, as Fjall batches: status ``copying``, then
    status ``complete``, each with bbg's ``last_transaction`` change id."""
    out = []
    for status in (b"copying", b"complete"):
        changes = bbgdb.with_markers({(bbgdb.MIGRATION, bbgdb.STATUS): status})
        out.append([(t, k, v) for (t, k), v in sorted(changes.items())])
    return out


class KeyspaceLoader(PageLoader):
    """Rows into the keyspace being built (or into segments written aside for an existing
    one, :mod:`migrate.store.keyspace_aside`), one bounded page at a time, while the checking
    pass reads them (the pages of :class:`~migrate.store.pages.PageLoader`, each a copy)."""

    COPY_ROWS = True

    def __init__(self, builder: KeyspaceBuilder | AsideSegments, page_rows: int,
                 page_bytes: int) -> None:  # fmt: skip
        super().__init__(page_rows, page_bytes)
        self._builder = builder

    def _deliver(self, table: str, batch: list[tuple[bytes, bytes]]) -> bool:
        try:
            self._builder.push(table, batch)
        except BaseException as exc:  # what the pass finds wrong with the source comes first
            self._error = exc
            return False
        self.rows[table] += len(batch)
        return True

    def _ended(self, table: str) -> None:
        """A table's last rows are in: its partition's open segment is closed at once, so
        that only one partition holds an open segment at a time (bounded memory)."""
        try:
            self._builder.end_partition(table)
        except BaseException as exc:  # said by check(), after what the pass finds
            self._error = exc

    def finish(self) -> None:
        """Every row is in (the checking pass is over): the partitions are finished and
        fsynced on a thread of their own while the links are checked; publication waits
        for them.  Nothing is published before the checks pass, so an invalid source
        still changes nothing (the build is removed)."""
        if self.complete:
            self._builder.finish_rows_in_background()


class FjallBuild(Closing):
    """A new BBG database and its records, built beside ``directory`` (module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.records = build.open_build(records_dir(directory), records=True)
        try:
            self.builder = _Builder(directory, bbgdb.PARTITIONS, dir_mode=bbgdb.DIR_MODE)
        except BaseException:
            self.records.discard()
            raise
        self._loader: KeyspaceLoader | None = None

    @property
    def path(self) -> Path:
        """Where the keyspace is being built."""
        return self.builder.path

    def loader(self, page_rows: int, page_bytes: int) -> KeyspaceLoader:
        """The loader of the checking pass."""
        self._loader = KeyspaceLoader(self.builder, page_rows, page_bytes)
        return self._loader

    def open(self) -> Store:
        """The handle of the records being built (for the import's one transaction)."""
        if self._loader is not None:
            self._loader.check()
        return self.records.open()

    def publish(self) -> bool:
        """Records into place, then the keyspace (see the module docstring); False (nothing
        published) when the destination is no longer free."""
        if os.path.lexists(self.directory) and not _empty_dir(self.directory):
            return False
        for batch in conversion_batches():
            self.builder.batch(batch)
        if not self.records.publish():
            return False
        hook = Connection.commit_hook  # fault injection, None normally: the keyspace's rename
        if hook is not None:
            hook("before")
        self.builder.commit()  # rename(2) replaces an empty directory, never a full one
        if hook is not None:
            hook("after")
        return True

    def discard(self) -> None:
        """Remove whatever is not published (idempotent)."""
        try:
            self.builder.abort()
        finally:
            self.records.discard()

    def close(self) -> None:
        self.discard()


def _empty_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not os.listdir(path)
    except OSError:
        return False


def can_build(directory: Path) -> bool:
    """True when a new BBG database may be built for ``directory``: it is absent or an empty
    directory, its parent is writable, and no records of another store are in the way."""
    parent = directory.parent
    if directory.is_symlink() or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return False
    if os.path.lexists(directory) and not _empty_dir(directory):
        return False
    return not os.path.lexists(records_dir(directory))


def finished(directory: Path, import_id: str) -> bool:
    """True when both the keyspace and the records of ``import_id``'s conversion are in
    place (an interrupted run got past publication: only its guard is left)."""
    from migrate.store import imports
    from migrate.store.readonly import open_readonly

    if engine_of(directory) != FJALL or not os.path.lexists(records_dir(directory)):
        return False
    with open_readonly(directory) as view:
        return imports.receipt_of(view, import_id) is not None


def clear_interrupted(directory: Path) -> None:
    """Remove what an interrupted conversion of this import left (the caller holds the
    import's own guard, its proof of ownership): a keyspace at ``directory`` and its
    records.  Anything else there is refused, never removed."""
    records = records_dir(directory)
    if os.path.lexists(directory) and not _empty_dir(directory):
        if engine_of(directory) != FJALL:
            raise StoreRefused(
                f"{directory}: holds something other than a BBG database; the interrupted "
                "conversion that owns it is not this one's to clear", path=str(directory),
            )  # fmt: skip
        shutil.rmtree(directory)
    if os.path.lexists(records):
        shutil.rmtree(records)
    fsync_dir(directory.parent)


__all__ = ["FjallBuild", "KeyspaceLoader", "can_build", "clear_interrupted",
           "conversion_batches"]  # fmt: skip
