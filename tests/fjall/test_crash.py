"""kill -9 at every file operation of a bulk build, a publication and a run of batch
appends (``tests/fjall/crash_runner.py``): the directory then reads exactly as before the
write or as after it -- never in between -- and the next write goes through."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bbg_core.errors import SourceError
from migrate.store.fjall import open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.writer import append_batch, build_keyspace
from tests.conftest import ROOT
from tests.fjall import crash_runner

pytestmark = pytest.mark.slow


def _state(path: Path) -> str:
    """A digest of everything a reader sees (partitions and their rows), or "absent"."""
    try:
        ks = open_keyspace(path)
    except SourceError:
        return "absent"
    h = hashlib.sha256()
    with ks:
        for name in ks.partitions():
            h.update(b"\x00partition " + name.encode())
            for key, value in ks.scan(name):
                h.update(len(key).to_bytes(4, "big") + key + len(value).to_bytes(4, "big") + value)
        doc = fjreport.check(ks)
        assert doc["ok"], doc["problems"]
    return h.hexdigest()


def _run(op: str, target: Path, n: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.fjall.crash_runner", op, str(target), str(n)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def _base(tmp_path: Path) -> Path:
    base = tmp_path / "base"
    build_keyspace(base, {"p": crash_runner.rows(b"a", 1500), "q": [(b"n0", b"old")]})
    return base


@pytest.mark.parametrize("op", ["build", "publish", "append"])
def test_a_killed_write_leaves_before_or_after(op: str, tmp_path: Path) -> None:
    work = tmp_path / "work" / "ks"
    base = None if op == "build" else _base(tmp_path)

    def fresh() -> None:
        if work.parent.exists():
            shutil.rmtree(work.parent)
        work.parent.mkdir()
        if base is not None:
            shutil.copytree(base, work)

    fresh()
    before = _state(work)
    full = _run(op, work, 0)
    assert full.returncode == 0, full.stderr
    total = int(full.stdout.split()[-1])
    after = _state(work)
    assert after != before and total > 10
    prefixes = {before, after}
    if op == "append":  # every prefix of the five batches is a state between two writes
        fresh()
        for batch in crash_runner.BATCHES:
            append_batch(work, batch)
            prefixes.add(_state(work))
    killed = 0
    for n in range(1, total + 1):
        fresh()
        res = _run(op, work, n)
        assert res.returncode in (0, -signal.SIGKILL), res.stderr
        killed += res.returncode == -signal.SIGKILL
        got = _state(work)
        assert got in prefixes, f"{op}: killed at file operation {n} of {total}: in between"
        # and the same write goes through afterwards
        if n % 7 == 0 and op != "append":
            if op == "build" and got == "absent":
                build_keyspace(work, {"p": crash_runner.rows(b"a", 1500),
                                      "q": crash_runner.rows(b"q", 40), "e": []})  # fmt: skip
                assert not [p for p in work.parent.iterdir() if p.name != "ks"]
            elif op == "publish":
                again = _run(op, work, 0)
                assert again.returncode == 0, again.stderr
    assert killed == total
