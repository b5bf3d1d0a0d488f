"""What ``inspect`` and ``doctor`` say about transfers, read-only.

* a **sealed source** (status ``export-v1``): its seal (manifest, target, nonce, prior), whether
  the seal still recomputes from the store's heads, and the progress of the transfer as the
  target records it (the source itself is never written after sealing, so its progress is
  read from the target store named in the seal, read-only, when it is reachable);
* a **target with transfers**: every transfer import, its state (``staging``, ``active``),
  its cursor (table, rows and bytes copied) and the source it comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bbg_core.errors import MigrateError
from fences import generations
from migrate.rules.transfer_form import Cursor, manifest_of
from migrate.store import imports
from migrate.store.graph import heads
from migrate.transfer.source import export_seal
from migrate.transfer.target import RECORD_FORMAT, STREAM


def sealed_source(db: Any) -> dict[str, Any] | None:
    """The sealed-source section of a store's report, or None if it is not sealed."""
    marker, _ = generations.read_status(db)
    seal = export_seal(db)
    if seal is None and marker != generations.EXPORT_MARKER:
        return None
    if seal is None:
        return {"seal": None, "seal_valid": False, "progress": None, "target_found": False}
    valid = manifest_of(seal.target, seal.nonce, seal.prior, heads(db)) == seal.manifest
    doc: dict[str, Any] = {"seal": seal.to_json(), "seal_valid": valid}
    doc.update(_progress_at(seal.detail.get("target_store", {}).get("path"), seal.manifest))
    return doc


def _progress_at(path: str | None, manifest: bytes) -> dict[str, Any]:
    """The transfer's progress as recorded in the target at ``path`` (read-only)."""
    from migrate.store.readonly import open_readonly

    if path is None or not Path(path).is_dir():
        return {"target_found": False, "progress": None, "state": None}
    iid = manifest.hex()
    try:
        with open_readonly(Path(path)) as db, db.read():
            cursor = imports.cursor_of(db, iid, STREAM)
            state = imports.import_state(db, iid)
    except MigrateError:
        return {"target_found": False, "progress": None, "state": None}
    return {
        "target_found": True,
        "progress": None if cursor is None else Cursor.decode(cursor[0]).to_json(),
        "state": state,
    }


def transfers(db: Any) -> list[dict[str, Any]]:
    """Every transfer recorded in a (target) store, in manifest order."""
    out: list[dict[str, Any]] = []
    for iid, doc, state in imports.seals(db):
        if doc.get("format") != RECORD_FORMAT:
            continue
        cursor = imports.cursor_of(db, iid, STREAM)
        out.append(
            {
                "manifest": doc["manifest"],
                "state": state,
                "source_store_id": doc["source"]["store_id"],
                "namespaces": len(doc["sources"]),
                "progress": None if cursor is None else Cursor.decode(cursor[0]).to_json(),
            }
        )
    return out


def section(db: Any) -> dict[str, Any]:
    """The ``transfer`` section of ``inspect``/``doctor``: sealed source and transfers."""
    return {"sealed_source": sealed_source(db), "transfers": transfers(db)}


#: What the transfer adds to the report of a BBG store (``migrate.probe.inspect.Sections``):
#: a sealed source (manifest, target, progress) and the transfers into this store.
STORE_SECTIONS = {"transfer": section}

