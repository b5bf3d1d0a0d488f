"""tail: canonical, deterministic event/1 lines that round-trip through apply."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused, ValidationFailed
from migrate.share import apply_stream, doctor, tail
from migrate.share.events import commit_event_id
from migrate.store import DB_NAME, open_store
from tests.share.conftest import run_cli
from tests.share.helpers import check_event_lines, digest, stream, tail_bytes
from tests.share.stores import graph_writes


def test_every_line_is_canonical_event_1(any_store: Path) -> None:
    data = tail_bytes(any_store)
    docs = check_event_lines(data)
    assert b" " not in data  # hex and fixed keys only: no spaces anywhere
    assert len({d["event"] for d in docs}) == len(docs)  # ids are unique
    assert all(d["at"] is None for d in docs)  # the store keeps no source time


def test_cell_small_event_counts(cell_store: Path) -> None:
    docs = check_event_lines(tail_bytes(cell_store))
    commits = [d for d in docs if d["kind"] == "commit"]
    rows = [d for d in docs if d["kind"] == "rows"]
    assert len(commits) == 50  # one per history entry
    assert sum(len(d["asserted"]) for d in rows) == 55 + 12  # orphan content + claims
    assert docs.index(rows[0]) == len(commits)  # rows events come after every commit
    # canonical order: namespaces in byte order, indices ascending, heads chained
    keys = [(d["namespace"], d["index"]) for d in commits]
    assert keys == sorted(keys)
    for prev, cur in zip(commits, commits[1:], strict=False):
        if cur["namespace"] == prev["namespace"]:
            assert cur["retracted"] == [prev["asserted"][0]]
        else:
            assert cur["index"] == 0 and cur["retracted"] == []


def test_same_store_same_bytes_and_since(any_store: Path) -> None:
    data = tail_bytes(any_store)
    assert tail_bytes(any_store) == data
    lines = data.splitlines(keepends=True)
    for n in (0, 1, 7, len(lines) - 1, len(lines), len(lines) + 5):
        assert tail_bytes(any_store, n) == b"".join(lines[n:])
    done = run_cli("tail", "--since", "3", "--store", str(any_store))
    assert done.returncode == 0 and done.stdout == b"".join(lines[3:])


def test_event_id_is_derived_from_the_request(graph: Path) -> None:
    w = graph_writes()[1]
    docs = [d for d in tail(graph) if d["kind"] == "commit"]
    mine = [d for d in docs if d["request"] == w.request.hex()]
    assert len(mine) == 1
    assert mine[0]["event"] == commit_event_id(w.namespace, w.request)
    assert mine[0]["fingerprint"] == w.fingerprint.hex()


def test_round_trip_tail_apply_tail(any_store: Path, tmp_path: Path) -> None:
    data = tail_bytes(any_store)
    with open_store(tmp_path / "copy", create=True) as st:
        apply_stream(st, stream(data))
    assert tail_bytes(tmp_path / "copy") == data
    assert digest(tmp_path / "copy") == digest(any_store)
    assert doctor(tmp_path / "copy")["healthy"]


def test_cli_round_trip_through_stdin(cell_store: Path, tmp_path: Path) -> None:
    data = run_cli("--store", str(cell_store), "tail").stdout
    done = run_cli("--store", str(tmp_path / "new"), "apply", "-", stdin=data)
    assert done.returncode == 0, done.stderr
    assert run_cli("--store", str(tmp_path / "new"), "tail").stdout == data


def test_broken_links_stop_tail(cell_store: Path) -> None:
    db = sqlite3.connect(cell_store / DB_NAME, isolation_level=None)
    try:
        db.execute("DELETE FROM application_requests WHERE key = "
                   "(SELECT max(key) FROM application_requests)")  # fmt: skip
    finally:
        db.close()
    # Refused by the cheap invariants before the first event (issue 18.11).
    with pytest.raises(ValidationFailed, match="damaged.*doctor"):
        list(tail(cell_store))


def test_tail_refuses_a_store_mid_import(graph: Path) -> None:
    from fences import generations

    with open_store(graph, maintenance=True) as st, st.transaction() as tx:
        generations.set_transitional(tx, "copying")
    with pytest.raises(StoreRefused):
        list(tail(graph))
