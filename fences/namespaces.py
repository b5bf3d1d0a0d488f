"""Per-namespace fences: a fenced namespace refuses every new write, forever.

An import that takes over an origin's history fences the origin when it activates, so a
writer that still holds the old namespace cannot extend a history that now lives elsewhere.
The fence is checked inside the GraphPort's write transaction, *after* the request-replay
check: an exact retry of a request that was committed before the fence still resolves to
its original head.  There is deliberately no function to remove a fence.
"""

from __future__ import annotations

from typing import Any

from bbg_core.errors import Fenced
from fences._store import FenceReader, FenceWriter


def fence(tx: FenceWriter, namespace: bytes, *, import_id: str, reason: str,
          subject: bytes | None = None, manifest: bytes | None = None) -> bool:  # fmt: skip
    """Fence ``namespace`` in ``tx`` for the import that moved its history to ``subject``
    under ``manifest`` (bbg keeps ``subject ‖ manifest`` as the fence's value in the real
    database, which needs both; the SQLite engine records the import and reason only); True
    if it was not fenced before (idempotent)."""
    value = None if subject is None or manifest is None else subject + manifest
    if value is not None and len(value) != 64:
        raise ValueError("a fence names a 32-byte subject and a 32-byte manifest id")
    return tx.put_fence(namespace, import_id, reason, value)


def fence_of(db: FenceReader, namespace: bytes) -> dict[str, Any] | None:
    """The fence record of ``namespace`` (import_id, reason, transaction), or None."""
    return db.fence_record(namespace)


def require_unfenced(db: FenceReader, namespace: bytes) -> None:
    """Raise Fenced if ``namespace`` is fenced."""
    record = fence_of(db, namespace)
    if record is not None:
        transferred = str(record["reason"]).startswith("transferred into this store")
        why = (
            "it came here by a sealed transfer and bbg accepts no new writes to it"
            if transferred
            else "its history now continues elsewhere, write there instead"
        )
        raise Fenced(
            f"{db.path}: namespace {namespace.hex()} is fenced (import {record['import_id']}: "
            f"{record['reason']}); {why}",
            path=str(db.path),
            namespace=namespace,
            import_id=record["import_id"],
        )
