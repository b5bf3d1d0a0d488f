"""``restore`` of a Fjall store's snapshot (format 3) into a new store on the Fjall engine.

The keyspace is built the way ``run`` builds a new store aside: every row goes straight into
sorted segments of a new keyspace (:class:`~migrate.store.keyspace_build._Builder`, bulk
segments at seqno 0, bbg's 33 partitions, directory 0700, ``bbg.lock`` 0600), the five
tables and every other partition exactly as the snapshot carries them -- bbg's markers
(status, fences, ``last_transaction`` / ``last_commit`` change ids) included, byte for byte.
When the snapshot carries the toolkit's records, they are restored into a new records
store beside it (the ledger, imports, receipts ... exactly, the five tables empty), as a
SQLite restore restores them (:mod:`migrate.share.restore`).

Every line is checked as it is read (as for a SQLite restore), plus the key order the
segments need (each table's and partition's lines together, keys strictly ascending).  At
the footer the digest and counts must agree; the keyspace is then committed inside the
temporary directory and **read back**: every partition's row count, the links, the archive
digest and the content check (:func:`migrate.rules.shape.check_shape`, as a migration checks
content) on what a reader of the new keyspace sees, and the records' ledger end.  Only then
are the records committed and fsynced, and both published by :class:`~migrate.share.publish.
Aside` (records first, then the keyspace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from bbg_core.errors import StoreError, ValidationFailed
from bbg_core.files import fsync_file
from migrate.rules.shape import check_shape
from migrate.share.publish import Aside
from migrate.share.restore import (
    _bad,
    _Loader,
    check_counts,
    check_ledger_end,
    check_tables,
    prepare_records,
    read_body,
    summary,
)
from migrate.share.snapshot_fjall import ABSENT
from migrate.store import bbgdb, open_store
from migrate.store.codec import ARCHIVE_ORDER, CONTENT
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, SQLITE
from migrate.store.fjall import open_keyspace
from migrate.store.keyspace import FjallView, empty_records
from migrate.store.keyspace_build import _Builder
from migrate.store.layout import DB_NAME
from migrate.store.tables import StoreTables

_PAGE_ROWS = 512
_PAGE_BYTES = 4 * 1024 * 1024


class _FjallLoader(_Loader):
    """The five tables' rows and the partition lines into the keyspace being built; the
    records (when the snapshot has them) into the records store, as a SQLite restore."""

    def __init__(self, conn: Connection, header: dict[str, Any], builder: _Builder) -> None:
        super().__init__(conn, header)
        self.builder = builder
        self.last: dict[str, bytes] = {}
        self.current: str | None = None
        self.part_pending: list[tuple[bytes, bytes]] = []
        self.part_bytes = 0

    def _in_order(self, name: str, key: bytes, number: int) -> None:
        if name != self.current:
            if name in self.last:
                raise _bad(number, f"the lines of {name} are not together (out of order)")
            self.flush()
            self.current = name
        last = self.last.get(name)
        if last is not None and key <= last:
            raise _bad(number, f"{name}: key {key.hex()} does not follow the previous key "
                       "(out of order)")  # fmt: skip
        self.last[name] = key

    def add(self, doc: dict[str, Any], number: int) -> None:
        if "key" in doc and doc.get("table") in ARCHIVE_ORDER:
            self._in_order(doc["table"], bytes.fromhex(doc["key"]), number)
        super().add(doc, number)

    def partition_row(self, partition: str, key: bytes, value: bytes, number: int) -> None:
        if partition in ARCHIVE_ORDER or partition not in bbgdb.PARTITIONS:
            raise _bad(number, f"partition {partition!r} is not one of bbg's other partitions")
        self._in_order(partition, key, number)
        self.part_pending.append((key, value))
        self.part_bytes += len(key) + len(value)
        if len(self.part_pending) >= _PAGE_ROWS or self.part_bytes >= _PAGE_BYTES:
            self.flush()

    def flush(self, table: str | None = None) -> None:
        """Push what is pending (the five tables' pages and the current partition's)."""
        for name in [table] if table else list(self.pending):
            if self.pending[name]:
                self.builder.push(name, self.pending[name])
            self.pending[name] = []
            self.pending_bytes[name] = 0
        if self.part_pending and self.current is not None:
            self.builder.push(self.current, self.part_pending)
        self.part_pending, self.part_bytes = [], 0

    def finish(self, footer: dict[str, Any], sha: str, number: int) -> None:
        self.flush()
        check_counts(self, footer, sha, number)
        self.builder.commit()
        with open_keyspace(self.builder.target) as ks:
            view = FjallView(ks, self.builder.target, self.conn)  # not closed: ks is
            for name in ks.partitions():
                found = sum(1 for _ in ks.scan(name))
                expected = self.counts.get(name, 0) if name in ARCHIVE_ORDER else \
                    self.parts.get(name, 0)  # fmt: skip
                if found != expected:
                    raise StoreError(f"{self.builder.target}: reading the new keyspace back "
                                     f"finds {found} rows in {name}, not {expected}; nothing "
                                     "was restored", partition=name)  # fmt: skip
            tables = StoreTables(view)
            check_tables(tables, footer, number)
            _check_content(tables)
        check_ledger_end(self.conn, self, number)


class _Content:
    """The content rows of the read-back keyspace, as the RowSource ``check_shape`` reads."""

    def __init__(self, tables: StoreTables) -> None:
        self._tables = tables

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in ARCHIVE_ORDER}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return self._tables.rows(table) if table == CONTENT else iter(())

    def get(self, table: str, key: bytes) -> bytes | None:
        return self._tables.get(table, key)


def _check_content(tables: StoreTables) -> None:
    report = check_shape(_Content(tables), hemera_digest=False)
    if report.errors:
        first = report.errors[0]
        raise ValidationFailed(
            f"snapshot: {first['code']}: {first['detail']}; nothing was restored",
            errors=report.errors[:1000],
        )


def load_fjall(
    stream: BinaryIO, aside: Aside, header: dict[str, Any], digest: Any, read: int,
    max_line: int, report: Callable[[int], None] | None,
) -> dict[str, Any]:  # fmt: skip
    """Read the rest of the snapshot into a new Fjall store in ``aside`` (module docstring)."""
    with _Builder(aside.store, bbgdb.PARTITIONS, dir_mode=bbgdb.DIR_MODE) as builder:
        if header["records"] == ABSENT:
            conn = empty_records()  # scratch only: the store gets no records, as its source
        else:
            open_store(aside.records, create=True, engine=SQLITE).close()
            conn = Connection(aside.records / DB_NAME)
        try:
            with conn.write(action="restore"):
                prepare_records(conn, header)
                loader = _FjallLoader(conn, header, builder)
                footer, number = read_body(stream, loader, digest, read, max_line, report)
                loader.finish(footer, digest.hexdigest(), number)
        finally:
            conn.close()
    if header["records"] != ABSENT:
        fsync_file(aside.records / DB_NAME)
    return summary(header, footer, FJALL, [])
