"""The MCP server over a store on the Fjall engine (the real BBG database): read-only by
default, reading a point-in-time snapshot without taking ``bbg.lock`` (so it answers while
bbg's owner holds the lock, and writes nothing); ``--write`` applies through the store API
under the lock."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from migrate.store import bbgdb, open_store
from migrate.store.engine import FJALL
from tests.share.stores import graph_writes
from tests.share.test_apply_fjall import fjall_graph, keyspace_bytes
from tests.share.test_mcp import READ_TOOLS, _doc, _run
from tests.share.test_tail_fjall import tail_bytes
from tests.support import stores

pytestmark = pytest.mark.engine(FJALL)


class _Owner:
    """Holds ``bbg.lock`` exclusively, as bbg's owner process does."""

    def __init__(self, store: Path) -> None:
        self.fd = os.open(store / bbgdb.LOCK_NAME, os.O_RDWR)

    def __enter__(self) -> _Owner:
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def test_read_tools_answer_beside_an_owner_holding_the_lock(tmp_path: Path) -> None:
    store = fjall_graph(tmp_path / "g")
    w = graph_writes()[1]
    want = [json.loads(x) for x in tail_bytes(store).splitlines()]
    before = keyspace_bytes(store), stores.dump(store)
    with _Owner(store):
        listed, (heads, resolve, history, content, tail, ledger, refused) = _run(store, calls=[
            ("heads", {"limit": 2}),
            ("resolve", {"namespace": w.namespace.hex(), "request": w.request.hex()}),
            ("history", {"namespace": w.namespace.hex(), "limit": 2}),
            ("content", {"id": w.new_head.commit.hex(), "max_bytes": 8}),
            ("tail", {"since": 0, "limit": 256}),
            ("ledger", {"since": 0, "limit": 3}),
            ("apply_events", {"events": ""}),
        ])  # fmt: skip
    assert {t.name for t in listed.tools} == READ_TOOLS
    h = _doc(heads)
    assert len(h["heads"]) == 2 and h["next_after"] == h["heads"][-1]["namespace"]
    assert _doc(resolve)["head"] == {"index": w.new_head.index, "commit": w.new_head.commit.hex()}
    assert [e["index"] for e in _doc(history)["entries"]] == [0, 1]
    c = _doc(content)
    assert c["found"] and c["truncated"] and len(bytes.fromhex(c["payload"])) == 8
    t = _doc(tail)
    assert t["events"] == want and t["next"] is None  # the same events as `tail`
    assert [x["tx"] for x in _doc(ledger)["transactions"]] == [1, 2, 3]
    assert refused.is_error
    assert (keyspace_bytes(store), stores.dump(store)) == before  # nothing written


def test_a_store_the_cyber_code_wrote_reads_without_records(tmp_path: Path) -> None:
    from tests.fjall.conftest import extract

    store = extract("bbg-small", tmp_path / "src")
    _, (heads, inspect) = _run(store, calls=[("heads", {"limit": 5}), ("inspect", {})])
    assert _doc(heads)["heads"]
    assert _doc(inspect)
    assert not (tmp_path / "src.bbg-migrate").exists()


def test_write_applies_through_the_store_under_the_lock(tmp_path: Path) -> None:
    source = fjall_graph(tmp_path / "g")
    data = tail_bytes(source).decode()
    store = tmp_path / "w"
    open_store(store, create=True).close()
    listed, (applied, again) = _run(store, "--write", calls=[
        ("apply_events", {"events": data}), ("apply_events", {"events": data}),
    ])  # fmt: skip
    assert "apply_events" in {t.name for t in listed.tools}
    assert _doc(applied)["applied"] == len(data.splitlines())
    assert _doc(again)["replayed"] == len(data.splitlines())
    assert stores.live_digest(store) == stores.live_digest(source)


@pytest.mark.slow
def test_write_while_the_owner_holds_the_lock_is_locked(tmp_path: Path) -> None:
    """The write tool waits its busy timeout (30 s) for bbg.lock, then is refused; reads go
    on answering."""
    source = fjall_graph(tmp_path / "g")
    store = tmp_path / "w"
    open_store(store, create=True).close()
    before = keyspace_bytes(store)
    with _Owner(store):
        _, (refused, heads) = _run(store, "--write", calls=[
            ("apply_events", {"events": tail_bytes(source).decode()}), ("heads", {}),
        ])  # fmt: skip
    assert refused.is_error and "lock" in refused.content[0].text.lower()
    assert _doc(heads)["heads"] == []
    assert keyspace_bytes(store) == before
