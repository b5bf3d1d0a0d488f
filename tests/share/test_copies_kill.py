"""kill -9 during ``restore`` into a new Fjall store and during a Fjall store's ``backup``:
the destination is unchanged (absent) or complete after the kill, never half there, and
the same command run again finishes (when the kill came after publication: ``restore`` finds
the complete store is this snapshot's and reports it, ``backup`` refuses to overwrite the
complete copy); only directories marked as ours are ever left, and the rerun
removes them.

Kills land before the N-th file operation of the keyspace's build and of the publication
(``tests.kill_runner share-op:N``), over a spread of N up to the last operation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bbg_core.files import OWNER_MARK
from migrate.store.engine import FJALL, records_dir
from tests.conftest import ROOT
from tests.share.conftest import run_cli
from tests.share.fjall_stores import retained
from tests.support import stores

pytestmark = [pytest.mark.slow, pytest.mark.engine(FJALL)]


def _killed_at(n: int, args: list[str], stdin: bytes | None) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tests.kill_runner", f"share-op:{n}", *args],
                          input=stdin, capture_output=True, env=env, cwd=ROOT,
                          timeout=300)  # fmt: skip
    assert b"Traceback" not in done.stderr, done.stderr
    return done.returncode


def _points() -> list[int]:
    out, a, b = [], 1, 2
    while a < 4000:
        out.append(a)
        a, b = b, a + b
    return out


def _check_after_kill(dest: Path, source: Path) -> bool:
    """True when ``dest`` is complete; else it must be absent (no half store)."""
    records = records_dir(dest)
    if stores.engine_of(dest) is None:
        assert not os.path.lexists(dest) or not os.listdir(dest)
        # records published before the keyspace still carry our mark: the rerun removes them
        assert not records.exists() or (records / OWNER_MARK).exists()
        return False
    assert records.exists() == records_dir(source).exists()
    assert retained(dest) == retained(source)
    return True


def _sweep(command: str, source: Path, tmp_path: Path, snap: bytes | None) -> None:
    def args(dest: Path) -> list[str]:
        if command == "restore":
            return ["--store", str(dest), "restore", "-"]
        return ["--store", str(source), "backup", str(dest)]

    def killed_then_rerun(n: int, name: str) -> bool:
        """Kill at ``n``; check the destination and the rerun; False if it was not killed."""
        dest = tmp_path / f"{name}{n}"
        rc = _killed_at(n, args(dest), snap)
        if rc == 0:
            return False
        assert rc == -9, rc
        complete = _check_after_kill(dest, source)
        again = run_cli(*args(dest), stdin=snap)
        # the rerun finishes: a restore finds the complete store is this snapshot's (exit 0);
        # a backup refuses to overwrite the complete copy
        assert again.returncode == (2 if complete and command == "backup" else 0), again.stderr
        assert _check_after_kill(dest, source)
        assert not [x for x in os.listdir(tmp_path) if x.startswith(f".{name}{n}.")]
        return True

    low = 0
    for n in _points():  # a spread over the build
        if not killed_then_rerun(n, "d"):
            high = n
            break
        low = n
    else:
        pytest.fail("the command never finished")
    while high - low > 1:  # the first operation count that is not killed: every op done
        mid = (low + high) // 2
        if killed_then_rerun(mid, "b"):
            low = mid
        else:
            high = mid
    for n in range(max(1, low - 11), low + 1):  # the last operations: the publication
        assert killed_then_rerun(n, "p")


def test_kill_during_a_restore_into_fjall(fjall_migrated: Path, tmp_path: Path) -> None:
    snap = run_cli("--store", str(fjall_migrated), "snapshot")
    assert snap.returncode == 0
    _sweep("restore", fjall_migrated, tmp_path, snap.stdout)


def test_kill_during_a_backup_of_a_fjall_store(fjall_migrated: Path, tmp_path: Path) -> None:
    _sweep("backup", fjall_migrated, tmp_path, None)
