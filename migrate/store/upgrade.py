"""Schema version 1 → 2: add the transaction ledger to an existing store (see
:func:`migrate.store.store.upgrade_store`, the only caller)."""

from __future__ import annotations

import json
from typing import Any

import schemas
from migrate.store import layout, ledger
from migrate.store.connection import Connection


def _ledger_statements() -> list[str]:
    """The statements of schemas/store.sql that version 2 added (all ``IF NOT EXISTS``)."""
    return [s for s in layout.statements(schemas.sql("store")) if "IF NOT EXISTS" in s
            and any(name in s for name in ledger.TABLES)]  # fmt: skip


def _events(conn: Connection) -> list[dict[str, Any]]:
    """The import, fence and generation events of a store's current state."""
    events: list[dict[str, Any]] = []
    for iid, receipt in conn.rows(
        "SELECT i.import_id, r.receipt FROM bbg_import_v1_imports AS i JOIN "
        "bbg_import_v1_receipts AS r ON r.import_id = i.import_id WHERE i.state = 'active' "
        "ORDER BY i.import_id"
    ):
        seal = conn.one("SELECT seal FROM bbg_import_v1_seals WHERE import_id = ?", (iid,))
        events.append({"kind": "import", "import_id": iid, "receipt": json.loads(receipt),
                       "seal": None if seal is None else json.loads(seal[0])})  # fmt: skip
    for ns, iid, reason in conn.rows(
        "SELECT namespace, import_id, reason FROM bbg_import_v1_fences ORDER BY namespace"
    ):
        events.append({"kind": "fence", "namespace": bytes(ns).hex(), "import_id": iid,
                       "reason": reason})  # fmt: skip
    status = conn.one("SELECT status, generation FROM bbg_import_v1 WHERE id = 1")
    if status is not None:
        events.append({"kind": "generation", "status": status[0], "generation": status[1]})
    return events


def upgrade(conn: Connection) -> dict[str, Any]:
    """Upgrade the store on ``conn`` (identity checked by the caller) in one transaction."""
    with conn.write(action="upgrade") as mark_clean:
        version = int(conn.one("PRAGMA user_version")[0])  # type: ignore[index]
        if version == layout.SCHEMA_VERSION:
            mark_clean()
            return {"kind": "bbg-upgrade", "from": version, "to": version, "upgraded": False,
                    "tx": None}  # fmt: skip
        for statement in _ledger_statements():
            conn.execute(statement)
        row = conn.one("SELECT last_transaction FROM bbg_storage_v1 WHERE id = 1")
        assert row is not None
        number = int(row[0]) + 1
        conn.execute(
            f"INSERT INTO {ledger.HEADS} (tx, namespace, before, after, request) "
            "SELECT ?, key, NULL, value, NULL FROM application_heads",
            (number,),
        )
        conn.execute(
            f"INSERT INTO {ledger.ROWS} (tx, tbl, key) SELECT ?, 0, key FROM application_content "
            "WHERE key NOT IN (SELECT value FROM application_history)",
            (number,),
        )
        conn.execute(
            f"INSERT INTO {ledger.ROWS} (tx, tbl, key) "
            "SELECT ?, 1, key FROM application_unique_claims",
            (number,),
        )
        events = _events(conn)
        at = ledger.append(conn, number, "upgrade", None, events)
        conn.execute("UPDATE bbg_storage_v1 SET last_transaction = ? WHERE id = 1", (number,))
        conn.execute(f"PRAGMA user_version = {layout.SCHEMA_VERSION}")
        recorded = {
            "heads": _count(conn, ledger.HEADS, number), "rows": _count(conn, ledger.ROWS, number),
            "events": len(events),
        }  # fmt: skip
    return {"kind": "bbg-upgrade", "from": version, "to": layout.SCHEMA_VERSION,
            "upgraded": True, "tx": number, "at": at, "recorded": recorded}  # fmt: skip


def _count(conn: Connection, table: str, tx: int) -> int:
    row = conn.one(f"SELECT count(*) FROM {table} WHERE tx = ?", (tx,))
    return 0 if row is None else int(row[0])
