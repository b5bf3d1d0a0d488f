"""The seal's ``prior`` on a SQLite store: bbg's ``last_transaction`` change id, recorded by
the store (:mod:`migrate.store.bbg_changes`), as on the real BBG database.

The expected values are those of ``test_bbg_end_state`` (derived from cyberia-to/bbg
@36cc420b ``database/mod.rs`` ``change_id`` and ``application/transfer.rs``, applied to bbg's
transfer test scenario; research note issue27-findings.md D.4, D.5): the same changes written
through either engine's write transaction give bbg's id, and a transfer of that source seals
with bbg's prior and manifest.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from migrate import transfer
from migrate.store import Head, open_store
from migrate.store.bbgdb import change_id
from migrate.store.connection import Connection
from migrate.store.export import seal_change_id
from migrate.transfer.source import PRIOR_IS_COUNTER, export_seal, prior_of, read_state
from tests.transfer.helpers import bbg_last, last_transaction, raw
from tests.transfer.test_bbg_end_state import MANIFEST, NONCE, PRIOR, TARGET, Keys, _publish


def _write(store: Path, engine: str, changes: list[Keys]) -> None:
    """Each change set in one write transaction of the tool (the head overwritten, the other
    rows immutable puts), on a store of ``engine``."""
    with open_store(store, create=True, engine=engine) as db:
        for rows in changes:
            with db.transaction() as tx:
                for (table, key), value in sorted(rows.items()):
                    if table == "application_heads":
                        tx.set_head(key, Head.decode(value))
                    else:
                        tx.put(table, key, value)


def test_the_same_changes_give_bbgs_change_id_on_both_engines(
    tmp_path: Path, transfer_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    _write(source, transfer_engine, [_publish(2, 0), _publish(3, 1)])
    assert bbg_last(source) == PRIOR  # bbg's change id of publish 3

    monkeypatch.setattr(transfer.tgt, "target_id", lambda store_id: TARGET)
    job = transfer.TransferJob(source=source, store=tmp_path / "target", nonce=NONCE.hex(),
                               content_check="none")  # fmt: skip
    assert "prior_warning" not in transfer.plan(job)["source"]
    outcome = transfer.run(job)
    assert outcome.status == "complete" and outcome.manifest == MANIFEST.hex()
    assert outcome.receipt is not None and outcome.receipt["prior"] == PRIOR.hex()
    with open_store(source, maintenance=True) as db:
        seal = export_seal(db)
    assert seal is not None and seal.prior == PRIOR and "prior_warning" not in seal.detail
    # The sealing transaction is bbg's too: the seal key and status export-v1.
    assert bbg_last(source) == seal_change_id(TARGET + NONCE + PRIOR + MANIFEST)


@pytest.mark.engine("sqlite")
def test_a_store_with_no_bbg_transaction_has_a_zero_prior(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with open_store(store, create=True):
        pass
    assert bbg_last(store) is None
    conn = Connection(store / "bbg.sqlite3")
    try:
        state = read_state(conn, store)
    finally:
        conn.close()
    assert state.prior == bytes(32) and state.prior_warning is None


@pytest.mark.engine("sqlite")
def test_an_overwritten_head_is_a_change_and_a_repeated_put_is_none(tmp_path: Path) -> None:
    store = tmp_path / "s"
    # The second: every row already there (no change) but the head, overwritten (a change).
    _write(store, "sqlite", [_publish(2, 0), _publish(2, 0)])
    one = _publish(2, 0)
    assert bbg_last(store) == change_id({k: v for k, v in one.items()
                                         if k[0] == "application_heads"})  # fmt: skip
    _write(store, "sqlite", [_publish(3, 1)])
    assert bbg_last(store) == PRIOR


@pytest.mark.engine("sqlite")
def test_a_store_that_recorded_no_id_seals_with_its_counter_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before the id was recorded (its storage row lacks the column): the
    seal binds the counter, with the named warning in plan and seal; its next write that
    changes bbg's tables records a known id again."""
    source = tmp_path / "source"
    _write(source, "sqlite", [_publish(2, 0), _publish(3, 1)])
    raw(source, "ALTER TABLE bbg_storage_v1 DROP COLUMN bbg_last_transaction")
    monkeypatch.setattr(transfer.tgt, "target_id", lambda store_id: TARGET)
    job = transfer.TransferJob(source=source, store=tmp_path / "target", nonce=NONCE.hex(),
                               content_check="none")  # fmt: skip
    assert transfer.plan(job)["source"]["prior_warning"] == PRIOR_IS_COUNTER
    counter = last_transaction(source)
    outcome = transfer.run(job)
    assert outcome.status == "complete"
    with open_store(source, maintenance=True) as db:
        seal = export_seal(db)
    assert seal is not None and seal.prior == prior_of(counter) != PRIOR
    assert seal.detail["prior_warning"] == PRIOR_IS_COUNTER

    again = tmp_path / "again"
    _write(again, "sqlite", [_publish(2, 0)])
    raw(again, "ALTER TABLE bbg_storage_v1 DROP COLUMN bbg_last_transaction")
    _write(again, "sqlite", [_publish(3, 1)])
    assert bbg_last(again) == PRIOR


@pytest.mark.engine("sqlite")
def test_a_restored_store_records_no_id(tmp_path: Path) -> None:
    from tests.pipeline.helpers import cli
    from tests.transfer.test_bbg_transfer import NS, publish

    source = tmp_path / "source"
    with open_store(source, create=True) as db:
        publish(db, NS, 2)
    assert bbg_last(source) is not None
    snap = tmp_path / "s.ndjson"
    res = cli("--store", str(source), "snapshot")
    assert res.returncode == 0, res.stderr
    snap.write_text(res.stdout)
    restored = tmp_path / "restored"
    res = cli("--store", str(restored), "restore", str(snap))
    assert res.returncode == 0, res.stderr
    conn = sqlite3.connect(restored / "bbg.sqlite3")
    try:
        assert conn.execute("SELECT bbg_last_transaction FROM bbg_storage_v1").fetchone() == (
            None,
        )
    finally:
        conn.close()
