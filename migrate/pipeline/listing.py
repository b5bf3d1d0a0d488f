"""``imports``: every import a store records, read-only.

One entry per row of ``bbg_import_v1_imports`` (migrations and transfers alike), joined with
its seal (the source fingerprint), its journal (the last stage completed), its copy cursors
(rows staged so far) and its receipt.  The state is the table's (``staging``, ``active``,
``discarded``), refined by the journal: an active import whose source was retired is
``retired`` (``retiring`` while a retirement was interrupted).  An import in progress names the
exact ``discard`` command that gives it up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migrate.store import imports
from migrate.store.layout import resolve_store_dir
from migrate.store.readonly import ReadHandle, open_readonly

# Journal stages in the order an import reaches them ("source" is bookkeeping, not a stage).
STAGES = ("sealed", "staged", "validated", "activated", "retiring", "retired", "discarded")


def _stage_reached(conn: ReadHandle, iid: str) -> str | None:
    done = imports.journal_stages(conn, iid)
    reached = [s for s in STAGES if s in done]
    return reached[-1] if reached else None


def _state(table_state: str, stage: str | None) -> str:
    if table_state == "active" and stage in ("retiring", "retired"):
        return stage
    return table_state


def _entry(conn: ReadHandle, directory: Path, iid: str, table_state: str, created: int
           ) -> dict[str, Any]:  # fmt: skip
    seal = imports.seal_of(conn, iid)
    stage = _stage_reached(conn, iid)
    state = _state(table_state, stage)
    rows = (seal or {}).get("rows")
    return {
        "import_id": iid,
        "state": state,
        "kind": "transfer" if seal is not None and "format" in seal else "migration",
        "created_transaction": created,
        "stage": stage,
        "source": None if seal is None else seal.get("source"),
        "rows_staged": imports.rows_staged(conn, iid),
        "rows_total": sum(rows.values()) if isinstance(rows, dict) else None,
        "receipt": imports.receipt_of(conn, iid),
        "discard_command": imports.discard_command(directory, iid)
        if table_state == "staging" else None,
    }  # fmt: skip


def list_imports(store_dir: Path | None) -> dict[str, Any]:
    """The ``imports`` document (``schemas/imports.schema.json``) of the store in
    ``store_dir`` (the default store when None); reads only."""
    directory = resolve_store_dir(store_dir, create=False)
    with open_readonly(directory) as conn, conn.read():
        found = [_entry(conn, directory, i, s, c) for i, s, c in imports.all_imports(conn)]
    return {"kind": "bbg-imports", "path": str(directory), "imports": found}


def summary(doc: dict[str, Any]) -> str:
    """One line per import for humans (ids in full)."""
    lines = []
    for imp in doc["imports"]:
        source = imp["source"] or {}
        lines.append(
            f"{imp['import_id']}  {imp['state']}  {imp['kind']}  stage {imp['stage'] or '-'}  "
            f"{imp['rows_staged']} rows staged"
            + (f" of {imp['rows_total']}" if imp["rows_total"] is not None else "")
            + (f"  source sha256 {source['sha256']}" if "sha256" in source else "")
        )
        if imp["discard_command"]:
            lines.append(f"    to give it up: {imp['discard_command']}")
    return "\n".join(lines) if lines else f"{doc['path']}: no imports"

