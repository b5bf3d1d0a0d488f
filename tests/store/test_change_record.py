"""The SQLite engine's bbg change id comes from the transaction's own record of its changes
(:mod:`migrate.store.bbg_changes`): every write path that changes bbg's rows is checked
against an independent recomputation from the rows SQLite itself changed
(:mod:`tests.support.change_oracle`), with the changes held in memory and spilled to the
TEMP table alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from fences import generations
from migrate import transfer
from migrate.share import apply_stream
from migrate.share.retention import nohistory
from migrate.store import ARCHIVE_ORDER, Head, bbg_changes, imports, open_store, retention
from migrate.store.graph import publish
from tests.share.helpers import stream, tail_bytes
from tests.share.stores import graph_store, graph_writes
from tests.store.helpers import birth, follow
from tests.store.test_digest_links import _chain
from tests.support.change_oracle import install
from tests.transfer.test_bbg_end_state import NONCE, TARGET

pytestmark = pytest.mark.engine("sqlite")


@pytest.fixture(params=["held", "spilled"])
def seen(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[bytes | None]:
    """The ids the oracle checked; ``spilled``: every change goes to the TEMP table."""
    if request.param == "spilled":
        monkeypatch.setattr(bbg_changes, "SPILL_BYTES", 0)
    out: list[bytes | None] = []
    install(monkeypatch, out)
    return out


def _stage(store: object, import_id: str, seed: str, n: int) -> bytes:
    ns, rows = _chain(n, seed)
    with store.transaction() as tx:  # type: ignore[attr-defined]
        imports.begin_import(tx, import_id)
        imports.stage_namespace(tx, import_id, ns)
        for table in ARCHIVE_ORDER:
            imports.stage_rows(tx, import_id, table, rows[table])
    return ns


def test_every_write_path_records_the_id_sqlite_sees(
    tmp_path: Path, seen: list[bytes | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    with open_store(source, create=True) as store:
        a = birth("a")
        a.apply(store)  # put + set_head
        b = follow(a, a.namespace, 1)
        b.apply(store)
        with store.transaction() as tx:  # puts of bytes already there, an equal head
            tx.put_many("application_content", [*b.contents.items(), (b"n" * 32, b"\x01new")])
            tx.set_head(a.namespace, b.new_head)
        with store.transaction() as tx:
            generations.promote(tx, "neuron-v1")  # the status row
        ns = _stage(store, "imp", "staged", 4)
        with store.transaction() as tx:  # a bulk copy between changes of the same keys
            tx.put("application_content", b"m" * 32, b"\x01before")
            imports.activate(tx, "imp")
            retention.drop_history(tx, ns)  # removes rows the copy just added
            c = follow(store.head(ns) or Head(0, ns), ns, "after")
        c.apply(store)
        gone = _stage(store, "gone", "gone", 2)
        with store.transaction() as tx:
            imports.activate(tx, "gone")
            retention.excise(tx, [b"n" * 32], [gone])
        with store.transaction() as tx:  # an excised row back (the copy wins over the delete)
            tx.put("application_content", b"n" * 32, b"\x01new")
            publish(tx, reader_generation=store.reader_generation, namespace=b"z" * 32,
                    request=b"r" * 32, expected=None, new_head=Head(0, b"z" * 32),
                    contents={b"z" * 32: b"\x01birth/z"}, claims={},
                    fingerprint=b"f" * 32)  # fmt: skip
    changed = [i for i in seen if i is not None]
    assert len(changed) == 8 and len(set(changed)) == len(changed)

    # apply (one SQLite transaction of many entries, a boundary) into an empty store
    graph = graph_store(tmp_path / "graph")
    nohistory(graph, [graph_writes()[0].namespace.hex()])
    dest = tmp_path / "dest"
    before = len(seen)
    with open_store(dest, create=True) as store:
        apply_stream(store, stream(tail_bytes(graph)))
    assert len(seen) == before + 1 and seen[-1] is not None  # one transaction

    # a transfer: the seal on the source, the copy into the target
    monkeypatch.setattr(transfer.tgt, "target_id", lambda store_id: TARGET)
    plain = graph_store(tmp_path / "plain", fence=False)
    job = transfer.TransferJob(source=plain, store=tmp_path / "target", nonce=NONCE.hex(),
                               content_check="none")  # fmt: skip
    before = len(seen)
    assert transfer.run(job).status == "complete"
    assert len([i for i in seen[before:] if i is not None]) >= 2


def test_the_oracle_catches_a_write_the_record_missed(
    tmp_path: Path, seen: list[bytes | None]
) -> None:
    with open_store(tmp_path / "s", create=True) as store:
        a = birth("a")
        a.apply(store)
        with pytest.raises(AssertionError, match="missed write"), store.transaction() as tx:
            # a delete behind the record's back (not tx.delete): the id would not see it
            tx.execute("DELETE FROM application_content WHERE key = ?", (a.namespace,))
