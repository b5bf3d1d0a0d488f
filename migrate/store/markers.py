"""The store's records of what :mod:`fences` decides: the status marker and the fences.

* the status marker (table ``bbg_import_v1``, one row): ``(status, generation)``, absent in a
  store nothing was ever imported into;
* the namespace fences (table ``bbg_import_v1_fences``): per namespace, the import that
  fenced it and why, never removed.

``fences`` never sees SQL: every handle of a store offers these as methods --
``read_status()`` and ``fence_record(namespace)`` on a connection, a store and a write
transaction; ``write_status(marker, generation)`` and ``put_fence(namespace, ...)`` on a write
transaction -- which is the whole of what :class:`fences._store.FenceReader` and
``FenceWriter`` ask for.  A write also names itself in the transaction's ledger entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class _Reader(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


class _RowReader(_Reader, Protocol):
    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


class _Writer(_Reader, Protocol):
    number: int

    def execute(self, sql: str, params: Any = ()) -> Any: ...

    def mark(self, kind: str, ref: str | None = None) -> None: ...

    def note_event(self, doc: dict[str, Any]) -> None: ...


def read_status(db: _Reader) -> tuple[str | None, str]:
    """``(status marker or None if absent, the informational generation column)``."""
    row = db.one("SELECT status, generation FROM bbg_import_v1 WHERE id = 1")
    if row is None:
        return None, "original"
    return str(row[0]), str(row[1])


def write_status(tx: _Writer, marker: str, generation: str) -> None:
    """Set the status marker (and the generation in force beside it) in ``tx``."""
    tx.mark("promote")
    tx.note_event({"kind": "generation", "status": marker, "generation": generation})
    tx.execute(
        "INSERT INTO bbg_import_v1 (id, status, generation, transaction_no) VALUES (1, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
        "generation = excluded.generation, transaction_no = excluded.transaction_no",
        (marker, generation, tx.number),
    )


def fence_record(db: _Reader, namespace: bytes) -> dict[str, Any] | None:
    """The fence of ``namespace`` (``import_id``, ``reason``, ``transaction``), or None."""
    row = db.one(
        "SELECT import_id, reason, transaction_no FROM bbg_import_v1_fences WHERE namespace = ?",
        (namespace,),
    )
    if row is None:
        return None
    return {"import_id": row[0], "reason": row[1], "transaction": row[2]}


def fence_rows(db: _RowReader) -> Iterator[tuple[Any, ...]]:
    """``(namespace, import_id, reason)`` of every fence, as stored, in namespace order."""
    yield from db.rows(
        "SELECT namespace, import_id, reason FROM bbg_import_v1_fences ORDER BY namespace"
    )


def put_fence(tx: _Writer, namespace: bytes, import_id: str, reason: str) -> bool:
    """Fence ``namespace`` in ``tx``; True if it was not fenced before (idempotent)."""
    cur = tx.execute(
        "INSERT INTO bbg_import_v1_fences (namespace, import_id, reason, transaction_no) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (namespace) DO NOTHING",
        (namespace, import_id, reason, tx.number),
    )
    if cur.rowcount:
        tx.mark("fence")
        tx.note_event(
            {"kind": "fence", "namespace": namespace.hex(), "import_id": import_id,
             "reason": reason}
        )  # fmt: skip
    return bool(cur.rowcount)
