"""The Fjall engine of the store: the real BBG database, read and written as bbg does.

A store on this engine is a Fjall keyspace laid out as bbg's own engine lays it out
(:mod:`migrate.store.bbgdb`), and beside it the toolkit's records (``<store>.bbg-migrate``,
:func:`migrate.store.engine.records_dir`): a SQLite database with the records schema, whose
five application tables stay empty -- bbg's rows live in the keyspace only.

* **Reading** (:class:`KeyspaceRows`): one point-in-time snapshot of the keyspace
  (:func:`migrate.store.fjall.open_keyspace`, which never takes ``bbg.lock`` and reads beside
  a live owner) answers ``live_get`` / ``live_rows`` (:mod:`migrate.store.live`), the status
  marker and the fences.  :class:`FjallView` adds the records for a read-only handle; a store
  the cyber code wrote has none, and reads as a store with no import records.
* **Writing** (:class:`FjallTx`): a write transaction reads through its own changes (an
  overlay of puts and removals over the snapshot) and, at commit, writes them as **one Fjall
  batch**, fsynced (bbg's ``PersistMode::SyncAll``), with bbg's marker rows
  (``last_transaction`` = bbg's change id of the batch, :func:`bbgdb.with_markers`) -- then
  commits its records.  The keyspace is written first: a crash between the two leaves rows
  the records do not yet name, which every step re-derives from the keyspace on its rerun
  (an immutable put of the same bytes is a no-op; a head already at its target is reported,
  not moved again).  The handle holds ``bbg.lock`` (exclusive ``flock``, as bbg's own owner
  does) for its whole life, so bbg and another writer see the store as busy.
* **Status and fences** are bbg's own keys: ``bbg_import_v1["status"]`` and
  ``bbg_import_v1["neuron-fence\\0" ‖ origin]`` (64 bytes: subject ‖ manifest).  The records
  keep beside a fence which import wrote it and why.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from itertools import islice
from pathlib import Path
from typing import Any

from bbg_core.errors import Conflict, StoreError
from fences import generations
from migrate.store import bbgdb, markers
from migrate.store.codec import ARCHIVE_ORDER, CONTENT, HEADS, Head
from migrate.store.connection import Connection
from migrate.store.fjall import Keyspace
from migrate.store.tx import Tx, check_table

#: The key prefix of a neuron fence in ``bbg_import_v1`` (bbg ``application.rs``).
FENCE_PREFIX = b"neuron-fence\x00"
FENCE_VALUE_LEN = 64
#: The key prefix of a transferred namespace's reservation (bbg ``transfer.rs``).
SOURCE_PREFIX = b"s"
_NOTED = frozenset({"application_content", "application_unique_claims"})
#: SQL naming one of bbg's five tables: on a Fjall store they live in the keyspace, and the
#: records' tables of the same names stay empty, so such SQL is a bug (:func:`records_sql`).
_BBG_TABLE_SQL = re.compile(
    r"\bapplication_(?:content|unique_claims|requests|history|heads)\b")


def records_sql(path: Path, sql: str) -> str:
    """``sql`` for the records of a Fjall store; refused (StoreError) if it names one of bbg's
    five tables, which on this engine live in the keyspace, not in the records."""
    if _BBG_TABLE_SQL.search(sql):
        raise StoreError(
            f"{path}: a statement on bbg's tables reached the records of a Fjall store (they "
            f"live in the keyspace; this is a bug in bbg-migrate, please report it): {sql}",
            path=str(path),
        )  # fmt: skip
    return sql


def fence_key(namespace: bytes) -> bytes:
    """``neuron-fence\\0 ‖ namespace``: the key of ``namespace``'s fence in bbg_import_v1."""
    return FENCE_PREFIX + namespace


def decode_status(raw: bytes | None) -> str | None:
    """The status marker as text (bytes that are not UTF-8 are shown escaped, and are never
    a generation)."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")


class KeyspaceRows:
    """bbg's rows as one snapshot of the keyspace sees them (see the module docstring)."""

    def __init__(self, ks: Keyspace, directory: Path) -> None:
        self._ks = ks
        self.directory = directory
        self._parts = frozenset(ks.partitions())

    def close(self) -> None:
        self._ks.close()

    @property
    def keyspace(self) -> Keyspace:
        return self._ks

    def partitions(self) -> frozenset[str]:
        return self._parts

    def live_get(self, table: str, key: bytes) -> bytes | None:
        """The value under ``key`` in partition ``table``, or None."""
        if table not in self._parts:
            return None
        return self._ks.get(table, key)

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
        """Live rows of partition ``table`` (``prefix``, strictly after ``after``)."""
        if table not in self._parts:
            return iter(())
        rows = self._ks.scan(table, prefix=prefix, after=after)
        return rows if limit is None else islice(rows, limit)

    def versions(
        self, table: str, *, prefix: bytes = b"", min_seqno: int = 0
    ) -> Iterator[tuple[bytes, bytes, int]]:
        """Live rows of partition ``table`` in key order with the seqno of the batch that
        wrote each (its newest version); only those with seqno >= ``min_seqno`` (the
        segments entirely below it are not read: :meth:`Keyspace.entries`)."""
        if table not in self._parts:
            return
        for entry in self._ks.entries(table, prefix=prefix, min_seqno=min_seqno):
            if not entry.tombstone:
                yield entry.key, entry.value, entry.seqno

    def status(self) -> tuple[str | None, str]:
        """``(status marker, generation it stands for -- or the marker itself)``."""
        marker = decode_status(self.live_get(bbgdb.MIGRATION, bbgdb.STATUS))
        return marker, generations.generation_of(marker) or (marker or "original")


def _fence_record(rows: Any, records: Any, namespace: bytes) -> dict[str, Any] | None:
    value = rows.live_get(bbgdb.MIGRATION, fence_key(namespace))
    if value is None:
        # A namespace transferred into this store: bbg's 's' ‖ namespace = manifest, kept for
        # good, fences it as well (bbg application.rs apply_checked).
        reserved = rows.live_get(bbgdb.MIGRATION, SOURCE_PREFIX + namespace)
        if reserved is None:
            return None
        found = markers.fence_record(records, namespace)
        if found is None:  # written by bbg, or the records of its batch were lost
            found = {"import_id": reserved.hex(), "transaction": None,
                     "reason": "transferred into this store (bbg_import_v1 's' key)"}  # fmt: skip
        found["manifest"] = reserved.hex()
        return found
    record = markers.fence_record(records, namespace)
    if record is None:  # written by neuron or bbg, not by this toolkit
        record = {"import_id": None, "reason": "fenced in bbg_import_v1 (neuron-fence)",
                  "transaction": None}  # fmt: skip
    if len(value) == FENCE_VALUE_LEN:
        record["subject"] = value[:32].hex()
        record["manifest"] = value[32:].hex()
    return record


def empty_records() -> Connection:
    """An in-memory records database with the records schema and nothing in it: the records
    of a store this toolkit never wrote to."""
    from migrate.store import layout

    conn = Connection(Path(":memory:"))
    layout.create_schema(conn, layout.DEFAULT_HASH_SUITE)
    return conn


class FjallView(KeyspaceRows):
    """A read-only handle of a Fjall store: its rows and, when there are any, its records."""

    def __init__(self, ks: Keyspace, directory: Path, records: Connection) -> None:
        super().__init__(ks, directory)
        self.records = records
        self.engine = "fjall"

    @property
    def path(self) -> Path:
        return self.directory

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.records.close()

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        """One row of a query on the records."""
        return self.records.one(records_sql(self.directory, sql), params)

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]:
        """The rows of a query on the records."""
        return self.records.rows(records_sql(self.directory, sql), params, batch)

    def read(self) -> AbstractContextManager[None]:
        """A read snapshot of the records (the keyspace snapshot is fixed already)."""
        return self.records.read()

    def read_status(self) -> tuple[str | None, str]:
        return self.status()

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        return _fence_record(self, self.records, namespace)


class FjallTx(Tx):
    """A write transaction of a Fjall store (see the module docstring): bbg's rows in an
    overlay over ``rows``, the records in the SQLite transaction of ``conn``."""

    def __init__(self, conn: Connection, number: int, rows: KeyspaceRows, **kw: Any) -> None:
        super().__init__(conn, number, **kw)
        self._rows = rows
        self.changes: dict[tuple[str, bytes], bytes | None] = {}
        #: The bytes (keys and values) put into the overlay so far: the batch is held in memory
        #: until commit, so a caller that writes an unbounded input bounds it by this count.
        self.change_bytes = 0

    @property
    def path(self) -> Path:
        return self._rows.directory

    # -- reads through the overlay ----------------------------------------------------------
    def live_get(self, table: str, key: bytes) -> bytes | None:
        mine = self.changes.get((table, key), _ABSENT)
        if mine is not _ABSENT:
            return mine  # type: ignore[return-value]
        return self._rows.live_get(table, key)

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
        mine = sorted(
            (k, v) for (t, k), v in self.changes.items()
            if t == table and k.startswith(prefix) and (after is None or k > after)
        )  # fmt: skip
        rows = self._rows.live_rows(table, prefix=prefix, after=after)
        if mine:
            rows = _overlay(rows, mine)
        return rows if limit is None else islice(rows, limit)

    # -- writes into the overlay ------------------------------------------------------------
    def _set(self, table: str, key: bytes, value: bytes | None) -> None:
        self.changes[(table, key)] = value
        self.change_bytes += len(key) + (0 if value is None else len(value))
        self.wrote = self.entry_wrote = True

    def put(self, table: str, key: bytes, value: bytes, *, note: bool = True) -> bool:
        check_table(table)
        _check_key(table, key, self.path)
        existing = self.live_get(table, key)
        if existing is None:
            self._set(table, key, value)
            if note and table in _NOTED:
                self.note_rows(table, [key])
            elif table == HEADS:
                self.note_head(key, None, Head.decode(value))
            return True
        if existing != value:
            raise Conflict(
                f"{self.path}: {table} already holds other bytes under key {key.hex()}; "
                "stored rows are immutable",
                path=str(self.path), table=table, key=key,
            )  # fmt: skip
        return False

    def put_many(self, table: str, rows: Any) -> int:
        return sum(self.put(table, key, value) for key, value in rows)

    def set_head(self, namespace: bytes, head: Head) -> None:
        self._set(HEADS, namespace, head.encode())

    def put_raw(self, table: str, key: bytes, value: bytes | None) -> None:
        """Put (or with None remove) one of bbg's keys outside the five tables' rules: the
        transfer's keys and markers in ``bbg_import_v1``."""
        if table not in self._rows.partitions():
            raise StoreError(f"{self.path}: no partition {table!r} in this store",
                             path=str(self.path), table=table)  # fmt: skip
        self._set(table, key, value)

    # -- activation ----------------------------------------------------------------------------
    def publish_staged(
        self, import_id: str, table_done: Callable[[str], None] | None = None
    ) -> dict[str, int]:
        """Copy the staged rows into this transaction's batch (or, for an activation too big
        for one batch, find them published already: :meth:`FjallStore.publish_bulk`); the
        counts are the plan recorded before anything was published (``activating``)."""
        from migrate.store import imports

        plan = imports.journal_of(self, import_id, "activating")
        if plan is None:
            raise StoreError(f"{self.path}: import {import_id} has no activation plan",
                             path=str(self.path), import_id=import_id)  # fmt: skip
        for table in ARCHIVE_ORDER:
            if not plan["bulk"]:
                for key, value in imports.staged_rows(self, import_id, table):
                    self.put(table, key, value, note=table != CONTENT)
            if table_done is not None:
                table_done(table)
        if plan["bulk"]:
            # The rows went in as segments; the activation's own transaction is the status
            # put (bbg records a put even of the same bytes), so bbg's last_transaction
            # names this activation, as its converter's final ``complete`` put does.
            status = self.live_get(bbgdb.MIGRATION, bbgdb.STATUS)
            self._set(bbgdb.MIGRATION, bbgdb.STATUS, status or b"complete")
        return {t: int(n) for t, n in plan["inserted"].items()}

    # -- status and fences ------------------------------------------------------------------
    def read_status(self) -> tuple[str | None, str]:
        marker = decode_status(self.live_get(bbgdb.MIGRATION, bbgdb.STATUS))
        return marker, generations.generation_of(marker) or (marker or "original")

    def write_status(self, marker: str, generation: str) -> None:
        self.mark("promote")
        self.note_event({"kind": "generation", "status": marker, "generation": generation})
        self._set(bbgdb.MIGRATION, bbgdb.STATUS, marker.encode())

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        return _fence_record(self, self, namespace)

    def execute(self, sql: str, params: Any = ()) -> Any:
        return super().execute(records_sql(self.path, sql), params)

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        return super().one(records_sql(self.path, sql), params)

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]:
        return super().rows(records_sql(self.path, sql), params, batch)

    def executemany(self, sql: str, rows: Any) -> None:
        super().executemany(records_sql(self.path, sql), rows)

    def put_fence(self, namespace: bytes, import_id: str, reason: str,
                  value: bytes | None = None) -> bool:  # fmt: skip
        if self.live_get(bbgdb.MIGRATION, fence_key(namespace)) is not None:
            return False
        if value is None or len(value) != FENCE_VALUE_LEN:
            raise StoreError(
                f"{self.path}: a fence in bbg_import_v1 holds subject ‖ manifest (64 bytes); "
                f"namespace {namespace.hex()} was given {0 if value is None else len(value)}",
                path=str(self.path), namespace=namespace,
            )  # fmt: skip
        self._set(bbgdb.MIGRATION, fence_key(namespace), value)
        markers.put_fence(self, namespace, import_id, reason)
        return True

    # -- the batch --------------------------------------------------------------------------
    def batch(self) -> list[tuple[str, bytes, bytes | None]]:
        """The Fjall batch this transaction writes: its changes and bbg's marker rows, in
        (partition, key) order; empty when it changed none of bbg's rows."""
        full = bbgdb.with_markers(self.changes)
        return [(t, k, v) for (t, k), v in sorted(full.items())]


_ABSENT = object()


def _overlay(rows: Iterator[tuple[bytes, bytes]],
             mine: list[tuple[bytes, bytes | None]]) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
    """``rows`` with ``mine`` (sorted; None removes) merged over them, in key order."""
    marked = heapq.merge(((k, 0, v) for k, v in mine), ((k, 1, v) for k, v in rows))
    last: bytes | None = None
    for key, rank, value in marked:
        if key == last:
            continue
        last = key
        if value is not None:
            yield key, value
        del rank


def _check_key(table: str, key: bytes, path: Path) -> None:
    from migrate.store.tx import _check_key as check

    check(table, key, path)


__all__ = [
    "FENCE_PREFIX", "FjallTx", "FjallView", "KeyspaceRows", "decode_status", "empty_records",
    "fence_key",
]  # fmt: skip
