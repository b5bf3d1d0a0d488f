"""A mapped origin's history read as neuron's legacy reader reads it (the subject is read in
:mod:`migrate.rules.neuron_state`).

neuron's semantic import (cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs`` ``inspect``)
reads an origin's head, then walks its history from index 0, each read through a reader of
100 000 content reads (L23, L63; more is ``Data(Limit)``), decoding every record of its data
model (:class:`migrate.rules.neuron_reader.Reader`, field 0 the schema id of its name:
:func:`migrate.rules.neuron_schema.schema_id`).  This module makes every static check of it:

* **the head** (L22-45): its record (``cell/birth/1`` at index 0, whose id must be the origin,
  else ``cell/commit/1``), the ``cell/snapshot/1`` it names (lifecycle one of five variants),
  the snapshot's profile the one original profile
  (:func:`migrate.rules.neuron_schema.legacy_profile`; else ``Unsupported``), its
  ``cell/definition/1`` (11 fields) and the source artifact it names (field 2), the
  application-state artifact, the local policy (``records::policy_values``), the live
  continuation (``records::read_live``) with its checkpoint artifact, its ``cell/event/1``
  and input artifact, and the pending operation's arguments artifact
  (:mod:`migrate.rules.cell_artifacts`);
* **every history entry** (L53-115), in order: index contiguity, ``artifacts::snapshot``
  of the entry's snapshot (every artifact it names, its policy, live continuation and inbox),
  then index 0 as a ``cell/birth/1`` whose id is the origin, each later entry a
  ``cell/commit/1`` whose ``cell``, ``index`` and ``previous`` fields chain it (else
  ``Conflict``), its events (field 5, at most 1: ``artifacts::event``; a ``main`` event
  becomes the current invocation) and operations (field 6, at most 64:
  ``artifacts::operation``; a ``cell/continuation/1`` names the current invocation and its
  ``cell/local-resources/1``, whose cumulative charge per invocation must not decrease, and
  needs an invocation: else ``Conflict``);
* **the end** (L116-121): no entry past the head (``Conflict``) and the sum of the final
  charges of all invocations within a u64 (else ``Budget``, reported at the head index).

:func:`read_origin` returns what ``inspect`` returns (:class:`LegacyView`: head, snapshot
lifecycle, source, application state, allowance, allowed acts, the charges' sum and the live
continuation), with the reads ``prepare_import`` then makes of the live continuation
(:func:`import_reads`); :mod:`migrate.rules.neuron_import` builds and validates the
post-import state from it.

What is **not** decided here is listed in :data:`LEFT_TO_NEURON`: the import request check
needs the import nonce, which a mapping carries only when the operator names it, and Rune's
``validate_checkpoint`` needs neuron's runtime; it never refuses -- an incompatible checkpoint
pauses the imported prog -- and the toolkit reports that verdict as "unknown (decided by
neuron at import)".
"""

from __future__ import annotations

from typing import Any, NamedTuple

from migrate.rules.cell_artifacts import (
    ATTEMPT,
    BIRTH,
    COMMIT,
    CONTINUATION,
    EVENT,
    OUTCOME,
    RESOURCES,
    Live,
    Snapshot,
    check_event,
    check_operation,
    check_snapshot,
    definition_code,
    policy_values,
    read_live,
    snapshot_at,
)
from migrate.rules.neuron_reader import Lookup, Reader, Refused
from migrate.rules.neuron_schema import legacy_profile
from migrate.store.codec import HISTORY, history_key

UNKNOWN = "unknown (decided by neuron at import)"
#: The checks of neuron's import the toolkit leaves to neuron: an input the toolkit is not
#: given, and neuron's runtime (the subject's root state and its imports/progs conflicts are
#: read in :mod:`migrate.rules.neuron_state` and :mod:`migrate.pipeline.subject`; the
#: post-import state is built and validated in :mod:`migrate.rules.neuron_import`).
LEFT_TO_NEURON = (
    "the import request id in the subject's request index when the mapping names no import "
    "nonce: the id depends on the nonce the operator gives neuron import",
    "the live checkpoint under neuron's Rune runtime (validate_checkpoint): needs the runtime; "
    "never refuses, an incompatible checkpoint pauses the imported prog",
)
#: Content reads of each reader of ``legacy::inspect`` (legacy.rs L23, L63).
INSPECT_READS = 100_000
_U64 = (1 << 64) - 1


class ImportReads(NamedTuple):
    """What ``prepare_import`` reads of an origin's live continuation (migration.rs L80-106):
    the event's input, the attempt's field 0, the outcome's value (or error) and whether it
    failed."""

    input: bytes
    attempt: bytes | None
    value: bytes | None
    failed: bool


class LegacyView(NamedTuple):
    """neuron's ``LegacyView`` (legacy.rs L10-20) of an origin, plus :class:`ImportReads`."""

    origin: bytes
    head_index: int
    head_commit: bytes
    lifecycle: str
    source: bytes
    state: bytes
    allowance: int
    acts: tuple[int, ...]
    charged: int
    live: Live | None
    reads: ImportReads | None


def _head(r: Reader, origin: bytes, index: int, commit: bytes, what: str) -> tuple[
    Snapshot, bytes, tuple[int, list[int]], Live | None
]:  # fmt: skip
    """legacy.rs L24-45: the head's record and snapshot, the snapshot's profile, definition
    source, application state, policy and live continuation."""
    if index == 0 and commit != origin:
        raise Refused("Conflict", f"{what} commit {commit.hex()} is not the origin id")
    snap = snapshot_at(r, index, commit, what)
    if snap.profile != legacy_profile():
        raise Refused(
            "Unsupported",
            f"{what} (snapshot): its profile {snap.profile.hex()} is not the original cell "
            f"runtime profile {legacy_profile().hex()}",
        )
    _, source = definition_code(r, snap, what)
    r.artifact(source, f"{what} (definition source)")
    r.artifact(snap.application_state, f"{what} (application state)")
    policy = policy_values(r, snap.authority_policy, what)
    live = read_live(r, snap, what)
    if live is not None:
        r.artifact(live.checkpoint, f"{what} (checkpoint)")
        event = r.record(live.event, EVENT, f"{what} (live event)")
        r.artifact(r.reference(event[4], f"{what} (live input)"), f"{what} (live input)")
        if live.pending is not None:
            r.artifact(live.pending.arguments, f"{what} (arguments)")
    return snap, source, policy, live


def import_reads(r: Reader, live: Live, what: str) -> ImportReads:
    """The reads ``prepare_import`` makes of a live continuation after ``legacy::inspect``
    (migration.rs L81-106, its own reader of 100 000 reads): the event (10 fields) and its
    input ref, the checkpoint artifact, the attempt's ``cell/attempt/1`` (7 fields; its
    field 0) and the outcome's ``cell/outcome/1`` (6 fields): its value (field 3), else its
    error (field 4, ``failed``), else ``Conflict``."""
    event = r.record(live.event, EVENT, f"{what} (live event)")
    given = r.reference(event[4], f"{what} (live input)")
    r.artifact(live.checkpoint, f"{what} (checkpoint)")
    attempt = value = None
    failed = False
    p = live.pending
    if p is not None and p.attempt is not None:
        f = r.record(p.attempt, ATTEMPT, f"{what} (attempt)")
        attempt = r.reference(f[0], f"{what} (attempt field 0)")
    if p is not None and p.outcome is not None:
        f = r.record(p.outcome, OUTCOME, f"{what} (outcome)")
        value = r.optional_ref(f[3], f"{what} (outcome value)")
        if value is None:
            value, failed = r.optional_ref(f[4], f"{what} (outcome error)"), True
            if value is None:
                raise Refused("Conflict", f"{what}: outcome {p.outcome.hex()} has neither a "
                                          "value nor an error")  # fmt: skip
    return ImportReads(given, attempt, value, failed)


class _Usage:
    """The walk's accounting (legacy.rs L48-49, L78-110): the current invocation and the
    last cumulative charge of each."""

    def __init__(self) -> None:
        self.current: bytes | None = None
        self.charged: dict[bytes, int] = {}

    def events(self, r: Reader, events: bytes, what: str) -> None:
        for value in r.sequence(events, 1, f"{what} (events)"):
            eid = r.reference(value, f"{what} (event)")
            check_event(r, eid, what)
            e = r.record(eid, EVENT, f"{what} (event)")
            if r.text(e[3], f"{what} (event entry)") == "main":
                self.current = eid

    def operations(self, r: Reader, operations: bytes, what: str) -> None:
        for value in r.sequence(operations, 64, f"{what} (operations)"):
            oid = r.reference(value, f"{what} (operation)")
            check_operation(r, oid, what)
            resource = oid
            c = r.record_if(oid, CONTINUATION, f"{what} (operation)")
            if c is not None:
                self.current = r.reference(c[6], f"{what} (continuation invocation)")
                resource = r.reference(c[8], f"{what} (continuation resources)")
            v = r.record_if(resource, RESOURCES, f"{what} (resources)")
            if v is None:
                continue
            if self.current is None:
                raise Refused("Conflict", f"{what}: resources {resource.hex()} before any "
                                          "invocation (no main event or continuation)")  # fmt: skip
            charged = r.uint(v[0], f"{what} (charged)")
            old = self.charged.get(self.current, 0)
            if charged < old:
                raise Refused(
                    "Conflict",
                    f"{what}: invocation {self.current.hex()} charged {charged} after {old}",
                )
            self.charged[self.current] = charged


def check_origin(lookup: Lookup, origin: bytes, head_index: int) -> dict[str, Any] | None:
    """The first refusal of neuron's legacy reader on ``origin``'s history (its head, then
    entries 0 .. ``head_index`` in order, then the accounting), as ``{code, namespace, index,
    reason, detail}``; None when neuron's ``legacy::inspect`` would read it."""
    found = read_origin(lookup, origin, head_index)
    return found if isinstance(found, dict) else None


def read_origin(lookup: Lookup, origin: bytes, head_index: int) -> LegacyView | dict[str, Any]:
    """``legacy::inspect`` of ``origin`` whose head is at ``head_index``, then the reads
    ``prepare_import`` makes of its live continuation (:func:`import_reads`): its view, or
    the first refusal as :func:`check_origin` gives it."""
    nodes: dict[bytes, bytes] = {}
    top = lookup(HISTORY, history_key(origin, head_index))
    at_head = f"head index {head_index}"
    if top is not None:
        try:
            head = _head(Reader(lookup, INSPECT_READS, nodes), origin, head_index, top, at_head)
        except Refused as refused:
            return _finding(origin, head_index, refused)
    usage = _Usage()
    previous = b""
    for index in range(head_index + 1):
        commit = lookup(HISTORY, history_key(origin, index))
        what = f"index {index} commit {'?' if commit is None else commit.hex()}"
        try:
            if commit is None:
                raise Refused("Conflict", f"history index {index} is missing")
            r = Reader(lookup, INSPECT_READS, nodes)
            check_snapshot(r, index, commit, what)
            if index == 0:
                if commit != origin:
                    raise Refused("Conflict", f"{what} is not the origin id")
                r.record(commit, BIRTH, what)
            else:
                f = r.record(commit, COMMIT, what)
                if r.reference(f[0], f"{what} (cell)") != origin:
                    raise Refused("Conflict", f"{what}: its cell field is not the origin")
                if r.uint(f[1], f"{what} (index)") != index:
                    raise Refused("Conflict", f"{what}: its index field is not {index}")
                if r.reference(f[2], f"{what} (previous)") != previous:
                    raise Refused(
                        "Conflict", f"{what}: its previous field is not the commit at {index - 1}"
                    )
                usage.events(r, f[5], what)
                usage.operations(r, f[6], what)
        except Refused as refused:
            return _finding(origin, index, refused)
        previous = commit
    after = lookup(HISTORY, history_key(origin, head_index + 1))
    if after is not None:
        detail = f"index {head_index + 1} commit {after.hex()} is past the head"
        return _finding(origin, head_index + 1, Refused("Conflict", detail))
    total = sum(usage.charged.values())
    if total > _U64:
        detail = f"the invocations' final charges sum to {total}, over u64"
        return _finding(origin, head_index, Refused("Budget", detail))
    assert top is not None  # the walk refuses a missing head entry
    snap, source, (allowance, acts), live = head
    reads = None
    if live is not None:
        try:
            reads = import_reads(Reader(lookup, INSPECT_READS), live, at_head)
        except Refused as refused:
            return _finding(origin, head_index, refused)
    return LegacyView(origin, head_index, top, snap.lifecycle, source, snap.application_state,
                      allowance, tuple(acts), total, live, reads)  # fmt: skip


def _finding(origin: bytes, index: int, refused: Refused) -> dict[str, Any]:
    return {
        "code": "origin-not-cell-record",
        "namespace": origin.hex(),
        "index": index,
        "reason": refused.reason,
        "detail": f"origin {origin.hex()} {refused.detail}",
    }
