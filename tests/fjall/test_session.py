"""The writer session (``open_writer``): what it tracks equals a fresh open after every
kind of write, it writes the one-shot functions' bytes, it holds the locks for its life
(and names who holds them when it cannot), it refuses a keyspace another writer changed,
and it keeps no written row."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import FjallChanged, FjallRefused, Locked, UsageError
from migrate.store.fjall import journal, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.layout import DEFAULT_CONFIG
from migrate.store.fjall.session import KeyspaceWriter, append_batch, open_writer, publish_segments
from migrate.store.fjall.writer import build_keyspace
from tests.fjall.conftest import extract


def _fresh_state(root: Path) -> dict[str, Any]:
    """What a session opened now would track (without its locks: the session under test
    holds them)."""
    fresh = KeyspaceWriter(root, [])
    try:
        with open_keyspace(root) as ks:
            fresh._load(ks)
        return fresh.state()
    finally:
        fresh.close()


def _rows(n: int, tag: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"k%05d" % i, tag + b"%d" % i) for i in range(n)]


def test_what_the_session_tracks_equals_a_fresh_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "PRE_ALLOCATED", 4096)
    root = tmp_path / "ks"
    build_keyspace(root, {"p": _rows(300, b"v"), "q": []})
    steps = 0
    with open_writer(root) as session:
        assert session.state() == _fresh_state(root)
        for i in range(12):  # several journal rotations
            seqno = session.append([("p", b"k%05d" % (i * 13), os.urandom(700)),
                                    ("q", b"x%d" % i, None if i % 3 else b"1")])  # fmt: skip
            assert seqno == i + 1
            assert session.state() == _fresh_state(root)
            steps += 1
        assert len(session.state()["sealed"]) >= 2
        assert session.create_partitions(["new", "p", "new"]) == ["new"]
        assert session.state() == _fresh_state(root)
        with pytest.raises(FjallRefused, match="live only in its journals"):
            session.publish("p", _rows(5, b"x"))
        session.publish("new", _rows(50, b"n"))
        session.publish("fresh", _rows(20, b"f"))  # created by the publication
        assert session.state() == _fresh_state(root)
        session.flush()
        assert session.state() == _fresh_state(root)
        session.publish("p", _rows(300, b"w")[::3])
        session.append([("p", b"k00000", None)])
        assert session.state() == _fresh_state(root)
        state = session.state()
    assert state == _fresh_state(root)  # and as the next session finds it
    assert state["partitions"]["p"]["journal_items"] == 1
    with open_keyspace(root) as ks:
        assert ks.get("p", b"k00000") is None and ks.get("p", b"k00003") == b"w3"
        assert ks.get("fresh", b"k00001") == b"f1" and fjreport.check(ks)["ok"]


def test_a_session_writes_the_bytes_of_the_one_shot_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "PRE_ALLOCATED", 4096)
    base = tmp_path / "base"
    build_keyspace(base, {"p": [], "q": []}, created_at=5)
    one, many = tmp_path / "one", tmp_path / "many"
    shutil.copytree(base, one)
    shutil.copytree(base, many)
    batches = [[("p", b"a%d" % i, os.urandom(900 * (i % 3))), ("q", b"b", None)]
               for i in range(9)]  # fmt: skip
    for batch in batches:
        append_batch(one, batch)
    publish_segments(one, "r", _rows(30, b"r"), created_at=5)
    with open_writer(many) as session:
        for batch in batches:
            session.append(batch)
        session.publish("r", _rows(30, b"r"), created_at=5)
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(many) for p in many.rglob("*") if p.is_file())
    assert len([f for f in files if f.parts[0] == "journals"]) >= 3
    for rel in files:
        assert (one / rel).read_bytes() == (many / rel).read_bytes(), rel


def test_the_reader_sees_everything_written(tmp_path: Path) -> None:
    root = extract("bbg-small", tmp_path)
    with open_writer(root) as session:
        session.append([("bbg_storage_v1", b"k", b"v")])
        with session.reader() as ks:
            assert ks.get("bbg_storage_v1", b"k") == b"v"
            session.append([("bbg_storage_v1", b"k", b"v2")])
            assert ks.get("bbg_storage_v1", b"k") == b"v"  # a snapshot
        session.flush()
        session.publish("bbg_storage_v1", [(b"published", b"1")])
        with session.reader() as ks:
            assert ks.get("bbg_storage_v1", b"k") == b"v2"
            assert ks.get("bbg_storage_v1", b"published") == b"1"
    with pytest.raises(UsageError, match="closed"):
        session.append([("bbg_storage_v1", b"k", b"v3")])


def test_created_partitions_are_fjalls(tmp_path: Path) -> None:
    real = extract("bbg-small", tmp_path / "real")  # 33 partitions bbg created
    names = sorted(p.name for p in (real / "partitions").iterdir())
    os.umask(0o022)
    ours = tmp_path / "ours"
    build_keyspace(ours, {})
    with open_writer(ours, create_lock=True) as session:
        assert session.create_partitions(names, config=DEFAULT_CONFIG) == names
        assert session.create_partitions(names) == []
    lock = ours / "bbg.lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600 and lock.stat().st_size == 0
    for name in names:
        for f in ("config", "manifest", "levels"):
            a, b = real / "partitions" / name / f, ours / "partitions" / name / f
            assert a.read_bytes() == b.read_bytes(), (name, f)
            assert stat.S_IMODE(a.stat().st_mode) == stat.S_IMODE(b.stat().st_mode), (name, f)
        assert not [p.name for p in (ours / "partitions" / name).iterdir()
                    if p.name not in ("config", "manifest", "levels", "segments")]  # fmt: skip
    with open_keyspace(ours) as ks:
        assert ks.partitions() == sorted(names, key=str.encode)


def test_a_dropped_or_unfinished_partition_is_made_again(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": []})
    (root / "partitions" / "half" / "segments").mkdir(parents=True)  # no manifest
    (root / "partitions" / "half" / "config").write_bytes(b"junk")
    with open_writer(root) as session:
        assert session.create_partitions(["half"]) == ["half"]
        session.publish("half", [(b"a", b"1")])
    with open_keyspace(root) as ks:
        assert list(ks.scan("half")) == [(b"a", b"1")] and fjreport.check(ks)["ok"]


def _hold(path: Path) -> subprocess.Popen[str]:
    """A process holding an exclusive flock on ``path`` (bbg's lock) until killed."""
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(120)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    assert child.stdout is not None and child.stdout.readline().strip() == "locked"
    return child


def test_the_session_holds_bbg_lock_and_names_its_holder(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": []})
    child = _hold(root / "bbg.lock")
    try:
        with pytest.raises(Locked, match=f"bbg holds bbg.lock: pid {child.pid} ") as err:
            open_writer(root)
        assert err.value.context["holder_pid"] == child.pid
        with pytest.raises(Locked):
            append_batch(root, [("p", b"a", b"b")])
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    with open_writer(root) as session:  # now it holds it, for its whole life
        lock = os.open(root / "bbg.lock", os.O_RDWR)
        try:
            import fcntl

            with pytest.raises(BlockingIOError):
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(lock)
        with pytest.raises(Locked, match=f"another bbg-migrate writer .*pid {os.getpid()}"):
            open_writer(root)  # a second session (here: of this very process)
        session.append([("p", b"a", b"b")])


def test_without_create_lock_no_lock_file_is_made(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": []})
    with open_writer(root) as session:
        session.append([("p", b"a", b"b")])
    assert not (root / "bbg.lock").exists()
    with pytest.raises(Exception, match="no version file"):
        open_writer(tmp_path, create_lock=True)
    assert not (tmp_path / "bbg.lock").exists()


def _foreign_batch(root: Path, name: str, at: int, seqno: int) -> None:
    fd = os.open(root / "journals" / name, os.O_WRONLY)
    os.pwrite(fd, journal.encode_batch([("p", b"foreign", b"x", 0)], seqno), at)
    os.close(fd)


@pytest.mark.parametrize("change", ["batch", "truncated", "levels", "journal", "partition"])
def test_a_keyspace_changed_under_the_session_is_refused(change: str, tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": _rows(10, b"v")})
    session = open_writer(root)
    with session:
        session.append([("p", b"mine", b"1")])
        name, tail = session.active_journal or ("", 0)
        if change == "batch":  # another writer appended after our last batch
            _foreign_batch(root, name, tail, 2)
        elif change == "truncated":  # what fjall's recovery does to the active journal
            os.truncate(root / "journals" / name, tail)
        elif change == "levels":  # a flush or compaction by someone else
            publish_levels = root / "partitions" / "p" / "levels"
            data = publish_levels.read_bytes()
            publish_levels.unlink()
            publish_levels.write_bytes(data)
        elif change == "journal":
            (root / "journals" / "9").write_bytes(b"")
        else:
            (root / "partitions" / "other").mkdir()
        before = sorted((p.relative_to(root), p.stat().st_size) for p in root.rglob("*"))
        with pytest.raises(FjallChanged) as err:
            session.append([("p", b"mine", b"2")])
        assert err.value.code == "fjall-changed" and isinstance(err.value, FjallRefused)
        for call in (lambda: session.publish("p", [(b"z", b"1")]), session.flush,
                     lambda: session.create_partitions(["x"])):  # fmt: skip
            with pytest.raises(FjallChanged):
                call()
        assert sorted((p.relative_to(root), p.stat().st_size) for p in root.rglob("*")) == before


def test_the_session_keeps_no_written_row(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": []})
    value = b"x" * 4000
    with open_writer(root) as session:
        session.append([("p", b"warm", value)])
        session.publish("q", [(b"warm", value)])
        tracemalloc.start()
        try:
            base = tracemalloc.take_snapshot()
            for i in range(600):  # 2.4 MB of values through the journal
                session.append([("p", b"k%05d" % i, value)])
            session.publish("q", [(b"k%05d" % i, value) for i in range(300)])
            grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(
                base, "filename"))  # fmt: skip
        finally:
            tracemalloc.stop()
    assert grown < 128 << 10, grown
