"""Byte encodings of the five application tables, shared by store and checkers.

| table | key | value |
|---|---|---|
| application_content | content id [32] | codec byte (0 Data, 1 Blob) ‖ payload |
| application_heads | namespace [32] | index u64 LE ‖ commit [32] |
| application_history | namespace [32] ‖ index u64 BE | commit [32] |
| application_requests | namespace [32] ‖ request [32] | fingerprint [32] ‖ head (40) |
| application_unique_claims | claim key [32] | claim value [32] |
"""

from __future__ import annotations

import struct
from typing import NamedTuple

CONTENT = "application_content"
CLAIMS = "application_unique_claims"
REQUESTS = "application_requests"
HISTORY = "application_history"
HEADS = "application_heads"

# Archive order: the position in this tuple is the table's ordinal byte in the digest.
ARCHIVE_ORDER: tuple[str, ...] = (CONTENT, CLAIMS, REQUESTS, HISTORY, HEADS)
ORDINAL: dict[str, int] = {name: i for i, name in enumerate(ARCHIVE_ORDER)}

ID_LEN = 32
HEAD_LEN = 40
MAX_KEY_LEN = 64
MAX_PAYLOAD = 16 * 1024 * 1024
CODECS = frozenset({0, 1})  # 0 = Data, 1 = Blob
U64_MAX = (1 << 64) - 1

_LE = struct.Struct("<Q")
_BE = struct.Struct(">Q")


class Head(NamedTuple):
    """A namespace head: history index and commit id (32 bytes)."""

    # Shadows tuple.index on purpose: the field name is the brief's vocabulary.
    index: int  # type: ignore[assignment]
    commit: bytes

    def encode(self) -> bytes:
        """The 40-byte head value: index u64 LE ‖ commit."""
        return _LE.pack(self.index) + self.commit

    @classmethod
    def decode(cls, raw: bytes) -> Head:
        """Parse a 40-byte head value (raises ValueError on a wrong length)."""
        if len(raw) != HEAD_LEN:
            raise ValueError(f"head value of {len(raw)} bytes (want {HEAD_LEN})")
        return cls(_LE.unpack_from(raw)[0], bytes(raw[8:]))

    def describe(self) -> str:
        """``(index, commit-hex)`` for messages."""
        return f"({self.index}, {self.commit.hex()})"


def history_key(namespace: bytes, index: int) -> bytes:
    """``namespace ‖ index u64 BE``: big-endian so byte order is index order."""
    return namespace + _BE.pack(index)


def split_history_key(key: bytes) -> tuple[bytes, int]:
    """Inverse of :func:`history_key` (ValueError on a wrong length)."""
    if len(key) != ID_LEN + 8:
        raise ValueError(f"history key of {len(key)} bytes (want {ID_LEN + 8})")
    return key[:ID_LEN], _BE.unpack_from(key, ID_LEN)[0]


def request_key(namespace: bytes, request: bytes) -> bytes:
    """``namespace ‖ request``."""
    return namespace + request


def request_value(fingerprint: bytes, head: Head) -> bytes:
    """``fingerprint ‖ head``: the stored receipt of a request."""
    return fingerprint + head.encode()


def split_request_value(raw: bytes) -> tuple[bytes, Head]:
    """Inverse of :func:`request_value` (ValueError on a wrong length)."""
    if len(raw) != ID_LEN + HEAD_LEN:
        raise ValueError(f"request value of {len(raw)} bytes (want {ID_LEN + HEAD_LEN})")
    return raw[:ID_LEN], Head.decode(raw[ID_LEN:])


# What a content row names by id (fixtures/legacy/README.md "Write semantics"): a cell commit
# record lists its items; a legacy item record names its raw payload.
COMMIT_PREFIX = b"\x01cell/commit/1\x00"
ITEM_PREFIX = b'\x01{"format":"bbg-migrate/legacy-item/1"'
# A cybergraph text observation (cybergraph@78d2343e src/text_archive.rs): serde field order.
OBSERVATION_PREFIX = b'\x01{"schema":"cybergraph/text-observation/1"'
_ITEMS_AT = len(COMMIT_PREFIX) + 32 + 8 + 32  # n u32 LE follows ns, index, previous


def commit_items(value: bytes) -> list[bytes]:
    """The item ids a cell commit record lists (``"cell/commit/1\\0"`` ‖ ns ‖ index u64 LE ‖
    previous ‖ n u32 LE ‖ n ids ‖ ...); none for any other value."""
    if not value.startswith(COMMIT_PREFIX) or len(value) < _ITEMS_AT + 4:
        return []
    (n,) = struct.unpack_from("<I", value, _ITEMS_AT)
    start = _ITEMS_AT + 4
    if len(value) < start + 32 * n:
        return []
    return [value[start + 32 * i : start + 32 * (i + 1)] for i in range(n)]


def record_payload(value: bytes) -> list[bytes]:
    """The payload ids a record names: a legacy item record's ``raw.id``, a cybergraph text
    observation's ``text`` and ``provenance.raw``; none for any other value."""
    import json

    try:
        if value.startswith(ITEM_PREFIX):
            raw = json.loads(value[1:])["raw"]["id"]
            return [bytes.fromhex(raw)] if isinstance(raw, str) and len(raw) == 64 else []
        if value.startswith(OBSERVATION_PREFIX):
            doc = json.loads(value[1:])
            named = [doc["text"], (doc.get("provenance") or {}).get("raw")]
            return [bytes(i) for i in named if isinstance(i, list) and len(i) == ID_LEN]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    return []
