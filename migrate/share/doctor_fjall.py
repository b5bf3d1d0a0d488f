"""``doctor`` of a store on the Fjall engine (the real BBG database): a read-only report in the
shape of :func:`migrate.share.doctor.doctor`, with the engine's own checks.

Nothing is written and ``bbg.lock`` is not taken (the keyspace is read as
:func:`migrate.store.fjall.open_keyspace` reads it, while its owner may write).  Checks:

* ``keyspace``: every block and journal checksum, the block indexes, levels against the files
  (:func:`migrate.store.fjall.report.check`); bbg's open checks (the import guard, the status
  marker, the marker lengths: :func:`migrate.store.bbgdb.open_problems`) and partitions bbg
  does not know (its archive reader refuses them);
* ``tables``: row shapes, codecs and links of the five tables read from the keyspace;
* ``generation`` and ``fences``: bbg's status marker and ``neuron-fence`` keys;
* ``sqlite`` and ``leftovers``: the toolkit's records beside the keyspace
  (``<store>.bbg-migrate``), when there are any.  A store this toolkit never wrote (bbg's own,
  or one the cyber code made) has none: the report says so (``records: absent``, a note, not
  a warning) and checks what the keyspace alone proves.

Left to the sharing issue (sharing on real stores): the transaction ledger (``ledger`` is
null) and the classification of content rows that are no history commit
(``content_classes`` is empty, ``orphan_content`` counts nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fences import generations
from migrate.progress import Observer, phase
from migrate.rules.report import cell_report
from migrate.share.doctor import (
    EMPTY_TABLES,
    NO_LEFTOVERS,
    NULL_STORE,
    SAMPLE,
    _Findings,
    _hash_suite,
    _leftovers,
    _schema_problems,
    _sealed_source,
    _sqlite_checks,
    report_doc,
    stray_files,
)
from migrate.store import bbgdb
from migrate.store.engine import records_dir
from migrate.store.keyspace import FENCE_PREFIX


def doctor_fjall(store_dir: Path, *, progress: Observer | None = None) -> dict[str, Any]:
    """The doctor report of the Fjall store in ``store_dir`` (see the module docstring).
    ``progress``: stages ``keyspace`` (items checked) and ``tables`` (rows read)."""
    from migrate.store.fjall.report import check_path
    from migrate.store.keyspace_store import open_fjall_view
    from migrate.store.tables import StoreTables
    from migrate.transfer.report import section as transfer_section

    f = _Findings()
    problems, warnings = f.problems, f.warnings
    notes: list[str] = []
    check = check_path(store_dir, phase(progress, "keyspace", None))
    for found in check["problems"][:SAMPLE]:
        problems.append({"code": "keyspace-damage", "detail": str(found["message"])[:500]})
    has_records = (records_dir(store_dir) / "bbg.sqlite3").exists()
    keyspace: dict[str, Any] = {
        "ok": check["ok"], "checked": check["checked"], "bbg_open": [],
        "unknown_partitions": [], "records": "present" if has_records else "absent",
        "notes": notes,
    }  # fmt: skip
    if not has_records:
        notes.append(
            f"no records of this toolkit beside the store ({records_dir(store_dir)}): it was "
            "written by the cyber code or bbg's own converter; imports, receipts, seals of "
            "legacy sources and staged rows are not checked (there are none)"
        )
    tables = EMPTY_TABLES
    storage: dict[str, Any] = NULL_STORE
    marker: str | None = None
    reached: str | None = None
    fences: list[dict[str, Any]] = []
    leftovers = NO_LEFTOVERS
    sqlite_doc: dict[str, Any] | None = None
    transfer: dict[str, Any] = {"sealed_source": None, "transfers": []}
    bbg_last: str | None = None
    if check["ok"]:
        with open_fjall_view(Path(store_dir), check=False) as view, view.read():
            refusals = bbgdb.open_problems(Path(store_dir), view.live_get)
            keyspace["bbg_open"] = refusals
            problems.extend({"code": "bbg-refuses-open", "detail": r} for r in refusals)
            unknown = bbgdb.unknown_partitions(view.partitions())
            keyspace["unknown_partitions"] = unknown
            if unknown:
                problems.append({"code": "unknown-partitions", "detail": "partitions bbg does "
                                 f"not know (its archive reader refuses them): {unknown}"})
            report = phase(progress, "tables", None)
            tables = f.read("tables", lambda: cell_report(_Rows(StoreTables(view)),
                            progress=report), EMPTY_TABLES)  # fmt: skip
            problems.extend(tables.get("errors", []))
            unknown_status: tuple[str | None, str | None] = (None, None)
            marker, reached = f.read("status marker", lambda: generations.read_status(view),
                                     unknown_status)  # fmt: skip
            last = view.live_get(bbgdb.METADATA, bbgdb.LAST_TRANSACTION)
            bbg_last = None if last is None else last.hex()
            for key, value in view.live_rows(bbgdb.MIGRATION, prefix=FENCE_PREFIX):
                namespace = key[len(FENCE_PREFIX):]
                record = view.fence_record(namespace) or {}
                fences.append({
                    "namespace": namespace.hex(),
                    "import_id": record.get("import_id") or value[32:].hex(),
                    "reason": str(record.get("reason") or "neuron-fence"),
                })  # fmt: skip
            if has_records:
                records = view.records
                sqlite_doc = _sqlite_checks(records, problems)
                problems.extend(f.read("schema", lambda: _schema_problems(records), []))
                storage = f.read("records", lambda: _records_storage(records), storage)
                _hash_suite(storage, problems)
                leftovers = f.read("leftovers", lambda: _leftovers(
                    records, Path(store_dir), problems, warnings), NO_LEFTOVERS)  # fmt: skip
                transfer = f.read("transfer", lambda: transfer_section(view), transfer)
    sealed = transfer["sealed_source"]
    if sealed is not None:
        _sealed_source(sealed, problems, warnings)
    no_files: list[tuple[str, str]] = []
    for name, why in f.read("files beside the store", lambda: stray_files(Path(store_dir)),
                            no_files):  # fmt: skip
        warnings.append({"code": "leftover-file", "detail": f"{name}: {why}"})
    return report_doc(
        store_dir, problems, warnings, storage=storage, sqlite=sqlite_doc, tables=tables,
        status=(marker, reached), fences=fences, ledger=None, leftovers=leftovers,
        transfer=transfer, orphans={"count": 0, "sample": []}, classes={}, engine="fjall",
        bbg_last_transaction=bbg_last, keyspace=keyspace,
    )  # fmt: skip


def _records_storage(records: Any) -> dict[str, Any]:
    from migrate.share.doctor import _storage

    storage: dict[str, Any] = _storage(records)
    return storage


class _Rows:
    """The keyspace's five tables as the RowSource :func:`cell_report` reads."""

    def __init__(self, tables: Any) -> None:
        self._tables = tables

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in bbgdb.APPLICATION_TABLES}

    def rows(self, table: str) -> Any:
        return self._tables.rows(table)

    def get(self, table: str, key: bytes) -> bytes | None:
        value: bytes | None = self._tables.get(table, key)
        return value

    def boundary(self, namespace: bytes) -> Any:
        return self._tables.boundary(namespace)  # nohistory's, in the records

    def excised(self, content_id: bytes) -> bool:
        return bool(self._tables.excised(content_id))  # excise's, in the records
