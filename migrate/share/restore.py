"""``restore``: a bbg-snapshot/1 stream into a pristine store, published only if all of it holds.

The destination must not exist, or be an empty directory.  A new store is created in a
temporary sibling directory; every line is checked as it is read (LF-terminated, canonical
JSON, its ``h``, its schema, header first and footer last, the table it names exists with the
same columns) and its row inserted, all in one write transaction.  At the footer: the SHA-256
over every prior line, the counts, the record total, the archive digest of the restored five
tables and their links (:func:`migrate.rules.links.validate_links`) must all agree; nothing may
follow the footer.  Only then is the transaction committed, the file and directory fsynced,
and the directory renamed onto the destination.  Every content row is checked exactly as a
migration checks content (:mod:`migrate.share.verify`).  Any failure removes the temporary
directory and names the line (``line=``); the directory stays locked while the restore runs,
so what a killed restore left is removed by the next restore into ``dest`` (and reported by
``doctor``).  The restored store gets a new store id; everything else the snapshot carries
(including ``last_transaction``) is restored exactly.

A Fjall store's snapshot (format 3: partition lines, records present or absent) restores
here into SQLite (:meth:`_Loader.partition_row`: the status marker and fences kept as a
SQLite store keeps them, bbg's change ids not kept, anything else refused;
:func:`_ledger_catch_up`), and into a new Fjall store by :mod:`.restore_fjall`, which reuses
the line checks, the loader and the footer checks here.  :mod:`.copies` picks the engine;
:mod:`.publish` builds aside and publishes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from bbg_core.errors import UsageError, ValidationFailed
from bbg_core.files import fsync_file
from fences import generations
from migrate.rules.links import validate_links
from migrate.share.apply import read_line
from migrate.share.common import canonical, schema_problem
from migrate.share.publish import Aside
from migrate.share.snapshot import REPORT_EVERY, line_hash, retained_tables
from migrate.share.snapshot_fjall import ABSENT, FJALL_FORMAT
from migrate.share.verify import ContentLedger
from migrate.store import bbg_changes, bbgdb, ledger, open_store, restoring
from migrate.store.catalog import columns
from migrate.store.codec import ARCHIVE_ORDER, CONTENT
from migrate.store.connection import Connection
from migrate.store.digest import archive_digest
from migrate.store.engine import FJALL, SQLITE
from migrate.store.keyspace import FENCE_PREFIX, FENCE_VALUE_LEN, decode_status
from migrate.store.layout import DB_NAME
from migrate.store.storage_row import STORAGE
from migrate.store.tables import StoreTables
from migrate.store.tx import Tx

_BATCH = 512
_BATCH_BYTES = 4 * 1024 * 1024  # a value may be 16 MiB: never hold 512 of them
_ROW_KEYS = frozenset({"table", "key", "value", "h"})
# Linear-time forms of the hex patterns (a repeated group costs memory per repetition).
_HEX = re.compile(r"[0-9a-f]*")
_H = re.compile(r"[0-9a-f]{16}")
_FIVE = frozenset(ARCHIVE_ORDER)
_NAMED_KEYS = frozenset({"table", "row", "h"})
_BBG_TABLE = re.compile(r"bbg_[a-z0-9_]+")
_COLUMN = re.compile(r"[a-z_][a-z0-9_]*")


def _plain_row_ok(doc: dict[str, Any]) -> bool:
    """True only for a five-table record that schemas/snapshot-record accepts.

    Nearly every line of a snapshot is one; checking it directly is ~3x faster than the
    general validator.  Anything this does not accept still goes to the schema, which then
    decides (and words the error).
    """
    if doc.keys() != _ROW_KEYS:
        return False
    table, key, value, h = doc["table"], doc["key"], doc["value"], doc["h"]
    return (
        isinstance(table, str) and table in _FIVE
        and isinstance(key, str) and 2 <= len(key) <= 128 and len(key) % 2 == 0
        and _HEX.fullmatch(key) is not None
        and isinstance(value, str) and len(value) % 2 == 0 and _HEX.fullmatch(value) is not None
        and isinstance(h, str) and _H.fullmatch(h) is not None
    )  # fmt: skip


def _named_row_ok(doc: dict[str, Any]) -> bool:
    """True only for a record of another retained table (columns by name: the ledger's rows,
    most of them) that schemas/snapshot-record accepts; the rest goes to the schema."""
    if doc.keys() != _NAMED_KEYS:
        return False
    table, row, h = doc["table"], doc["row"], doc["h"]
    if not (isinstance(table, str) and _BBG_TABLE.fullmatch(table) and isinstance(row, dict)
            and row and isinstance(h, str) and _H.fullmatch(h)):  # fmt: skip
        return False
    for name, value in row.items():
        if not (isinstance(name, str) and _COLUMN.fullmatch(name)):
            return False
        if value is None or type(value) is int or type(value) is str:
            continue
        if not (type(value) is dict and value.keys() == {"hex"}):
            return False
        blob = value["hex"]
        if not (type(blob) is str and len(blob) % 2 == 0 and _HEX.fullmatch(blob)):
            return False
    return True


def _bad(line: int, detail: str, code: str = "bad-snapshot") -> ValidationFailed:
    return ValidationFailed(
        f"snapshot line {line}: {detail}; nothing was restored",
        line=line,
        errors=[{"code": code, "detail": f"line {line}: {detail}"}],
    )


def _decode(raw: bytes, number: int, schema: str | None = None) -> dict[str, Any]:
    """Check one line; ``schema`` None: a record, or the footer when it says ``bbg: end``."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        # Bad UTF-8 or JSON, an integer of more digits than Python parses, or nesting deeper
        # than the parser goes: none of them is a snapshot line.
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise _bad(number, f"not UTF-8 JSON a snapshot line can be ({why})") from exc
    if not isinstance(doc, dict) or canonical(doc) != raw:
        raise _bad(number, "not a canonical JSON object")
    if doc.get("h") != line_hash(doc):
        raise _bad(number, "line hash h does not match: the line was changed", "bad-line-hash")
    if schema is None:
        if _plain_row_ok(doc) or _named_row_ok(doc):
            return doc
        schema = "snapshot-footer" if doc.get("bbg") == "end" else "snapshot-record"
    problem = schema_problem(doc, schema)
    if problem:
        raise _bad(number, f"not a {schema} line ({problem})")
    return doc


def pristine(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise UsageError(
            f"{dest}: restore needs a pristine destination (absent, or an empty directory)",
            path=str(dest),
        )


class _Loader:
    """Inserts records into the new store inside one transaction, checking table shapes."""

    def __init__(self, conn: Connection, header: dict[str, Any]) -> None:
        self.conn = conn
        self.tx = Tx(conn, 0, ledgered=False)  # the snapshot carries the ledger
        self.content = ContentLedger(self.tx, "restored")
        self.columns = {t: columns(conn, t) for t in retained_tables(conn)}
        self.counts: dict[str, int] = {}
        self.pending: dict[str, list[tuple[bytes, bytes]]] = {t: [] for t in ARCHIVE_ORDER}
        self.pending_bytes: dict[str, int] = dict.fromkeys(ARCHIVE_ORDER, 0)
        self.storage: dict[str, Any] | None = None
        # A Fjall store's snapshot (format 3): its partition lines, and whether it has records.
        self.fjall = header["format"] == FJALL_FORMAT
        self.with_records = header.get("records") != ABSENT
        self.parts: dict[str, int] = {}
        self.status: bytes | None = None
        self.fences: list[bytes] = []
        self.not_kept: list[str] = []
        self.caught_up: int | None = None  # the ledger transaction a SQLite restore added

    def add(self, doc: dict[str, Any], number: int) -> None:
        if "partition" in doc:
            if not self.fjall:
                raise _bad(number, "a partition line in a snapshot of a SQLite store")
            self.parts[doc["partition"]] = self.parts.get(doc["partition"], 0) + 1
            self.partition_row(doc["partition"], bytes.fromhex(doc["key"]),
                               bytes.fromhex(doc["value"]), number)  # fmt: skip
            return
        table = doc["table"]
        if not self.with_records and "row" in doc:
            raise _bad(number, f"a {table} record in a snapshot that says its store has no "
                       "records")  # fmt: skip
        self.counts[table] = self.counts.get(table, 0) + 1
        if table in self.pending:
            batch = self.pending[table]
            key = bytes.fromhex(doc["key"])
            batch.append((key, bytes.fromhex(doc["value"])))
            if table == CONTENT:
                self.content.add(key, number)
            self.pending_bytes[table] += len(batch[-1][1])
            if len(batch) >= _BATCH or self.pending_bytes[table] >= _BATCH_BYTES:
                self.flush(table)
        elif table == STORAGE:
            if self.storage is not None or set(doc["row"]) != {"hash_suite", "last_transaction"}:
                raise _bad(number, "one storage record with hash_suite and last_transaction")
            self.storage = doc["row"]
        elif table in self.columns and set(doc["row"]) == set(self.columns[table]):
            names = self.columns[table]
            values = [_cell(doc["row"][n]) for n in names]
            restoring.insert_record(self.tx, table, names, values)
        else:
            raise _bad(number, f"table {table} is not retained by this store schema (or its "
                       "columns differ); the snapshot comes from another schema version")

    def partition_row(self, partition: str, key: bytes, value: bytes, number: int) -> None:
        """One of bbg's keys outside the five tables, into a SQLite store: the status marker
        and the fences are kept as a SQLite store keeps them, bbg's change ids are not kept
        (a restored SQLite store records none, :mod:`migrate.store.bbg_changes`); anything
        else has no place in a SQLite store."""
        if partition == bbgdb.MIGRATION and key == bbgdb.STATUS:
            self.status = value
        elif (partition == bbgdb.MIGRATION and key.startswith(FENCE_PREFIX)
              and len(value) == FENCE_VALUE_LEN):  # fmt: skip
            self.fences.append(key[len(FENCE_PREFIX):])
        elif partition == bbgdb.METADATA and key in (bbgdb.LAST_TRANSACTION, bbgdb.LAST_COMMIT):
            self.not_kept.append(f"{partition}[{key.decode()}]")
        else:
            raise UsageError(
                f"snapshot line {number}: bbg's key {key.hex()} of partition {partition} has no "
                "place in a SQLite store; restore this snapshot into a store on the Fjall engine "
                "(the default); nothing was restored", line=number, partition=partition,
            )  # fmt: skip

    def finish(self, footer: dict[str, Any], sha: str, number: int) -> None:
        """The checks at the footer (module docstring); then the storage row is set."""
        self.flush()
        self.content.check()  # as a migration checks content: codec, Blob/Data ids
        check_counts(self, footer, sha, number)
        check_tables(StoreTables(self.conn), footer, number)
        check_ledger_end(self.conn, self, number)
        if self.fjall:
            _markers_into_sqlite(self.conn, self)

    def flush(self, table: str | None = None) -> None:
        for name in [table] if table else list(self.pending):
            self.tx.put_many(name, self.pending[name])
            self.pending[name] = []
            self.pending_bytes[name] = 0


def _cell(value: Any) -> Any:
    return bytes.fromhex(value["hex"]) if isinstance(value, dict) else value


def read_head(stream: BinaryIO, max_line: int) -> tuple[dict[str, Any], Any, int]:
    """The header and time lines: ``(header, the footer's running SHA-256, bytes read)``."""
    first = read_line(stream, 1, max_line)
    if first is None:
        raise _bad(1, "empty stream: no snapshot header")
    header = _decode(first, 1, "snapshot-header")
    digest = hashlib.sha256(first)
    second = read_line(stream, 2, max_line)
    if second is None:
        raise _bad(2, "the stream ends after the header (truncated)")
    _decode(second, 2, "snapshot-time")  # the creation time: not in the footer's digest
    return header, digest, len(first) + len(second)


def load_sqlite(
    stream: BinaryIO, aside: Aside, header: dict[str, Any], digest: Any, read: int,
    max_line: int, report: Callable[[int], None] | None,
) -> dict[str, Any]:  # fmt: skip
    """Read the rest of the snapshot into a new SQLite store in ``aside``."""
    directory = aside.store
    open_store(directory, create=True, engine=SQLITE).close()
    conn = Connection(directory / DB_NAME)
    try:
        with conn.write(action="restore"):
            prepare_records(conn, header)
            loader = _Loader(conn, header)
            footer, number = read_body(stream, loader, digest, read, max_line, report)
            loader.finish(footer, digest.hexdigest(), number)
            # snapshot/1 does not carry the SQLite engine's bbg change id: unknown
            bbg_changes.forget(conn)
    finally:
        conn.close()
    fsync_file(directory / DB_NAME)
    return summary(header, footer, SQLITE, loader.not_kept, loader.caught_up)


def prepare_records(conn: Connection, header: dict[str, Any]) -> None:
    """In the new store's write transaction: the snapshot's ledger and store id replace the
    new store's, unless the snapshot carries no records (a Fjall store the cyber code
    wrote: the new store keeps its own)."""
    if header.get("records") != ABSENT:
        restoring.take_identity(conn, header["store_id"])


def read_body(
    stream: BinaryIO, loader: _Loader, digest: Any, read: int, max_line: int,
    report: Callable[[int], None] | None,
) -> tuple[dict[str, Any], int]:  # fmt: skip
    """Every line after the time line into ``loader``; ``(footer, its line number)``."""
    number = 2
    while True:
        number += 1
        raw = read_line(stream, number, max_line)
        if raw is None:
            raise _bad(number, "the stream ends without a footer (truncated)")
        if report is not None:
            read += len(raw)
            if not number % REPORT_EVERY:
                report(read)
        doc = _decode(raw, number)
        if doc.get("bbg") == "end":
            break
        loader.add(doc, number)
        digest.update(raw)
    if read_line(stream, number + 1, max_line) is not None:
        raise _bad(number + 1, "data after the footer")
    if report is not None:
        report(read)
    return doc, number


def summary(header: dict[str, Any], footer: dict[str, Any], engine: str,
            not_kept: list[str], ledger_tx: int | None = None) -> dict[str, Any]:  # fmt: skip
    """The report of a restore."""
    doc = {
        "kind": "bbg-restore",
        "basis_tx": header["basis_tx"],
        "store_id": header["store_id"],
        "records": footer["records"],
        "archive_digest_sha256": footer["archive_digest_sha256"],
    }
    if header["format"] == FJALL_FORMAT:
        doc.update(engine=engine, source_engine=FJALL, source_records=header["records"],
                   not_kept=not_kept, ledger_tx=ledger_tx)  # fmt: skip
    return doc


def check_counts(loader: _Loader, footer: dict[str, Any], sha: str, number: int) -> None:
    """The footer's digest and counts against what was read (rows and partition lines)."""
    if footer["sha256"] != sha:
        raise _bad(number, "footer sha256 does not match the lines before it")
    counts = {t: n for t, n in footer["counts"].items() if n}
    parts = {p: n for p, n in footer.get("partitions", {}).items() if n}
    total = sum(loader.counts.values()) + sum(loader.parts.values())
    if counts != loader.counts or parts != loader.parts or footer["records"] != total:
        raise _bad(number, f"footer counts {counts} {parts} do not match the records "
                   f"{loader.counts} {loader.parts}")  # fmt: skip
    if loader.storage is None and loader.with_records:
        raise _bad(number, "no storage record")


def check_tables(tables: Any, footer: dict[str, Any], number: int) -> None:
    """The restored five tables' links and archive digest (against the footer's)."""
    errors = validate_links(tables)
    if errors:
        raise ValidationFailed(
            f"snapshot: the restored tables break the links ({errors[0]['code']}: "
            f"{errors[0]['detail']}); nothing was restored",
            line=number,
            errors=errors,
        )
    if archive_digest(tables).hex() != footer["archive_digest_sha256"]:
        raise _bad(number, "the restored tables' archive digest differs from the footer's")


def check_ledger_end(conn: Connection, loader: _Loader, number: int) -> None:
    """The restored ledger ends where the storage record says; the storage row set."""
    if loader.storage is None:
        return  # no records in the snapshot: the new store keeps its own ledger
    if ledger.last_tx(conn) != loader.storage["last_transaction"]:
        raise _bad(number, f"the ledger ends at transaction {ledger.last_tx(conn)}, the storage "
                   f"record says {loader.storage['last_transaction']}")  # fmt: skip
    restoring.set_storage(conn, loader.storage["hash_suite"], loader.storage["last_transaction"])


def _markers_into_sqlite(conn: Connection, loader: _Loader) -> None:
    """bbg's status marker and fences of a Fjall store's snapshot, as a SQLite store keeps
    them: the status row (its generation and transaction kept from the records when they
    carry one) and a fence record per fenced namespace (the records' own when present)."""
    now = ledger.last_tx(conn)
    if loader.status is None:
        restoring.set_status(conn, None, "", now)
    else:
        marker = decode_status(loader.status) or ""
        restoring.set_status(conn, marker, generations.generation_of(marker) or "original", now)
    # A SQLite store's ledger names every head move and every content or claim row it added;
    # the Fjall engine's records do not, for rows published in bulk.
    loader.caught_up = restoring.ledger_catch_up(conn)
    for namespace in loader.fences:
        restoring.add_fence(conn, namespace, "fenced in bbg_import_v1 (neuron-fence)", now)
