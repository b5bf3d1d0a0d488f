"""The records one legacy cell snapshot names, read as neuron's legacy import reads them.

Three neuron modules decide what a snapshot must hold; each function here follows one of
them, in neuron's order of reads (the first refusal is the one neuron would give):

* cyberia-to/neuron@f18015c2 ``engine/src/legacy/records.rs``: ``snapshot_at`` (L48-59:
  the birth or commit record, then ``Snapshot::read`` of the snapshot it names),
  ``policy_values`` (L13-24: ``cell/local-policy/1``, its allowed acts (<= 256 uints), then
  its step limit) and ``read_live`` (L84-135: at most one continuation, its
  ``cell/continuation/1`` and ``cell/local-resources/1``; at most one outbox entry, its
  ``cell/outbox-entry/1``, ``cell/operation/1``, ``rune/act/1`` tag, a stage that is one of
  three ``cell/operation-stage`` variants (else ``Unsupported``) and <= 1 attempt);
* neuron@53dbf8d1 ``engine/src/legacy/artifacts.rs``: ``snapshot`` (L6-33: every artifact a
  snapshot names -- application state, code, each required artifact (<= 4096), the live
  checkpoint, input, arguments and outcome, and each inbox entry's event), ``event``
  (L34-46) and ``operation`` (L47-69);
* neuron@2fe713bd ``model/src/records.rs``: ``Snapshot::read`` (lifecycle one of five
  variants, else ``UnsupportedSchema``) and ``Reader::artifact``
  (:meth:`migrate.rules.neuron_reader.Reader.artifact`).
"""

from __future__ import annotations

from typing import NamedTuple

from migrate.rules.neuron_reader import Reader, Refused
from migrate.rules.neuron_schema import lifecycle_variants, variant

BIRTH, COMMIT = ("cell/birth/1", 7), ("cell/commit/1", 10)
SNAPSHOT, DEFINITION = ("cell/snapshot/1", 11), ("cell/definition/1", 11)
POLICY, EVENT = ("cell/local-policy/1", 3), ("cell/event/1", 10)
CONTINUATION, RESOURCES = ("cell/continuation/1", 9), ("cell/local-resources/1", 4)
OUTBOX, OPERATION = ("cell/outbox-entry/1", 5), ("cell/operation/1", 11)
INBOX, ACT = ("cell/inbox-entry/1", 4), ("rune/act/1", 1)
ATTEMPT, OUTCOME = ("cell/attempt/1", 7), ("cell/outcome/1", 6)
#: The records ``artifacts::operation`` recognises, each with the fields holding an artifact
#: (required refs, optional refs); a record of none of them is left to its own reader.
OPERATION_ARTIFACTS = (
    (OPERATION, (4,), (10,)),
    (OUTCOME, (), (3, 4)),
    (CONTINUATION, (3,), ()),
    (("cell/local-denial/1", 5), (4,), ()),
)
STAGES = ("pending", "attempt-recorded", "resolved")
#: Bounds of the lists and maps a snapshot names (artifacts.rs, records.rs).
MAX_ARTIFACTS = MAX_INBOX = 4096
MAX_ACTS = 256


class Snapshot(NamedTuple):
    """The refs of a ``cell/snapshot/1`` (model ``Snapshot``); ``lifecycle`` its name."""

    definition: bytes
    application_state: bytes
    lifecycle: str
    authority_policy: bytes
    profile: bytes
    epoch: int
    inbox: bytes
    continuations: bytes
    outbox: bytes
    subscriptions: bytes
    management: bytes


class Pending(NamedTuple):
    """The live outbox entry (records.rs ``Pending``): ``id`` is its outbox key, ``tag`` its
    act's tag."""

    record: bytes
    arguments: bytes
    attempt: bytes | None
    outcome: bytes | None
    stage: str
    id: bytes
    tag: int


class Live(NamedTuple):
    """The live continuation (records.rs ``Live``): its resources' charged, reserved, used
    and limit (``cell/local-resources/1`` fields 0-3)."""

    event: bytes
    context: bytes | None
    checkpoint: bytes
    charged: int
    pending: Pending | None
    reserved: int
    used: int
    limit: int


def read_snapshot(r: Reader, sid: bytes, what: str) -> Snapshot:
    """neuron's ``Snapshot::read``: the lifecycle is decided before any field is read."""
    f = r.record(sid, SNAPSHOT, what)
    lifecycle = lifecycle_variants().get(f[2])
    if lifecycle is None:
        raise Refused(
            "Data(UnsupportedSchema)",
            f"{what}: its lifecycle {f[2].hex()} is none of the five cell/lifecycle variants",
        )
    refs = [r.reference(f[i], f"{what} (field {i})") for i in (0, 1, 3, 4)]
    epoch = r.uint(f[5], f"{what} (epoch)")
    rest = [r.reference(f[i], f"{what} (field {i})") for i in range(6, 11)]
    return Snapshot(refs[0], refs[1], lifecycle, refs[2], refs[3], epoch, *rest)


def snapshot_at(r: Reader, index: int, commit: bytes, what: str) -> Snapshot:
    """``records::snapshot_at``: the snapshot a birth (field 5) or commit (field 4) names."""
    f = r.record(commit, BIRTH if index == 0 else COMMIT, what)
    sid = r.reference(f[5 if index == 0 else 4], f"{what} (snapshot ref)")
    return read_snapshot(r, sid, f"{what} snapshot {sid.hex()}")


def policy_values(r: Reader, policy: bytes, what: str) -> tuple[int, list[int]]:
    """``records::policy_values``: (step limit, allowed acts) of a ``cell/local-policy/1``."""
    f = r.record(policy, POLICY, f"{what} (policy)")
    listed = r.sequence(f[2], MAX_ACTS, f"{what} (policy allowed acts)")
    acts = [r.uint(v, f"{what} (policy allowed act)") for v in listed]
    return r.uint(f[1], f"{what} (policy step limit)"), acts


def read_live(r: Reader, snap: Snapshot, what: str) -> Live | None:
    """``records::read_live``: the one continuation a snapshot may hold, None without."""
    entries = r.map(snap.continuations, 1, f"{what} (continuations)")
    if not entries:
        return None
    c = r.record(entries[0][1], CONTINUATION, f"{what} (continuation)")
    resources = r.reference(c[8], f"{what} (continuation resources)")
    budget = r.record(resources, RESOURCES, f"{what} (continuation resources)")
    pending = None
    outbox = r.map(snap.outbox, 1, f"{what} (outbox)")
    if outbox:
        out = r.record(outbox[0][1], OUTBOX, f"{what} (outbox entry)")
        record = r.reference(out[0], f"{what} (outbox operation)")
        op = r.record(record, OPERATION, f"{what} (outbox operation)")
        act = r.record(r.reference(op[3], f"{what} (act)"), ACT, f"{what} (act)")
        tag = r.uint(act[0], f"{what} (act tag)")
        stage = next((s for s in STAGES if variant(f"operation-stage/{s}") == out[1]), None)
        if stage is None:
            raise Refused(
                "Unsupported",
                f"{what}: outbox stage {out[1].hex()} is no cell/operation-stage variant",
            )
        attempts = r.sequence(out[2], 1, f"{what} (attempts)")
        arguments = r.reference(op[4], f"{what} (arguments)")
        attempt = r.reference(attempts[0], f"{what} (attempt)") if attempts else None
        outcome = r.optional_ref(out[3], f"{what} (outcome)")
        pending = Pending(record, arguments, attempt, outcome, stage, outbox[0][0], tag)
    event = r.reference(c[6], f"{what} (continuation event)")
    context = r.optional_ref(c[7], f"{what} (continuation context)")
    checkpoint = r.reference(c[3], f"{what} (checkpoint)")
    charged, reserved, used, cap = (
        r.uint(budget[i], f"{what} (resources field {i})") for i in (0, 1, 2, 3)
    )
    return Live(event, context, checkpoint, charged, pending, reserved, used, cap)


def check_event(r: Reader, eid: bytes, what: str) -> None:
    """``artifacts::event``: a ``main`` event's payload is an artifact, any other's a
    readable content row; its context, if any, a readable content row."""
    what = f"{what} event {eid.hex()}"
    e = r.record(eid, EVENT, what)
    value = r.reference(e[4], f"{what} (payload)")
    if r.text(e[3], f"{what} (entry)") == "main":
        r.artifact(value, f"{what} (payload)")
    else:
        r.content(value, f"{what} (payload)")
    context = r.optional_ref(e[5], f"{what} (context)")
    if context is not None:
        r.content(context, f"{what} (context)")


def check_operation(r: Reader, oid: bytes, what: str) -> None:
    """``artifacts::operation``: the artifacts of the first of :data:`OPERATION_ARTIFACTS`
    ``oid`` is a record of; any other record passes."""
    what = f"{what} operation {oid.hex()}"
    for schema, required, optional in OPERATION_ARTIFACTS:
        f = r.record_if(oid, schema, what)
        if f is None:
            continue
        for i in required:
            r.artifact(r.reference(f[i], f"{what} (field {i})"), f"{what} (field {i})")
        for i in optional:
            ref = r.optional_ref(f[i], f"{what} (field {i})")
            if ref is not None:
                r.artifact(ref, f"{what} (field {i})")
        return


def definition_code(r: Reader, snap: Snapshot, what: str) -> tuple[list[bytes], bytes]:
    """The ``cell/definition/1`` a snapshot names (11 fields) and its code ref (field 2)."""
    f = r.record(snap.definition, DEFINITION, f"{what} (definition)")
    return f, r.reference(f[2], f"{what} (definition code)")


def check_snapshot(r: Reader, index: int, commit: bytes, what: str) -> Snapshot:
    """``artifacts::snapshot``: the snapshot entry ``index`` names and every artifact in it."""
    snap = snapshot_at(r, index, commit, what)
    r.artifact(snap.application_state, f"{what} (application state)")
    definition, code = definition_code(r, snap, what)
    r.artifact(code, f"{what} (definition code)")
    for value in r.sequence(definition[5], MAX_ARTIFACTS, f"{what} (required artifacts)"):
        ref = r.reference(value, f"{what} (required artifact)")
        r.artifact(ref, f"{what} (required artifact)")
    policy_values(r, snap.authority_policy, what)
    live = read_live(r, snap, what)
    if live is not None:
        r.artifact(live.checkpoint, f"{what} (checkpoint)")
        check_event(r, live.event, f"{what} (live)")
        if live.pending is not None:
            r.artifact(live.pending.arguments, f"{what} (arguments)")
            if live.pending.outcome is not None:
                check_operation(r, live.pending.outcome, f"{what} (outcome)")
    for _, eid in r.map(snap.inbox, MAX_INBOX, f"{what} (inbox)"):
        entry = r.record(eid, INBOX, f"{what} (inbox entry)")
        check_event(r, r.reference(entry[0], f"{what} (inbox event)"), f"{what} (inbox)")
    return snap
