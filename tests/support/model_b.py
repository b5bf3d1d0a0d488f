"""nox Model B nodes as neuron writes them, as content rows, for tests that build neuron records.

The layout is neuron's (cyberia-to/neuron@2fe713bd ``model/src/data.rs`` ``Builder``): atom
= 8-byte LE node, pair = 64-byte node, uint = pair(hi, lo), ref = pair(pair(l0, l1),
pair(l2, l3)) of a 32-byte id's u64 LE limbs, fields = right-nested pairs ending in atom 0,
list = pair(uint(count), fields), text = a list of byte atoms, optional = pair(atom tag,
value), map = a list of pair(ref key, ref value), record = pair(ref(schema), fields).
"""

from __future__ import annotations

from hashing import hemera, nox
from migrate.rules.neuron_schema import schema_id


class Builder:
    """Content rows (codec byte ‖ payload) of nox Model B nodes, keyed by their ids."""

    def __init__(self) -> None:
        self.content: dict[bytes, bytes] = {}

    def node(self, payload: bytes) -> bytes:
        cid = nox.particle(payload)
        self.content[cid] = b"\x00" + payload
        return cid

    def blob(self, payload: bytes) -> bytes:
        cid = hemera.hash(payload)
        self.content[cid] = b"\x01" + payload
        return cid

    def atom(self, value: int) -> bytes:
        return self.node(value.to_bytes(8, "little"))

    def pair(self, left: bytes, right: bytes) -> bytes:
        return self.node(left + right)

    def uint(self, value: int) -> bytes:
        return self.pair(self.atom(value >> 32), self.atom(value & 0xFFFF_FFFF))

    def ref(self, cid: bytes) -> bytes:
        a = [self.atom(int.from_bytes(cid[i : i + 8], "little")) for i in range(0, 32, 8)]
        return self.pair(self.pair(a[0], a[1]), self.pair(a[2], a[3]))

    def fields(self, values: list[bytes]) -> bytes:
        tail = self.atom(0)
        for value in reversed(values):
            tail = self.pair(value, tail)
        return tail

    def record(self, name: str, values: list[bytes]) -> bytes:
        return self.record_as(schema_id(name), values)

    def record_as(self, schema: bytes, values: list[bytes]) -> bytes:
        """A record whose field 0 is the ref of ``schema`` (a wrong one, to be refused)."""
        return self.pair(self.ref(schema), self.fields(values))


def sequence(b: Builder, values: list[bytes]) -> bytes:
    """neuron's list: ``pair(uint(count), fields)``."""
    return b.pair(b.uint(len(values)), b.fields(values))


def mapping(b: Builder, entries: list[tuple[bytes, bytes]]) -> bytes:
    """neuron's map: a list of ``pair(ref key, ref value)``, in the order given (neuron's
    writer sorts the keys; a test may not)."""
    return sequence(b, [b.pair(b.ref(k), b.ref(v)) for k, v in entries])


def optional(b: Builder, value: bytes | None) -> bytes:
    """neuron's optional ref: ``pair(atom 1, ref)`` or ``pair(atom 0, atom 0)``."""
    return b.pair(b.atom(0), b.atom(0)) if value is None else b.pair(b.atom(1), b.ref(value))


def text(b: Builder, value: str) -> bytes:
    """neuron's text: a list of one atom per UTF-8 byte."""
    return sequence(b, [b.atom(byte) for byte in value.encode()])
