"""An independent check of the SQLite engine's bbg change id (:mod:`migrate.store.bbg_changes`).

The store computes the id from what its write transaction tells it.  This oracle does not
ask the transaction: TEMP triggers on the writing connection catch every insert, update and
delete SQLite itself performs on bbg's rows (the five application tables and the status row),
whatever statement made it, and the seal is read from its record.  Just before COMMIT the
oracle computes bbg's id from those rows and requires the store to have recorded the same
(or, when nothing changed, to have left its recorded id alone).  A write path that changes
bbg's rows without telling the transaction's record fails here.

:func:`install` patches the SQLite :class:`~migrate.store.store.Store` of this process; the
test suite turns it on for every test with ``BBG_CHECK_CHANGE_ID=1`` (tests/conftest.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from migrate.store import bbg_changes, bbgdb
from migrate.store.export import EXPORT_TABLE, SEAL_KEY
from migrate.store.store import Store

_CAUGHT = "change_oracle"  # TEMP (a trigger's statements name no schema)
#: (table, key expression, value expression) of each table holding bbg's rows.
_TABLES = [(t, "{r}.key", "{r}.value") for t in bbgdb.APPLICATION_TABLES] + [
    (bbgdb.MIGRATION, "CAST('status' AS BLOB)", "CAST({r}.status AS BLOB)")
]


def _statements() -> list[str]:
    out = [f"CREATE TEMP TABLE IF NOT EXISTS {_CAUGHT} (name TEXT NOT NULL, key BLOB NOT NULL, "
           "value BLOB, PRIMARY KEY (name, key)) WITHOUT ROWID"]  # fmt: skip
    for i, (table, key, value) in enumerate(_TABLES):
        put = (f"INSERT INTO {_CAUGHT} VALUES ('{table}', {{k}}, {{v}}) "
               "ON CONFLICT (name, key) DO UPDATE SET value = excluded.value;")  # fmt: skip
        new = put.format(k=key.format(r="NEW"), v=value.format(r="NEW"))
        old = put.format(k=key.format(r="OLD"), v="NULL")
        for event, body in (("INSERT", new), ("UPDATE", old + new), ("DELETE", old)):
            out.append(f"CREATE TEMP TRIGGER IF NOT EXISTS change_oracle_{i}_{event} AFTER "
                       f"{event} ON main.{table} BEGIN {body} END")  # fmt: skip
    return out


def _seal(tx: Any, first: int) -> bytes | None:
    """The seal this transaction wrote (its row's transaction number is one of its own)."""
    if tx.one("SELECT 1 FROM sqlite_master WHERE name = ?", (EXPORT_TABLE,)) is None:
        return None
    row = tx.one(f"SELECT target, nonce, prior, manifest FROM {EXPORT_TABLE} "
                 "WHERE id = 1 AND transaction_no BETWEEN ? AND ?", (first, tx.number))  # fmt: skip
    return None if row is None else b"".join(bytes(c) for c in row)


def expected_id(tx: Any, first: int) -> bytes | None:
    """bbg's id of what the triggers caught in ``tx`` (and its seal), None: no change."""
    changes: dict[tuple[str, bytes], bytes | None] = {
        (str(n), bytes(k)): None if v is None else bytes(v)
        for n, k, v in tx.rows(f"SELECT name, key, value FROM {_CAUGHT}")
    }
    seal = _seal(tx, first)
    if seal is not None:
        changes[(bbgdb.MIGRATION, SEAL_KEY)] = seal
    return bbgdb.change_id(changes) if changes else None


def install(monkeypatch: pytest.MonkeyPatch, seen: list[bytes | None] | None = None) -> None:
    """Check every SQLite write transaction of this process (module docstring); ``seen``
    collects the expected id of each checked transaction."""
    new_tx, before_commit = Store._new_tx, Store._before_commit

    def _new_tx(self: Store, number: int, **kw: Any) -> Any:
        tx = new_tx(self, number, **kw)
        if getattr(tx, "bbg", None) is not None:
            for statement in _statements():
                tx.scratch(statement)
            tx.scratch(f"DELETE FROM {_CAUGHT}")
            tx.oracle_first = number
            tx.oracle_before = bbg_changes.recorded(tx)
        return tx

    def _before_commit(self: Store, tx: Any) -> None:
        if getattr(tx, "bbg", None) is None:
            before_commit(self, tx)
            return
        want = expected_id(tx, tx.oracle_first)
        before_commit(self, tx)
        got = bbg_changes.recorded(tx)
        if want is None:
            assert got == tx.oracle_before, "no change to bbg's rows, yet the id moved"
        else:
            assert got == want, f"recorded change id {got!r} != {want.hex()} (a missed write?)"
        if seen is not None:
            seen.append(want)

    monkeypatch.setattr(Store, "_new_tx", _new_tx)
    monkeypatch.setattr(Store, "_before_commit", _before_commit)
