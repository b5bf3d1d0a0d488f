"""Retention with redaction: nohistory and excise, their plans and receipts, and
what tail, apply, doctor and snapshot make of them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import schemas
from bbg_core.errors import Conflict, Fenced, ValidationFailed
from migrate.share import apply_stream, doctor, restore, write_snapshot
from migrate.share.retention import excise, nohistory
from migrate.store import open_store
from migrate.store.codec import Head
from tests.share.conftest import run_cli
from tests.share.helpers import check_event_lines, logical, stream, tail_bytes
from tests.share.stores import birth, follow, graph_writes

NS = birth("g-0").namespace  # 4 commits after its birth (index 4 is the head)


def _rows(store: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with open_store(store) as st:
        return list(st._conn.rows(sql, params))  # a read for the test


def _state(store: Path) -> dict[str, object]:
    """Heads, history, content and claims (what a copy from the boundary must reproduce)."""
    return {t: _rows(store, f"SELECT key, value FROM {t} ORDER BY key") for t in (
        "application_heads", "application_history", "application_content",
        "application_unique_claims")}  # fmt: skip


def test_nohistory_plan_then_receipt(graph: Path) -> None:
    before = tail_bytes(graph)
    plan = nohistory(graph, [NS.hex()], dry_run=True)
    schemas.validate(plan, "nohistory")
    assert plan["dry_run"] and plan["tx"] is None
    assert plan["namespaces"] == [{"namespace": NS.hex(), "index": 4,
                                   "commit": graph_writes()[4].new_head.commit.hex(),
                                   "dropped": 4}]  # fmt: skip
    assert tail_bytes(graph) == before  # the plan changed nothing
    done = nohistory(graph, [NS.hex()])
    schemas.validate(done, "nohistory")
    assert {k: v for k, v in done.items() if k not in ("dry_run", "tx", "at")} == {
        k: v for k, v in plan.items() if k not in ("dry_run", "tx", "at")}  # fmt: skip
    assert done["tx"] is not None and any("snapshot" in x for x in done["cannot_reach"])
    # head, receipts and claims stay resolvable; the superseded history is gone
    assert nohistory(graph, [NS.hex()])["tx"] is None  # again: nothing more to drop
    writes = [w for w in graph_writes() if w.namespace == NS]
    with open_store(graph) as st:
        assert st.head(NS) == writes[-1].new_head
        for w in writes:
            assert st.resolve(NS, w.request) == w.new_head
        assert st.history(NS) == [writes[-1].new_head]
        # and the namespace takes new commits
        follow(writes[-1], NS, "after").apply(st)
    report = doctor(graph)
    assert report["healthy"], report["problems"]
    assert report["ledger"]["boundaries"] == 1


def test_nohistory_marks_the_boundary_and_tail_apply_rebuilds_from_it(
    graph: Path, tmp_path: Path
) -> None:
    nohistory(graph, [NS.hex()])
    with open_store(graph) as st:
        follow(graph_writes()[4], NS, "after").apply(st)
    data = tail_bytes(graph)
    docs = check_event_lines(data)
    mine = [d for d in docs if d.get("namespace") == NS.hex() or
            (d["asserted"] and d["asserted"][0].get("namespace") == NS.hex())]  # fmt: skip
    kinds = [d["kind"] for d in mine]
    # dropped entries are not emitted; the boundary comes just before the first retained one
    assert kinds == ["boundary", "commit", "nohistory", "commit"]
    assert mine[0]["tx"] == mine[1]["tx"] and mine[1]["index"] == 4
    assert mine[0]["asserted"][0]["previous"]["index"] == 3
    with open_store(tmp_path / "copy", create=True) as st:
        apply_stream(st, stream(data))
    # the logical state from the boundary: heads, retained history, claims, and every content
    # row but those of the dropped entries (nohistory drops history, not bytes: they stay in
    # the source as content no entry names, and travel no more)
    src, dst = _state(graph), _state(tmp_path / "copy")
    dropped = {w.new_head.commit for w in graph_writes() if w.namespace == NS
               and w.new_head.index < 4}  # fmt: skip
    assert {k: v for k, v in dst.items() if k != "application_content"} == {
        k: v for k, v in src.items() if k != "application_content"}  # fmt: skip
    assert dst["application_content"] == [r for r in src["application_content"]
                                          if r[0] not in dropped]  # fmt: skip
    assert logical(tail_bytes(tmp_path / "copy")) == logical(data)
    assert doctor(tmp_path / "copy")["healthy"]
    # the receiver holding the full history accepts the boundary and drops its own history too
    full = tmp_path / "full"
    with open_store(full, create=True) as st:
        for w in graph_writes():
            w.apply(st)
    with open_store(full) as st:
        apply_stream(st, stream(data))
    assert _state(full)["application_history"] == src["application_history"]
    assert _state(full)["application_heads"] == src["application_heads"]


def _extra_record(store: Path) -> bytes:
    """A content row that travels in a rows event (the extra record of a commit)."""
    w = graph_writes()[1]
    return next(c for c in w.contents if c != w.new_head.commit)


def test_excise_content_redacts_the_events_that_carried_it(graph: Path, tmp_path: Path) -> None:
    old = tail_bytes(graph)
    cid = _extra_record(graph)
    plan = excise(graph, [cid.hex()], [], dry_run=True)
    schemas.validate(plan, "excise")
    assert plan["contents"] == [cid.hex()] and plan["tx"] is None
    assert len(plan["redacted_transactions"]) == 1
    assert tail_bytes(graph) == old
    done = excise(graph, [cid.hex()], [])
    assert done["redacted_transactions"] == plan["redacted_transactions"]
    assert _rows(graph, "SELECT 1 FROM application_content WHERE key = ?", (cid,)) == []
    new = tail_bytes(graph)
    assert cid.hex() in new.decode() and json.loads(new.splitlines()[-1])["kind"] == "excise"
    redacted = [d for d in check_event_lines(new) if d.get("redacted")]
    assert len(redacted) == 1 and redacted[0]["tx"] == plan["redacted_transactions"][0]
    fact = next(a for a in redacted[0]["asserted"] if a["id"] == cid.hex())
    assert fact == {"fact": "content", "id": cid.hex(), "redacted": True}  # no bytes
    # the bytes are nowhere in the store's stream or its snapshot
    value = graph_writes()[1].contents[cid].hex()
    out = io.BytesIO()
    write_snapshot(graph, out)
    assert value not in new.decode() and value not in out.getvalue().decode()
    assert doctor(graph)["healthy"]
    # a redacted tail cannot rebuild the store, and apply says so
    with pytest.raises(ValidationFailed) as info, open_store(tmp_path / "c", create=True) as st:
        apply_stream(st, stream(new))
    assert info.value.context["errors"][0]["code"] == "redacted-stream"
    assert "snapshot" in info.value.message
    # an older, unredacted stream would bring it back: refused
    with pytest.raises(Conflict, match="excised"), open_store(graph) as st:
        apply_stream(st, stream(old))
    # the snapshot is the recovery path: it restores the redacted store exactly
    restore(io.BytesIO(out.getvalue()), tmp_path / "r")
    assert doctor(tmp_path / "r")["healthy"]
    assert tail_bytes(tmp_path / "r") == new


def test_excise_a_commit_content_and_a_whole_namespace(graph: Path) -> None:
    w = graph_writes()[2]
    excise(graph, [w.new_head.commit.hex()], [])
    docs = check_event_lines(tail_bytes(graph))
    hit = [d for d in docs if d["kind"] == "commit" and d.get("redacted")]
    assert [d["index"] for d in hit] == [w.new_head.index]
    assert doctor(graph)["healthy"]
    other = birth("g-1").namespace
    done = excise(graph, [], [other.hex()])
    assert done["namespaces"][0]["history"] == 5 and done["namespaces"][0]["head"] == 4
    docs = check_event_lines(tail_bytes(graph))
    assert not any(d["kind"] == "commit" and d["namespace"] == other.hex() for d in docs)
    assert [d["kind"] for d in docs if d.get("namespace") == other.hex()] == ["redacted"] * 5
    with open_store(graph) as st:
        assert st.head(other) is None
        with pytest.raises(Fenced):  # gone for good: it cannot be reborn
            birth("g-1").apply(st)
    assert doctor(graph)["healthy"]


@pytest.mark.slow
def test_retention_cli(graph: Path) -> None:
    done = run_cli("--store", str(graph), "nohistory", NS.hex(), "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dry_run"] is True
    done = run_cli("--store", str(graph), "nohistory", NS.hex())  # no terminal to ask
    assert done.returncode == 2 and b"pass --yes" in done.stderr
    done = run_cli("--store", str(graph), "nohistory", NS.hex(), "--yes")
    assert done.returncode == 0 and b"cannot reach" in done.stderr
    done = run_cli("--store", str(graph), "excise", "--content", "ab" * 32, "--yes")
    assert done.returncode == 3 and b"not in" in done.stderr
    done = run_cli("--store", str(graph), "excise", "--yes")
    assert done.returncode == 3
    done = run_cli("--store", str(graph), "nohistory", "zz", "--yes")
    assert done.returncode == 3
    _ = Head
