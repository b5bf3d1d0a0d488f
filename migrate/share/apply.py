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

Ledger: the events of one source transaction (one ``tx`` of the stream) become one local
ledger transaction (kind ``apply``) with its own ``tx``/``at``; the source's ``tx``/``at`` (or the
event's own ``imported_at``, when it was applied from elsewhere before) is kept as that
transaction's ``imported_at``, which ``tail`` prints.  Fence, generation and import events are
applied too (a fence, a monotonic promotion, the import's seal and receipt), and so are the
retention events (``boundary``, ``nohistory``, ``excise``), so what the store means travels.
A ``redacted`` stream (a tail taken after ``excise``) is refused: it cannot rebuild the store
(restore a snapshot instead); so is any event that would bring back an id this store excised.

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

from bbg_core.errors import Conflict, HeadMismatch, MigrateError, ValidationFailed
from fences import generations
from fences import namespaces as fence_ns
from migrate.progress import Observer, counter, stream_size
from migrate.share import apply_fjall
from migrate.share.common import MAX_LINE, canonical, schema_problem
from migrate.share.events import boundary_event, commit_event_id, meta_event, rows_event_id
from migrate.share.verified import Verifier
from migrate.share.verify import ContentLedger
from migrate.store import Store, imports, ledger, retention
from migrate.store.codec import CODECS, CONTENT, MAX_PAYLOAD, Head, history_key
from migrate.store.graph import head as head_of
from migrate.store.graph import publish, resolve
from migrate.store.opening import provisional_store
from migrate.store.tx import Tx

REPORT_EVERY = 1024  # lines between two progress reports

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
    if doc.get("redacted") or doc["kind"] == "redacted":
        raise _bad(
            number, "redacted-stream", "this stream was redacted by excise (it no longer holds "
            "every byte of the store), so it cannot rebuild one; restore a snapshot instead",
            event,
        )  # fmt: skip
    kind = doc["kind"]
    if kind == "commit":
        problem = _check_commit(doc)
    elif kind == "rows":
        problem = _check_rows(doc)
    else:
        problem = _check_meta(doc)
    if problem:
        raise _bad(number, "inconsistent-event", problem, event)
    return doc


def _check_meta(doc: dict[str, Any]) -> str | None:
    try:
        expected = meta_event(_meta_doc(doc))["event"] if doc["kind"] != "boundary" else (
            boundary_event(*_boundary_args(doc))["event"])  # fmt: skip
    except (KeyError, ValueError, TypeError) as exc:
        return f"malformed {doc['kind']} event ({exc})"
    if doc["event"] != expected:
        return f"event id does not match its {doc['kind']} fact"
    return None


def _meta_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """The ledger detail form of a meta event (what :func:`meta_event` renders)."""
    fact = dict(doc["asserted"][0])
    kind = doc["kind"]
    del fact["fact"]
    return {"kind": kind, **fact}


def _boundary_args(doc: dict[str, Any]) -> tuple[bytes, int, Head]:
    fact = doc["asserted"][0]
    prev = fact["previous"]
    if prev["namespace"] != fact["namespace"]:
        raise ValueError("previous head of another namespace")
    return (bytes.fromhex(fact["namespace"]), int(fact["index"]),
            Head(int(prev["index"]), bytes.fromhex(prev["commit"])))  # fmt: skip


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
    if doc["kind"] not in ("commit", "rows"):
        return []
    if doc["kind"] == "commit":
        return [bytes.fromhex(doc["asserted"][1]["id"])]
    if doc["provenance"]["table"] == CONTENT:
        return [bytes.fromhex(a["id"]) for a in doc["asserted"]]
    return []


def _apply_meta(tx: Tx, doc: dict[str, Any], deltas: dict[str, int]) -> None:
    kind = doc["kind"]
    fact = doc["asserted"][0]
    if kind == "fence":
        ns = bytes.fromhex(fact["namespace"])
        subject, manifest = (bytes.fromhex(fact[k]) if k in fact else None
                             for k in ("subject", "manifest"))  # fmt: skip
        if fence_ns.fence(tx, ns, import_id=fact["import_id"], reason=fact["reason"],
                          subject=subject, manifest=manifest):  # fmt: skip
            deltas["fences"] += 1
    elif kind == "generation" and fact["status"] == generations.EXPORT_MARKER:
        pass  # the source's transfer seal binds that store, not a copy of its data
    elif kind == "generation":
        generation = generations.generation_of(fact["status"])
        if generation is None:
            raise Conflict(
                f"{tx.path}: status {fact['status']!r} is not a reader generation; a store in "
                "that state does not travel as events", path=str(tx.path),
            )  # fmt: skip
        before = generations.read_status(tx)[0]
        if fact["status"] == "complete":
            generations.settle(tx)
        else:
            generations.promote(tx, generation)
        if generations.read_status(tx)[0] != before:
            deltas["generation"] += 1
    elif kind == "import":
        if _apply_import(tx, fact):
            deltas["imports"] += 1
    elif kind == "boundary":
        ns, first, prev = _boundary_args(doc)
        retention.refuse_excised(tx, "namespace", ns, f"event {doc['event']}")
        if retention.apply_boundary(tx, ns, first, prev):
            deltas["boundaries"] += 1
    elif kind == "nohistory":
        ns = bytes.fromhex(fact["namespace"])
        current = head_of(tx, ns)
        known = ledger.boundary_of(tx, ns)
        if known is not None and known[0] >= int(fact["index"]):
            if retention.mark_boundary(tx, _meta_doc(doc)):
                deltas["boundaries"] += 1
            return
        if current is None or current.index < int(fact["index"]):
            raise HeadMismatch(
                f"{tx.path}: nohistory of namespace {ns.hex()} at index {fact['index']} but "
                f"the namespace is at {current.describe() if current else 'no head'}",
                path=str(tx.path), namespace=ns.hex(),
            )  # fmt: skip
        if current.index == int(fact["index"]):
            if retention.drop_history(tx, ns)["dropped"]:
                deltas["boundaries"] += 1
    elif kind == "excise":
        done = retention.excise(
            tx, [bytes.fromhex(x) for x in fact["contents"]],
            [bytes.fromhex(x) for x in fact["namespaces"]],
        )  # fmt: skip
        deltas["excised"] += len(done["contents"]) + len(done["namespaces"])


def _apply_import(tx: Tx, fact: dict[str, Any]) -> bool:
    """Record an import (state active, seal, receipt); True if it was not recorded yet."""
    iid = str(fact["import_id"])
    state = imports.import_state(tx, iid)
    known = imports.receipt_of(tx, iid)
    if known is not None:
        if known != fact["receipt"]:
            raise Conflict(f"{tx.path}: import {iid} is recorded here with another receipt",
                           path=str(tx.path), import_id=iid)  # fmt: skip
        return False
    if state is None:
        imports.record_active(tx, iid)
    elif state != "active":
        raise Conflict(f"{tx.path}: import {iid} is {state} here; the stream says it is active",
                       path=str(tx.path), import_id=iid)  # fmt: skip
    if fact.get("seal") is not None:
        imports.record_seal(tx, iid, fact["seal"])
    imports.record_receipt(tx, iid, fact["receipt"])
    return True


def _deltas() -> dict[str, int]:
    return dict.fromkeys(DELTA_KEYS, 0)


DELTA_KEYS = ("content", "claims", "history", "fences", "generation", "imports",
              "boundaries", "excised")  # fmt: skip


def apply_event(tx: Tx, doc: dict[str, Any], reader_generation: str) -> Receipt:
    """Apply one checked event inside ``tx``; returns its receipt."""
    deltas = _deltas()
    if doc["kind"] not in ("commit", "rows"):
        _apply_meta(tx, doc, deltas)
        return {"event": doc["event"], "head": None, "deltas": deltas}
    for cid in content_keys(doc):
        retention.refuse_excised(tx, "content", cid, f"event {doc['event']}")
    if doc["kind"] == "commit":
        ns, request = bytes.fromhex(doc["namespace"]), bytes.fromhex(doc["request"])
        retention.refuse_excised(tx, "namespace", ns, f"event {doc['event']}")
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
    progress: Observer | None = None,
    max_batch: int = apply_fjall.MAX_BATCH_BYTES,
    require_verified: bool = False,
) -> dict[str, Any]:
    """Apply every event of ``stream`` in one transaction; returns counters and the basis.
    ``progress``: an observer (stage ``apply``, bytes read out of the stream's size when it is
    a regular file -- how many events a stream holds is not known before it is read).
    ``max_batch``: on a Fjall store, the bound of the batch (:mod:`.apply_fjall`).
    A verifiable stream (``tail --verifiable``) is checked as it is read
    (:class:`migrate.share.verified.Verifier`); ``require_verified``: refuse a plain one."""
    report = counter(progress, "apply", stream_size(stream), "bytes")
    verifier = Verifier()
    read = 0
    totals = _deltas()
    events = replayed = 0
    basis: str | None = None
    group: int | None = None
    with store.transaction(kind="apply", action="apply") as tx:
        content_ledger = ContentLedger(tx, "applied")
        number = 0
        while True:
            number += 1
            try:
                raw = read_line(stream, number, max_line)
                if raw is None:
                    break
                if report is not None:
                    read += len(raw)
                    if not number % REPORT_EVERY:
                        report(read)
                if verifier.check_line(raw, number):
                    continue
                doc = parse_event(raw, number)
                verifier.event(raw, int(doc["tx"]), number)
                if doc["tx"] != group:
                    # One local ledger transaction per source transaction.
                    group = int(doc["tx"])
                    origin = doc.get("imported_at") or {"tx": doc["tx"], "at": doc["at"]}
                    tx.next_entry("apply", (int(origin["tx"]), int(origin["at"])))
                try:
                    apply_fjall.check_event(tx, doc, number, max_batch)
                    receipt = apply_event(tx, doc, store.reader_generation)
                except MigrateError as exc:
                    raise type(exc)(
                        f"line {number} (event {doc['event']}): {exc.message}; nothing was "
                        "applied",
                        **{**exc.context, "line": number, "event": doc["event"]},
                    ) from exc
            except MigrateError:
                content_ledger.check(before=number)  # an earlier bad content row first
                raise
            content_ledger.add_many(content_keys(doc), number)
            events += 1
            basis = doc["event"]
            if not any(receipt["deltas"].values()):
                replayed += 1
            for key, n in receipt["deltas"].items():
                totals[key] += n
            if on_receipt is not None:
                on_receipt(receipt)
        if report is not None:
            report(read)
        verified = verifier.finish(number - 1, require=require_verified)
        content_ledger.check()
        tx.close_entry()
        basis_tx = tx.last_written
    return {
        "kind": "bbg-apply",
        "events": events,
        "replayed": replayed,
        "applied": events - replayed,
        "deltas": totals,
        "basis": basis,
        "basis_tx": basis_tx,
        "verified": verified,
    }


def apply(
    store_dir: Path,
    stream: BinaryIO,
    *,
    max_line: int = MAX_LINE,
    on_receipt: Callable[[Receipt], None] | None = None,
    progress: Observer | None = None,
    require_verified: bool = False,
) -> dict[str, Any]:
    """``bbg-migrate apply``: apply ``stream`` to the store in ``store_dir`` (either engine),
    creating the store if it does not exist.  A refused stream into a store this call created
    leaves no store behind -- and never removes one another process has opened or written
    meanwhile (:func:`migrate.store.store.provisional_store`; a new Fjall store is built
    aside and published only once applied: :func:`.apply_fjall.apply_new`)."""

    def run(store: Store) -> dict[str, Any]:
        return apply_stream(
            store, stream, max_line=max_line, on_receipt=on_receipt, progress=progress,
            require_verified=require_verified,
        )

    if apply_fjall.creates_fjall(store_dir):
        return apply_fjall.apply_new(store_dir, run)
    with provisional_store(store_dir) as store:
        return run(store)


__all__ = ["apply", "apply_event", "apply_stream", "parse_event", "read_line"]
