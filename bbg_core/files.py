"""File helpers shared by every layer."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bbg_core.errors import Conflict, MigrateError, SourceError, StoreError

CHUNK = 1 << 20


def cannot_read(path: str | os.PathLike[str], exc: OSError) -> SourceError:
    """The one error for an input that cannot be read (missing, no permission, a directory
    where a file is expected, ...): exit 1, one line naming the path and the OS's reason."""
    reason = exc.strerror or type(exc).__name__
    return SourceError(f"{os.fspath(path)}: cannot read: {reason}", path=os.fspath(path),
                       reason=reason)  # fmt: skip


def real_path(path: str | os.PathLike[str], *, strict: bool = False) -> Path:
    """``path`` made absolute with every symbolic link resolved (``strict``: it must exist).

    A path the system cannot look up -- a loop of symbolic links, a name longer than the file
    system allows, no permission on a folder on the way -- is the one ``PATH: cannot read:
    REASON`` error (exit 1), never Python's ``RuntimeError("Symlink loop ...")``."""
    try:
        return Path(os.path.abspath(path)).resolve(strict=strict)
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    except RuntimeError as exc:  # Python < 3.13 reports a symlink loop this way
        raise cannot_read(path, OSError(errno.ELOOP, os.strerror(errno.ELOOP))) from exc


def file_sha256(
    path: Path, progress: Callable[[int], None] | None = None, *, size: int | None = None
) -> str:
    """SHA-256 of a regular file's first ``size`` bytes (default: its size when opened),
    streamed in 1 MiB chunks; never reads past that size, whatever is appended meanwhile."""
    h = hashlib.sha256()
    done = 0
    fd = open_regular(path)
    try:
        limit = os.fstat(fd).st_size if size is None else size
        while done < limit:
            chunk = os.read(fd, min(CHUNK, limit - done))
            if not chunk:
                break
            h.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done)
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    finally:
        os.close(fd)
    return h.hexdigest()


# -- who holds a lock ---------------------------------------------------------------------


def lock_holder(fd: int) -> tuple[str, int | None]:
    """Who holds a ``flock`` on the file open as ``fd``: ("pid N (command)", N) from
    ``/proc/locks``, or ("another process", None) when that cannot be told."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return "another process", None
    exact, by_inode = [], []
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or "->" in parts or parts[1] != "FLOCK" or not parts[4].isdigit():
            continue
        if parts[5] == dev:
            exact.append(int(parts[4]))
        elif parts[5].rsplit(":", 1)[-1] == str(st.st_ino):
            by_inode.append(int(parts[4]))
    found = exact or (by_inode if len(by_inode) == 1 else [])
    if not found:
        return "another process", None
    pid = found[0]
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            comm = fh.read().strip()
    except OSError:
        comm = "?"
    mine = " -- this process" if pid == os.getpid() else ""
    return f"pid {pid} ({comm}{mine})", pid


def runs_bbg_migrate(pid: int | None) -> bool:
    """Whether process ``pid`` is a bbg-migrate command (the ``bbg-migrate`` script, or
    ``python -m migrate``), from its command line in ``/proc``."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0")]
    except OSError:
        return False
    if any(os.path.basename(a) == "bbg-migrate" for a in args):
        return True
    return any(a == "-m" and b == "migrate" for a, b in zip(args, args[1:], strict=False))


# -- temporary directories that say whether their owner is still alive ---------------------
#
# A process building something aside (a backup, a restored store) works in a directory that
# it keeps locked (``flock`` on the directory itself) for as long as it lives.  The kernel
# drops the lock when the process dies, however it dies, so an unlocked directory of that
# name is provably abandoned: the next run removes it, and ``doctor`` reports it.


def _lock_dir(path: Path, how: int) -> int | None:
    """An fd of ``path`` holding lock ``how`` (non-blocking), or None if someone holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _names(path: Path, fd: int) -> bool:
    """True while ``path`` still names the directory ``fd`` is open on."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


#: The file that marks a temporary directory as this tool's own: only a directory holding it
#: (a regular file, not a link) is ever swept.  A folder of the user's that happens to match
#: a temporary name (``.DEST.backup-*``, a store copied by hand) is never touched.
OWNER_MARK = ".bbg-migrate-temporary"
_OWNER_TEXT = b"bbg-migrate: a temporary directory of a running or killed command\n"


@contextmanager
def owned_tempdir(parent: Path, prefix: str) -> Iterator[Path]:
    """A new directory ``parent/prefix*`` kept locked while the block runs (see above), with
    the :data:`OWNER_MARK` file inside (so a later :func:`sweep` may remove it if we die).

    The caller removes it, or calls :func:`disown` and renames it into place, before leaving
    the block.
    """
    while True:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        fd = _lock_dir(path, fcntl.LOCK_EX)
        if fd is not None and _names(path, fd):
            break
        if fd is not None:  # swept away between mkdtemp and the lock: make another
            os.close(fd)
    try:
        mark = os.open(OWNER_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                       | os.O_CLOEXEC, 0o600, dir_fd=fd)  # fmt: skip
        try:
            os.write(mark, _OWNER_TEXT)
        finally:
            os.close(mark)
        yield path
    finally:
        os.close(fd)


def disown(path: Path) -> None:
    """Remove the :data:`OWNER_MARK` of a temporary directory about to be renamed into place
    (what is published carries no file of ours; a crash before the rename leaves a directory
    no sweep removes, which is the safe side)."""
    try:
        os.unlink(path / OWNER_MARK)
    except FileNotFoundError:
        pass


def _owned(path: Path) -> bool:
    try:
        st = os.lstat(path / OWNER_MARK)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)


def abandoned(parent: Path, prefix: str) -> list[tuple[str, bool]]:
    """``(name, abandoned)`` for every directory ``parent/prefix*`` this tool made (it holds
    :data:`OWNER_MARK`; read-only probe)."""
    out: list[tuple[str, bool]] = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return out
    for name in names:
        path = parent / name
        if not name.startswith(prefix) or path.is_symlink() or not path.is_dir():
            continue
        if not _owned(path):
            continue
        fd = _lock_dir(path, fcntl.LOCK_SH)
        out.append((name, fd is not None))
        if fd is not None:
            os.close(fd)
    return out


def sweep(parent: Path, prefix: str) -> list[str]:
    """Remove every abandoned ``parent/prefix*`` directory this tool made (it holds
    :data:`OWNER_MARK` and nobody holds its lock); returns the names removed."""
    removed: list[str] = []
    for name, free in abandoned(parent, prefix):
        if not free:
            continue
        path = parent / name
        fd = _lock_dir(path, fcntl.LOCK_EX)
        if fd is None:
            continue
        try:
            if _names(path, fd) and _owned(path):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(name)
        finally:
            os.close(fd)
    return removed


# -- sources are regular files, read no further than their sealed size ---------------------

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def open_regular(path: Path) -> int:
    """A read-only descriptor of ``path``, which must be a regular file (SourceError else).

    The open never blocks: ``O_NONBLOCK`` makes a FIFO with no writer open at once instead
    of waiting for one; it is then refused like every other special file, which could
    block a read or never end (``/dev/zero``).  The flag is cleared before returning.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise SourceError(
                f"{path}: is {what}, not a regular file; bbg-migrate reads a source only from "
                "a regular file (whose size it can seal). Copy it into a file first",
                path=str(path),
            )
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_special_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output file that exists and is not a regular file (a FIFO would block the
    write, or the read of what it holds, forever; a device never ends): exit 1 naming it.
    A path that does not exist yet, or a regular file, passes."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return  # absent, or not looked up: the writer reports that in its own words
    if stat.S_ISREG(mode):
        return
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise MigrateError(
        f"{os.fspath(path)}: is {what}, not a regular file; bbg-migrate writes its output "
        "files only as regular files: name a file",
        path=os.fspath(path),
    )


def require_regular(path: Path) -> int:
    """The size of the regular file ``path`` (SourceError for anything else)."""
    fd = open_regular(path)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


# -- the permission policy: private by default -----------------------------------------
#
# Everything bbg-migrate creates -- a store on either engine and the records directory beside
# it, receipts, follow files, reports, backups, restored stores -- is readable by its owner
# only: every directory it creates is 0700, every file 0600, whatever the caller's umask.  A
# file or directory that exists already keeps its mode (a rerun never changes an operator's
# choice; :func:`atomic_write` gives the new bytes the old file's mode).  The command line
# applies the policy to the whole process (:func:`private_creation`), which also covers the
# files SQLite and the Fjall writer create on their own (``-wal``, ``-shm``, segments,
# journals); the helpers here create with the same modes for library callers.

#: The mode of every directory the tool creates.
PRIVATE_DIR = 0o700
#: The mode of every file the tool creates.
PRIVATE_FILE = 0o600
#: The umask under which the modes above come out whatever a creator asks for.
PRIVATE_UMASK = 0o077


@contextmanager
def private_creation() -> Iterator[None]:
    """Run the block under the umask of the policy (then give the caller's back)."""
    previous = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(previous)


def _existing_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


# -- durable writes: the one fsync of a file, of a directory, and the one atomic write ----


def fsync_file(path: str | os.PathLike[str], *, missing_ok: bool = False) -> None:
    """Make the bytes of the file ``path`` durable (``missing_ok``: a file that is gone, e.g.
    a WAL a checkpoint removed, has nothing to sync)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make the names in the directory ``path`` durable (after a create, link or rename)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``, then fsync it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` by ``data`` so that a reader, or a crash, sees the old file or the
    whole new one: a temporary file beside it (``.NAME.tmp``), fsync, rename over ``path``,
    fsync of the directory.  One writer per path; a temporary file a killed writer left is
    overwritten by the next write.  A new file is 0600; a file replaced keeps its mode.
    OSError is the caller's to translate."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    mode = _existing_mode(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        try:
            os.fchmod(fd, PRIVATE_FILE if mode is None else mode)
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_once(path: Path, data: bytes) -> bool:
    """Publish ``data`` at ``path`` atomically and never over different bytes.

    The bytes go to a temporary file beside ``path`` (fsynced), which is then hard-linked to
    ``path`` -- the link fails if ``path`` exists, so two writers cannot both win -- and the
    directory is fsynced.  Returns True when written, False when ``path`` already holds exactly
    ``data``; raises :class:`Conflict` (exit 4) when it holds anything else, and
    :class:`StoreError` naming the OS's reason when it cannot be written.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")

    def refuse() -> Conflict:
        return Conflict(
            f"{path}: already holds a different receipt; it is never overwritten: name a new "
            "file (nothing was written there)",
            path=str(path),
        )

    def same() -> bool:
        try:
            return path.read_bytes() == data
        except OSError as exc:
            raise cannot_read(path, exc) from exc

    refuse_special_output(path)
    if os.path.lexists(path):
        if same():
            return False
        raise refuse()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise StoreError(f"{path}: cannot write: {exc.strerror or exc}", path=str(path)) from exc
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            if same():
                return False
            raise refuse() from None
        except OSError:  # a file system without hard links: check, then rename
            if os.path.lexists(path):
                raise refuse() from None
            os.replace(tmp, path)
    except OSError as exc:
        raise StoreError(f"{path}: cannot write: {exc.strerror or exc}", path=str(path)) from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    fsync_dir(parent)
    return True
