"""neuron's data ``Reader`` over a store's content rows, with neuron's reasons for refusing.

neuron decodes every record of its data model with one reader (cyberia-to/neuron@dbebea3f
``model/src/data.rs`` ``Reader``; ``map`` and ``optional_ref`` in neuron@2fe713bd
``model/src/records.rs``).  The rules this class follows, each with neuron's error:

* ``content``: every read spends one of the reader's budget (``Limit`` when spent: neuron's
  ``inspect`` gives its reader 2 000 000 reads, ``legacy::inspect`` 100 000 per reader); the
  row must exist (``Missing``), hold at most 8 MiB (``Limit``) and its key be the payload's id
  -- hemera of a Blob, the nox particle of a Data node (``InvalidData``; neuron@2fe713bd
  ``model/src/data.rs`` ``Reader::content``, ``Content::validate``);
* ``pair``: a 64-byte Data node; ``atom``: an 8-byte one -- a Blob is neither
  (``InvalidData``); ``uint`` = ``pair(hi, lo)`` of atoms each ``<= u32::MAX``; ``reference``
  = ``pair(pair(a0, a1), pair(a2, a3))`` of a 32-byte id's u64 LE limbs;
* ``fields``: right-nested pairs ending in atom 0, at most ``limit`` (more: ``Limit``);
  ``list`` = ``pair(uint(count), fields)`` with ``count <= limit`` (``Limit``) and equal to the
  number of fields (``InvalidData``); ``text`` = a list (<= 4096) of atoms each a byte, valid
  UTF-8 (``InvalidData``); ``optional`` = ``pair(atom tag, value)``: tag 1 -> the value, tag
  0 with value atom 0 -> none, anything else ``InvalidData``; ``map`` = a list of
  ``pair(ref key, ref value)`` whose keys strictly increase (``InvalidData``);
* ``record(name, count)``: ``pair(ref schema, fields)`` whose schema is neuron's schema id of
  ``name`` (else ``UnsupportedSchema``, before the field count) with exactly ``count`` fields;
* ``artifact`` (neuron@2fe713bd ``model/src/records.rs`` ``Reader::artifact``): a
  ``cell/artifact/1`` record (4 fields) whose codec (field 1) is hemera of
  ``hemera/bytes/0.3`` (else ``UnsupportedSchema``) and whose content (field 0) is a Blob of
  the length field 2 states (else ``InvalidData``); its media type (field 3) is not read.

The engine wraps these as ``Data(...)`` (neuron ``engine/src/lib.rs`` ``From<DataError>``);
:class:`Refused` carries that name.
"""

from __future__ import annotations

from collections.abc import Callable

from hashing import hemera, nox
from migrate.rules.neuron_schema import schema_id, suite
from migrate.store.codec import CONTENT

Lookup = Callable[[str, bytes], bytes | None]
_U32 = 0xFFFF_FFFF
#: The text bound of neuron's ``Reader::text``.
MAX_TEXT = 4096
#: The largest content neuron reads (``Content::validate``: more is ``Limit``).
MAX_CONTENT = 8 * 1024 * 1024
ARTIFACT = ("cell/artifact/1", 4)
#: How many validated Data nodes a reader keeps (at most ~64 bytes each; emptied when full).
NODE_CACHE = 1 << 16
#: The one artifact codec neuron reads: hemera of its label (``Reader::artifact``).
BYTES_CODEC = hemera.hash(b"hemera/bytes/0.3")


class Refused(Exception):
    """neuron's reader refuses: ``reason`` is neuron's error (``Data(InvalidData)`` ...)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def invalid(detail: str) -> Refused:
    """neuron's ``Data(InvalidData)``."""
    return Refused("Data(InvalidData)", detail)


def limit(detail: str) -> Refused:
    """neuron's ``Data(Limit)``."""
    return Refused("Data(Limit)", detail)


class Reader:
    """neuron's ``Reader`` over a store's content rows (codec byte ‖ payload); ``budget``: how
    many content reads it may make (None: unbounded)."""

    def __init__(
        self, lookup: Lookup, budget: int | None = None, nodes: dict[bytes, bytes] | None = None
    ) -> None:
        self._get = lookup
        self._left = budget
        self._zero = nox.particle((0).to_bytes(8, "little"))
        # Data nodes already validated (id -> payload), shared by the readers of one walk:
        # content rows never change, so a node read again needs neither its row nor its hash
        # (its read still spends the budget, as neuron's does).
        self._nodes = {} if nodes is None else nodes

    def content(self, cid: bytes, what: str) -> tuple[bool, bytes]:
        """neuron's ``Reader::content``: (is it a Blob, its bytes), validated."""
        if self._left is not None:
            if self._left == 0:
                raise limit(f"{what}: the reader's budget of content reads is spent")
            self._left -= 1
        known = self._nodes.get(cid)
        if known is not None:
            return False, known
        row = self._get(CONTENT, cid)
        if row is None:
            raise Refused("Data(Missing)", f"{what} {cid.hex()} is not a content row")
        codec, payload = row[:1], row[1:]
        if codec not in (b"\x00", b"\x01"):
            raise invalid(f"{what} {cid.hex()}: codec byte {codec.hex()} is neither Data nor Blob")
        if len(payload) > MAX_CONTENT:
            raise limit(f"{what} {cid.hex()}: {len(payload)} bytes, over {MAX_CONTENT}")
        blob = codec == b"\x01"
        try:
            ok = (hemera.hash(payload) if blob else nox.particle(payload)) == cid
        except nox.NoxError:
            ok = False
        if not ok:
            raise invalid(f"{what} {cid.hex()}: the key is not the payload's id")
        if not blob:
            if len(self._nodes) >= NODE_CACHE:
                self._nodes.clear()
            self._nodes[cid] = payload
        return blob, payload

    def _data(self, cid: bytes, length: int, what: str) -> bytes:
        blob, payload = self.content(cid, what)
        if blob:
            raise invalid(f"{what} {cid.hex()} is a Blob, not a nox {length}-byte Data node")
        if len(payload) != length:
            raise invalid(
                f"{what} {cid.hex()} is a {len(payload)}-byte Data node, not {length} bytes"
            )
        return payload

    def pair(self, cid: bytes, what: str) -> tuple[bytes, bytes]:
        payload = self._data(cid, 64, what)
        return payload[:32], payload[32:]

    def atom(self, cid: bytes, what: str) -> int:
        return int.from_bytes(self._data(cid, 8, what), "little")

    def uint(self, cid: bytes, what: str) -> int:
        hi, lo = (self.atom(c, what) for c in self.pair(cid, what))
        if hi > _U32 or lo > _U32:
            raise invalid(f"{what}: a uint half over u32::MAX")
        return (hi << 32) | lo

    def reference(self, cid: bytes, what: str) -> bytes:
        left, right = self.pair(cid, what)
        limbs = [*self.pair(left, what), *self.pair(right, what)]
        return b"".join(self.atom(limb, what).to_bytes(8, "little") for limb in limbs)

    def fields(self, cid: bytes, bound: int, what: str) -> list[bytes]:
        values: list[bytes] = []
        while cid != self._zero:
            if len(values) >= bound:
                raise limit(f"{what}: more than {bound} fields")
            head, cid = self.pair(cid, what)
            values.append(head)
        return values

    def sequence(self, cid: bytes, bound: int, what: str) -> list[bytes]:
        count_id, tail = self.pair(cid, what)
        count = self.uint(count_id, f"{what} (count)")
        if count > bound:
            raise limit(f"{what}: a list of {count} entries, at most {bound}")
        values = self.fields(tail, bound, what)
        if count != len(values):
            raise invalid(f"{what}: a list that says {count} entries and holds {len(values)}")
        return values

    def text(self, cid: bytes, what: str) -> str:
        raw = bytearray()
        for value in self.sequence(cid, MAX_TEXT, what):
            byte = self.atom(value, what)
            if byte > 0xFF:
                raise invalid(f"{what}: a text atom over one byte")
            raw.append(byte)
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise invalid(f"{what}: text that is not UTF-8") from None

    def optional(self, cid: bytes, what: str) -> bytes | None:
        tag, value = self.pair(cid, what)
        flag = self.atom(tag, f"{what} (tag)")
        if flag == 0 and self.atom(value, what) == 0:
            return None
        if flag == 1:
            return value
        raise invalid(f"{what}: an optional that is neither none nor some")

    def optional_ref(self, cid: bytes, what: str) -> bytes | None:
        value = self.optional(cid, what)
        return None if value is None else self.reference(value, what)

    def map(self, cid: bytes, bound: int, what: str) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        for entry in self.sequence(cid, bound, what):
            k, v = self.pair(entry, f"{what} (entry)")
            key = self.reference(k, f"{what} (key)")
            value = self.reference(v, f"{what} (value)")
            if out and out[-1][0] >= key:
                raise invalid(f"{what}: key {key.hex()} does not follow {out[-1][0].hex()}")
            out.append((key, value))
        return out

    def record(self, cid: bytes, schema: tuple[str, int], what: str) -> list[bytes]:
        name, count = schema
        ref, cursor = self.pair(cid, what)
        got, want = self.reference(ref, f"{what} ({name} schema ref)"), schema_id(name)
        if got != want:
            raise Refused(
                "Data(UnsupportedSchema)",
                f"{what}: its schema ref {got.hex()} is not the {name} schema id {want.hex()} "
                f"(derived from neuron's {suite(name)})",
            )
        values = self.fields(cursor, count, f"{what} ({name})")
        if len(values) != count:
            raise invalid(f"{what}: {len(values)} fields, {name} has {count}")
        return values

    def record_if(self, cid: bytes, schema: tuple[str, int], what: str) -> list[bytes] | None:
        """:meth:`record`, or None where neuron's ``Reader::record`` says
        ``UnsupportedSchema`` (the caller tries another schema); every other refusal stands."""
        try:
            return self.record(cid, schema, what)
        except Refused as refused:
            if refused.reason == "Data(UnsupportedSchema)":
                return None
            raise

    def artifact(self, cid: bytes, what: str) -> bytes:
        """neuron's ``Reader::artifact``: the bytes of the Blob a ``cell/artifact/1`` names."""
        f = self.record(cid, ARTIFACT, what)
        content = self.reference(f[0], f"{what} (artifact content)")
        codec = self.reference(f[1], f"{what} (artifact codec)")
        if codec != BYTES_CODEC:
            raise Refused(
                "Data(UnsupportedSchema)",
                f"{what}: artifact codec {codec.hex()} is not hemera(hemera/bytes/0.3) "
                f"{BYTES_CODEC.hex()}",
            )
        stated = self.uint(f[2], f"{what} (artifact length)")
        blob, payload = self.content(content, f"{what} (artifact content)")
        if not blob or len(payload) != stated:
            kind = f"a {len(payload)}-byte Blob" if blob else "a Data node, not a Blob"
            raise invalid(f"{what}: artifact content {content.hex()} is {kind}; it states "
                          f"{stated} bytes")  # fmt: skip
        return payload
