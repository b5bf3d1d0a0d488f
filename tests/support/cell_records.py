"""A small cell.redb whose namespaces are neuron's legacy cell records, for mapped-run tests.

neuron's legacy reader (cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs`` ``inspect``)
wants index 0 of an origin to be a ``cell/birth/1`` record whose id is the origin, and each
later entry a ``cell/commit/1`` record whose ``cell``, ``index`` and ``previous`` fields chain
it (nox Model B nodes as neuron@dbebea3f ``model/src/data.rs`` ``Builder`` lays them out:
atom, pair, uint = pair(hi, lo), ref = pair(pair(l0, l1), pair(l2, l3)), fields = right-nested
pairs ending in atom 0, record = pair(ref(schema), fields)).  This writer lays out the nodes
the same way, with field 0 of each record the schema id neuron's reader expects
(:func:`migrate.rules.neuron_schema.schema_id`, derived from neuron's suite hashes); the other
field values are stand-ins neuron alone interprets.
"""

from __future__ import annotations

from pathlib import Path

from hashing import hemera, nox
from migrate.rules import neuron_schema
from migrate.rules.neuron_schema import schema_id
from migrate.store.codec import Head, history_key, request_key, request_value
from tests.support.redb_writer import RedbWriter

CONTENT = "application_content"
TABLES = (
    "application_content",
    "application_heads",
    "application_history",
    "application_requests",
    "application_unique_claims",
)


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


#: A snapshot's profile and lifecycle particles (None: the original profile, ``active``).
Odd = tuple[bytes | None, bytes | None]


def snapshot(b: Builder, seed: bytes, odd: Odd = (None, None)) -> bytes:
    """A ``cell/snapshot/1`` record (11 fields): a lifecycle variant, the original cell
    profile (field 4, :func:`migrate.rules.neuron_schema.legacy_profile`) unless ``odd`` names
    another profile or lifecycle particle; the other fields are stand-ins."""
    profile, lifecycle = odd
    stand = [b.ref(hemera.hash(b"snapshot field %d of " % i + seed)) for i in range(11)]
    values = list(stand)
    values[2] = b.record("cell/lifecycle/active/1", []) if lifecycle is None else lifecycle
    values[4] = b.ref(neuron_schema.legacy_profile() if profile is None else profile)
    values[5] = b.uint(0)
    return b.record("cell/snapshot/1", values)


def birth(b: Builder, seed: int, schema: bytes | None = None, odd: Odd = (None, None)) -> bytes:
    """A ``cell/birth/1`` record (7 fields) whose initial snapshot (field 5) is
    :func:`snapshot`; its id is the origin's namespace (``schema``: a field 0 other than the
    birth schema id)."""
    refs = [b.ref(hemera.hash(b"birth field %d of %d" % (i, seed))) for i in range(5)]
    refs[4] = b.ref(snapshot(b, b"birth %d" % seed, odd))
    values = [b.uint(1), *refs, b.atom(0)]
    return b.record_as(schema_id("cell/birth/1") if schema is None else schema, values)


def commit(
    b: Builder, origin: bytes, index: int, previous: bytes, *, index_field: int | None = None,
    schema: bytes | None = None, odd: Odd = (None, None),
) -> bytes:
    """A ``cell/commit/1`` record (10 fields) chained to ``previous``, its after snapshot
    (field 4) :func:`snapshot` (``index_field``: the index it claims, to build a broken chain;
    ``schema``: a field 0 other than the commit schema id)."""
    stand = [b.ref(hemera.hash(b"commit field %d at %d" % (i, index))) for i in range(5)]
    stand[1] = b.ref(snapshot(b, origin + b"%d" % index, odd))
    claimed = index if index_field is None else index_field
    fields = [b.ref(origin), b.uint(claimed), b.ref(previous), *stand, b.uint(0), b.atom(0)]
    return b.record_as(schema_id("cell/commit/1") if schema is None else schema, fields)


def write_store(
    path: Path, origins: int = 2, commits: int = 2, *, break_at: tuple[int, int] | None = None,
    foreign: tuple[int, int, bytes] | None = None, odd: tuple[int, Odd] | None = None,
) -> list[str]:
    """Write a valid cell.redb of ``origins`` namespaces of cell records (a birth and
    ``commits`` commits each); ``break_at=(origin, index)``: that commit claims a wrong
    index; ``foreign=(origin, index, schema)``: that entry's field 0 is the ref of ``schema``;
    ``odd=(origin, (profile, lifecycle))``: that origin's snapshots name them.  Returns the
    namespaces (hex), sorted."""
    b = Builder()
    history: dict[bytes, bytes] = {}
    heads: dict[bytes, bytes] = {}
    requests: dict[bytes, bytes] = {}
    names = []
    for o in range(origins):
        mine: Odd = odd[1] if odd and odd[0] == o else (None, None)
        ns = birth(b, o, foreign[2] if foreign and foreign[:2] == (o, 0) else None, mine)
        names.append(ns.hex())
        chain = [ns]
        for i in range(1, commits + 1):
            wrong = i + 7 if break_at == (o, i) else None
            other = foreign[2] if foreign and foreign[:2] == (o, i) else None
            chain.append(commit(b, ns, i, chain[-1], index_field=wrong, schema=other, odd=mine))
        for i, c in enumerate(chain):
            history[history_key(ns, i)] = c
            requests[request_key(ns, c)] = request_value(c, Head(i, c))
        heads[ns] = Head(len(chain) - 1, chain[-1]).encode()
    rows = {
        "application_content": b.content,
        "application_heads": heads,
        "application_history": history,
        "application_requests": requests,
        "application_unique_claims": {},
    }
    with RedbWriter(path) as writer:
        for table in TABLES:
            writer.add_table(table, sorted(rows[table].items()))
    return sorted(names)
