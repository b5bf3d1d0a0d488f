"""``detect``: what a path holds, judged by its content (never by its name).

Kinds: ``redb``, ``signal-log`` (the old cyb Signal log), ``bbg-frame-log`` (bbg's CLI log, the
other frame-log dialect: told apart by its frames, see :mod:`importers.frame_log.dialect`),
``text-archive``, ``bbg`` (a BBG store: ``engine`` ``fjall`` -- the real BBG database, a Fjall
keyspace; ``locked`` says whether its owner holds ``bbg.lock`` -- or ``sqlite``),
``unknown``.  For a redb file the
report adds the facts an operator checks before a migration: format version, primary slot,
recovery flag, and whether another process holds the file's lock (the old binary running).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Any

from bbg_core.files import cannot_read, open_regular
from importers.redb.sniff import header_claims, looks_like_redb

SQLITE_MAGIC = b"SQLite format 3\x00"
FJALL_VERSION = b"FJL\x02"
SNIFF_BYTES = 4096


def lock_held(path: Path) -> bool:
    """True when another process holds an exclusive ``flock`` on ``path`` (as redb does).

    The probe opens the file read-only and asks for a shared lock without blocking; it is
    released at once, so detect never keeps the file.
    """
    fd = open_regular(Path(path))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _bbg_store_db(path: Path) -> Path | None:
    """The SQLite file of a BBG store directory, if ``path`` looks like one."""
    if not path.is_dir():
        return None
    names = os.listdir(path)  # an unreadable directory is an error, not "no store"
    for suffix in (".sqlite3", ".db"):
        for name in sorted(n for n in names if n.endswith(suffix)):
            candidate = path / name
            if not candidate.is_file():
                continue
            with candidate.open("rb") as fh:
                if fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
                    return candidate
    return None


def _is_keyspace(path: Path) -> bool:
    """True when ``path`` is a Fjall keyspace (the real BBG database): its ``version`` file."""
    try:
        with open(path / "version", "rb") as fh:
            return fh.read(5) == FJALL_VERSION
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False


def detect(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Report the kind of ``path`` and its kind-specific facts (read-only)."""
    p = Path(path)
    report: dict[str, Any] = {"path": str(p), "kind": "unknown"}
    try:
        if p.is_dir():
            if _is_keyspace(p):
                lock = p / "bbg.lock"
                report.update(kind="bbg", engine="fjall", database=str(p),
                              locked=lock.is_file() and lock_held(lock))  # fmt: skip
                return report
            db = _bbg_store_db(p)
            if db is not None:
                report.update(kind="bbg", engine="sqlite", database=str(db))
            return report
        # A regular file only, opened without blocking: a FIFO or a device is refused here
        # instead of hanging the first read (or never ending it: /dev/zero).
        fd = open_regular(p)
        try:
            head = os.pread(fd, SNIFF_BYTES, 0)
            report["size_bytes"] = os.fstat(fd).st_size
        finally:
            os.close(fd)
    except OSError as exc:
        raise cannot_read(p, exc) from exc

    if looks_like_redb(head):
        report["kind"] = "redb"
        report["redb"] = {**header_claims(head), "locked": lock_held(p)}
        return report
    try:
        # The sniffing modules only, not the readers (start-up time: tests/test_startup.py).
        from importers.frame_log.dialect import frame_log_dialect, looks_like_frame_log
        from importers.text_archive.sniff import looks_like_text_archive
    except ImportError:  # pragma: no cover - the importers ship with the package
        return report
    if looks_like_frame_log(head):
        report["kind"] = frame_log_dialect(p)
    elif looks_like_text_archive(head):
        report["kind"] = "text-archive"
    return report


def is_store(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a BBG store directory (judged by content, like :func:`detect`)."""
    return os.path.isdir(path) and detect(path)["kind"] == "bbg"
