"""Every identity the pipeline derives, in one place, each with its own hash domain.

All derived ids are pure functions of their inputs, so an exact rerun derives the same ids
and therefore the same receipt.

| id | derivation |
|---|---|
| import id | SHA-256(canonical JSON of {kind, fingerprint, mapping, nonce[, content check]}) |
| default nonce | SHA-256("bbg-migrate/default-nonce/1\\0" ‖ source SHA-256) |
| request id | hemera("bbg-migrate/request/1\\0" ‖ namespace[32] ‖ purpose ‖ 0x00 ‖ import id) |
| fingerprint | hemera("bbg-migrate/fingerprint/1\\0" ‖ ns ‖ request ‖ head(40) ‖ content ids) |
| legacy namespace | hemera(import record payload): the record is history[ns‖0] (birth rule) |
| legacy commit | hemera(item record payload), at history index i = ordinal + 1 (logs) |
| text namespace | hemera(import record payload), the record kept in the receipt (not history) |
| text commit | hemera(cybergraph observation JSON), at history index line - 1 |
| text request | hemera("cybergraph/text-import-request/1\\0" ‖ hemera(file) ‖ line u64 LE) |
| cybergraph fingerprint | cybergraph's application transaction fingerprint (text imports) |
| legacy raw id | hemera(raw bytes): the frame incl. header, or the line incl. LF |
| legacy request id | hemera("bbg-migrate/legacy-request/1\\0" ‖ source SHA-256 ‖ index u64 LE) |

The legacy request id depends on the source digest and the history index only (index 0 is
the import record, index i the item of event index i-1 or of line i), so a rerun after a
crash derives the same request for the same item and the store resolves it, item by item.

Blob content ids are hemera(payload), like every Blob of a legacy cell store, so a cell
store's content-id rule (a Blob's key is hemera of its payload) holds for what the pipeline
itself writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bbg_core.canonical import canonical_json

if TYPE_CHECKING:
    from migrate.store.codec import Head

CODEC_BLOB = b"\x01"


def hemera(data: bytes) -> bytes:
    """hemera(data): the cyber content hash (C path when built)."""
    from hashing.hemera import hash as hemera_hash

    out: bytes = hemera_hash(data)
    return out


def import_id(
    kind: str,
    fingerprint: dict[str, Any],
    mapping: dict[str, Any] | None,
    nonce: str,
    content_check: str = "codec",
    strict: bool = False,
    records: str | None = None,
    namespace: bytes | None = None,
) -> str:
    """The id of one import: the same inputs always give the same id.

    The content-check mode is part of the inputs; the default (``codec``) is left out of the
    document, so the ids of default imports are as they always were.
    """
    doc: dict[str, Any] = {"kind": kind, "source": fingerprint, "mapping": mapping, "nonce": nonce}
    if content_check != "codec":
        doc["content_check"] = content_check
    if strict:  # bbg frame logs read by the strict decoder (left out by default, as above)
        doc["strict"] = True
    if records is not None:  # TextArchives: the records written (cybergraph's observations)
        doc["records"] = records
    if namespace is not None:  # a TextArchive into the caller's namespace
        doc["namespace"] = namespace.hex()
    return hashlib.sha256(b"bbg-migrate/import-id/1\x00" + canonical_json(doc).encode()).hexdigest()


def default_nonce(source_sha256: str) -> str:
    """The nonce used when the operator names none: bound to the source bytes."""
    return hashlib.sha256(
        b"bbg-migrate/default-nonce/1\x00" + bytes.fromhex(source_sha256)
    ).hexdigest()


def request_id(namespace: bytes, purpose: str, import_ident: str) -> bytes:
    """A request id for a commit the pipeline makes (purpose: ``birth``, ``manifest`` ...)."""
    return hemera(
        b"bbg-migrate/request/1\x00"
        + namespace
        + purpose.encode()
        + b"\x00"
        + import_ident.encode()
    )


def fingerprint(
    namespace: bytes, request: bytes, head: bytes, content_ids: Iterable[bytes]
) -> bytes:
    """The request fingerprint: binds the request to its head and sorted content ids."""
    body = b"".join(sorted(set(content_ids)))
    return hemera(b"bbg-migrate/fingerprint/1\x00" + namespace + request + head + body)


def cybergraph_fingerprint(
    namespace: bytes,
    request: bytes,
    expected: Head | None,
    head: Head,
    content_ids: Iterable[bytes],
    required: Iterable[bytes] = (),
    claims: Iterable[tuple[bytes, bytes]] = (),
) -> bytes:
    """cybergraph's application transaction fingerprint (cybergraph@0213210e
    ``src/application.rs`` ``fingerprint``): hemera over the domain, namespace, request, the
    expected head (flag byte, then index u64 LE ‖ commit when present), the head, the count
    and sorted distinct content ids, the count and ids of ``required`` in order, and the
    count and pairs of the claims; every count u64 LE."""
    ids = sorted(set(content_ids))
    needs, pairs = list(required), list(claims)
    prior = b"\x00" if expected is None else b"\x01" + expected.encode()
    return hemera(
        b"cybergraph/application-transaction/1\x00" + namespace + request + prior + head.encode()
        + _u64(len(ids)) + b"".join(ids) + _u64(len(needs)) + b"".join(needs)
        + _u64(len(pairs)) + b"".join(k + v for k, v in pairs)
    )  # fmt: skip


def _u64(n: int) -> bytes:
    return n.to_bytes(8, "little")


def legacy_request_id(source_sha256: str, index: int) -> bytes:
    """The request id of history ``index`` of a legacy source (0 = its import record)."""
    return hemera(
        b"bbg-migrate/legacy-request/1\x00"
        + bytes.fromhex(source_sha256)
        + index.to_bytes(8, "little")
    )
