"""A read-only command changes nothing in the store directory, also next to an empty
``-wal`` a writer left behind: SQLite's close would "checkpoint" an empty WAL and delete it,
even on a ``mode=ro`` handle (issue 28 item 12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.share.conftest import run_cli


def _state(directory: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir()}


@pytest.mark.parametrize("wal", [b"", b"\x37\x7f\x06\x82" + bytes(28)])  # empty; a header
@pytest.mark.parametrize("verb", [["doctor"], ["tail"], ["snapshot"], ["inspect", "{store}"]])
def test_an_empty_wal_is_left_as_it_was(
    graph: Path, verb: list[str], wal: bytes
) -> None:
    (graph / "bbg.sqlite3-wal").write_bytes(wal)
    os.utime(graph / "bbg.sqlite3-wal", ns=(1_000_000_000, 1_000_000_000))
    before = _state(graph)
    assert "bbg.sqlite3-wal" in before
    args = [a.replace("{store}", str(graph)) for a in verb]
    done = run_cli("--store", str(graph), *args)
    assert done.returncode == 0, done.stderr
    assert _state(graph) == before
