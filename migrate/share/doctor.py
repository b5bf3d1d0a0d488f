"""``doctor``: a read-only health report of a BBG store.

The file is opened read-only (:func:`migrate.store.readonly.open_readonly`: ``mode=ro``, or
``immutable=1`` when no ``-wal``/``-shm`` exist, so no file is created or changed) and every
check reads one consistent snapshot.  Checks:

* ``sqlite``: ``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check``;
* ``tables``: row shapes, codecs and the links of a cell store
  (:func:`migrate.rules.report.cell_report`), with the archive digests;
* ``generation``: the status marker and the reader generation it stands for;
* ``fences``: every fenced namespace;
* ``leftovers``: imports still in state ``staging``, staged rows and staged namespaces;
* ``transfer``: this store as a sealed transfer source (seal, whether it recomputes, progress
  read from the target) and transfers into it (:mod:`migrate.transfer.report`);
* ``content_classes``: content rows that are no history commit, by why they are there
  (:mod:`migrate.share.content_classes`: items a commit record lists, Data pair children,
  legacy record payloads, a birth transaction's content) and true ``orphans``;
* ``orphan_content``: the true orphans (count and the first ids);
* ``ledger``: the transaction ledger (schema version, transactions, last tx, retention
  records); a ledger that does not end at the store's last transaction, or a head the ledger
  did not put there, is a problem (``ledger-mismatch``); a version-1 store is a warning
  (``needs-upgrade``).  Retained boundaries (``nohistory``) and excised ids are part of the
  links (:mod:`migrate.rules.links`).

Problems (the report is unhealthy, exit 3): SQLite corruption, a shape or link error, a status
marker that is not a reader generation (except ``export-v1`` with a seal that recomputes: a
sealed transfer source, reported as a warning), a broken export seal, staged rows or staged
namespaces whose import is not in state ``staging`` (true leftovers).  Warnings (still
healthy): a sealed transfer source, imports in progress, true orphan content (content a legacy
import legitimately carries is classified, not warned about; an aborted commit may leave cache
content, see the design notes), and a writer that appeared while an immutable check ran.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from bbg_core.errors import StoreError
from fences import generations
from hashing import hemera
from migrate.progress import Observer, phase, step
from migrate.rules.report import cell_report
from migrate.share.common import DAMAGE as READ_DAMAGE
from migrate.share.content_classes import classify
from migrate.store import imports, ledger, leftovers, storage_row
from migrate.store.catalog import row_count, schema_version
from migrate.store.codec import ARCHIVE_ORDER, Head
from migrate.store.connection import Connection
from migrate.store.layout import PRE_LEDGER_VERSION
from migrate.store.markers import fence_rows
from migrate.store.readonly import db_file, open_sqlite_readonly
from migrate.store.references import non_commit_content
from migrate.store.sanity import (
    column_problems,
    foreign_key_violations,
    integrity_check,
    missing_tables,
)
from migrate.store.tables import StoreTables

SAMPLE = 20  # ids listed per finding (counts are exact)
T = TypeVar("T")


class _Source:
    """The store's five tables as the RowSource that :func:`cell_report` reads."""

    def __init__(self, conn: Connection) -> None:
        self._tables = StoreTables(conn)

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in ARCHIVE_ORDER}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return self._tables.rows(table)

    def get(self, table: str, key: bytes) -> bytes | None:
        return self._tables.get(table, key)

    def boundary(self, namespace: bytes) -> tuple[int, Head] | None:
        return self._tables.boundary(namespace)

    def excised(self, content_id: bytes) -> bool:
        return self._tables.excised(content_id)


def _ledger_section(
    conn: Connection, last_transaction: int, problems: list[dict[str, str]],
    warnings: list[dict[str, str]],
) -> dict[str, Any]:  # fmt: skip
    """The transaction ledger: its extent, and whether it agrees with the store."""
    if schema_version(conn) == PRE_LEDGER_VERSION:
        warnings.append({
            "code": "needs-upgrade",
            "detail": "schema version 1: no transaction ledger; run `bbg-migrate --store S "
            "upgrade` once before writing",
        })
        return {"schema_version": PRE_LEDGER_VERSION, "transactions": 0, "last_tx": None,
                "boundaries": 0, "excised": 0}  # fmt: skip
    last = ledger.last_tx(conn)
    count = row_count(conn, ledger.LEDGER)
    # Contiguous from its first row: tx 1 (the creation) or the upgrade that started it.
    first = ledger.first_tx(conn)
    if last != last_transaction or count != last - first + 1:
        problems.append({
            "code": "ledger-mismatch",
            "detail": f"the ledger holds {count} transactions up to {last}; the store "
            f"counts {last_transaction}",
        })
    # Every row of the five tables must be one the ledger accounts for (tail derives its
    # events from the ledger), and every live head where the ledger's last move left it.
    gap = ledger.describe_uncovered(ledger.uncovered(conn))
    if gap is not None:
        problems.append({"code": "ledger-mismatch", "detail": gap})
    bad, sample = ledger.bad_rows(conn, SAMPLE)
    problems.extend({"code": "bad-ledger-row", "detail": d} for d in sample)
    if bad > len(sample):
        problems.append({"code": "bad-ledger-row", "detail": f"{bad - len(sample)} more"})
    return {
        "schema_version": schema_version(conn),
        "transactions": count,
        "last_tx": last or None,
        "boundaries": row_count(conn, ledger.BOUNDARIES),
        "excised": row_count(conn, ledger.EXCISED),
    }


def _row_count(conn: Connection) -> int | None:
    """Rows of the five tables (a total for the ``tables`` stage; None if damage hides it:
    the check itself then says what is unreadable, the report never depends on this)."""
    try:
        return sum(row_count(conn, t) for t in ARCHIVE_ORDER)
    except DAMAGE:
        return None


def stray_files(store_dir: Path) -> list[tuple[str, str]]:
    """What a killed process left in or beside the store: ``(name, why)``."""
    from bbg_core.files import abandoned
    from migrate.store.creation import TEMP_PREFIX

    out = [
        (name, "left by an interrupted store creation; the next read-write open removes it")
        for name in sorted(os.listdir(store_dir)) if name.startswith(TEMP_PREFIX)
    ]  # fmt: skip
    parent = store_dir.resolve().parent
    for verb in ("restore", "backup"):
        for name, gone in abandoned(parent, f".{store_dir.resolve().name}.{verb}-"):
            out.append((
                str(parent / name),
                f"left by a killed {verb}; the next {verb} into this path removes it"
                if gone else f"a {verb} into this path is running",
            ))  # fmt: skip
    return out


# Doctor reports what reading a damaged file raises as findings; it never stops on them.
DAMAGE = (StoreError, *READ_DAMAGE)


class _Findings:
    """Problems and warnings, and sections read so that damage is a finding, not a crash."""

    def __init__(self) -> None:
        self.problems: list[dict[str, str]] = []
        self.warnings: list[dict[str, str]] = []

    def read(self, section: str, read: Callable[[], T], fallback: T) -> T:
        """``read()``, or ``fallback`` plus an ``unreadable`` problem if the file is damaged."""
        try:
            return read()
        except DAMAGE as exc:
            why = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
            self.problems.append({"code": "unreadable", "detail": f"{section}: {why}"[:500]})
            return fallback


def _storage(conn: Connection) -> dict[str, Any]:
    row = storage_row.first_row(conn)
    if row is None:
        raise StoreError("bbg_storage_v1 has no row")
    store_id, suite, last = row
    if not (isinstance(store_id, str) and isinstance(suite, str) and type(last) is int):
        raise StoreError("bbg_storage_v1 holds values of the wrong type")
    return {"store_id": store_id, "hash_suite": suite, "last_transaction": last}


def _schema_problems(conn: Connection) -> list[dict[str, str]]:
    """Tables the schema requires that the file lacks (every command that reads or writes
    one fails on it)."""
    return [{"code": "missing-table", "detail": f"table {name} is missing: the commands that "
             "read or write it fail; restore the store from a backup"}
            for name in missing_tables(conn, schema_version(conn))]  # fmt: skip


def _hash_suite(storage: dict[str, Any], problems: list[dict[str, str]]) -> None:
    """A hash suite this build does not compute: every writer refuses the store."""
    suite = storage["hash_suite"]
    if suite is not None and suite not in hemera.SUITES:
        problems.append({"code": "unknown-hash-suite", "detail": f"the store's content ids "
                         f"were made with hash suite {suite!r}; this build computes "
                         f"{' / '.join(hemera.SUITES)} and every writer refuses it"})  # fmt: skip


def _fences(conn: Connection) -> list[dict[str, Any]]:
    out = []
    for ns, iid, reason in fence_rows(conn):
        if type(ns) is not bytes or len(ns) != 32 or not isinstance(iid, str):
            raise StoreError("bbg_import_v1_fences holds a row of the wrong shape")
        out.append({"namespace": ns.hex(), "import_id": iid, "reason": str(reason)})
    return out


def doctor(store_dir: Path, *, progress: Observer | None = None) -> dict[str, Any]:
    """The doctor report of the store in ``store_dir`` (see the module docstring).

    Wherever SQLite can still read the file, the report is complete: a section that damage
    makes unreadable is an ``unreadable`` problem (exit 3), never an aborted check.
    ``progress``: an observer; stages ``integrity`` (one step: SQLite's check does not count)
    and ``tables`` (rows read out of the five tables' row counts).
    """
    db = db_file(store_dir)
    had_wal = Path(f"{db}-wal").exists()
    f = _Findings()
    problems, warnings = f.problems, f.warnings
    empty_tables = EMPTY_TABLES
    with open_sqlite_readonly(store_dir, check=False) as conn, conn.read():
        finish = step(progress, "integrity")
        sqlite_doc = _sqlite_checks(conn, problems)
        problems.extend(f.read("column values", lambda: column_problems(conn), []))
        problems.extend(f.read("schema", lambda: _schema_problems(conn), []))
        finish()
        sound = sqlite_doc["integrity"] == ["ok"]
        if sound:
            report = phase(progress, "tables", _row_count(conn) if progress else None)
            tables = f.read("tables", lambda: cell_report(_Source(conn), progress=report),
                            empty_tables)  # fmt: skip
            problems.extend(tables.get("errors", []))
        else:
            # Reading a damaged b-tree can fail half-way: report the damage, read no further.
            tables = empty_tables
        storage = f.read("bbg_storage_v1", lambda: _storage(conn), NULL_STORE)
        _hash_suite(storage, problems)
        unknown: tuple[str | None, str | None] = (None, None)
        marker, reached = f.read("status marker", lambda: generations.read_status(conn),
                                 unknown)  # fmt: skip
        generation = generations.generation_of(marker) if reached is not None else None
        last = storage["last_transaction"]
        empty_ledger: dict[str, Any] = {"schema_version": schema_version(conn),
                                        "transactions": 0, "last_tx": None, "boundaries": 0,
                                        "excised": 0}  # fmt: skip
        ledger_doc = f.read("transaction ledger", lambda: _ledger_section(
            conn, int(last or 0), problems, warnings), empty_ledger)  # fmt: skip
        from migrate.transfer.report import section as transfer_section

        no_transfer: dict[str, Any] = {"sealed_source": None, "transfers": []}
        transfer = f.read("transfer", lambda: transfer_section(conn), no_transfer)
        sealed = transfer["sealed_source"]
        if sealed is not None:
            _sealed_source(sealed, problems, warnings)
        elif generation is None and reached is not None:
            problems.append(
                {
                    "code": "unreadable-status",
                    "detail": f"status marker {marker!r} is not a reader generation: normal "
                    "opens are refused (an import was interrupted, or a newer tool wrote it)",
                }
            )
        no_fences: list[dict[str, Any]] = []
        fences = f.read("fences", lambda: _fences(conn), no_fences)
        leftovers = f.read("leftovers", lambda: _leftovers(conn, store_dir, problems, warnings),
                           NO_LEFTOVERS)  # fmt: skip
        no_classes: dict[str, Any] = {"classes": {}, "orphans": [], "unchecked": 0}
        content = no_classes
        if sound:
            content = f.read("orphan content",
                             lambda: classify(conn, non_commit_content(conn), SAMPLE), no_classes)
        orphan_count = content["classes"].get("orphans", 0)
        if orphan_count:
            unchecked = content["unchecked"]
            warnings.append(
                {
                    "code": "orphan-content",
                    "detail": f"{orphan_count} content rows are not the commit of any history "
                    "entry and no record, Data pair or birth transaction names them (kept: "
                    "content is immutable; see orphan_content)"
                    + (f"; {unchecked} were too many to try against the birth transactions"
                       if unchecked else ""),
                }
            )
    no_files: list[tuple[str, str]] = []
    files = f.read("files beside the store", lambda: stray_files(Path(store_dir)), no_files)
    for name, why in files:
        warnings.append({"code": "leftover-file", "detail": f"{name}: {why}"})
    if not had_wal and Path(f"{db}-wal").exists():
        warnings.append(
            {
                "code": "concurrent-writer",
                "detail": "a writer opened the store while it was checked; run doctor again",
            }
        )
    return report_doc(
        store_dir, problems, warnings, storage=storage, sqlite=sqlite_doc, tables=tables,
        status=(marker, reached), fences=fences, ledger=ledger_doc, leftovers=leftovers,
        transfer=transfer, orphans={"count": orphan_count, "sample": content["orphans"]},
        classes=content["classes"],
    )  # fmt: skip


EMPTY_TABLES: dict[str, Any] = {
    "tables": {}, "archive_digest_sha256": None, "valid": False, "namespaces": {}
}  # fmt: skip
NO_LEFTOVERS: dict[str, Any] = {
    "staging_imports": [], "staged_rows": 0, "staged_namespaces": 0,
    "stray_staged_rows": 0, "stray_staged_namespaces": 0,
}  # fmt: skip
NULL_STORE: dict[str, Any] = {"store_id": None, "hash_suite": None, "last_transaction": None}


def report_doc(
    store_dir: Path, problems: list[dict[str, str]], warnings: list[dict[str, str]], *,
    storage: dict[str, Any], sqlite: dict[str, Any] | None, tables: dict[str, Any],
    status: tuple[str | None, str | None], fences: list[dict[str, Any]],
    ledger: dict[str, Any] | None, leftovers: dict[str, Any], transfer: dict[str, Any],
    orphans: dict[str, Any], classes: dict[str, Any], **engine: Any,
) -> dict[str, Any]:  # fmt: skip
    """The doctor report (schemas/doctor.schema.json) of either engine; ``engine``: the
    fields only one engine's report has (the Fjall report's ``engine``, ``keyspace``...)."""
    marker, reached = status
    generation = generations.generation_of(marker) if reached is not None else None
    return {
        "kind": "bbg-doctor",
        "path": str(store_dir),
        **engine,
        "healthy": not problems,
        "store": dict(storage),
        "sqlite": sqlite,
        "tables": {k: tables[k] for k in ("tables", "archive_digest_sha256", "valid")},
        "namespaces": len(tables["namespaces"]),
        "generation": {"status": marker, "generation": generation, "highest_reached": reached},
        "fences": fences,
        "ledger": ledger,
        "leftovers": dict(leftovers),
        "transfer": transfer,
        "orphan_content": orphans,
        "content_classes": classes,
        "problems": problems,
        "warnings": warnings,
    }


def _sealed_source(
    sealed: dict[str, Any], problems: list[dict[str, str]], warnings: list[dict[str, str]]
) -> None:
    """A store sealed as a transfer source is healthy (and read-only for good) while its
    seal recomputes; a seal that does not, or 'export-v1' without a seal, is damage."""
    seal = sealed["seal"]
    if seal is None or not sealed["seal_valid"]:
        problems.append(
            {
                "code": "bad-export-seal",
                "detail": "status 'export-v1' but the export seal is missing or no longer "
                "recomputes from the heads: the sealed source was changed",
            }
        )
        return
    progress = sealed["progress"]
    where = (
        f"{progress['rows']} rows copied"
        + (", complete" if progress["complete"] else "")
        + (f", transfer {sealed['state']}" if sealed.get("state") else "")
        if progress is not None
        else "target not found or not prepared"
    )
    warnings.append(
        {
            "code": "sealed-source",
            "detail": f"sealed as the source of transfer {seal['manifest']} (target "
            f"{seal['target']}): it refuses every write for good; {where}",
        }
    )


def _sqlite_checks(conn: Connection, problems: list[dict[str, str]]) -> dict[str, Any]:
    try:
        integrity = integrity_check(conn)
        fk = foreign_key_violations(conn)
    except StoreError as exc:
        # Damage bad enough that the check itself stops ("database disk image is malformed").
        integrity, fk = [exc.message], []
    if integrity != ["ok"]:
        problems += [{"code": "sqlite-integrity", "detail": line} for line in integrity[:SAMPLE]]
    for row in fk[:SAMPLE]:
        problems.append(
            {"code": "sqlite-foreign-key", "detail": f"{row[0]} row {row[1]} -> {row[2]}"}
        )
    return {"integrity": integrity[:SAMPLE], "foreign_key_violations": len(fk)}


def _leftovers(
    conn: Connection, store_dir: Path, problems: list[dict[str, str]],
    warnings: list[dict[str, str]],
) -> dict[str, Any]:  # fmt: skip
    staging = leftovers.staging_imports(conn)
    for iid in staging:
        warnings.append({"code": "import-in-progress", "detail": f"import {iid} is staging: "
                         "rerun its command to finish it, or give it up with "
                         f"{imports.discard_command(store_dir, iid)}"})
    stray_rows = leftovers.stray_staged_rows(conn)
    stray_ns = leftovers.stray_staged_namespaces(conn)
    if stray_rows or stray_ns:
        problems.append(
            {
                "code": "staged-leftovers",
                "detail": f"{stray_rows} staged rows and {stray_ns} staged namespaces belong to "
                "no import in progress",
            }
        )
    return {
        "staging_imports": staging,
        "staged_rows": leftovers.staged_row_count(conn),
        "staged_namespaces": leftovers.staged_namespace_count(conn),
        "stray_staged_rows": stray_rows,
        "stray_staged_namespaces": stray_ns,
    }
