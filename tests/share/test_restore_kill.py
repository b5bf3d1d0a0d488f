"""kill -9 of ``restore`` into a new SQLite store, then the same command again: the rerun
finishes the job (exit 0) wherever the kill landed -- while the snapshot is read, and before
each file operation of the publication, including after the rename that published the store
(the rerun then finds DEST holding exactly this snapshot's store and says so, writing
nothing) -- and DEST ends as the snapshot's store, no temporary left (issue 28)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.share.conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.engine("sqlite")]


def _without_time(snapshot: bytes) -> list[bytes]:
    lines = snapshot.splitlines()
    return lines[:1] + lines[2:]


def _finished(dest: Path, snap: bytes, tmp_path: Path) -> None:
    again = run_cli("--store", str(dest), "restore", "-", stdin=snap)
    assert again.returncode == 0, again.stderr
    now = run_cli("--store", str(dest), "snapshot")
    assert now.returncode == 0, now.stderr
    assert _without_time(now.stdout) == _without_time(snap)
    assert not [x for x in os.listdir(tmp_path) if x.startswith(f".{dest.name}.")]


def test_a_rerun_after_a_kill_during_the_publication_finishes(
    cell_store: Path, tmp_path: Path
) -> None:
    snap = run_cli("--store", str(cell_store), "snapshot").stdout
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = 0
    for n in range(1, 60):
        dest = tmp_path / f"d{n}"
        done = subprocess.run(
            [sys.executable, "-m", "tests.kill_runner", f"share-op:{n}", "--store", str(dest),
             "restore", "-"], input=snap, capture_output=True, env=env, cwd=ROOT, timeout=300,
        )  # fmt: skip
        assert b"Traceback" not in done.stderr, done.stderr
        if done.returncode == 0:
            break
        assert done.returncode == -signal.SIGKILL, done.stderr
        killed += 1
        _finished(dest, snap, tmp_path)
    else:
        pytest.fail("restore never finished")
    assert killed >= 2  # the publication's rename and the fsync after it at least


def test_a_rerun_after_a_kill_while_the_snapshot_is_read_finishes(
    cell_store: Path, tmp_path: Path
) -> None:
    snap = run_cli("--store", str(cell_store), "snapshot").stdout
    dest = tmp_path / "mid"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "--store", str(dest), "restore", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(snap[: len(snap) // 2])  # half the snapshot: the load is under way
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    while not [x for x in os.listdir(tmp_path) if x.startswith(".mid.restore-")]:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=60)
    proc.stdin.close()
    assert not dest.exists()
    _finished(dest, snap, tmp_path)
