"""tail: canonical, deterministic event/1 lines that round-trip through apply."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused, ValidationFailed
from migrate.share import apply_stream, doctor, tail
from migrate.share.events import commit_event_id
from migrate.store import DB_NAME, open_store
from tests.share.conftest import run_cli
from tests.share.helpers import check_event_lines, digest, logical, stream, tail_bytes
from tests.share.stores import birth, follow, graph_writes


def test_every_line_is_canonical_event_1(any_store: Path) -> None:
    data = tail_bytes(any_store)
    docs = check_event_lines(data)
    assert b" " not in data  # hex and fixed keys only: no spaces anywhere
    assert len({d["event"] for d in docs}) == len(docs)  # ids are unique
    # every event names its ledger transaction and that transaction's time, in ledger order
    txs = [d["tx"] for d in docs]
    assert txs == sorted(txs) and all(isinstance(d["at"], int) and d["at"] > 0 for d in docs)


def test_cell_small_event_counts(cell_store: Path) -> None:
    docs = check_event_lines(tail_bytes(cell_store))
    commits = [d for d in docs if d["kind"] == "commit"]
    rows = [d for d in docs if d["kind"] == "rows"]
    assert len(commits) == 50  # one per history entry
    assert sum(len(d["asserted"]) for d in rows) == 55 + 12  # orphan content + claims
    # the migration's activation is one ledger transaction: commits, then rows, then the
    # generation and import events of the activation
    assert {d["tx"] for d in commits + rows} == {commits[0]["tx"]}
    assert docs.index(rows[0]) == len(commits)
    assert [d["kind"] for d in docs[len(commits) + len(rows):]] == ["generation", "import"]
    # within it: namespaces in byte order, indices ascending, heads chained
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
    txs = [json.loads(line)["tx"] for line in lines]
    # --since TX: exactly the events of the transactions after TX
    for since in sorted({0, *txs, max(txs) + 5}):
        assert tail_bytes(any_store, since) == b"".join(
            line for line, tx in zip(lines, txs, strict=True) if tx > since
        )
    done = run_cli("tail", "--since", str(txs[0]), "--store", str(any_store))
    assert done.returncode == 0
    assert done.stdout == b"".join(line for line, tx in zip(lines, txs, strict=True)
                                   if tx > txs[0])  # fmt: skip


def test_since_is_stable_when_an_early_namespace_grows(graph: Path) -> None:
    """Appending never renumbers: a new commit in the first namespace (by bytes) leaves
    every earlier transaction's events as they were, and lands after them."""
    before = tail_bytes(graph)
    last = json.loads(before.splitlines()[-1])["tx"]
    fenced = birth("g-2").namespace
    first_ns = min(w.namespace for w in graph_writes() if w.namespace != fenced)
    with open_store(graph) as st:
        head = st.head(first_ns)
        assert head is not None
        follow(head, first_ns, "early").apply(st)
    after = tail_bytes(graph)
    assert after.startswith(before)
    new = [json.loads(line) for line in after[len(before):].splitlines()]
    assert {d["tx"] for d in new} == {last + 1}  # one transaction: the commit, its extra row
    assert [d["kind"] for d in new] == ["commit", "rows"]
    assert new[0]["namespace"] == first_ns.hex()
    assert tail_bytes(graph, last) == after[len(before):]


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
    copied = tail_bytes(tmp_path / "copy")
    # the same events (ids, facts, order), each source transaction one local transaction
    assert logical(copied) == logical(data)
    src = [json.loads(line) for line in data.splitlines()]
    dst = [json.loads(line) for line in copied.splitlines()]
    for a, b in zip(src, dst, strict=True):
        assert b["imported_at"] == {"tx": a["tx"], "at": a["at"]}  # the source's stamps
    assert len({d["tx"] for d in dst}) == len({d["tx"] for d in src})
    assert digest(tmp_path / "copy") == digest(any_store)
    assert doctor(tmp_path / "copy")["healthy"]
    # a copy of the copy keeps the first origin's stamps
    with open_store(tmp_path / "copy2", create=True) as st:
        apply_stream(st, stream(copied))
    again = [json.loads(line) for line in tail_bytes(tmp_path / "copy2").splitlines()]
    assert [d["imported_at"] for d in again] == [{"tx": a["tx"], "at": a["at"]} for a in src]


def test_cli_round_trip_through_stdin(cell_store: Path, tmp_path: Path) -> None:
    data = run_cli("--store", str(cell_store), "tail").stdout
    done = run_cli("--store", str(tmp_path / "new"), "apply", "-", stdin=data)
    assert done.returncode == 0, done.stderr
    assert logical(run_cli("--store", str(tmp_path / "new"), "tail").stdout) == logical(data)


def test_broken_links_stop_tail(cell_store: Path) -> None:
    db = sqlite3.connect(cell_store / DB_NAME, isolation_level=None)
    try:
        db.execute("DELETE FROM application_requests WHERE key = "
                   "(SELECT max(key) FROM application_requests)")  # fmt: skip
    finally:
        db.close()
    # Refused by the cheap invariants before the first event.
    with pytest.raises(ValidationFailed, match="damaged.*doctor"):
        list(tail(cell_store))


def test_tail_refuses_a_store_mid_import(graph: Path) -> None:
    from fences import generations

    with open_store(graph, maintenance=True) as st, st.transaction() as tx:
        generations.set_transitional(tx, "copying")
    with pytest.raises(StoreRefused):
        list(tail(graph))
