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
    facts = _facts(path, kind)
    # Never past the size sealed here, whatever is appended meanwhile (a later check compares
    # sizes first).
    return _with_digest(facts, file_sha256(path, progress, size=facts["size_bytes"]))


def _facts(path: Path, kind: str) -> dict[str, Any]:
    """The fingerprint but its SHA-256."""
    doc: dict[str, Any] = {"kind": kind, "size_bytes": require_regular(path)}
    if kind == "redb":
        doc["redb"] = _redb_facts(path)
    return doc


def _with_digest(facts: dict[str, Any], sha256: str) -> dict[str, Any]:
    """The fingerprint of ``facts`` and the digest, keys in the order receipts carry them."""
    head = {"kind": facts["kind"], "size_bytes": facts["size_bytes"], "sha256": sha256}
    return head | {k: v for k, v in facts.items() if k not in head}


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What the cheap check compares: inode, size, mtime and ctime (nanoseconds)."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _Stopped(Exception):
    """A background hash told to stop (its seal released)."""


class BackgroundDigest:
    """The SHA-256 of a sealed source's bytes, hashed on a thread of its own (``hashlib``
    lets go of the GIL while it hashes), so that the hashing overlaps the run's own work:

    - the seal's first hash, when the run does not need the fingerprint before it has read
      the rows (:func:`seal` with ``background=True``; :attr:`Seal.fingerprint` waits for
      it);
    - the full re-check, started once the run has read every row it imports
      (:meth:`Seal.recheck_in_background`), overlapping the checks that follow (the links
      check, which re-reads pages of the same commit, each verified against the checksums
      the sealed header leads to).  :meth:`Seal.check_unchanged` takes its digest in place
      of hashing the file again; the cheap check (inode, size, mtime, ctime) still runs
      then, at activation, and shows a write made after the re-hash read the bytes."""

    def __init__(self, path: Path, size: int, name: str = "seal-recheck") -> None:
        self._stop = threading.Event()
        self._digest: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(path, size), daemon=True,
                                        name=name)  # fmt: skip
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
            raise RuntimeError("the seal's background hash was stopped before it finished")
        return self._digest

    def stop(self) -> None:
        """Stop hashing (at the next 1 MiB); :meth:`digest` then raises."""
        self._stop.set()


class Seal:
    """A held source lock plus the fingerprint taken under it (its SHA-256 perhaps still
    being hashed on a thread: :attr:`fingerprint` waits for it)."""

    def __init__(
        self, path: Path, kind: str, facts: dict[str, Any], fd: int, stat: tuple[int, ...],
        hashing: BackgroundDigest | None = None,
    ) -> None:
        self.path = path
        self.kind = kind
        self._facts = facts
        self._fd = fd
        self._stat = stat
        self._hashing = hashing
        self._rechecks: list[BackgroundDigest] = [] if hashing is None else [hashing]

    def __repr__(self) -> str:
        return f"Seal(path={self.path!r}, kind={self.kind!r})"

    @property
    def fingerprint(self) -> dict[str, Any]:
        """Size, SHA-256 and, for redb, header facts (waits for a background hash; its
        error, such as the source's read failing, is raised here)."""
        if self._hashing is not None:
            self._facts = _with_digest(self._facts, self._hashing.digest())
            self._rechecks.remove(self._hashing)
            self._hashing = None
        return self._facts

    @property
    def size(self) -> int:
        """The sealed length (known without waiting for the hash)."""
        return int(self._facts["size_bytes"])

    def recheck_in_background(self) -> BackgroundDigest:
        """Start re-hashing the source now, on a thread (see :class:`BackgroundDigest`):
        for a run that has read every row it imports and only checks from here on.  Stopped
        when the seal is released."""
        recheck = BackgroundDigest(self.path, self.size)
        self._rechecks.append(recheck)
        return recheck

    def check_unchanged(self, *, full: bool = False,
                        recheck: BackgroundDigest | None = None) -> None:  # fmt: skip
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
            sealed = self.fingerprint["sha256"]
            if recheck is not None:
                digest = recheck.digest()
            else:
                digest = file_sha256(self.path, size=self.size)
            changed = digest != sealed
        if changed:
            raise ValidationFailed(
                f"{self.path}: the source changed after it was sealed; nothing was activated. "
                "Stop whatever writes it, then start the migration again",
                path=str(self.path),
                errors=[{"code": "source-changed", "detail": str(self.path)}],
            )

    def release(self) -> None:
        """Release the lock, stopping any background hash (idempotent)."""
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


def seal(path: Path, kind: str, progress: Callable[[int], None] | None = None, *,
         background: bool = False) -> Seal:  # fmt: skip
    """Lock ``path`` and fingerprint it; the lock is held until the Seal is released.

    ``background``: hash it on a thread (:class:`BackgroundDigest`) while the caller goes on;
    :attr:`Seal.fingerprint` waits for the digest.  For a run that reads the rows before it
    needs the fingerprint (a new destination): the hash overlaps the pass instead of coming
    before it.  This changes nothing the checks see: the cheap identity is taken here, before
    any byte is read, the pass reads every byte after it, and the full re-check at activation
    compares the bytes as they are then with this digest."""
    fd = take_lock(path)
    try:
        st = os.fstat(fd)
        if background:
            facts = _facts(path, kind)
            hashing = BackgroundDigest(path, int(facts["size_bytes"]), name="seal-hash")
            return Seal(path, kind, facts, fd, _identity(st), hashing)
        doc = fingerprint(path, kind, progress)
    except BaseException:
        os.close(fd)
        raise
    return Seal(path, kind, doc, fd, _identity(st))
