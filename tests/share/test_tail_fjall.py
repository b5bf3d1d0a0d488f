"""``tail`` / ``tail --since`` on a Fjall store (the real BBG database): one transaction per
write batch (tx = seqno + 1, at = 0), stable across later batches and flushes, and a
``tail`` -> ``apply`` round trip into a SQLite store gives the same five tables."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fences import generations, namespaces
from migrate import api
from migrate.share.common import canonical
from migrate.store import open_store
from migrate.store.engine import ENGINE_ENV
from migrate.store.fjall import backend
from tests.fjall.conftest import extract
from tests.share.helpers import check_event_lines
from tests.share.stores import birth, blob, graph_writes

pytestmark = pytest.mark.engine("fjall")


def fjall_graph(directory: Path) -> Path:
    """GraphPort commits, one batch each, then a fence and a promotion in one batch."""
    with open_store(directory, create=True) as store:
        for w in graph_writes():
            w.apply(store)
        with store.transaction() as tx:
            namespaces.fence(tx, birth("g-2").namespace, import_id="moved", reason="test",
                             subject=b"\x01" * 32, manifest=b"\x02" * 32)  # fmt: skip
            generations.promote(tx, "neuron-v1")
    return directory


def tail_bytes(store: Path, since: int = 0) -> bytes:
    return b"".join(canonical(e) for e in api.tail(store, since))


def round_trip(store: Path, dest: Path, data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """``apply`` the stream into a new SQLite store: the same five tables."""
    monkeypatch.setenv(ENGINE_ENV, "sqlite")
    report = api.apply(dest, io.BytesIO(data))
    assert report["applied"] == report["events"] > 0
    assert api.inspect(dest)["archive_digest_sha256"] == api.inspect(store)[
        "archive_digest_sha256"]


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    return fjall_graph(tmp_path / "g")


def test_batches_are_transactions_in_seqno_order(graph: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    data = tail_bytes(graph)
    events = check_event_lines(data)  # canonical, schema, ids
    txs = [e["tx"] for e in events]
    assert txs == sorted(txs) and txs[0] == 1 and {e["at"] for e in events} == {0}
    # 15 commits, one batch each (created empty: the first commit is seqno 0, tx 1)
    commits = [e for e in events if e["kind"] == "commit"]
    assert [e["tx"] for e in commits] == list(range(1, 16))
    last = [e for e in events if e["tx"] == 16]
    assert [e["kind"] for e in last] == ["fence", "generation"]
    assert last[1]["asserted"][0]["status"] == "neuron-v1"
    # within a batch: the commit first, then its extra content row (rows event)
    second = [e["kind"] for e in events if e["tx"] == 2]
    assert second == ["commit", "rows"]
    round_trip(graph, tmp_path / "copy", data, monkeypatch)


def test_since_is_a_stable_suffix_across_writes_and_flushes(graph: Path) -> None:
    before = {n: tail_bytes(graph, n) for n in (0, 1, 7, 15, 16)}
    assert before[16] == b"" and before[0].endswith(before[7])
    # a later batch (a bbg writer's: a new namespace's birth), then a flush of every journal
    ns, value = blob(b"late")
    api.fjall_append(graph, [("application_content", ns, value)])
    report = api.fjall_flush(graph)
    assert report["items"] > 0 and report["rotated"]
    api.fjall_append(graph, [("application_unique_claims", b"\x07" * 32, b"\x08" * 32)])
    for n, old in before.items():
        now = tail_bytes(graph, n)
        assert now.startswith(old), n  # the same suffix, then the new batches
    added = check_event_lines(tail_bytes(graph, 16))
    assert [(e["tx"], e["kind"]) for e in added] == [(17, "rows"), (18, "rows")]


def test_both_backends_give_the_same_bytes(graph: Path) -> None:
    api.fjall_flush(graph)
    out = {}
    for name in backend.available():
        previous = backend.set_default(name)
        try:
            out[name] = tail_bytes(graph)
        finally:
            backend.set_default(previous)
    assert len(set(out.values())) == 1


def test_the_real_crates_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bbg-small, written by the real fjall 2.11.2 crate: one batch at seqno 0 (tx 1)."""
    real = extract("bbg-small", tmp_path)
    data = tail_bytes(real)
    events = check_event_lines(data)
    assert {e["tx"] for e in events} == {1}
    assert [e["kind"] for e in events].count("commit") == 50
    assert tail_bytes(real, 1) == b""
    from migrate.share import events_fjall

    with monkeypatch.context() as mp:  # streamed alone, its contents read 7 entries at a time
        mp.setattr(events_fjall, "WINDOW_ROWS", 0)
        mp.setattr(events_fjall, "CHUNK", 7)
        assert tail_bytes(real) == data
        mp.setattr(events_fjall, "WINDOW_BYTES", 500)
        assert tail_bytes(real) == data
    round_trip(real, tmp_path / "copy", data, monkeypatch)


def test_windows_cut_batches_without_changing_the_bytes(graph: Path, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:  # fmt: skip
    """Small windows (many scans) and batches streamed alone give the same stream."""
    from migrate.share import events_fjall

    whole = tail_bytes(graph)
    monkeypatch.setattr(events_fjall, "WINDOW_ROWS", 2)
    assert tail_bytes(graph) == whole
    monkeypatch.setattr(events_fjall, "WINDOW_ROWS", 0)
    assert tail_bytes(graph) == whole
    monkeypatch.setattr(events_fjall, "CHUNK", 2)  # content read ahead, 2 entries at a time
    monkeypatch.setattr(events_fjall, "WINDOW_BYTES", 1)  # ... and past the cap one by one
    assert tail_bytes(graph) == whole
    assert b"".join(canonical(e) for e in api.tail(graph, 3, skip=1)) == \
        whole[whole.index(tail_bytes(graph, 3)):].split(b"\n", 1)[1]


def test_a_bulk_built_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run`` into a new Fjall store builds its rows as segments at seqno 0 (tx 1), then
    bbg's converter's two status batches (seqnos 1 and 2): status is rewritten, so only the
    newest (``complete``, tx 3) has an event."""
    import gzip

    from tests.conftest import FIXTURES
    from tests.share.conftest import run_cli

    src = tmp_path / "cell.redb"
    src.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    store = tmp_path / "fj"
    done = run_cli("--engine", "fjall", "run", str(src), "--store", str(store))
    assert done.returncode == 0, done.stderr
    data = tail_bytes(store)
    events = check_event_lines(data)
    assert {(e["tx"], e["kind"]) for e in events} == {(1, "commit"), (1, "rows"),
                                                       (3, "generation")}  # fmt: skip
    assert [e["kind"] for e in events].count("commit") == 50
    assert tail_bytes(store, 1) == data[data.index(b'{"asserted":[{"fact":"status"'):]
    round_trip(store, tmp_path / "copy", data, monkeypatch)
