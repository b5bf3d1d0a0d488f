"""Two processes running one import into one store at once serialise on the store's run lock.

Two content-identical sources at different paths are the same import (the import id is a
function of the bytes).  Without a whole-run lock the second run interleaved with the first
page by page, activated the import, and the first then failed with "import ... is active, not
staging" (found by the fleet work, about one concurrent run in six).  Here the first run is
paused half-way through staging (``tests.kill_runner pause:``) while the second runs: both
must succeed and print the same receipt.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.store.engine import default_engine
from tests.pipeline.helpers import cell_fixtures, cli, expected, unpack
from tests.support.stores import live_digest

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")
ROOT = Path(__file__).resolve().parents[2]


def _paused_run(args: list[str], commit: int, seconds: float, flag: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "tests.kill_runner", f"pause:{commit}:{seconds}:{flag}", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["new-store", "existing-store"])
def test_two_runs_of_one_import_into_one_store_both_finish(tmp_path: Path, existing: bool) -> None:
    a = unpack(SMALL, tmp_path / "a")
    b = tmp_path / "b" / "cell.redb"
    b.parent.mkdir()
    shutil.copyfile(a, b)  # the same bytes at another path: the same import
    store = tmp_path / "bbg"
    if existing:  # a store that already holds another import
        other = unpack(next(p for p in cell_fixtures() if p.name == "cell-birth-mismatch.redb.gz"),
                       tmp_path / "other")  # fmt: skip
        assert cli("run", str(other), "--store", str(store)).returncode == 0
    flag = tmp_path / "paused"
    args = ["run", "--json", "--page-rows", "8", "--store", str(store)]
    # A commit point in the middle of the run: a new Fjall store is built aside in one pass
    # (8 commit points), a SQLite store or an existing database takes a transaction a page.
    middle = 4 if not existing and default_engine() == "fjall" else 12
    first = _paused_run([*args, str(a)], commit=middle, seconds=3.0, flag=flag)
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        second = cli(*args, str(b))
    finally:
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 0, second.stderr
    assert json.loads(out) == json.loads(second.stdout)
    if not existing:
        assert live_digest(store) == expected(SMALL)["archive_digest_sha256"]
