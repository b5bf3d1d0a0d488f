"""The SQLite engine's bbg change id comes from the transaction's own record of its changes
(:mod:`migrate.store.bbg_changes`): every write path that changes bbg's rows is checked
against an independent recomputation from the rows SQLite itself changed
(:mod:`tests.support.change_oracle`), with the changes held in memory and spilled to the
TEMP table alike."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from fences import generations
from migrate import transfer
from migrate.share import apply_stream
from migrate.share.retention import nohistory
from migrate.store import ARCHIVE_ORDER, Head, bbg_changes, bbgdb, imports, open_store, retention
from migrate.store.codec import CONTENT, HEADS
from migrate.store.graph import publish
from tests.share.helpers import stream, tail_bytes
from tests.share.stores import graph_store, graph_writes
from tests.store.helpers import birth, follow
from tests.store.test_digest_links import _chain
from tests.support.change_oracle import install
from tests.support.stores import tx_put_raw
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


@pytest.mark.parametrize("budget", [None, 0, 200], ids=["held", "spilled", "spilled-midway"])
def test_a_key_changed_again_counts_with_what_the_transaction_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    """bbg keeps the last change of a key (``Transaction::stage`` into a ``BTreeMap``,
    cyberia-to/bbg ``rs/src/storage/database/transaction.rs`` @ a0d38a0827b1): the record
    keeps keys, the value is the row the transaction leaves, no row a removal -- held, all
    spilled, or spilled between two changes of a key (a 200-byte budget: a key or two)."""
    if budget is not None:
        monkeypatch.setattr(bbg_changes, "SPILL_BYTES", budget)
    seen: list[bytes | None] = []
    install(monkeypatch, seen)
    with open_store(tmp_path / "s", create=True) as store:
        a = birth("a")
        a.apply(store)
        old, kept = next(iter(a.contents.items()))
        gone, twice = b"w" * 32, b"t" * 32
        later = Head(7, b"h" * 32)
        with store.transaction() as tx:
            tx.put(CONTENT, gone, b"\x01first")  # written, then deleted: a removal
            tx.set_head(a.namespace, Head(5, b"g" * 32))
            tx.delete(CONTENT, gone)
            tx.delete(CONTENT, old)  # deleted, then written again: the row
            tx_put_raw(tx, CONTENT, twice, b"\x01one")  # written twice: the second bytes
            tx.put(CONTENT, old, kept)
            tx_put_raw(tx, CONTENT, twice, b"\x01two")
            tx.set_head(a.namespace, later)
        want = bbgdb.change_id({
            (CONTENT, gone): None, (CONTENT, old): kept, (CONTENT, twice): b"\x01two",
            (HEADS, a.namespace): later.encode(),
        })  # fmt: skip
        assert seen[-1] == want
        assert bbg_changes.recorded(store._conn) == want


def test_the_record_holds_keys_not_values(tmp_path: Path) -> None:
    """A transaction's record of its changes holds the changed keys, not their values: six
    rows of 1 MiB (under the spill budget, which values used to count) leave well under 1 MiB
    of Python objects behind them (SQLite's own cache is not traced), and the id is the one
    of those rows."""
    big = {bytes([i]) * 32: b"\x01" + bytes([i]) * (1 << 20) for i in range(6)}
    with open_store(tmp_path / "s", create=True) as store:
        with store.transaction() as tx:
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                for i in range(6):  # each value made here and dropped after its put
                    tx.put(CONTENT, bytes([i]) * 32, b"\x01" + bytes([i]) * (1 << 20))
                held = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
        assert held < 1 << 20, held
        assert bbg_changes.recorded(store._conn) == bbgdb.change_id(
            {(CONTENT, k): v for k, v in big.items()}
        )
