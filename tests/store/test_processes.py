"""Several processes on one store: racing commits, and kill -9 of a writer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.rules.links import validate_links
from migrate.store import Head, archive_digest, open_store
from tests.conftest import ROOT
from tests.store.helpers import birth


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store._child", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(path: Path, proc: subprocess.Popen[str] | None = None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"child exited early: {proc.stderr.read() if proc.stderr else ''}")
        assert time.monotonic() < deadline, f"timeout waiting for {path}"
        time.sleep(0.005)


@pytest.mark.engine("sqlite")  # SQLite's multi-writer concurrency: both processes hold handles
def test_two_processes_race_one_namespace(tmp_path: Path) -> None:
    store_dir = tmp_path / "bbg"
    with open_store(store_dir, create=True) as st:
        birth("race").apply(st)
    rounds = 8
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = [_spawn("race", str(store_dir), tag, str(rounds), str(sync)) for tag in ("p", "q")]
    try:
        for r in range(rounds):
            for tag in ("p", "q"):
                _wait(sync / f"ready-{r}-{tag}", procs[0] if tag == "p" else procs[1])
            (sync / f"go-{r}").touch()
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    results = [[json.loads(line) for line in out.splitlines()] for out, _ in outs]
    for r in range(rounds):
        won = [res[r]["won"] for res in results]
        assert sorted(won) == [False, True], (r, won)  # exactly one winner per round
    with open_store(store_dir) as st:
        head = st.head(birth("race").namespace)
        assert head is not None and head.index == rounds
        with st.snapshot() as live:
            assert validate_links(live) == []


@pytest.mark.engine("sqlite")  # SQLite's multi-writer concurrency: both processes hold handles
def test_commit_once_double_use_by_two_processes_has_one_winner(tmp_path: Path) -> None:
    """Two processes send the same request with commit_once at the same moment, round after
    round: exactly one gets the head, the other a Conflict (never two effects)."""
    store_dir = tmp_path / "bbg"
    with open_store(store_dir, create=True) as st:
        birth("once").apply(st)
    rounds = 6
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = [_spawn("once", str(store_dir), tag, str(rounds), str(sync)) for tag in ("p", "q")]
    try:
        for r in range(rounds):
            for tag, proc in zip(("p", "q"), procs, strict=True):
                _wait(sync / f"ready-{r}-{tag}", proc)
            (sync / f"go-{r}").touch()
            for tag, proc in zip(("p", "q"), procs, strict=True):
                _wait(sync / f"done-{r}-{tag}", proc)
            (sync / f"next-{r}").touch()
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    results = [[json.loads(line) for line in out.splitlines()] for out, _ in outs]
    for r in range(rounds):
        assert sorted(res[r]["won"] for res in results) == [False, True], r
    with open_store(store_dir) as st:
        head = st.head(birth("once").namespace)
        assert head is not None and head.index == rounds
        with st.snapshot() as live:
            assert validate_links(live) == []


@pytest.mark.engine("fjall")
def test_fjall_processes_take_turns_and_the_same_request_wins_once(tmp_path: Path) -> None:
    """On the real database one process writes at a time (bbg.lock): while a handle is open
    another writer is refused with Locked after its busy timeout, or waits for its turn.
    Two waiting processes sending the same request with commit_once, one after the other:
    exactly one gets the head, the other a Conflict (never two effects)."""
    store_dir = tmp_path / "bbg"
    holder = open_store(store_dir, create=True)
    try:
        birth("race").apply(holder)
        refused = _spawn("turn", str(store_dir), "0.2")
        out, err = refused.communicate(timeout=60)
        assert refused.returncode == 0, err
        doc = json.loads(out)
        assert doc["locked"] and f"pid {os.getpid()}" in doc["message"], doc
        waiting = [_spawn("turn", str(store_dir), "60") for _ in range(2)]
        time.sleep(0.5)
        assert [p.poll() for p in waiting] == [None, None]  # both wait for their turn
        assert holder.head(birth("race").namespace) == birth("race").new_head
    finally:
        holder.close()
    outs = []
    for p in waiting:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    assert sorted(o["won"] for o in outs) == [False, True], outs
    assert [o["index"] for o in outs] == [1, 1]
    with open_store(store_dir) as st:
        head = st.head(birth("race").namespace)
        assert head is not None and head.index == 1
        with st.snapshot() as live:
            assert validate_links(live) == []


@pytest.mark.slow
def test_kill_9_mid_transaction_leaves_last_committed_state(tmp_path: Path) -> None:
    store_dir = tmp_path / "bbg"
    base = birth("base")
    with open_store(store_dir, create=True) as st:
        base.apply(st)
        with st.snapshot() as live:
            before = archive_digest(live)
        last_tx = st.info()["last_transaction"]
    ready = tmp_path / "ready"
    proc = _spawn("hold", str(store_dir), str(ready))
    try:
        _wait(ready, proc)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    with open_store(store_dir) as st:
        with st.snapshot() as live:
            assert archive_digest(live) == before
            assert validate_links(live) == []
        assert st.info()["last_transaction"] == last_tx
        assert st.head(base.namespace) == base.new_head
        # The store is writable again: the dead writer's lock is gone.
        from tests.store.helpers import follow

        assert follow(base, base.namespace, 1).apply(st).index == 1


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.2, 0.5])
def test_kill_9_of_busy_writer_keeps_every_acknowledged_commit(
    tmp_path: Path, delay: float
) -> None:
    store_dir = tmp_path / "bbg"
    open_store(store_dir, create=True).close()
    proc = _spawn("writer", str(store_dir))
    try:
        assert proc.stdout is not None
        # Kill only once it is busy committing, whatever the machine's load.
        first = "".join(proc.stdout.readline() for _ in range(5))
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    rest, err = proc.communicate()
    out = first + rest
    *complete, torn = out.split("\n")  # the kill may cut the last line short
    assert complete, err
    index, commit = complete[-1].split()
    last = Head(int(index), bytes.fromhex(commit))
    acked_index = last.index + (1 if torn else 0)  # a torn line's commit had returned too
    with open_store(store_dir) as st:
        ns = birth("writer").namespace
        head = st.head(ns)
        assert head is not None
        # Every acknowledged commit is there; at most one more (committed, reply not printed).
        assert head.index in (acked_index, acked_index + 1)
        page = st.history(ns, after=last.index - 1 if last.index else None, limit=1)
        assert page == [last]
        with st.snapshot() as live:
            assert validate_links(live) == []
