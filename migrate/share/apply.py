"""``apply``: merge an event/1 stream into a store, all or nothing.

Every line is checked before anything commits: it must end in LF, be at most ``max_line``
bytes, be canonical JSON (exactly what ``tail`` writes), match ``schemas/event.schema.json``,
and be self-consistent (its event id is the one derived from its content, the head move
follows the index, the content carried is the commit's).  The whole stream runs in ONE write
transaction; the first bad, conflicting, oversized or truncated line rolls back every earlier
line and is named in the error (``line=``, ``event=``).

Content rows are then checked exactly as a migration checks them
(:mod:`migrate.share.verify`: codec, Blob ids = hemera(payload), Data ids), once the whole
stream is in the transaction; a bad row refuses the stream, naming its line.

Merge semantics (an ordered logical merge, not a CRDT): a commit event is published through
the GraphPort (:func:`migrate.store.graph.publish`) with its retracted head as the expected
head, so a namespace that moved differently on the receiver is a HeadMismatch (exit 4).  An
event whose request is already committed with the same fingerprint is a replay: its receipt
is the *original* head with empty deltas, even if the namespace has moved on since.  Rows
events are immutable puts (same bytes: no delta; other bytes: Conflict).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from bbg_core.errors import MigrateError, ValidationFailed
from migrate.share.common import MAX_LINE, canonical, schema_problem
from migrate.share.events import commit_event_id, rows_event_id
from migrate.share.verify import ContentLedger
from migrate.store import Store
from migrate.store.codec import CODECS, CONTENT, MAX_PAYLOAD, Head, history_key
from migrate.store.graph import publish, resolve
from migrate.store.store import provisional_store
from migrate.store.tx import Tx

Receipt = dict[str, Any]


def _bad(line: int, code: str, detail: str, event: str | None = None) -> ValidationFailed:
    where = f"line {line}" + (f" (event {event})" if event else "")
    return ValidationFailed(
        f"{where}: {detail}; nothing was applied",
        line=line,
        event=event,
        errors=[{"code": code, "detail": f"{where}: {detail}"}],
    )


def read_line(stream: BinaryIO, number: int, max_line: int) -> bytes | None:
    """The next raw line (with its LF), None at the end; ValidationFailed if it is bad."""
    raw = stream.readline(max_line + 1)
    if not raw:
        return None
    if len(raw) > max_line:
        raise _bad(number, "oversized-line", f"longer than the {max_line}-byte cap")
    if not raw.endswith(b"\n"):
        raise _bad(number, "truncated-line", "no final LF (the stream was cut)")
    return raw


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)[:200]


def parse_event(raw: bytes, number: int) -> dict[str, Any]:
    """Decode and check one event line (see the module docstring)."""
    try:
        doc: dict[str, Any] = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        # ValueError: bad UTF-8, bad JSON, or an integer of more digits than Python parses;
        # RecursionError: nesting deeper than the parser goes.  Neither is an event.
        why = _why(exc)
        raise _bad(number, "invalid-json", f"not UTF-8 JSON an event can be ({why})") from exc
    problem = schema_problem(doc, "event")
    if problem:
        raise _bad(number, "schema", f"not an event/1 ({problem})")
    if canonical(doc) != raw:
        raise _bad(number, "not-canonical", "not in canonical form (sorted keys, no spaces)")
    event = str(doc["event"])
    problem = _check_commit(doc) if doc["kind"] == "commit" else _check_rows(doc)
    if problem:
        raise _bad(number, "inconsistent-event", problem, event)
    return doc


def _check_value(value: bytes) -> str | None:
    if not value or value[0] not in CODECS:
        return "content value must start with codec byte 00 or 01"
    if len(value) - 1 > MAX_PAYLOAD:
        return f"content payload over {MAX_PAYLOAD} bytes"
    return None


def _check_commit(doc: dict[str, Any]) -> str | None:
    ns, index = bytes.fromhex(doc["namespace"]), int(doc["index"])
    head, content = doc["asserted"]
    if doc["event"] != commit_event_id(ns, bytes.fromhex(doc["request"])):
        return "event id does not match its namespace and request"
    if (head["namespace"], head["index"]) != (doc["namespace"], index):
        return "asserted head is not this namespace and index"
    if content["id"] != head["commit"] or doc["created"] != [head["commit"]]:
        return "content and created must be the commit's"
    if doc["provenance"]["key"] != history_key(ns, index).hex():
        return "provenance key is not this history entry"
    retracted = doc["retracted"]
    if index == 0 and (retracted or head["commit"] != doc["namespace"]):
        return "a birth (index 0) retracts nothing and commits the namespace id"
    if index > 0 and (
        len(retracted) != 1 or retracted[0]["namespace"] != doc["namespace"]
        or retracted[0]["index"] != index - 1
    ):  # fmt: skip
        return "the retracted head must be this namespace's previous index"
    return _check_value(bytes.fromhex(content["value"]))


def _check_rows(doc: dict[str, Any]) -> str | None:
    table = doc["provenance"]["table"]
    fact, field = ("content", "id") if table == CONTENT else ("claim", "key")
    keys = [a.get(field) for a in doc["asserted"]]
    if any(a["fact"] != fact for a in doc["asserted"]):
        return f"a {table} rows event asserts only {fact} facts"
    if keys != sorted(set(keys)) or doc["created"] != keys:
        return "rows must be in strictly increasing key order and listed in created"
    if any(k[:2] != doc["provenance"]["bucket"] for k in keys):
        return "every key must start with the event's bucket byte"
    if doc["event"] != rows_event_id(table, [bytes.fromhex(k) for k in keys]):
        return "event id does not match its table and keys"
    if table == CONTENT:
        for a in doc["asserted"]:
            problem = _check_value(bytes.fromhex(a["value"]))
            if problem:
                return problem
    return None


def content_keys(doc: dict[str, Any]) -> list[bytes]:
    """The ids of the content rows an event carries."""
    if doc["kind"] == "commit":
        return [bytes.fromhex(doc["asserted"][1]["id"])]
    if doc["provenance"]["table"] == CONTENT:
        return [bytes.fromhex(a["id"]) for a in doc["asserted"]]
    return []


def apply_event(tx: Tx, doc: dict[str, Any], reader_generation: str) -> Receipt:
    """Apply one checked event inside ``tx``; returns its receipt."""
    deltas = {"content": 0, "claims": 0, "history": 0}
    if doc["kind"] == "commit":
        ns, request = bytes.fromhex(doc["namespace"]), bytes.fromhex(doc["request"])
        fingerprint = bytes.fromhex(doc["fingerprint"])
        head_fact, content = doc["asserted"]
        new_head = Head(int(head_fact["index"]), bytes.fromhex(head_fact["commit"]))
        prior = resolve(tx, ns, request)
        if prior is None:
            deltas["content"] = int(tx.get(CONTENT, new_head.commit) is None)
            deltas["history"] = 1
        retracted = doc["retracted"]
        expected = (
            Head(int(retracted[0]["index"]), bytes.fromhex(retracted[0]["commit"]))
            if retracted else None
        )  # fmt: skip
        got = publish(
            tx,
            reader_generation=reader_generation,
            namespace=ns,
            request=request,
            expected=expected,
            new_head=new_head,
            contents={new_head.commit: bytes.fromhex(content["value"])},
            claims={},
            fingerprint=fingerprint,
        )
        head: dict[str, Any] | None = {"index": got.index, "commit": got.commit.hex()}
    else:
        table = doc["provenance"]["table"]
        field = "id" if table == CONTENT else "key"
        for fact in doc["asserted"]:
            if tx.put(table, bytes.fromhex(fact[field]), bytes.fromhex(fact["value"])):
                deltas["content" if table == CONTENT else "claims"] += 1
        head = None
    return {"event": doc["event"], "head": head, "deltas": deltas}


def apply_stream(
    store: Store,
    stream: BinaryIO,
    *,
    max_line: int = MAX_LINE,
    on_receipt: Callable[[Receipt], None] | None = None,
) -> dict[str, Any]:
    """Apply every event of ``stream`` in one transaction; returns counters and the basis."""
    totals = {"content": 0, "claims": 0, "history": 0}
    events = replayed = 0
    basis: str | None = None
    with store.transaction(action="apply") as tx:
        ledger = ContentLedger(tx, "applied")
        number = 0
        while True:
            number += 1
            try:
                raw = read_line(stream, number, max_line)
                if raw is None:
                    break
                doc = parse_event(raw, number)
                try:
                    receipt = apply_event(tx, doc, store.reader_generation)
                except MigrateError as exc:
                    raise type(exc)(
                        f"line {number} (event {doc['event']}): {exc.message}; nothing was "
                        "applied",
                        **{**exc.context, "line": number, "event": doc["event"]},
                    ) from exc
            except MigrateError:
                ledger.check(before=number)  # an earlier bad content row is named first
                raise
            ledger.add_many(content_keys(doc), number)
            events += 1
            basis = doc["event"]
            if not any(receipt["deltas"].values()):
                replayed += 1
            for key, n in receipt["deltas"].items():
                totals[key] += n
            if on_receipt is not None:
                on_receipt(receipt)
        ledger.check()
    return {
        "kind": "bbg-apply",
        "events": events,
        "replayed": replayed,
        "applied": events - replayed,
        "deltas": totals,
        "basis": basis,
    }


def apply(
    store_dir: Path,
    stream: BinaryIO,
    *,
    max_line: int = MAX_LINE,
    on_receipt: Callable[[Receipt], None] | None = None,
) -> dict[str, Any]:
    """``bbg-migrate apply``: apply ``stream`` to the store in ``store_dir``, creating the store
    if it does not exist.  A refused stream into a store this call created leaves no store
    behind -- and never removes one another process has opened or written meanwhile
    (:func:`migrate.store.store.provisional_store`)."""
    with provisional_store(store_dir) as store:
        return apply_stream(store, stream, max_line=max_line, on_receipt=on_receipt)


__all__ = ["apply", "apply_event", "apply_stream", "parse_event", "read_line"]
