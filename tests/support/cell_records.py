"""A small cell.redb whose namespaces are neuron's legacy cell records, for mapped-run tests.

neuron's legacy reader (cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs`` ``inspect``)
wants index 0 of an origin to be a ``cell/birth/1`` record whose id is the origin, and each
later entry a ``cell/commit/1`` record whose ``cell``, ``index`` and ``previous`` fields chain
it, each naming a ``cell/snapshot/1`` whose definition, artifacts, policy and live
continuation it reads too, and each commit's events and operations
(:mod:`tests.support.cell_snapshot`).  The nodes are nox Model B nodes laid out as neuron's
``Builder`` lays them out (:mod:`tests.support.model_b`), field 0 of each record the schema id
neuron's reader expects (:func:`migrate.rules.neuron_schema.schema_id`, derived from neuron's
suite hashes); values neuron only carries are stand-ins.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from hashing import hemera
from migrate.rules import neuron_schema
from migrate.rules.neuron_schema import schema_id
from migrate.store.codec import Head, history_key, request_key, request_value
from tests.support.cell_snapshot import COMMIT_FLAWS, SNAPSHOT_FLAWS, changes, contents
from tests.support.model_b import Builder, sequence
from tests.support.redb_writer import RedbWriter

__all__ = ["Builder", "write_store"]

CONTENT = "application_content"
TABLES = (
    "application_content",
    "application_heads",
    "application_history",
    "application_requests",
    "application_unique_claims",
)


#: A snapshot's profile and lifecycle particles (None: the original profile, ``active``).
Odd = tuple[bytes | None, bytes | None]
#: How to write one entry: its snapshot's odd profile/lifecycle, a flaw
#: (:mod:`tests.support.cell_snapshot`) and whether its snapshot holds a live continuation.
Entry = tuple[Odd, str | None, bool]
PLAIN: Entry = ((None, None), None, False)


def snapshot(b: Builder, seed: bytes, entry: Entry = PLAIN) -> bytes:
    """A ``cell/snapshot/1`` record (11 fields): a lifecycle variant, the original cell
    profile (field 4, :func:`migrate.rules.neuron_schema.legacy_profile`) unless the entry's
    ``odd`` names another profile or lifecycle particle, and the definition, artifacts,
    policy and maps :func:`tests.support.cell_snapshot.contents` writes."""
    (profile, lifecycle), flaw, live = entry
    values = contents(b, seed, flaw if flaw in SNAPSHOT_FLAWS else None, live)
    values[2] = b.record("cell/lifecycle/active/1", []) if lifecycle is None else lifecycle
    values[4] = b.ref(neuron_schema.legacy_profile() if profile is None else profile)
    return b.record("cell/snapshot/1", [values[i] for i in range(11)])


def birth(b: Builder, seed: int, schema: bytes | None = None, entry: Entry = PLAIN) -> bytes:
    """A ``cell/birth/1`` record (7 fields) whose initial snapshot (field 5) is
    :func:`snapshot`; its id is the origin's namespace (``schema``: a field 0 other than the
    birth schema id)."""
    refs = [b.ref(hemera.hash(b"birth field %d of %d" % (i, seed))) for i in range(5)]
    refs[4] = b.ref(snapshot(b, b"birth %d" % seed, entry))
    values = [b.uint(1), *refs, b.atom(0)]
    return b.record_as(schema_id("cell/birth/1") if schema is None else schema, values)


def commit(
    b: Builder, origin: bytes, index: int, previous: bytes, *, index_field: int | None = None,
    schema: bytes | None = None, entry: Entry = PLAIN,
) -> bytes:  # fmt: skip
    """A ``cell/commit/1`` record (10 fields) chained to ``previous``, its after snapshot
    (field 4) :func:`snapshot`, its events and operations (fields 5, 6)
    :func:`tests.support.cell_snapshot.changes` (``index_field``: the index it claims, to
    build a broken chain; ``schema``: a field 0 other than the commit schema id)."""
    flaw = entry[1] if entry[1] in COMMIT_FLAWS else None
    events, operations = changes(b, origin, index, flaw)
    stand = [b.ref(hemera.hash(b"commit field %d at %d" % (i, index))) for i in (3, 7)]
    after = b.ref(snapshot(b, origin + b"%d" % index, entry))
    claimed = index if index_field is None else index_field
    fields = [b.ref(origin), b.uint(claimed), b.ref(previous), stand[0], after, events,
              operations, stand[1], b.uint(0), sequence(b, [])]  # fmt: skip
    return b.record_as(schema_id("cell/commit/1") if schema is None else schema, fields)


def write_store(
    path: Path, origins: int = 2, commits: int = 2, *, break_at: tuple[int, int] | None = None,
    foreign: tuple[int, int, bytes] | None = None, odd: tuple[int, Odd] | None = None,
    flaw: tuple[int, int, str] | None = None, live: bool = False,
    flaws: tuple[tuple[int, int, str], ...] = (),
) -> list[str]:  # fmt: skip
    """:func:`_write_store`, written once per process for the same arguments (the records
    are built in Python, the most of a mapped-run test's own work) and copied after that."""
    made, names = _made(origins, commits, break_at, foreign, odd, flaw, live, flaws)
    shutil.copyfile(made, path)
    return list(names)


@functools.lru_cache(maxsize=64)
def _made(
    origins: int, commits: int, break_at: tuple[int, int] | None,
    foreign: tuple[int, int, bytes] | None, odd: tuple[int, Odd] | None,
    flaw: tuple[int, int, str] | None, live: bool, flaws: tuple[tuple[int, int, str], ...],
) -> tuple[Path, tuple[str, ...]]:  # fmt: skip
    if not _WORK:
        _WORK.append(Path(tempfile.mkdtemp(prefix="bbg-cell-records-")))
        atexit.register(shutil.rmtree, _WORK[0], ignore_errors=True)
    path = _WORK[0] / f"{len(list(_WORK[0].iterdir()))}.redb"
    names = _write_store(path, origins, commits, break_at=break_at, foreign=foreign, odd=odd,
                         flaw=flaw, live=live, flaws=flaws)  # fmt: skip
    return path, tuple(names)


#: The folder :func:`_made` keeps its stores in (made on first use, removed at exit).
_WORK: list[Path] = []


def _write_store(
    path: Path, origins: int = 2, commits: int = 2, *, break_at: tuple[int, int] | None = None,
    foreign: tuple[int, int, bytes] | None = None, odd: tuple[int, Odd] | None = None,
    flaw: tuple[int, int, str] | None = None, live: bool = False,
    flaws: tuple[tuple[int, int, str], ...] = (),
) -> list[str]:  # fmt: skip
    """Write a valid cell.redb of ``origins`` namespaces of cell records (a birth and
    ``commits`` commits each); ``break_at=(origin, index)``: that commit claims a wrong
    index; ``foreign=(origin, index, schema)``: that entry's field 0 is the ref of ``schema``;
    ``odd=(origin, (profile, lifecycle))``: that origin's snapshots name them;
    ``flaw=(origin, index, name)``: that entry is written with the flaw ``name``
    (:mod:`tests.support.cell_snapshot`), ``flaws`` more of them; ``live``: every snapshot
    holds a live continuation.
    Returns the namespaces (hex), sorted."""
    b = Builder()
    history: dict[bytes, bytes] = {}
    heads: dict[bytes, bytes] = {}
    requests: dict[bytes, bytes] = {}
    names = []

    def entry(o: int, i: int) -> Entry:
        mine: Odd = odd[1] if odd and odd[0] == o else (None, None)
        named = [f[2] for f in (flaw, *flaws) if f and f[:2] == (o, i)]
        return mine, named[0] if named else None, live

    for o in range(origins):
        other = foreign[2] if foreign and foreign[:2] == (o, 0) else None
        ns = birth(b, o, other, entry(o, 0))
        names.append(ns.hex())
        chain = [ns]
        for i in range(1, commits + 1):
            wrong = i + 7 if break_at == (o, i) else None
            other = foreign[2] if foreign and foreign[:2] == (o, i) else None
            chain.append(commit(b, ns, i, chain[-1], index_field=wrong, schema=other,
                                entry=entry(o, i)))  # fmt: skip
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
