"""``tail``: a store's committed history as canonical event/1 NDJSON.

The store records no per-commit transaction table and no commit time, so events are derived
from the five tables alone, and the same state always gives the same bytes:

* **commit events**, one per history entry, in canonical order: namespaces in byte order,
  each namespace's entries by index.  Interleaving across namespaces is not recorded by the
  store, and nothing depends on it (every namespace's history is linear on its own), so it is
  not invented.  The event carries the head move (asserted new head, retracted previous head),
  the request and fingerprint of its receipt, and the commit's own content row.
* **rows events** after them: retained rows that no history entry names as its commit —
  content rows (e.g. record payloads imported from a legacy store) and unique claims.  They
  are grouped by table and first key byte and cut at 256 rows / 4 MiB of value bytes, so a
  new row changes only the events of its own group.

Event ids are UUIDv8 from SHA-256: ``commit`` ← (namespace, request); ``rows`` ← (table,
keys).  ``at`` is always null: the store keeps no source time.  Only portable ids (hex of
stored keys) appear, never SQLite row ids or transaction numbers.  ``provenance`` names the
table and key (or key group) the event was read from.  ``since=N`` skips the first N events
of this order; :func:`migrate.share.follow.follow` keeps streaming new commits.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import ValidationFailed
from fences import generations
from migrate.share.common import damaged_reads, open_readonly, require_sound, stable_uuid
from migrate.store.codec import (
    CLAIMS,
    CONTENT,
    ORDINAL,
    U64_MAX,
    Head,
    history_key,
    split_history_key,
    split_request_value,
)
from migrate.store.connection import Connection

FORMAT = "event/1"
ROWS_PER_EVENT = 256
BYTES_PER_EVENT = 4 * 1024 * 1024
# Requests of one namespace in head-index order: the index is u64 LE at value[32:40], so
# its bytes taken last-to-first compare as a big-endian number.
_BY_INDEX = ", ".join(f"substr(value, {40 - i}, 1)" for i in range(8))

Event = dict[str, Any]


def commit_event_id(namespace: bytes, request: bytes) -> str:
    """The stable id of the event of a commit."""
    return stable_uuid(b"event/1/commit", namespace, request)


def rows_event_id(table: str, keys: list[bytes]) -> str:
    """The stable id of a rows event carrying ``keys`` of ``table``."""
    return stable_uuid(b"event/1/rows", bytes([ORDINAL[table]]), *keys)


def _head(namespace: bytes, head: Head) -> dict[str, Any]:
    return {
        "fact": "head",
        "namespace": namespace.hex(),
        "index": head.index,
        "commit": head.commit.hex(),
    }


def commit_event(
    namespace: bytes, head: Head, prev: Head | None, request: bytes, fp: bytes, content: bytes
) -> Event:
    """The event/1 document of one commit."""
    cid = head.commit.hex()
    return {
        "bbg": FORMAT,
        "kind": "commit",
        "event": commit_event_id(namespace, request),
        "at": None,
        "namespace": namespace.hex(),
        "index": head.index,
        "request": request.hex(),
        "fingerprint": fp.hex(),
        "created": [cid],
        "asserted": [
            _head(namespace, head),
            {"fact": "content", "id": cid, "value": content.hex()},
        ],
        "retracted": [] if prev is None else [_head(namespace, prev)],
        "provenance": {
            "table": "application_history",
            "key": history_key(namespace, head.index).hex(),
        },
    }


def _broken(conn: Connection, detail: str) -> ValidationFailed:
    return ValidationFailed(
        f"{conn.path}: cannot derive events: {detail}; run doctor",
        path=str(conn.path),
        errors=[{"code": "request-head-mismatch", "detail": detail}],
    )


def namespace_events(conn: Connection, namespace: bytes, start: int = 0) -> Iterator[Event]:
    """Commit events of ``namespace`` with index ≥ ``start``, in index order."""
    prev: Head | None = None
    if start > 0:
        row = conn.one(
            "SELECT value FROM application_history WHERE key = ?",
            (history_key(namespace, start - 1),),
        )
        prev = None if row is None else Head(start - 1, bytes(row[0]))
    requests = _rows(conn,
        "SELECT key, value FROM application_requests WHERE key > ? AND key <= ? "
        f"ORDER BY {_BY_INDEX}",
        (namespace, namespace + b"\xff" * 32),
    )
    try:
        for key, value in conn.rows(
            "SELECT key, value FROM application_history WHERE key >= ? AND key <= ? ORDER BY key",
            (history_key(namespace, start), history_key(namespace, U64_MAX)),
        ):
            _, index = split_history_key(bytes(key))
            head = Head(index, bytes(value))
            # Links guarantee exactly one receipt per history entry: a plain merge (receipts
            # of entries before ``start`` are passed over once, at the first entry).
            if index == start:
                found = next(((k, v) for k, v in requests if _index(v) >= start), None)
            else:
                found = next(requests, None)
            if found is None:
                raise _broken(conn, f"namespace {namespace.hex()} index {index}: no receipt")
            fp, rhead = split_request_value(bytes(found[1]))
            if rhead != head:
                raise _broken(
                    conn, f"namespace {namespace.hex()} index {index}: receipt head "
                    f"{rhead.describe()} is not history {head.describe()}",
                )  # fmt: skip
            content = conn.one(
                "SELECT value FROM application_content WHERE key = ?", (head.commit,)
            )
            if content is None:
                raise _broken(conn, f"commit {head.commit.hex()} has no content")
            yield commit_event(namespace, head, prev, bytes(found[0])[32:], fp, bytes(content[0]))
            prev = head
        extra = next(requests, None)
        if extra is not None:
            raise _broken(
                conn, f"namespace {namespace.hex()}: receipt {bytes(extra[0]).hex()} for head "
                f"{split_request_value(bytes(extra[1]))[1].describe()} past the history",
            )  # fmt: skip
    finally:
        requests.close()


def _rows(conn: Connection, sql: str, params: tuple[Any, ...]) -> Generator[tuple[Any, ...]]:
    # A generator (not just an iterator) so the cursor can be closed early.
    yield from conn.rows(sql, params)


def _index(value: Any) -> int:
    return split_request_value(bytes(value))[1].index


_ROWS_SQL = {
    CLAIMS: "SELECT key, value FROM application_unique_claims WHERE key >= ?",
    # NOT IN builds one ephemeral index of the history's commits (a correlated NOT EXISTS
    # would scan the history once per content row: no index on history values).
    CONTENT: "SELECT key, value FROM application_content WHERE key >= ? AND key NOT IN "
    "(SELECT value FROM application_history)",
}


def _rows_source(conn: Connection, table: str, low: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
    """Rows of ``table`` that rows events carry, key ≥ ``low``, in key order."""
    for key, value in conn.rows(_ROWS_SQL[table] + " ORDER BY key", (low,)):
        yield bytes(key), bytes(value)


def rows_events(
    conn: Connection, tables: tuple[str, ...] = (CONTENT, CLAIMS), *, last_bucket: bool = False
) -> Iterator[tuple[tuple[str, int], Event]]:
    """``((table, bucket), event)`` for every rows event, in stream order.

    ``last_bucket``: only the events of each table's last key group (to find the last event
    without reading the whole table).
    """
    for table in tables:
        low = b""
        if last_bucket:
            top = conn.one(_ROWS_SQL[table] + " ORDER BY key DESC LIMIT 1", (b"",))
            if top is None:
                continue
            low = bytes(top[0])[:1]
        chunk: list[tuple[bytes, bytes]] = []
        size = 0
        for key, value in _rows_source(conn, table, low):
            if chunk and (
                key[0] != chunk[0][0][0] or len(chunk) >= ROWS_PER_EVENT
                or size + len(value) > BYTES_PER_EVENT
            ):  # fmt: skip
                yield (table, chunk[0][0][0]), _rows_event(table, chunk)
                chunk, size = [], 0
            chunk.append((key, value))
            size += len(value)
        if chunk:
            yield (table, chunk[0][0][0]), _rows_event(table, chunk)


def _rows_event(table: str, rows: list[tuple[bytes, bytes]]) -> Event:
    fact = "content" if table == CONTENT else "claim"
    field = "id" if table == CONTENT else "key"
    return {
        "bbg": FORMAT,
        "kind": "rows",
        "event": rows_event_id(table, [k for k, _ in rows]),
        "at": None,
        "created": [k.hex() for k, _ in rows],
        "asserted": [{"fact": fact, field: k.hex(), "value": v.hex()} for k, v in rows],
        "retracted": [],
        "provenance": {"table": table, "bucket": f"{rows[0][0][0]:02x}"},
    }


def namespaces(conn: Connection) -> Iterator[tuple[bytes, Head]]:
    """Every namespace with its head, in byte order."""
    for key, value in conn.rows("SELECT key, value FROM application_heads ORDER BY key"):
        yield bytes(key), Head.decode(bytes(value))


def iter_events(conn: Connection, since: int = 0) -> Iterator[Event]:
    """Every event of the store (inside the caller's read snapshot), skipping ``since``."""
    generations.require_readable(conn)
    skip = since
    for namespace, head in namespaces(conn):
        count = head.index + 1
        if skip >= count:
            skip -= count  # a whole namespace skipped without reading its history
            continue
        yield from namespace_events(conn, namespace, skip)
        skip = 0
    for _, event in rows_events(conn):
        if skip:
            skip -= 1
            continue
        yield event


def tail(store_dir: Path, since: int = 0) -> Iterator[Event]:
    """The events of the store in ``store_dir`` from one consistent read snapshot.

    A store that breaks the cheap invariants (:func:`migrate.share.common.require_sound`)
    is refused before the first event; a value damaged beyond them is a named StoreError.
    """
    with open_readonly(store_dir) as conn, conn.read(), damaged_reads(conn.path):
        require_sound(conn, "exported")
        yield from iter_events(conn, since)
