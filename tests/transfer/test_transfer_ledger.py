"""The ledger sees a transfer: the seal is one ledger transaction of the source,
the activation one of the target, and the target's tail carries the moved history there
(``tail`` and ``doctor`` read SQLite stores only in this version)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from migrate.share import doctor, tail
from tests.pipeline.helpers import cli
from tests.transfer.helpers import migrated_store, records_db


def _kinds(store: Path) -> list[str]:
    db = sqlite3.connect(f"file:{records_db(store)}?mode=ro", uri=True)
    try:
        return [str(r[0]) for r in db.execute("SELECT kind FROM bbg_ledger_v1 ORDER BY tx")]
    finally:
        db.close()


def test_transfer_seal_and_activation_are_ledger_transactions(
    tmp_path: Path, transfer_engine: str
) -> None:
    source = migrated_store(tmp_path)
    before = _kinds(source)
    assert before[0] == "create" and "activate" in before  # the conversion's activation
    target = tmp_path / "target"
    res = cli("transfer", "--yes", str(source), "--store", str(target))
    assert res.returncode == 0, res.stderr
    assert _kinds(source) == before + ["transfer-seal"]  # sealed for good, in the ledger
    kinds = _kinds(target)
    assert kinds[0] == "create" and kinds.count("activate") == 1
    if transfer_engine != "sqlite":
        return
    events = list(tail(target))
    activation = [e for e in events if e["kind"] == "commit"]
    assert len(activation) == 50 and len({e["tx"] for e in activation}) == 1
    assert [e["kind"] for e in events if e["kind"] in ("generation", "import")] == [
        "generation", "import"]  # fmt: skip
    assert doctor(target)["healthy"]
