"""Building a store aside and publishing it by rename: the one home of ``restore``'s and
``backup``'s publication.

:class:`Aside` makes a temporary sibling of the destination, ``.DEST.<kind>-*``, marked as
this tool's own (:data:`bbg_core.files.OWNER_MARK`) and kept locked while the command runs
(:func:`bbg_core.files.owned_tempdir`); what a killed run left is provably abandoned and the
next run to ``DEST`` removes it (:func:`bbg_core.files.sweep`: only directories holding the
mark, never by name alone).  The store is built inside it, in ``store`` (and, for a Fjall
store with the toolkit's records, ``store.bbg-migrate``); the caller verifies it by reading
it back, then :meth:`Aside.publish`:

1. the destination must still be free (absent or an empty directory, and for a Fjall store
   no records directory ``DEST.bbg-migrate``): never overwrite;
2. everything built is fsynced (files by their builders; the directories here);
3. a Fjall store's records are renamed into place first, still carrying the mark (and
   locked, so no other run's sweep takes them meanwhile), then the store directory
   (``rename(2)``), the parent fsynced, and the records' mark removed.  A
   kill between the two renames leaves ``DEST`` free and the marked records beside it, which
   the next run removes (they are ours, their owner gone) before building again.

On any failure the temporary directory is removed and ``DEST`` never appears.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from types import TracebackType

from bbg_core.errors import StoreError, UsageError
from bbg_core.files import OWNER_MARK, disown, fsync_dir, fsync_file, owned_tempdir, sweep
from migrate.store.engine import records_dir

STORE = "store"


def is_free(dest: Path) -> bool:
    """True when ``dest`` is absent or an empty directory (not a link)."""
    if dest.is_symlink():
        return False
    if not os.path.lexists(dest):
        return True
    return dest.is_dir() and not any(dest.iterdir())


def clear_abandoned_records(dest: Path) -> None:
    """Remove ``DEST.bbg-migrate`` when a killed publication of ours left it (it holds our
    mark and nobody holds its lock); only while ``DEST`` itself is free."""
    records = records_dir(dest)
    if is_free(dest) and os.path.lexists(records):
        sweep(records.parent, records.name)


def new_destination(dest: Path, what: str, *, fjall: bool) -> None:
    """UsageError unless ``dest`` (and, ``fjall``, the records beside it) is absent and its
    parent is a directory: ``what`` (a backup) never overwrites.  Records a killed
    publication left (marked, unlocked, ``dest`` absent) are removed first, and so are the
    temporary directories of killed runs to ``dest`` (also when ``dest`` is then refused: a
    kill after the publication's rename leaves the complete copy and its temporary)."""
    if fjall:
        clear_abandoned_records(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    if parent.is_dir():
        sweep(parent, _prefix(dest, what))
    for path in (dest, records_dir(dest)) if fjall else (dest,):
        if os.path.lexists(path):
            raise UsageError(
                f"{path}: already exists; {what} never overwrites, name a new directory",
                path=str(dest),
            )
    if not parent.is_dir():
        raise UsageError(f"{parent}: no such directory for the {what}", path=str(dest))


def _prefix(dest: Path, kind: str) -> str:
    return f".{dest.name}.{kind}-"


def settle(dest: Path, kind: str) -> None:
    """Finish what a publication killed after its rename left undone, ``dest`` now holding
    the complete store (a rerun proved it): the parent fsynced, the records' mark removed,
    and the temporary directories of killed ``kind`` runs to ``dest`` removed."""
    parent = dest.parent if str(dest.parent) else Path(".")
    fsync_dir(parent)
    records = records_dir(dest)
    if os.path.isdir(records) and not os.path.islink(records):
        disown(records)
        fsync_dir(records)
    sweep(parent, _prefix(dest, kind))


class Aside:
    """A temporary directory beside ``dest`` to build a store in (module docstring)."""

    def __init__(self, dest: Path, kind: str) -> None:
        self.dest = dest
        self.parent = dest.parent if str(dest.parent) else Path(".")
        prefix = _prefix(dest, kind)
        try:
            sweep(self.parent, prefix)  # what killed runs to this DEST left
            self._owned = owned_tempdir(self.parent, prefix)
            self.tmp = self._owned.__enter__()
        except OSError as exc:
            raise StoreError(f"{self.parent}: cannot create a temporary directory: {exc}",
                             path=str(dest)) from exc  # fmt: skip
        self.store = self.tmp / STORE
        self.records = records_dir(self.store)

    def __enter__(self) -> Aside:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        try:
            shutil.rmtree(self.tmp, ignore_errors=True)
        finally:
            self._owned.__exit__(None, None, None)

    def publish(self, what: str, *, into_empty: bool = True) -> None:
        """Rename what was built into place (module docstring); ``what`` names the command
        in the refusal when ``DEST`` is no longer free (``into_empty`` False: when it exists
        at all)."""
        dest = self.dest
        taken = not is_free(dest) or (not into_empty and os.path.lexists(dest))
        if taken or os.path.lexists(records_dir(dest)):
            raise UsageError(f"{dest}: appeared during the {what}; not overwritten",
                             path=str(dest))  # fmt: skip
        moved = False
        held: int | None = None
        try:
            with_records = os.path.lexists(self.records)
            if with_records:
                # Locked until the mark is gone: no sweep takes them while we publish.
                held = os.open(self.records, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                fcntl.flock(held, fcntl.LOCK_EX)
                fsync_dir(self.records)
                mark = self.records / OWNER_MARK  # ours until the store is in place
                mark.write_bytes(b"bbg-migrate: records of a store being published\n")
                fsync_file(mark)
                fsync_dir(self.records)
            fsync_dir(self.store)
            if os.path.lexists(dest):
                dest.rmdir()  # empty, checked above; rename cannot replace it portably
            moved = False
            if with_records:
                os.rename(self.records, records_dir(dest))
                moved = True
            os.rename(self.store, dest)
            moved = False
            fsync_dir(self.parent)
            if with_records:
                disown(records_dir(dest))
                fsync_dir(records_dir(dest))
        except OSError as exc:
            if moved:  # the records went, the store did not: take them back out
                shutil.rmtree(records_dir(dest), ignore_errors=True)
            raise StoreError(f"{dest}: {what} failed: {exc}", path=str(dest)) from exc
        finally:
            if held is not None:
                os.close(held)
