"""``tail --follow`` on a Fjall store written by another process (which holds ``bbg.lock``):
every batch once, through journal rotations and flushes, and a killed follower resumes
exactly after its file's last event.  And the follow file's binding to its store (both
engines): a file of another store, or a store put back from a backup, is refused."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bbg_core.errors import UsageError
from migrate import api
from migrate.share.common import canonical
from migrate.share.follow import follow, follow_into
from migrate.share.follow_bind import sidecar
from tests.conftest import ROOT
from tests.procs import holds_open, wait_until
from tests.share.helpers import check_event_lines
from tests.share.stores import graph_store
from tests.share.test_tail_fjall import fjall_graph, tail_bytes

# The writer: holds bbg.lock for its whole life (a session, as bbg's owner), appends BATCHES
# batches (one content row and one claim each), flushing -- a journal rotation -- after every
# FLUSH_EVERY of them.
WRITER = """
import sys, time
from migrate import api
path, n, every, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
with api.fjall_writer(path) as w:
    print("locked", flush=True)
    for i in range(n):
        key = i.to_bytes(4, "big") * 8
        w.append([("application_content", key, bytes([1]) + b"late" + key),
                  ("application_unique_claims", bytes([9]) + key[1:], key)])
        if every and (i + 1) % every == 0:
            w.flush()
        time.sleep(pause)
"""


def _writer(store: Path, batches: int, every: int, pause: float = 0.01
            ) -> subprocess.Popen[str]:  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(store), str(batches), str(every),
                             str(pause)], stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.engine("fjall")
def test_follow_sees_every_batch_once_through_flushes(tmp_path: Path) -> None:
    store = fjall_graph(tmp_path / "g")
    initial = check_event_lines(tail_bytes(store))
    stream = follow(store, poll=0.01)
    seen = [next(stream)]
    writer = _writer(store, 30, 7)
    deadline = time.monotonic() + 120
    try:
        for event in stream:
            seen.append(event)
            if sum(1 for e in seen if e["tx"] > initial[-1]["tx"]) == 60:
                break
            assert time.monotonic() < deadline, "follow did not see the writer's batches"
    finally:
        stream.close()
    writer.communicate(timeout=60)
    assert writer.returncode == 0
    assert b"".join(canonical(e) for e in seen) == tail_bytes(store)
    new = [e["tx"] for e in seen[len(initial):]]
    assert new == sorted(new) and len(set(new)) == 30


@pytest.mark.slow
@pytest.mark.engine("fjall")
def test_a_killed_follower_resumes_exactly(tmp_path: Path) -> None:
    store = fjall_graph(tmp_path / "g")
    out = tmp_path / "audit.ndjson"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "migrate", "--store", str(store), "tail", "--follow",
           "--output", str(out), "--poll", "0.01"]  # fmt: skip
    writer = _writer(store, 60, 9, 0.1)
    kills = 0
    sizes = []
    try:
        while writer.poll() is None or kills < 2:
            follower = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
            time.sleep(1.5 + 0.2 * kills)
            follower.send_signal(signal.SIGKILL)  # at any point, maybe mid-line
            follower.wait(timeout=60)
            sizes.append(out.stat().st_size if out.exists() else 0)
            kills += 1
            assert kills < 40
    finally:
        writer.communicate(timeout=60)
    assert writer.returncode == 0
    # faulthandler: a follower that does not stop at Ctrl-C is made to print every thread's
    # stack (SIGABRT), so that a failure says where it was.
    stderr = tmp_path / "final.stderr"
    with open(stderr, "wb") as err:
        final = subprocess.Popen(cmd, env={**env, "PYTHONFAULTHANDLER": "1"}, stderr=err)
    try:
        expected = tail_bytes(store)
        deadline = time.monotonic() + 60
        while (out.read_bytes() if out.exists() else b"") != expected:
            assert time.monotonic() < deadline, "the resumed follower did not catch up"
            time.sleep(0.1)
        # The killed followers may have written everything already: wait until this one is
        # following (its output open), past start-up -- a child of a background job starts
        # with SIGINT ignored until the command installs its handler (CI runs so).
        wait_until("the final follower opens its output", lambda: holds_open(final.pid, out))
        final.send_signal(signal.SIGINT)
        try:
            assert final.wait(timeout=90) == 130
        except subprocess.TimeoutExpired:
            final.send_signal(signal.SIGABRT)
            final.wait(timeout=30)
            raise AssertionError("the follower did not stop at Ctrl-C:\n"
                                 + stderr.read_text(errors="replace")) from None  # fmt: skip
    finally:
        if final.poll() is None:
            final.kill()
            final.wait()
    assert out.read_bytes() == expected  # every event once, in order
    # the killed followers wrote, and resumed, while the writer was still writing
    assert len({n for n in sizes if 0 < n < len(expected)}) >= 2, sizes


def _follow_once(store: Path, out: Path) -> None:
    follow_into(store, out, poll=0.01, stop=lambda: True)


@pytest.mark.parametrize("engine", ["sqlite", "fjall"])
def test_the_follow_file_is_bound_to_its_store(tmp_path: Path, engine: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from migrate.store.engine import ENGINE_ENV

    monkeypatch.setenv(ENGINE_ENV, engine)
    build = graph_store if engine == "sqlite" else fjall_graph
    store = build(tmp_path / "a")
    backup = tmp_path / "a-backup"
    shutil.copytree(store, backup)
    if engine == "fjall":
        shutil.copytree(f"{store}.bbg-migrate", f"{backup}.bbg-migrate")
    other = build(tmp_path / "b")
    out = tmp_path / "audit.ndjson"
    _follow_once(store, out)
    assert out.read_bytes() == tail_bytes(store) and sidecar(out).exists()
    _follow_once(store, out)  # the same store: resumes, nothing repeated
    assert out.read_bytes() == tail_bytes(store)
    # another store (the same history, another store id) is refused, naming both
    with pytest.raises(UsageError, match="not of") as refused:
        _follow_once(other, out)
    assert str(other) in refused.value.message
    # more writes, then the backup put in place of the store: the file's last event is gone
    _more(store, engine)
    _follow_once(store, out)
    grown = out.read_bytes()
    assert grown == tail_bytes(store)
    shutil.rmtree(store)
    shutil.copytree(backup, store)
    if engine == "fjall":
        shutil.rmtree(f"{store}.bbg-migrate")
        shutil.copytree(f"{backup}.bbg-migrate", f"{store}.bbg-migrate")
    with pytest.raises(UsageError, match="is not what") as replaced:
        _follow_once(store, out)
    assert "no such event" in replaced.value.message
    assert out.read_bytes() == grown  # nothing appended


def _more(store: Path, engine: str) -> None:
    from migrate.store import open_store
    from tests.share.stores import birth

    with open_store(store) as handle:
        birth("more").apply(handle)


@pytest.mark.engine("fjall")
def test_a_follow_file_ending_in_a_moved_generation_event_resumes(tmp_path: Path) -> None:
    """A Fjall stream often ends with the generation event of the status batch; a later batch
    that writes the status again moves that event to itself, and the file still resumes: the
    binding checks the last write-once event instead."""
    from migrate.store import bbgdb

    store = fjall_graph(tmp_path / "g")
    out = tmp_path / "audit.ndjson"
    _follow_once(store, out)
    first = check_event_lines(out.read_bytes())
    assert first[-1]["kind"] == "generation"
    api.fjall_append(store, [(bbgdb.MIGRATION, bbgdb.STATUS, b"neuron-v1")])
    _follow_once(store, out)
    now = check_event_lines(out.read_bytes())
    assert now[: len(first)] == first and len(now) == len(first) + 1
    assert now[-1]["kind"] == "generation" and now[-1]["tx"] > first[-1]["tx"]
    assert now[-1]["tx"] == check_event_lines(tail_bytes(store))[-1]["tx"]
