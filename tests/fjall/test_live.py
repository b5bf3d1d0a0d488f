"""Reading a keyspace that its owner has open and keeps changing: the reader never takes
``bbg.lock``, and every snapshot is consistent -- a scan in progress keeps reading the files
of its snapshot when a compaction replaces them, a snapshot taken while ``levels`` or the
journal listing changes is taken again, and a batch is seen whole or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.store.fjall import journal, levels, open_keyspace, reader
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.session import append_batch, publish_segments
from migrate.store.fjall.writer import build_keyspace
from tests.conftest import ROOT
from tests.fjall import owner


def _keyspace(tmp_path: Path) -> Path:
    root = tmp_path / "ks"
    build_keyspace(root, {"seg": owner.SEG_ROWS, "p": [], "q": []})
    append_batch(root, [("p", b"a", b"0"), ("q", b"b", b"0")])
    return root


def test_a_scan_keeps_its_snapshot_while_segments_are_replaced(tmp_path: Path) -> None:
    root = _keyspace(tmp_path)
    ks = open_keyspace(root)
    try:
        rows = ks.scan("seg")
        first = [next(rows) for _ in range(10)]
        owner._compact(root)  # new segment, levels swapped, old file deleted
        owner._compact(root)
        assert not (root / "partitions" / "seg" / "segments" / "0").exists()
        rest = list(rows)
        assert first + rest == owner.SEG_ROWS
        assert ks.get("seg", b"s02999") == b"v2999"
    finally:
        ks.close()
    with open_keyspace(root) as again:
        assert again.view("seg").level_ids[6] or again.view("seg").level_ids[1]
        assert list(again.scan("seg")) == owner.SEG_ROWS


def test_a_snapshot_is_taken_again_when_the_keyspace_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _keyspace(tmp_path)
    real_scan = journal.scan
    calls = {"n": 0}

    def scan_and_publish(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:  # the owner flushes while the journals are read
            publish_segments(root, "seg", [(b"zz", b"flushed")])
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(journal, "scan", scan_and_publish)
    with open_keyspace(root) as ks:
        assert ks.attempts == 2
        assert ks.get("seg", b"zz") == b"flushed"
        assert ks.view("seg").level_ids[0]


def test_it_gives_up_naming_the_cause_when_the_keyspace_never_settles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _keyspace(tmp_path)

    def always_changed(self: reader.Keyspace) -> None:
        raise reader._Changed

    monkeypatch.setattr(reader.Keyspace, "_snapshot", always_changed)
    monkeypatch.setattr(reader.time, "sleep", lambda s: None)
    with pytest.raises(reader.FjallError, match="kept changing while it was opened"):
        open_keyspace(root)


@pytest.mark.slow  # ~4 s: a live writer for seconds
def test_snapshots_beside_a_live_owner_are_consistent(tmp_path: Path) -> None:
    root = _keyspace(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fjall.owner", str(root), "4"], cwd=ROOT,
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "owner: locked"
        seen = set()
        deadline = time.monotonic() + 3.5
        snapshots = 0
        while time.monotonic() < deadline:
            with open_keyspace(root) as ks:
                a = ks.get("p", b"a")
                b = ks.get("q", b"b")
                assert a is not None and a == b  # one batch wrote both: whole or not at all
                assert dict(ks.scan("p")) == {b"a": a}
                assert list(ks.scan("seg")) == owner.SEG_ROWS
                seen.add(a)
                snapshots += 1
        assert snapshots > 3 and len(seen) > 2, (snapshots, seen)
    finally:
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert proc.returncode == 0
    with open_keyspace(root) as ks:
        assert fjreport.check(ks)["ok"]


def test_the_reader_does_not_take_bbg_lock(tmp_path: Path) -> None:
    root = _keyspace(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], "
         "os.O_RDWR | os.O_CREAT, 0o600); fcntl.flock(fd, fcntl.LOCK_EX); print('held', "
         "flush=True); time.sleep(30)", str(root / "bbg.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with open_keyspace(root) as ks:
            assert list(ks.scan("seg")) == owner.SEG_ROWS
            assert fjreport.check(ks)["ok"]
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert levels.decode((root / "partitions/seg/levels").read_bytes(), "levels")
