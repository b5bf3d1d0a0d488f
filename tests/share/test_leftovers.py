"""What killed ``backup`` and ``restore`` runs leave is cleaned up, and only that.

A backup or restore works in a hidden sibling directory (``.DEST.backup-*`` /
``.DEST.restore-*``) that it keeps locked while it lives.  A killed one leaves a partial
database there; the next run to the same destination removes it -- never one whose owner is
still running -- and ``doctor`` reports both kinds.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate.share import backup, doctor, restore, write_snapshot
from migrate.store.creation import TEMP_PREFIX
from tests.conftest import ROOT
from tests.procs import start, wait_until


@pytest.fixture
def owners() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        with p:
            p.wait()


def own(parent: Path, prefix: str, procs: list[subprocess.Popen[str]]) -> tuple[Path, int]:
    """Start an owner of ``parent/prefix*``; returns (its directory, its pid)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.share._owner", str(parent), prefix],
        stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    procs.append(proc)
    assert proc.stdout is not None
    return Path(proc.stdout.readline().strip()), proc.pid


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def test_backup_removes_what_a_killed_backup_left_not_a_running_one(
    graph: Path, tmp_path: Path, owners: list[subprocess.Popen[str]]
) -> None:
    dest = tmp_path / "copy"
    dead, pid = own(tmp_path, ".copy.backup-", owners)
    alive, _ = own(tmp_path, ".copy.backup-", owners)
    kill(pid)
    owners[0].wait()
    backup(graph, dest)
    assert (dest / "bbg.sqlite3").is_file()
    assert not dead.exists()  # abandoned: removed
    assert alive.exists()  # its owner still runs: kept


def test_restore_removes_what_a_killed_restore_left(
    graph: Path, tmp_path: Path, owners: list[subprocess.Popen[str]]
) -> None:
    out = io.BytesIO()
    write_snapshot(graph, out)
    dest = tmp_path / "r"
    # A real restore, killed while it reads its stream: its partial database stays behind.
    proc = start("restore", "-", "--store", str(dest), stdin=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        proc.stdin.write(out.getvalue().splitlines(keepends=True)[0])
        proc.stdin.flush()
        wait_until("the restore started", lambda: any(
            n.startswith(".r.restore-") for n in os.listdir(tmp_path)))  # fmt: skip
        proc.kill()
    finally:
        with proc:
            proc.wait()
    left = [n for n in os.listdir(tmp_path) if n.startswith(".r.restore-")]
    assert len(left) == 1
    restore(io.BytesIO(out.getvalue()), dest)
    assert not (tmp_path / left[0]).exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".r.restore-")]


def test_doctor_reports_leftovers(
    graph: Path, owners: list[subprocess.Popen[str]]
) -> None:
    parent = graph.parent
    dead, pid = own(parent, f".{graph.name}.restore-", owners)
    alive, _ = own(parent, f".{graph.name}.restore-", owners)
    kill(pid)
    owners[0].wait()
    (graph / f"{TEMP_PREFIX}0123").write_bytes(b"")
    report = doctor(graph)
    assert report["healthy"]  # leftovers are warnings: the store itself is sound
    found = {w["detail"].split(": ", 1)[0]: w["detail"] for w in report["warnings"]
             if w["code"] == "leftover-file"}  # fmt: skip
    assert "killed restore" in found[str(dead)]
    assert "is running" in found[str(alive)]
    assert f"{TEMP_PREFIX}0123" in found
    json.dumps(report)


def _foreign(parent: Path, name: str) -> Path:
    """A directory of the user's whose name matches a temporary name (issue 28, item 1)."""
    mine = parent / name
    (mine / "inner").mkdir(parents=True)
    (mine / "bbg.sqlite3").write_bytes(b"a store copied here by hand")
    (mine / "inner" / "notes.txt").write_text("keep me")
    return mine


def _untouched(mine: Path) -> None:
    assert (mine / "bbg.sqlite3").read_bytes() == b"a store copied here by hand"
    assert (mine / "inner" / "notes.txt").read_text() == "keep me"


def test_backup_and_restore_never_remove_a_directory_they_did_not_make(
    graph: Path, tmp_path: Path, owners: list[subprocess.Popen[str]]
) -> None:
    """Only a directory holding this tool's mark (and no live owner) is swept; a folder of the
    user's named like a temporary one survives backup, restore and doctor's listing."""
    backup_mine = _foreign(tmp_path, ".copy.backup-mine")
    restore_mine = _foreign(tmp_path, ".r.restore-by-hand")
    dead, pid = own(tmp_path, ".copy.backup-", owners)  # a killed backup of ours, marked
    kill(pid)
    owners[0].wait()
    backup(graph, tmp_path / "copy")
    assert not dead.exists()
    _untouched(backup_mine)
    out = io.BytesIO()
    write_snapshot(graph, out)
    restore(io.BytesIO(out.getvalue()), tmp_path / "r")
    _untouched(restore_mine)
    report = doctor(tmp_path / "r")
    listed = " ".join(w["detail"] for w in report["warnings"] if w["code"] == "leftover-file")
    assert "restore-by-hand" not in listed


def test_the_published_copy_carries_no_mark(graph: Path, tmp_path: Path) -> None:
    from bbg_core.files import OWNER_MARK

    backup(graph, tmp_path / "copy")
    assert not (tmp_path / "copy" / OWNER_MARK).exists()
