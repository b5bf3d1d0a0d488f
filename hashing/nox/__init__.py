"""nox Data: how a Data content row's payload decodes and what its content id is.

A cell store's ``application_content`` value is a codec byte and a payload; codec 0 (Data)
holds one nox data node.  Two id schemes exist in the real code, told apart by the payload's
length (the lengths never overlap):

* ``nox-model-b`` (nox ``rs/encode.rs`` ``particle_of`` and ``rs/data/hash.rs`` since nox
  dba9ceb; cybergraph ``src/content.rs`` ``Content::new``): an **atom** is 8 bytes, one
  canonical Goldilocks value v < p little-endian, id = hemera tree ``hash_leaf(v LE, 0,
  false)``; a **pair** is 64 bytes, the two children's ids, id = ``hash_node(left, right,
  false)``.  cybergraph refuses a pair with any 8-byte limb >= p before hashing (nox alone
  would reduce it), so a non-canonical limb is refused here first too.
* ``nox-tagged-v0`` (nox ``specs/encoding.md`` v0.3 and ``rs/encode.rs`` ``noun_id`` before
  dba9ceb): tag ‖ payload with id = hemera(tag ‖ payload): 0x00 field atom (9 bytes, value
  < p), 0x01 word atom (9 bytes, value < 2^32), 0x02 hash atom (33 bytes, four limbs < p),
  0x03 cell (65 bytes: left id ‖ right id).

A pair (or a tagged cell) names two children: cybergraph's codec-checked transfer also
requires both to be content rows; that is a store-level rule, checked by the caller with
:func:`children`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from hashing import hemera
from hashing.hemera import Backend

#: The Goldilocks prime 2^64 - 2^32 + 1.
P = 0xFFFF_FFFF_0000_0001

MODEL_B = "nox-model-b"
TAGGED_V0 = "nox-tagged-v0"
SCHEMES = (MODEL_B, TAGGED_V0)

ATOM_LEN, PAIR_LEN = 8, 64
TAG_FIELD, TAG_WORD, TAG_HASH, TAG_CELL = 0x00, 0x01, 0x02, 0x03
_TAGGED_LEN = {TAG_FIELD: 9, TAG_WORD: 9, TAG_HASH: 33, TAG_CELL: 65}
_TAG_KIND = {TAG_FIELD: "field atom", TAG_WORD: "word atom", TAG_HASH: "hash atom",
             TAG_CELL: "cell"}  # fmt: skip

#: How each kind's id is derived (used in error details).
RULES = {
    "atom": "hash_leaf(atom LE, 0, false)",
    "pair": "hash_node(left, right, false)",
    "field atom": "hemera(tag ‖ payload)",
    "word atom": "hemera(tag ‖ payload)",
    "hash atom": "hemera(tag ‖ payload)",
    "cell": "hemera(tag ‖ payload)",
}


class NoxError(ValueError):
    """A payload that is no nox encoding under either scheme (the reason is the message)."""


@dataclass(frozen=True)
class Node:
    """A decoded Data payload: its scheme, its kind and (pair or cell) its children."""

    scheme: str
    kind: str
    children: tuple[bytes, bytes] | None = None

    @property
    def rule(self) -> str:
        """How this node's id is derived, as the error details name it."""
        return RULES[self.kind]


_ATOM = Node(MODEL_B, "atom")
_EIGHT_LIMBS = struct.Struct("<8Q")


def _limbs(data: bytes) -> list[int]:
    return [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data), 8)]


def scheme_of(payload: bytes) -> str | None:
    """The scheme a payload's length belongs to (None: neither), before any value check."""
    if len(payload) in (ATOM_LEN, PAIR_LEN):
        return MODEL_B
    if payload and _TAGGED_LEN.get(payload[0]) == len(payload):
        return TAGGED_V0
    return None


def decode(payload: bytes) -> Node:
    """Decode one Data payload (``NoxError`` with the reason if it is no valid encoding)."""
    n = len(payload)
    if n == ATOM_LEN:
        if int.from_bytes(payload, "little") >= P:
            raise NoxError("atom value >= p (nox FieldOutOfRange)")
        return _ATOM
    if n == PAIR_LEN:
        if max(_EIGHT_LIMBS.unpack(payload)) >= P:
            raise NoxError("pair limb >= p (cybergraph NoncanonicalParticle)")
        return Node(MODEL_B, "pair", (payload[:32], payload[32:]))
    if n and _TAGGED_LEN.get(payload[0]) == n:
        tag, body = payload[0], payload[1:]
        kind = _TAG_KIND[tag]
        if tag == TAG_CELL:
            return Node(TAGGED_V0, kind, (body[:32], body[32:]))
        values = _limbs(body)
        if tag == TAG_HASH:
            if any(v >= P for v in values):
                raise NoxError("tagged hash limb >= p")
        elif values[0] >= (1 << 32 if tag == TAG_WORD else P):
            raise NoxError("tagged atom value out of range")
        return Node(TAGGED_V0, kind)
    raise NoxError(
        "Data payload is neither a nox Model B node (8 / 64 B) nor a pre-dba9ceb tagged noun "
        "(9 / 33 / 65 B)"
    )


def children(payload: bytes) -> tuple[bytes, bytes] | None:
    """The two child ids a valid pair or tagged cell names (None for an atom)."""
    return decode(payload).children


def particle(payload: bytes, backend: Backend | None = None) -> bytes:
    """The content id of one Data payload (``NoxError`` if it is no valid encoding)."""
    out = particles([payload], backend)[0]
    if isinstance(out, NoxError):
        raise out
    return out


def particles(
    payloads: Sequence[bytes], backend: Backend | None = None
) -> list[bytes | NoxError]:
    """The content id of each payload, or the ``NoxError`` saying why it has none."""
    return [got for _, got in identify(payloads, backend)]


def identify(
    payloads: Sequence[bytes], backend: Backend | None = None
) -> list[tuple[Node | None, bytes | NoxError]]:
    """Each payload decoded and hashed: (node, id), or (None, the ``NoxError``).

    Atoms, pairs and tagged nodes are each hashed in one batch call of the hemera backend
    (the C core releases the GIL for each batch).
    """
    b = backend or hemera.impl
    out: list[tuple[Node | None, bytes | NoxError]] = [(None, b"")] * len(payloads)
    atoms: list[int] = []
    pairs: list[int] = []
    tagged: list[int] = []
    for i, payload in enumerate(payloads):
        try:
            node = decode(payload)
        except NoxError as exc:
            out[i] = (None, exc)
            continue
        out[i] = (node, b"")
        if node.scheme == TAGGED_V0:
            tagged.append(i)
        elif node.kind == "atom":
            atoms.append(i)
        else:
            pairs.append(i)
    for idx, ids in (
        (atoms, b.hash_leaf_many([payloads[i] for i in atoms], 0, False) if atoms else []),
        (pairs, b.hash_node_many([payloads[i] for i in pairs], False) if pairs else []),
        (tagged, b.hash_many([payloads[i] for i in tagged]) if tagged else []),
    ):
        for i, got in zip(idx, ids, strict=True):
            out[i] = (out[i][0], got)
    return out
