"""GraphPort: atomic publication into a namespace's history.

``publish`` runs inside a write transaction (:class:`migrate.store.tx.Tx`) so a pipeline
can publish in the same transaction as its other effects (e.g. activation appending an
import manifest); :meth:`migrate.store.Store.commit` wraps it in a transaction of its own.

Order of checks in ``publish`` (each one rolls the whole transaction back):

1. argument shapes (ValidationFailed: bad-key-length, bad-value-length, unknown-codec,
   birth-mismatch, history-gap) — pure, before any read;
2. request replay: the same request with the same fingerprint returns the original head and
   writes nothing; with another fingerprint it is a Conflict.  ``once=True`` (GraphPort
   ``commit_once``, bbg's ``apply_once``) makes *any* existing receipt for the request a
   Conflict: resolving an old receipt never becomes a new effect permit (``resolve`` still
   returns the original head).  This precedes the marker,
   fence and head checks so an exact retry of an already committed request always resolves
   (bbg ``application.rs`` ``apply_checked`` checks the receipt first too);
3. the store's status marker still allows this handle to write (StoreSealed for a store
   sealed for a transfer, StoreRefused for ``copying``/unknown or a newer generation);
4. fence (Fenced), inert staging (Locked: the namespace is being imported);
5. expected head equals the current head (HeadMismatch otherwise);
6. immutable puts of content and claims (Conflict on different bytes), then the commit's
   content must exist (ValidationFailed: missing-content);
7. history, head and request receipt rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from bbg_core.errors import (
    Conflict,
    HeadMismatch,
    Locked,
    StoreCorrupt,
    StoreError,
    ValidationFailed,
)
from fences import generations, namespaces
from migrate.store.codec import (
    CLAIMS,
    CODECS,
    CONTENT,
    HEADS,
    HISTORY,
    ID_LEN,
    MAX_PAYLOAD,
    REQUESTS,
    U64_MAX,
    Head,
    history_key,
    request_key,
    request_value,
    split_history_key,
    split_request_value,
)
from migrate.store.live import LiveReader
from migrate.store.tx import Tx

MAX_PAGE = 4096


class Reader(Protocol):
    """A connection or transaction that answers queries."""

    @property
    def path(self) -> Any: ...

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


class PageReader(Reader, LiveReader, Protocol):
    """A handle that reads the live rows and the toolkit's records."""


def _damaged(db: Any, table: str, key: bytes, exc: ValueError) -> StoreCorrupt:
    """A stored head or request value that does not decode: the store is damaged."""
    path = getattr(db, "path", "the store")
    return StoreCorrupt(
        f"{path}: {table} key {bytes(key).hex()}: {exc}: the store is damaged; "
        "run `bbg-migrate --store STORE doctor` and restore it from a backup",
        path=str(path), table=table, key=bytes(key).hex(),
    )  # fmt: skip


def _head(db: Any, key: bytes, value: bytes) -> Head:
    try:
        return Head.decode(value)
    except ValueError as exc:
        raise _damaged(db, HEADS, key, exc) from None


def head(db: LiveReader, namespace: bytes) -> Head | None:
    """The namespace's current head, or None if it has none."""
    value = db.live_get(HEADS, namespace)
    return None if value is None else _head(db, namespace, value)


def resolve(db: LiveReader, namespace: bytes, request: bytes) -> Head | None:
    """The head a request originally produced, or None if it was never committed."""
    key = request_key(namespace, request)
    value = db.live_get(REQUESTS, key)
    if value is None:
        return None
    try:
        return split_request_value(value)[1]
    except ValueError as exc:
        raise _damaged(db, REQUESTS, key, exc) from None


def history(
    db: PageReader, namespace: bytes, after: int | None = None, limit: int = MAX_PAGE
) -> list[Head]:
    """Up to ``limit`` (≤ 4096) history entries with index > ``after``, in index order.

    A gap inside the page is corruption and raises StoreError: a gap is never reported as
    a short history.  History below a ``nohistory`` boundary was dropped on purpose: the
    first page then starts at the boundary (:mod:`migrate.store.retention`).
    """
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be 1..{MAX_PAGE}, not {limit}")
    if after is not None and not 0 <= after < U64_MAX:
        raise ValueError(f"after must be 0..2^64-2, not {after}")
    low = namespace if after is None else history_key(namespace, after)
    page: list[Head] = []
    expect = 0 if after is None else after + 1
    for key, value in db.live_rows(HISTORY, prefix=namespace,
                                   after=None if after is None else low, limit=limit):  # fmt: skip
        _, index = split_history_key(key)
        if index != expect and not page and _retained_from(db, namespace) == index > expect:
            expect = index  # history below the namespace's nohistory boundary was dropped
        if index != expect:
            raise StoreError(
                f"{db.path}: namespace {namespace.hex()} history index {expect} is missing "
                f"(next present {index}); the store is corrupt",
                path=str(db.path),
                namespace=namespace,
                index=expect,
            )
        page.append(Head(index, bytes(value)))
        expect += 1
    return page


def _retained_from(db: PageReader, namespace: bytes) -> int | None:
    """The first retained history index of a ``nohistory`` namespace, or None."""
    has = db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                 ("bbg_retention_v1_boundaries",))  # fmt: skip
    if has is None:
        return None
    row = db.one("SELECT first_index FROM bbg_retention_v1_boundaries WHERE namespace = ?",
                 (namespace,))  # fmt: skip
    return None if row is None else int(row[0])


def publish(
    tx: Tx,
    *,
    reader_generation: str,
    namespace: bytes,
    request: bytes,
    expected: Head | None,
    new_head: Head,
    contents: Mapping[bytes, bytes],
    claims: Mapping[bytes, bytes],
    fingerprint: bytes,
    once: bool = False,
) -> Head:
    """Publish one commit in ``tx`` (see the module docstring); returns the head in force."""
    _check_shapes(namespace, request, expected, new_head, contents, claims, fingerprint)
    ctx: dict[str, Any] = {"path": str(tx.path), "namespace": namespace, "request": request}
    rkey = request_key(namespace, request)
    prior = tx.get(REQUESTS, rkey)
    if prior is not None:
        prior_fp, prior_head = split_request_value(prior)
        if once:
            raise Conflict(
                f"{tx.path}: request {request.hex()} in namespace {namespace.hex()} was already "
                f"committed (head {prior_head.describe()}); commit_once publishes a request at "
                "most once and never turns an old receipt into a new effect. Use resolve to "
                "read the original head",
                head=prior_head.encode().hex(),
                **ctx,
            )
        if prior_fp == fingerprint:
            return prior_head
        raise Conflict(
            f"{tx.path}: request {request.hex()} in namespace {namespace.hex()} was committed "
            f"with another fingerprint (head {prior_head.describe()}); a request id cannot be "
            "reused for different content",
            **ctx,
        )
    generations.require_readable(tx, reader_generation)
    namespaces.require_unfenced(tx, namespace)
    staged = tx.one(
        "SELECT import_id FROM bbg_import_v1_staged_namespaces WHERE namespace = ?", (namespace,)
    )
    if staged is not None:
        raise Locked(
            f"{tx.path}: namespace {namespace.hex()} is being imported (import {staged[0]}); "
            "it accepts writes only after that import is activated",
            import_id=staged[0],
            **ctx,
        )
    current = head(tx, namespace)
    if current != expected:
        raise HeadMismatch(
            f"{tx.path}: namespace {namespace.hex()} head is "
            f"{current.describe() if current else 'absent'}, not the expected "
            f"{expected.describe() if expected else 'absent'}; nothing was written",
            expected=expected.encode().hex() if expected else None,
            current=current.encode().hex() if current else None,
            **ctx,
        )
    # New content and claim rows are recorded in the ledger entry by the puts themselves,
    # except the commit's own content, which its commit event carries.
    for cid in sorted(contents):
        tx.put(CONTENT, cid, contents[cid], note=cid != new_head.commit)
    for claim in sorted(claims):
        tx.put(CLAIMS, claim, claims[claim])
    if new_head.commit not in contents and tx.get(CONTENT, new_head.commit) is None:
        raise ValidationFailed(
            f"commit {new_head.commit.hex()} has no content (pass it in contents)",
            errors=[
                {
                    "code": "missing-content",
                    "detail": f"namespace {namespace.hex()} index {new_head.index}: commit "
                    f"{new_head.commit.hex()} not in application_content",
                }
            ],
            **ctx,
        )
    tx.put(HISTORY, history_key(namespace, new_head.index), new_head.commit)
    # The head is the only row of the five tables that is ever overwritten.
    tx.set_head(namespace, new_head)
    tx.put(REQUESTS, rkey, request_value(fingerprint, new_head))
    # The ledger entry: the head move, and the rows that are not this commit's own content.
    tx.mark("commit")
    tx.note_head(namespace, current, new_head, request)
    return new_head


def _check_shapes(
    namespace: bytes,
    request: bytes,
    expected: Head | None,
    new_head: Head,
    contents: Mapping[bytes, bytes],
    claims: Mapping[bytes, bytes],
    fingerprint: bytes,
) -> None:
    errors: list[dict[str, str]] = []

    def bad(code: str, detail: str) -> None:
        errors.append({"code": code, "detail": detail})

    for label, value in (
        ("namespace", namespace),
        ("request", request),
        ("fingerprint", fingerprint),
        ("new head commit", new_head.commit),
    ) + ((("expected head commit", expected.commit),) if expected else ()):
        if len(value) != ID_LEN:
            bad("bad-key-length", f"{label} of {len(value)} bytes (want {ID_LEN})")
    for cid, value in contents.items():
        if len(cid) != ID_LEN:
            bad("bad-key-length", f"content id {cid.hex()} of {len(cid)} bytes (want {ID_LEN})")
        if not value or len(value) - 1 > MAX_PAYLOAD:
            bad("bad-value-length", f"content {cid.hex()}: value of {len(value)} bytes")
        elif value[0] not in CODECS:
            bad("unknown-codec", f"content {cid.hex()}: codec byte {value[0]}")
    for key, value in claims.items():
        if len(key) != ID_LEN or len(value) != ID_LEN:
            bad("bad-key-length", f"claim {key.hex()}: key/value must be {ID_LEN} bytes each")
    if not 0 <= new_head.index <= U64_MAX:
        bad("history-gap", f"head index {new_head.index} out of u64 range")
    if expected is None:
        if new_head.index != 0 or new_head.commit != namespace:
            bad(
                "birth-mismatch",
                f"namespace {namespace.hex()}: a first commit must be (0, namespace), "
                f"not {new_head.describe()}",
            )
    elif new_head.index != expected.index + 1:
        bad(
            "history-gap",
            f"namespace {namespace.hex()}: new head index {new_head.index} does not follow "
            f"expected index {expected.index}",
        )
    if errors:
        raise ValidationFailed(
            f"commit rejected: {errors[0]['detail']}", errors=errors, namespace=namespace
        )


def heads(db: LiveReader) -> list[tuple[bytes, Head]]:
    """Every namespace's head, in namespace (key) order."""
    return [(k, _head(db, k, v)) for k, v in db.live_rows(HEADS)]


def heads_after(db: LiveReader, after: bytes, limit: int) -> list[tuple[bytes, Head]]:
    """At most ``limit`` heads of namespaces past ``after``, in namespace order."""
    return [(k, _head(db, k, v)) for k, v in db.live_rows(HEADS, after=after, limit=limit)]


def content_prefix(db: Reader, content_id: bytes, n: int) -> tuple[bytes, int] | None:
    """The first ``n`` bytes of a content row's value and its whole length, or None (on a
    Fjall store's read handle the row is read from the keyspace: at most one value)."""
    from migrate.store.keyspace import KeyspaceRows

    if isinstance(db, KeyspaceRows):
        value = db.live_get(CONTENT, content_id)
        return None if value is None else (value[:n], len(value))
    row = db.one(
        "SELECT substr(value, 1, ?), length(value) FROM application_content WHERE key = ?",
        (n, content_id),
    )
    return None if row is None else (bytes(row[0]), int(row[1]))
