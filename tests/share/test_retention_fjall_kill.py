"""kill -9 during ``excise`` of a Fjall store's content, at a spread of points of its
rewrite (``tests.kill_runner rewrite-op:N``: before the N-th file operation of the build
aside, the lock, the exchange and the moment after it): the store path holds the old
keyspace or the new one, never neither; the same command run again exits 0 and leaves the
store as an unkilled run does, the excised bytes gone from every file and nothing of ours
left beside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate import api
from migrate.store.codec import CONTENT
from migrate.store.engine import FJALL, records_dir
from tests.conftest import ROOT
from tests.share.conftest import run_cli
from tests.share.test_retention_fjall import PAYLOAD, PAYLOAD_ID, present, raw_bytes
from tests.support import stores

pytestmark = [pytest.mark.slow, pytest.mark.engine(FJALL)]


def _store(fjall_migrated: Path, dest: Path) -> Path:
    shutil.copytree(fjall_migrated, dest)
    shutil.copytree(records_dir(fjall_migrated), records_dir(dest))
    api.fjall_append(dest, [(CONTENT, PAYLOAD_ID, PAYLOAD)])
    return dest


def _partitions(store: Path) -> dict[str, object]:
    return {t: rows for t, rows in stores.dump(store).items() if t.startswith("fjall:")}


ARGS = ["excise", "--content", PAYLOAD_ID.hex(), "--yes"]


def test_excise_killed_during_the_rewrite_then_rerun_finishes(
    fjall_migrated: Path, tmp_path: Path
) -> None:
    reference = _store(fjall_migrated, tmp_path / "ref" / "bbg")
    before = _partitions(reference)
    done = run_cli("--store", str(reference), *ARGS)
    assert done.returncode == 0, done.stderr
    after = _partitions(reference)
    assert after != before
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def killed_at(n: int) -> bool:
        """Kill at ``n`` and check; False when the run was not killed (``n`` is past the end)."""
        store = _store(fjall_migrated, tmp_path / f"k{n}" / "bbg")
        proc = subprocess.run(
            [sys.executable, "-m", "tests.kill_runner", f"rewrite-op:{n}", "--store",
             str(store), *ARGS], capture_output=True, env=env, cwd=ROOT, timeout=300,
        )  # fmt: skip
        assert b"Traceback" not in proc.stderr, proc.stderr
        if proc.returncode == 0:
            return False
        assert proc.returncode == -9, proc.stderr
        assert _partitions(store) in (before, after), n  # old or new, never neither
        again = run_cli("--store", str(store), *ARGS)
        assert again.returncode == 0, (n, again.stderr)
        assert _partitions(store) == after
        assert not present(PAYLOAD, raw_bytes(store))
        assert sorted(os.listdir(store.parent)) == ["bbg", "bbg.bbg-migrate"]
        return True

    last, n, step = 0, 1, 1
    while killed_at(n):  # denser at the start, then spreading out
        last, n, step = n, n + step, step + 1
    while n - last > 1:  # the last operation (the moment after the exchange), found exactly
        mid = (last + n) // 2
        last, n = (mid, n) if killed_at(mid) else (last, mid)
    assert last >= 10, last
    assert last - 1 == 0 or killed_at(last - 1)  # the exchange itself
