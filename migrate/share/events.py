"""``tail``: a store's history as canonical event/1 NDJSON, in ledger order.

Events are derived from the transaction ledger (:mod:`migrate.store.ledger`) and the five
tables, so the same store always gives the same bytes.  For each ledger transaction, in ``tx``
order, its events come in this order:

1. **commit events**, one per history entry the transaction added: namespaces in byte order,
   each namespace's entries by index.  A commit event carries the head move (asserted new head,
   retracted previous head), the request and fingerprint of its receipt, and the commit's own
   content row.  Where ``nohistory`` dropped the entries below a namespace's boundary, a
   **boundary** event (the first retained index and the head just below it) comes just before
   the first retained entry, and the dropped entries are not emitted.
2. **rows events**: the content and claim rows it added that are not the commit of one of its
   history entries, grouped by table and first key byte, cut at 256 rows / 4 MiB of values.
3. its **fence**, **generation**, **import**, **nohistory** and **excise** events, in the order
   they happened.

Every event has ``tx`` (its ledger transaction) and ``at`` (that transaction's time, UTC µs);
an event written into this store by ``apply`` also has ``imported_at`` (the source's ``tx`` and
``at``).  ``since=TX`` emits the events of the transactions after TX: appending never changes
what an earlier transaction emits, so a collector resumes exactly where it stopped.

Event ids are UUIDv8 from SHA-256 (:func:`migrate.share.common.stable_uuid`): ``commit`` ←
(namespace, request); ``rows`` ← (table, keys); ``fence`` ← namespace; ``generation`` ←
status; ``import`` ← import id; ``boundary``/``nohistory`` ← (namespace, index); ``excise`` ←
the excised ids; ``redacted`` ← (namespace, first, last index).  Ids are the same in every store
holding the same change; ``tx``/``at`` are local.

Redaction (``excise``): a content row that was excised appears as ``{"fact": "content", "id",
"redacted": true}`` (no value) and its event has ``"redacted": true``; the entries of an excised
namespace become one ``redacted`` event per transaction.  A redacted stream cannot rebuild the
store and ``apply`` refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import ValidationFailed
from fences import generations
from migrate.share.common import (
    damaged_reads,
    require_ledger,
    require_sound,
    stable_uuid,
)
from migrate.store import history, ledger
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
from migrate.store.readonly import open_sqlite_readonly

FORMAT = "event/1"
ROWS_PER_EVENT = 256
BYTES_PER_EVENT = 4 * 1024 * 1024
META_KINDS = ledger.EVENT_KINDS

Event = dict[str, Any]


def commit_event_id(namespace: bytes, request: bytes) -> str:
    """The stable id of the event of a commit."""
    return stable_uuid(b"event/1/commit", namespace, request)


def rows_event_id(table: str, keys: list[bytes]) -> str:
    """The stable id of a rows event carrying ``keys`` of ``table``."""
    return stable_uuid(b"event/1/rows", bytes([ORDINAL[table]]), *keys)


def meta_event_id(kind: str, *parts: bytes) -> str:
    """The stable id of a fence, generation, import, boundary, nohistory or excise event."""
    return stable_uuid(b"event/1/" + kind.encode(), *parts)


def _head(namespace: bytes, head: Head) -> dict[str, Any]:
    return {
        "fact": "head",
        "namespace": namespace.hex(),
        "index": head.index,
        "commit": head.commit.hex(),
    }


def content_fact(cid: bytes, value: bytes | None) -> dict[str, Any]:
    """A content fact; ``value`` None: the row was excised (the fact says so, no bytes)."""
    if value is None:
        return {"fact": "content", "id": cid.hex(), "redacted": True}
    return {"fact": "content", "id": cid.hex(), "value": value.hex()}


def commit_event(
    namespace: bytes,
    head: Head,
    prev: Head | None,
    request: bytes,
    fp: bytes,
    content: bytes | None,
    tx: int = 0,
    at: int = 0,
) -> Event:
    """The event/1 document of one commit (``content`` None: excised)."""
    cid = head.commit.hex()
    doc: Event = {
        "bbg": FORMAT,
        "kind": "commit",
        "event": commit_event_id(namespace, request),
        "tx": tx,
        "at": at,
        "namespace": namespace.hex(),
        "index": head.index,
        "request": request.hex(),
        "fingerprint": fp.hex(),
        "created": [cid],
        "asserted": [_head(namespace, head), content_fact(head.commit, content)],
        "retracted": [] if prev is None else [_head(namespace, prev)],
        "provenance": {
            "table": "application_history",
            "key": history_key(namespace, head.index).hex(),
        },
    }
    if content is None:
        doc["redacted"] = True
    return doc


def _broken(conn: Connection, detail: str) -> ValidationFailed:
    return ValidationFailed(
        f"{conn.path}: cannot derive events: {detail}; run doctor",
        path=str(conn.path),
        errors=[{"code": "request-head-mismatch", "detail": detail}],
    )


def _content(conn: Connection, cid: bytes) -> bytes | None:
    """A commit's content row; None if it was excised; ValidationFailed if simply missing."""
    value = history.commit_content(conn, cid)
    if value is not None:
        return value
    if ledger.is_excised(conn, "content", cid) is not None:
        return None
    raise _broken(conn, f"commit {cid.hex()} has no content")


def _history_head(conn: Connection, namespace: bytes, index: int) -> Head | None:
    commit = history.entry_commit(conn, namespace, index)
    return None if commit is None else Head(index, commit)


def namespace_events(
    conn: Connection,
    namespace: bytes,
    start: int = 0,
    stop: int | None = None,
    prev: Head | None = None,
) -> Iterator[Event]:
    """Commit events of ``namespace`` with ``start`` ≤ index ≤ ``stop``, in index order
    (``prev``: the head just below ``start``, else read from the history)."""
    if prev is None and start > 0:
        prev = _history_head(conn, namespace, start - 1)
    last = U64_MAX if stop is None else stop
    requests = history.receipts_by_index(conn, namespace)
    try:
        for key, value in history.entries(conn, namespace, start, last):
            _, index = split_history_key(key)
            head = Head(index, value)
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
            content = _content(conn, head.commit)
            yield commit_event(namespace, head, prev, bytes(found[0])[32:], fp, content)
            prev = head
    finally:
        requests.close()


def _single(
    conn: Connection, namespace: bytes, prev: Head | None, head: Head, request: bytes
) -> Event:
    """The event of one commit whose request is known (no scan of the namespace)."""
    receipt = history.receipt(conn, namespace, request)
    if receipt is None:
        raise _broken(conn, f"namespace {namespace.hex()} index {head.index}: no receipt")
    fp, rhead = split_request_value(receipt)
    if rhead != head:
        raise _broken(conn, f"namespace {namespace.hex()} request {request.hex()}: receipt "
                      f"head {rhead.describe()} is not {head.describe()}")  # fmt: skip
    stored = _history_head(conn, namespace, head.index)
    if stored != head:
        raise _broken(conn, f"namespace {namespace.hex()} index {head.index}: the ledger's head "
                      f"{head.describe()} is not in the history")  # fmt: skip
    return commit_event(namespace, head, prev, request, fp, _content(conn, head.commit))


def _index(value: Any) -> int:
    return split_request_value(bytes(value))[1].index


def _meta(kind: str, ident: str, fact: dict[str, Any], provenance: dict[str, Any]) -> Event:
    return {
        "bbg": FORMAT,
        "kind": kind,
        "event": ident,
        "created": [],
        "asserted": [fact],
        "retracted": [],
        "provenance": provenance,
    }


def boundary_event(namespace: bytes, first: int, prev: Head) -> Event:
    """The marker of a retained boundary: entries below ``first`` were dropped."""
    return _meta(
        "boundary",
        meta_event_id("boundary", namespace, first.to_bytes(8, "big")),
        {"fact": "boundary", "namespace": namespace.hex(), "index": first,
         "previous": _head(namespace, prev)},
        {"table": ledger.BOUNDARIES, "key": namespace.hex()},
    )  # fmt: skip


def meta_event(doc: dict[str, Any]) -> Event:
    """The event/1 document of a ledger detail event (fence, generation, import, retention)."""
    kind = doc["kind"]
    if kind == "fence":
        ns = bytes.fromhex(doc["namespace"])
        fact = {"fact": "fence", "namespace": doc["namespace"], "import_id": doc["import_id"],
                "reason": doc["reason"]}  # fmt: skip
        if doc.get("value"):  # a Fjall store's fence: bbg's subject ‖ manifest
            value = bytes.fromhex(doc["value"])
            fact["subject"], fact["manifest"] = value[:32].hex(), value[32:].hex()
        return _meta(kind, meta_event_id(kind, ns), fact,
                     {"table": "bbg_import_v1_fences", "key": doc["namespace"]})  # fmt: skip
    if kind == "generation":
        fact = {"fact": "status", "status": doc["status"], "generation": doc["generation"]}
        return _meta(kind, meta_event_id(kind, doc["status"].encode()), fact,
                     {"table": "bbg_import_v1"})  # fmt: skip
    if kind == "import":
        fact = {"fact": "import", "import_id": doc["import_id"], "receipt": doc["receipt"],
                "seal": doc["seal"]}  # fmt: skip
        return _meta(kind, meta_event_id(kind, doc["import_id"].encode()), fact,
                     {"table": "bbg_import_v1_receipts", "key": doc["import_id"]})  # fmt: skip
    if kind == "nohistory":
        ns = bytes.fromhex(doc["namespace"])
        fact = {"fact": "nohistory", "namespace": doc["namespace"], "index": doc["index"],
                "commit": doc["commit"], "dropped": doc["dropped"]}  # fmt: skip
        return _meta(kind, meta_event_id(kind, ns, int(doc["index"]).to_bytes(8, "big")), fact,
                     {"table": ledger.BOUNDARIES, "key": doc["namespace"]})  # fmt: skip
    if kind == "excise":
        ids = [bytes.fromhex(x) for x in doc["contents"] + doc["namespaces"]]
        fact = {"fact": "excise", "contents": doc["contents"], "namespaces": doc["namespaces"]}
        return _meta(kind, meta_event_id(kind, *ids), fact, {"table": ledger.EXCISED})
    raise ValueError(f"unknown ledger event kind {kind!r}")


def redacted_event(namespace: bytes, first: int, last: int) -> Event:
    """What remains of the entries ``first..last`` of an excised namespace: their range."""
    return {
        "bbg": FORMAT,
        "kind": "redacted",
        "event": meta_event_id("redacted", namespace, first.to_bytes(8, "big"),
                               last.to_bytes(8, "big")),  # fmt: skip
        "namespace": namespace.hex(),
        "first": first,
        "last": last,
        "created": [],
        "asserted": [],
        "retracted": [],
        "redacted": True,
        "provenance": {"table": "application_history", "key": namespace.hex()},
    }


def tx_rows_events(conn: Connection, tx: int) -> Iterator[Event]:
    """The rows events of ledger transaction ``tx`` (see the module docstring)."""
    for table in (CONTENT, CLAIMS):
        yield from grouped_rows_events(table, ledger.rows_of(conn, tx, table))


def grouped_rows_events(
    table: str, rows: Iterable[tuple[bytes, bytes | None]]
) -> Iterator[Event]:
    """The rows events of ``rows`` (one transaction's, of ``table``, in key order): a new
    group at a new first key byte, at 256 rows, or before the values pass 4 MiB."""
    chunk: list[tuple[bytes, bytes | None]] = []
    size = 0
    for key, value in rows:
        if chunk and (
            key[0] != chunk[0][0][0] or len(chunk) >= ROWS_PER_EVENT
            or size + len(value or b"") > BYTES_PER_EVENT
        ):  # fmt: skip
            yield rows_event(table, chunk)
            chunk, size = [], 0
        chunk.append((key, value))
        size += len(value or b"")
    if chunk:
        yield rows_event(table, chunk)


def rows_event(table: str, rows: list[tuple[bytes, bytes | None]]) -> Event:
    """A rows event of ``table`` (a None value: the row was excised)."""
    if table == CONTENT:
        asserted = [content_fact(k, v) for k, v in rows]
    else:
        asserted = [{"fact": "claim", "key": k.hex(), "value": (v or b"").hex()} for k, v in rows]
    doc: Event = {
        "bbg": FORMAT,
        "kind": "rows",
        "event": rows_event_id(table, [k for k, _ in rows]),
        "created": [k.hex() for k, _ in rows],
        "asserted": asserted,
        "retracted": [],
        "provenance": {"table": table, "bucket": f"{rows[0][0][0]:02x}"},
    }
    if any(v is None for _, v in rows):
        doc["redacted"] = True
    return doc


def _commit_events(conn: Connection, tx: int) -> Iterator[Event]:
    for ns, before, after, request in ledger.heads_of(conn, tx):
        start = 0 if before is None else before.index + 1
        if ledger.is_excised(conn, "namespace", ns) is not None:
            yield redacted_event(ns, start, after.index)
            continue
        prev = before
        boundary = ledger.boundary_of(conn, ns)
        if boundary is not None and start <= boundary[0]:
            if after.index < boundary[0]:
                continue  # every entry of this transaction was dropped by nohistory
            # The first retained entry: a receiver starts the namespace from here.
            start, prev = boundary
            yield boundary_event(ns, start, prev)
        if request is not None and start == after.index:
            yield _single(conn, ns, prev, after, request)
        else:
            yield from namespace_events(conn, ns, start, after.index, prev)


def entry_events(conn: Connection, entry: ledger.Entry) -> Iterator[Event]:
    """Every event of one ledger transaction, stamped with its ``tx``, ``at`` and origin."""
    stamp: dict[str, Any] = {"tx": entry.tx, "at": entry.at}
    if entry.origin is not None:
        stamp["imported_at"] = {"tx": entry.origin[0], "at": entry.origin[1]}
    for event in _commit_events(conn, entry.tx):
        yield {**event, **stamp}
    for event in tx_rows_events(conn, entry.tx):
        yield {**event, **stamp}
    for doc in entry.events:
        yield {**meta_event(doc), **stamp}


def iter_events(conn: Connection, since: int = 0, skip: int = 0) -> Iterator[Event]:
    """Every event of the transactions after ``since`` (inside the caller's read snapshot);
    ``skip``: leave out the first ``skip`` events of the first such transaction."""
    generations.require_readable(conn, sealed_ok=True)
    require_ledger(conn)
    for entry in ledger.entries(conn, since):
        for event in entry_events(conn, entry):
            if skip:
                skip -= 1
                continue
            yield event
        skip = 0


def tail(store_dir: Path, since: int = 0, skip: int = 0) -> Iterator[Event]:
    """The events of the store in ``store_dir`` from one consistent read snapshot.

    A store that breaks the cheap invariants (:func:`migrate.share.common.require_sound`)
    is refused before the first event; a value damaged beyond them is a named StoreError.
    """
    with open_sqlite_readonly(store_dir) as conn, conn.read(), damaged_reads(conn.path):
        require_ledger(conn)
        require_sound(conn, "exported")
        yield from iter_events(conn, since, skip)
