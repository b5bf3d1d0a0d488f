"""File-system observations for "writes nothing" tests, and read-only media.

:func:`fs_state` records every directory entry under some roots -- the roots themselves
included -- with its type, size and mtime (and the SHA-256 of regular files), so a file that
was created and removed again still shows (its directory's mtime moved), and so does a file
rewritten with the same bytes.  :func:`readonly_mount` runs a command with a directory bind
mounted read-only in a private mount namespace (``unshare -m``), where even root cannot
write; tests skip when the sandbox does not allow it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

Entry = tuple[str, int, int, str]


def fs_state(*roots: Path) -> dict[str, Entry]:
    """path -> (type, size, mtime_ns, sha256 or "") for every entry under ``roots``."""
    out: dict[str, Entry] = {}

    def record(p: Path) -> None:
        st = p.lstat()
        kind = stat.S_IFMT(st.st_mode)
        digest = ""
        if stat.S_ISREG(st.st_mode):
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
        elif stat.S_ISLNK(st.st_mode):
            digest = os.readlink(p)
        size = st.st_size if not stat.S_ISDIR(st.st_mode) else 0
        out[str(p)] = (oct(kind), size, st.st_mtime_ns, digest)

    for root in roots:
        if not root.exists():
            out[str(root)] = ("absent", 0, 0, "")
            continue
        record(root)
        for dirpath, dirnames, filenames in os.walk(root):
            for name in sorted(dirnames + filenames):
                record(Path(dirpath) / name)
    return out


def chmod_readonly(root: Path) -> None:
    """Take away every write bit under ``root`` (root, as the superuser, still can write:
    the tests then rely on :func:`fs_state`)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o444)
        os.chmod(dirpath, 0o555)


def chmod_writable(root: Path) -> None:
    """Undo :func:`chmod_readonly` (so pytest can clean up)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o644)


@functools.cache
def _can_bind_readonly() -> str | None:
    """None when read-only bind mounts work here, else why not."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return "read-only bind mounts need Linux and unshare(1)"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind -o ro / / 2>&1 || mount -o remount,bind,ro /"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"cannot bind-mount read-only here: {probe.stdout.strip()}{probe.stderr.strip()}"
    return None


def readonly_mount(
    directory: Path, mountpoint: Path, argv: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` with ``directory`` bind-mounted read-only at ``mountpoint`` (private)."""
    why = _can_bind_readonly()
    if why is not None:
        pytest.skip(why)
    mountpoint.mkdir(parents=True, exist_ok=True)
    script = (
        'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"'
    )
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(directory), str(mountpoint), *argv],
        capture_output=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def untouched_but_scratch(before: dict[str, Entry], after: dict[str, Entry], tmp: Path) -> None:
    """Assert ``after == before`` (two :func:`fs_state` results), except that the
    pure-Python redb reader, which has no point lookups, spills the link checks' index to a
    scratch directory in ``tmp`` (TMPDIR) and removes it: there only the directory's own
    mtime may change, and nothing may be left in it."""
    if os.environ.get("BBG_MIGRATE_PURE") == "1":
        before, after = dict(before), dict(after)
        before.pop(str(tmp), None)
        after.pop(str(tmp), None)
    assert after == before
