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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from bbg_core.errors import StoreError, UsageError, ValidationFailed
from bbg_core.files import fsync_dir, fsync_file, owned_tempdir, sweep
from migrate.progress import Observer, counter, stream_size
from migrate.rules.links import validate_links
from migrate.share.apply import read_line
from migrate.share.common import MAX_LINE, canonical, schema_problem
from migrate.share.snapshot import REPORT_EVERY, STORAGE, columns, line_hash, retained_tables
from migrate.share.verify import ContentLedger
from migrate.store import ledger, open_store
from migrate.store.codec import ARCHIVE_ORDER, CONTENT
from migrate.store.connection import Connection
from migrate.store.digest import archive_digest
from migrate.store.engine import SQLITE
from migrate.store.layout import DB_NAME
from migrate.store.readonly import refuse_fjall, refuse_fjall_creation
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


def _pristine(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise UsageError(
            f"{dest}: restore needs a pristine destination (absent, or an empty directory)",
            path=str(dest),
        )


class _Loader:
    """Inserts records into the new store inside one transaction, checking table shapes."""

    def __init__(self, conn: Connection) -> None:
        self.tx = Tx(conn, 0, ledgered=False)  # the snapshot carries the ledger
        self.content = ContentLedger(self.tx, "restored")
        self.columns = {t: columns(conn, t) for t in retained_tables(conn)}
        self.counts: dict[str, int] = {}
        self.pending: dict[str, list[tuple[bytes, bytes]]] = {t: [] for t in ARCHIVE_ORDER}
        self.pending_bytes: dict[str, int] = dict.fromkeys(ARCHIVE_ORDER, 0)
        self.storage: dict[str, Any] | None = None

    def add(self, doc: dict[str, Any], number: int) -> None:
        table = doc["table"]
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
            self.tx.execute(
                f"INSERT INTO {table} ({', '.join(names)}) VALUES "
                f"({', '.join('?' for _ in names)})",
                values,
            )
        else:
            raise _bad(number, f"table {table} is not retained by this store schema (or its "
                       "columns differ); the snapshot comes from another schema version")

    def flush(self, table: str | None = None) -> None:
        for name in [table] if table else list(self.pending):
            self.tx.put_many(name, self.pending[name])
            self.pending[name] = []
            self.pending_bytes[name] = 0


def _cell(value: Any) -> Any:
    return bytes.fromhex(value["hex"]) if isinstance(value, dict) else value


def restore(
    stream: BinaryIO,
    dest: Path,
    *,
    max_line: int = MAX_LINE,
    progress: Observer | None = None,
) -> dict[str, Any]:
    """Restore the snapshot read from ``stream`` into the new store directory ``dest``.
    ``progress``: an observer (stage ``restore``, bytes read out of the stream's size when it
    is a regular file, unknown for a pipe)."""
    dest = Path(dest)
    refuse_fjall(dest)
    _pristine(dest)
    refuse_fjall_creation(dest, "restore")
    parent = dest.parent
    if not parent.is_dir():
        raise UsageError(f"{parent}: no such directory for the restore", path=str(dest))
    prefix = f".{dest.name}.restore-"
    try:
        sweep(parent, prefix)  # what killed restores into DEST left (their owners are gone)
        aside = owned_tempdir(parent, prefix)
        tmp = aside.__enter__()
    except OSError as exc:
        raise StoreError(f"{parent}: cannot create a temporary directory: {exc}") from exc
    # The store is built in a directory inside the locked one: the store's own directory
    # lock (migrate.store.creation) is a different lock from the one that says "alive".
    built = tmp / "store"
    try:
        report = counter(progress, "restore", stream_size(stream), "bytes")
        summary = _load(stream, built, max_line, report)
        fsync_file(built / DB_NAME)
        fsync_dir(built)
        _pristine(dest)  # still pristine: never replace what appeared meanwhile
        if dest.exists():
            dest.rmdir()  # empty, checked just above; rename cannot replace it portably
        os.rename(built, dest)
        fsync_dir(parent)
        shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"{dest}: restore failed: {exc}", path=str(dest)) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        aside.__exit__(None, None, None)
    return {**summary, "dest": str(dest)}


def _load(
    stream: BinaryIO, directory: Path, max_line: int, report: Callable[[int], None] | None
) -> dict[str, Any]:
    first = read_line(stream, 1, max_line)
    if first is None:
        raise _bad(1, "empty stream: no snapshot header")
    header = _decode(first, 1, "snapshot-header")
    digest = hashlib.sha256(first)
    second = read_line(stream, 2, max_line)
    if second is None:
        raise _bad(2, "the stream ends after the header (truncated)")
    _decode(second, 2, "snapshot-time")  # the creation time: not in the footer's digest
    open_store(directory, create=True, engine=SQLITE).close()
    conn = Connection(directory / DB_NAME)
    try:
        with conn.write(action="restore"):
            # The snapshot carries the whole ledger, creation included: it replaces ours.
            for table in ledger.TABLES:
                conn.execute(f"DELETE FROM {table}")
            conn.execute(f"UPDATE {STORAGE} SET store_id = ? WHERE id = 1", (header["store_id"],))
            loader = _Loader(conn)
            number = 2
            read = len(first) + len(second)
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
                    footer = doc
                    break
                loader.add(doc, number)
                digest.update(raw)
            if read_line(stream, number + 1, max_line) is not None:
                raise _bad(number + 1, "data after the footer")
            if report is not None:
                report(read)
            loader.flush()
            loader.content.check()  # as a migration checks content: codec, Blob/Data ids
            _check_footer(conn, loader, footer, digest.hexdigest(), number)
    finally:
        conn.close()
    return {
        "kind": "bbg-restore",
        "basis_tx": header["basis_tx"],
        "store_id": header["store_id"],
        "records": footer["records"],
        "archive_digest_sha256": footer["archive_digest_sha256"],
    }


def _check_footer(
    conn: Connection, loader: _Loader, footer: dict[str, Any], sha: str, number: int
) -> None:
    if footer["sha256"] != sha:
        raise _bad(number, "footer sha256 does not match the lines before it")
    counts = {t: n for t, n in footer["counts"].items() if n}
    if counts != loader.counts or footer["records"] != sum(loader.counts.values()):
        raise _bad(number, f"footer counts {counts} do not match the records {loader.counts}")
    if loader.storage is None:
        raise _bad(number, "no storage record")
    tables = StoreTables(conn)
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
    if ledger.last_tx(conn) != loader.storage["last_transaction"]:
        raise _bad(number, f"the ledger ends at transaction {ledger.last_tx(conn)}, the storage "
                   f"record says {loader.storage['last_transaction']}")  # fmt: skip
    conn.execute(
        f"UPDATE {STORAGE} SET hash_suite = ?, last_transaction = ? WHERE id = 1",
        (loader.storage["hash_suite"], loader.storage["last_transaction"]),
    )
