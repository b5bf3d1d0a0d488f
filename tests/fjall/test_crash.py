"""kill -9 at every file operation of a bulk build, a publication, a run of batch appends,
a flush and a writer session (``tests/fjall/crash_runner.py``): the directory then reads
exactly as before the write or as after it -- never in between -- and the next write goes
through.  A flush changes no row: a killed flush reads exactly as before, and running it
again completes it.  With ``BBG_FJALL_ORACLE`` set, the real crate reads every killed
flush's directory as we do."""

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
from migrate.store.fjall.report import dump_lines
from migrate.store.fjall.session import append_batch, open_writer
from migrate.store.fjall.writer import build_keyspace
from tests.conftest import ROOT
from tests.fjall import crash_runner
from tests.fjall.test_oracle import oracle_dump, oracle_or_skip

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


def _journal_base(tmp_path: Path) -> Path:
    """The base keyspace plus the five batches, written with the runner's small journals:
    sealed journals and an active one, rows of ``p`` and ``q`` in each."""
    base = _base(tmp_path)
    res = _run("append", base, 0)
    assert res.returncode == 0, res.stderr
    with open_keyspace(base) as ks:
        roles = [j.role for j in ks.journals]
        assert roles.count("sealed") >= 2 and roles[-1] == "active"
    return base


def _fresh(base: Path, work: Path) -> None:
    if work.parent.exists():
        shutil.rmtree(work.parent)
    work.parent.mkdir()
    shutil.copytree(base, work)


def _flushed(path: Path) -> bool:
    with open_keyspace(path) as ks:
        return len(ks.journals) == 1 and not any(ks.view(n).journal for n in ks.partitions())


def test_a_killed_flush_reads_as_before_and_completes(tmp_path: Path) -> None:
    base = _journal_base(tmp_path)
    work = tmp_path / "work" / "ks"
    _fresh(base, work)
    before = _state(work)
    full = _run("flush", work, 0)
    assert full.returncode == 0, full.stderr
    total = int(full.stdout.split()[-1])
    assert _state(work) == before and _flushed(work) and total > 10
    for n in range(1, total + 1):
        _fresh(base, work)
        res = _run("flush", work, n)
        assert res.returncode == -signal.SIGKILL, res.stderr
        assert _state(work) == before, f"flush killed at file operation {n} of {total}"
        again = _run("flush", work, 0)
        assert again.returncode == 0, again.stderr
        assert _state(work) == before and _flushed(work), n


def test_the_real_crate_reads_every_killed_flush(tmp_path: Path) -> None:
    oracle = oracle_or_skip()
    base = _journal_base(tmp_path)
    work = tmp_path / "work" / "ks"
    _fresh(base, work)
    full = _run("flush", work, 0)
    total = int(full.stdout.split()[-1])
    for n in range(1, total + 1):
        _fresh(base, work)
        assert _run("flush", work, n).returncode == -signal.SIGKILL
        with open_keyspace(work) as ks:
            ours = "".join(line + "\n" for line in dump_lines(ks))
        assert oracle_dump(oracle, work, tmp_path / "oracle") == ours, n


def test_a_killed_writer_session_leaves_a_state_between_two_steps(tmp_path: Path) -> None:
    base = _base(tmp_path)
    work = tmp_path / "work" / "ks"
    _fresh(base, work)
    states = [_state(work)]
    with open_writer(work) as session:
        for batch in crash_runner.BATCHES:
            session.append(batch)
            states.append(_state(work))
        for step in crash_runner.SESSION:
            crash_runner.run_session(session, step)
            states.append(_state(work))
    assert len(set(states)) >= 8
    _fresh(base, work)
    full = _run("session", work, 0)
    assert full.returncode == 0, full.stderr
    total = int(full.stdout.split()[-1])
    assert _state(work) == states[-1] and total > 40
    for n in range(1, total + 1):
        _fresh(base, work)
        res = _run("session", work, n)
        assert res.returncode == -signal.SIGKILL, res.stderr
        got = _state(work)
        assert got in states, f"session killed at file operation {n} of {total}: in between"
        if n % 5 == 0:  # the next writer session goes on from there
            again = _run("flush", work, 0)
            assert again.returncode == 0, again.stderr
            assert _state(work) == got and _flushed(work)


def test_the_real_crate_reads_every_killed_session(tmp_path: Path) -> None:
    oracle = oracle_or_skip()
    base = _base(tmp_path)
    work = tmp_path / "work" / "ks"
    _fresh(base, work)
    total = int(_run("session", work, 0).stdout.split()[-1])
    for n in range(1, total + 1):
        _fresh(base, work)
        assert _run("session", work, n).returncode == -signal.SIGKILL
        with open_keyspace(work) as ks:
            ours = "".join(line + "\n" for line in dump_lines(ks))
        assert oracle_dump(oracle, work, tmp_path / "oracle") == ours, n
