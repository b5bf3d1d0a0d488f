"""Special files are refused at once, never read.

A FIFO used to block ``detect``/``inspect``/``run`` forever (the open waits for a writer), and
``/dev/zero`` named with ``--kind signal-log`` was read forever.  Sources are opened with
``O_NONBLOCK`` and must be regular files; every read of a source is bounded by the size
taken when it was sealed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bbg_core.errors import SourceError
from bbg_core.files import file_sha256, open_regular
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}
    # A hang fails the test (TimeoutExpired); it is not a timing assertion.
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, env=env,
        cwd=cwd, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "cell.redb"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("detect", "{src}"),
        ("inspect", "{src}"),
        ("inspect", "{src}", "--kind", "signal-log"),
        ("run", "{src}", "--store", "{store}"),
        ("run", "{src}", "--store", "{store}", "--kind", "text-archive"),
        ("plan", "{src}", "--store", "{store}"),
        ("seal", "{src}", "--store", "{store}"),
    ],
)
def test_a_fifo_is_refused_not_waited_on(fifo: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    argv = [a.format(src=fifo, store=tmp_path / "bbg") for a in args]
    done = _cli(*argv, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "named pipe (FIFO), not a regular file" in done.stderr
    assert not (tmp_path / "bbg").exists()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize(
    "args",
    [
        ("inspect", "/dev/zero", "--kind", "signal-log"),
        ("run", "/dev/zero", "--kind", "signal-log", "--store", "{store}"),
        ("detect", "/dev/zero"),
    ],
)
def test_a_device_is_refused_not_read_forever(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _cli(*[a.format(store=tmp_path / "bbg") for a in args], cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "character device, not a regular file" in done.stderr


def test_open_regular_names_what_it_refuses(fifo: Path, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="named pipe"):
        open_regular(fifo)
    with pytest.raises(SourceError, match="directory"):
        open_regular(tmp_path)
    # The one rule for inputs that cannot be read: the path, "cannot read", the OS's reason.
    with pytest.raises(SourceError, match="absent: cannot read: No such file or directory"):
        open_regular(tmp_path / "absent")


def test_reads_are_bounded_by_the_sealed_size(tmp_path: Path) -> None:
    path = tmp_path / "grows.log"
    path.write_bytes(b"a" * 1000)
    with path.open("ab") as fh:
        fh.write(b"b" * 500)  # appended after the size was taken
    assert file_sha256(path, size=1000) == hashlib.sha256(b"a" * 1000).hexdigest()
    assert file_sha256(path) == hashlib.sha256(b"a" * 1000 + b"b" * 500).hexdigest()
