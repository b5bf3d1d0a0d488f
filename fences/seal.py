"""Sealing a source: hold its lock, fingerprint it, and notice if it ever changes.

redb takes an exclusive ``flock`` on its file while a database is open; taking the same lock
(on a read-only descriptor) both proves the old binary is not running and keeps it from
starting while we read.  The source is never opened for writing.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bbg_core.errors import Locked, SourceError, ValidationFailed
from bbg_core.files import file_sha256, lock_holder, open_regular, require_regular, runs_bbg_migrate


def _redb_facts(path: Path) -> dict[str, Any]:
    from importers.redb import open_redb

    with open_redb(path) as db:
        h = db.header
        return {
            "format_version": h.format_version,
            "primary_slot": h.primary_slot,
            "recovery_required": h.recovery_required,
            "transaction_id": h.transaction_id,
        }


def fingerprint(
    path: Path, kind: str, progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """The seal fingerprint of a source: size, SHA-256 and, for redb, header facts."""
    size = require_regular(path)
    doc: dict[str, Any] = {
        "kind": kind,
        "size_bytes": size,
        # Never past the size sealed here, whatever is appended meanwhile (a later check
        # compares sizes first).
        "sha256": file_sha256(path, progress, size=size),
    }
    if kind == "redb":
        doc["redb"] = _redb_facts(path)
    return doc


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What the cheap check compares: inode, size, mtime and ctime (nanoseconds)."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _Stopped(Exception):
    """A background re-hash told to stop (its seal released)."""


class Recheck:
    """The bytes of a sealed source re-hashed on a thread of its own, started once the run
    has read every row it imports (:meth:`Seal.recheck_in_background`), so that the hashing
    overlaps the checks that follow (the links check, which re-reads pages of the same
    commit, each verified against the checksums the sealed header leads to) instead of
    coming after them.  :meth:`Seal.check_unchanged` takes its digest in place of hashing
    the file again; the cheap check (inode, size, mtime, ctime) still runs then, at
    activation, and shows a write made after the re-hash read the bytes."""

    def __init__(self, path: Path, size: int) -> None:
        self._stop = threading.Event()
        self._digest: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(path, size), daemon=True,
                                        name="seal-recheck")  # fmt: skip
        self._thread.start()

    def _run(self, path: Path, size: int) -> None:
        def go_on(_done: int) -> None:
            if self._stop.is_set():
                raise _Stopped

        try:
            self._digest = file_sha256(path, go_on, size=size)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the thread that asks for the digest
            self._error = exc

    def digest(self) -> str:
        """The SHA-256 of the source's sealed length (waits for it); the thread's error."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._digest is None:
            raise RuntimeError("the seal's re-check was stopped before it finished")
        return self._digest

    def stop(self) -> None:
        """Stop hashing (at the next 1 MiB); :meth:`digest` then raises."""
        self._stop.set()


@dataclass
class Seal:
    """A held source lock plus the fingerprint taken under it."""

    path: Path
    kind: str
    fingerprint: dict[str, Any]
    _fd: int = field(default=-1, repr=False)
    _stat: tuple[int, ...] = ()
    _rechecks: list[Recheck] = field(default_factory=list, repr=False)

    def recheck_in_background(self) -> Recheck:
        """Start re-hashing the source now, on a thread (see :class:`Recheck`): for a run
        that has read every row it imports and only checks from here on.  Stopped when the
        seal is released."""
        recheck = Recheck(self.path, int(self.fingerprint["size_bytes"]))
        self._rechecks.append(recheck)
        return recheck

    def check_unchanged(self, *, full: bool = False, recheck: Recheck | None = None) -> None:
        """Abort (ValidationFailed) if the source changed since it was sealed.

        The cheap check compares inode, size, mtime and ctime (which every write and every
        ``utime`` moves: a change that puts the mtime back still shows); ``full`` also
        re-hashes the bytes (or takes the digest of ``recheck``, started once the rows were
        read).
        """
        try:
            st = self.path.stat()
        except OSError as exc:
            raise SourceError(
                f"{self.path}: source vanished after sealing", path=str(self.path)
            ) from exc
        changed = _identity(st) != self._stat
        if not changed and full:
            size = int(self.fingerprint["size_bytes"])
            if recheck is not None:
                digest = recheck.digest()
            else:
                digest = file_sha256(self.path, size=size)
            changed = digest != self.fingerprint["sha256"]
        if changed:
            raise ValidationFailed(
                f"{self.path}: the source changed after it was sealed; nothing was activated. "
                "Stop whatever writes it, then start the migration again",
                path=str(self.path),
                errors=[{"code": "source-changed", "detail": str(self.path)}],
            )

    def release(self) -> None:
        """Release the lock, stopping any background re-check (idempotent)."""
        for recheck in self._rechecks:
            recheck.stop()
        self._rechecks.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Seal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def take_lock(path: Path) -> int:
    """Open ``path`` read-only and take its exclusive lock; Locked if another process has it."""
    fd = open_regular(path)  # a FIFO or a device is refused, never waited on
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            who, pid = lock_holder(fd)
            os.close(fd)
            if runs_bbg_migrate(pid):
                raise Locked(
                    f"{path}: another bbg-migrate run ({who}) is working on this source now; "
                    "wait for it to finish, then rerun",
                    path=str(path), holder_pid=pid,
                ) from exc  # fmt: skip
            raise Locked(
                f"{path}: another process ({who}) holds the source's lock (is the old binary "
                "still running?); stop it, then rerun",
                path=str(path), holder_pid=pid,
            ) from exc  # fmt: skip
        os.close(fd)
        raise SourceError(f"{path}: cannot lock: {exc.strerror}", path=str(path)) from exc
    return fd


def seal(path: Path, kind: str, progress: Callable[[int], None] | None = None) -> Seal:
    """Lock ``path`` and fingerprint it; the lock is held until the Seal is released."""
    fd = take_lock(path)
    try:
        st = os.fstat(fd)
        doc = fingerprint(path, kind, progress)
    except BaseException:
        os.close(fd)
        raise
    s = Seal(
        path=path, kind=kind, fingerprint=doc, _fd=fd, _stat=_identity(st)
    )
    return s
