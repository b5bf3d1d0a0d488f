"""What a legacy cell snapshot and commit name, written as neuron's legacy import reads it.

neuron's ``legacy::inspect`` (cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs``) reads,
besides the birth and commit records (:mod:`tests.support.cell_records`), each snapshot's
``cell/definition/1`` and the artifacts it names, its application-state artifact, its
``cell/local-policy/1``, its live continuation and outbox entry and its inbox (neuron@f18015c2
``engine/src/legacy/records.rs``, neuron@53dbf8d1 ``engine/src/legacy/artifacts.rs``), and each
commit's events (field 5) and operations (field 6) with their usage accounting.  The record
layouts are those of neuron's cell suite (``model/schema-suite-v1.txt`` @2fe713bd).  Values
neuron only carries (runtime, schemas, authority ...) are stand-in ids.

A *flaw* names one thing to write wrong, so that a test can show neuron's refusal of it; the
names and what they break are listed in :data:`SNAPSHOT_FLAWS` and :data:`COMMIT_FLAWS`.
"""

from __future__ import annotations

from hashing import hemera
from migrate.rules.neuron_schema import schema_id
from tests.support.model_b import Builder, mapping, optional, sequence, text

#: Flaws of a snapshot: part-fault, the part's artifact (codec: another codec label; length:
#: a stated length one more than the Blob's; missing: no content row; data: a Data node, not
#: a Blob) or record (schema: another schema id; long/short: a field too many/few).
SNAPSHOT_FLAWS = (
    "definition-schema", "definition-long", "definition-short", "source-codec",
    "source-length", "source-missing", "source-data", "state-length", "required-limit",
    "required-codec", "required-many", "policy-schema", "policy-acts-limit",
    "policy-acts-count", "policy-missing", "inbox-missing", "continuations-two", "stage",
    "checkpoint-codec", "live-event-missing", "live-input-length", "attempts-two",
    "arguments-length", "outcome-length", "attempt-missing", "outcome-empty",
    "live-event-shared", "policy-steps", "live-limit",
)  # fmt: skip
#: Flaws of a commit's events and operations (see :func:`changes`).
COMMIT_FLAWS = (
    "events-two", "event-codec", "no-invocation", "usage-decrease", "charge-overflow",
    "operation-length", "operations-limit",
)  # fmt: skip
#: Flaws that need a live continuation in the snapshot.  What ``prepare_import`` reads
#: besides (migration.rs @fd24e768 L81-106): ``attempt-missing`` (the attempt names no
#: record), ``outcome-empty`` (neither value nor error); what its post-import state holds:
#: ``live-event-shared`` (one live event for every origin), ``live-limit`` (resources limit
#: 0); and ``policy-steps`` (a policy step limit of 0, the imported prog's allowance).
LIVE_FLAWS = (
    "continuations-two", "stage", "checkpoint-codec", "live-event-missing",
    "live-input-length", "attempts-two", "arguments-length", "outcome-length",
    "attempt-missing", "outcome-empty", "live-event-shared", "live-limit",
)  # fmt: skip
_U64 = (1 << 64) - 1


def _fault(flaw: str | None, part: str) -> str | None:
    """The fault ``flaw`` gives ``part`` (``source-codec`` -> ``codec`` for ``source``)."""
    if flaw is None or not flaw.startswith(part + "-"):
        return None
    return flaw[len(part) + 1 :]


def _stand(seed: bytes, what: str) -> bytes:
    return hemera.hash(b"stand-in " + what.encode() + b" of " + seed)


def _record(b: Builder, name: str, values: list[bytes], fault: str | None) -> bytes:
    """``name`` (fault schema: under the event schema; long/short: one field more/less)."""
    if fault == "long":
        values = [*values, b.atom(0)]
    elif fault == "short":
        values = values[:-1]
    if fault == "schema":
        return b.record_as(schema_id("cell/event/1"), values)
    return b.record(name, values)


def _count(b: Builder, count: int) -> bytes:
    """A list that says ``count`` entries and holds none (a bound is checked on the count)."""
    return b.pair(b.uint(count), b.fields([]))


def artifact(b: Builder, data: bytes, fault: str | None = None) -> bytes:
    """A ``cell/artifact/1`` of the Blob ``data`` (model records.rs ``Builder::artifact``);
    ``fault`` as in :data:`SNAPSHOT_FLAWS`, or ``huge``: a Blob of 8 MiB + 1 bytes (too big
    for the test redb writer: read it from the builder's rows)."""
    if fault == "huge":
        data = data.ljust(8 * 1024 * 1024 + 1, b"\0")
    if fault == "data":
        content = b.atom(len(data))
    elif fault == "missing":
        content = hemera.hash(data + b" (never written)")
    else:
        content = b.blob(data)
    label = b"hemera/bytes/0.2" if fault == "codec" else b"hemera/bytes/0.3"
    stated = len(data) + (1 if fault == "length" else 0)
    values = [b.ref(content), b.ref(hemera.hash(label)), b.uint(stated), text(b, "text/plain")]
    return b.record("cell/artifact/1", values)


def event(b: Builder, seed: bytes, fault: str | None = None, entry: str = "main") -> bytes:
    """A ``cell/event/1`` (10 fields) whose payload (field 4) is an artifact."""
    none = optional(b, None)
    values = [
        b.ref(_stand(seed, "event origin")), b.fields([b.atom(0)] * 8),
        b.ref(_stand(seed, "cell")), text(b, entry),
        b.ref(artifact(b, b"input of " + seed, fault)), none, sequence(b, []), none, none,
        b.ref(_stand(seed, "authority")),
    ]  # fmt: skip
    return b.record("cell/event/1", values)


def resources(b: Builder, charged: int, cap: int = 1_000_000) -> bytes:
    """A ``cell/local-resources/1`` (charged, reserved, checkpoint used, limit ``cap``)."""
    values = [b.uint(charged), b.uint(0), b.uint(0), b.uint(cap)]
    return b.record("cell/local-resources/1", values)


def continuation(
    b: Builder, seed: bytes, invocation: bytes, charged: int, fault: str | None = None,
    cap: int = 1_000_000,
) -> bytes:  # fmt: skip
    """A ``cell/continuation/1`` (9 fields) of ``invocation`` with a checkpoint artifact
    (field 3) and its resources (field 8, limit ``cap``)."""
    values = [
        b.ref(_stand(seed, "definition")), b.ref(_stand(seed, "runtime")),
        b.ref(_stand(seed, "checkpoint schema")),
        b.ref(artifact(b, b"checkpoint of " + seed, fault)),
        b.record("cell/trigger/scheduler-yield/1", []), b.ref(_stand(seed, "base head")),
        b.ref(invocation), optional(b, None), b.ref(resources(b, charged, cap)),
    ]  # fmt: skip
    return b.record("cell/continuation/1", values)


def operation(b: Builder, seed: bytes, fault: str | None = None) -> bytes:
    """A ``cell/operation/1`` (11 fields): act ``rune/act/1(7)``, arguments an artifact."""
    none = optional(b, None)
    values = [
        b.ref(_stand(seed, "operation id")), b.ref(_stand(seed, "invocation")),
        b.record("cell/target/local-executor/1", []),
        b.ref(b.record("rune/act/1", [b.uint(7)])),
        b.ref(artifact(b, b"arguments of " + seed, fault)), b.ref(_stand(seed, "policy")),
        b.ref(_stand(seed, "result schema")), none, b.record("cell/retry/never/1", []),
        b.ref(_stand(seed, "finality")), none,
    ]  # fmt: skip
    return b.record("cell/operation/1", values)


def _live(b: Builder, seed: bytes, flaw: str | None) -> tuple[bytes, bytes]:
    """The continuations and outbox maps of a live snapshot (one entry each)."""
    if flaw == "live-event-missing":
        invocation = _stand(seed, "an event never written")
    elif flaw == "live-event-shared":
        invocation = event(b, b"one live event")
    else:
        invocation = event(b, seed + b" live", _fault(flaw, "live-input"))
    cap = 0 if flaw == "live-limit" else 1_000_000
    cont = continuation(b, seed, invocation, 10, _fault(flaw, "checkpoint"), cap)
    entries = [(_stand(seed, "invocation key 1"), cont)]
    if flaw == "continuations-two":
        entries.append((_stand(seed, "invocation key 2"), cont))
    op = operation(b, seed, _fault(flaw, "arguments"))
    if flaw == "attempt-missing":
        attempt = _stand(seed, "an attempt never written")
    else:
        fields = [b.ref(_stand(seed, f"attempt field {i}")) for i in range(7)]
        attempt = b.record("cell/attempt/1", fields)
    none = optional(b, None)
    value = optional(b, artifact(b, b"outcome of " + seed, _fault(flaw, "outcome")))
    if flaw == "outcome-empty":
        value = none
    outcome = b.record("cell/outcome/1", [b.ref(op), b.ref(attempt),
                       b.record("cell/outcome/succeeded/1", []), value, none, none])  # fmt: skip
    # resolved: an attempt and an outcome with its value (migration.rs L107-112: stage 2),
    # the one stage PendingOperation::validate allows with both (execution.rs @7d214e02)
    stage = "lifecycle/active" if flaw == "stage" else "operation-stage/resolved"
    attempts = sequence(b, [b.ref(attempt)] * (2 if flaw == "attempts-two" else 1))
    out = b.record("cell/outbox-entry/1", [b.ref(op), b.record(f"cell/{stage}/1", []),
                   attempts, optional(b, outcome), none])  # fmt: skip
    return mapping(b, sorted(entries)), mapping(b, [(_stand(seed, "operation key"), out)])


def _definition(b: Builder, seed: bytes, flaw: str | None) -> bytes:
    """A ``cell/definition/1`` (11 fields): its code (field 2) and one required artifact
    (field 5)."""
    if flaw == "required-limit":
        required = _count(b, 4097)
    elif flaw == "required-many":  # within the list bound, past the reader's 100 000 reads
        required = sequence(b, [b.ref(artifact(b, b"required of " + seed))] * 4096)
    else:
        ref = artifact(b, b"required of " + seed, _fault(flaw, "required"))
        required = sequence(b, [b.ref(ref)])
    none = optional(b, None)
    values = [
        b.uint(1), b.ref(_stand(seed, "runtime")),
        b.ref(artifact(b, b"source of " + seed, _fault(flaw, "source"))),
        b.ref(_stand(seed, "state schema")), sequence(b, []), required,
        b.ref(_stand(seed, "policy")), b.ref(_stand(seed, "resources")), none, none,
        sequence(b, []),
    ]  # fmt: skip
    return _record(b, "cell/definition/1", values, _fault(flaw, "definition"))


def _policy(b: Builder, seed: bytes, flaw: str | None) -> bytes:
    """A ``cell/local-policy/1`` (owner, step limit 1000, allowed acts 7 and 9)."""
    if flaw == "policy-missing":
        return _stand(seed, "a policy never written")
    if flaw == "policy-acts-limit":
        acts = _count(b, 257)
    elif flaw == "policy-acts-count":
        acts = b.pair(b.uint(2), b.fields([b.uint(7)]))
    else:
        acts = sequence(b, [b.uint(7), b.uint(9)])
    values = [b.ref(_stand(seed, "owner")), b.uint(0 if flaw == "policy-steps" else 1000), acts]
    return _record(b, "cell/local-policy/1", values, _fault(flaw, "policy"))


def contents(b: Builder, seed: bytes, flaw: str | None, live: bool) -> dict[int, bytes]:
    """The fields of a ``cell/snapshot/1`` other than lifecycle and profile: definition (0),
    application state (1), policy (3), epoch (5), inbox, continuations, outbox,
    subscriptions, management (6-10); live or not (a live flaw makes it live)."""
    empty = mapping(b, [])
    inbox = empty
    if flaw == "inbox-missing":
        ev = event(b, seed + b" inbox", "missing")
        status = b.record("cell/inbox-status/admitted/1", [])
        entry = b.record("cell/inbox-entry/1", [b.ref(ev), status, optional(b, None), b.uint(0)])
        inbox = mapping(b, [(ev, entry)])
    conts, outbox = _live(b, seed, flaw) if live or flaw in LIVE_FLAWS else (empty, empty)
    state = artifact(b, b"application state of " + seed, _fault(flaw, "state"))
    return {
        0: b.ref(_definition(b, seed, flaw)), 1: b.ref(state), 3: b.ref(_policy(b, seed, flaw)),
        5: b.uint(0), 6: b.ref(inbox), 7: b.ref(conts), 8: b.ref(outbox), 9: b.ref(empty),
        10: b.ref(empty),
    }  # fmt: skip


def changes(b: Builder, origin: bytes, index: int, flaw: str | None) -> tuple[bytes, bytes]:
    """The events (field 5) and operations (field 6) lists of commit ``index`` > 0: commit 1
    starts the origin's one invocation (a ``main`` event) and charges 100 to it
    (``cell/local-resources/1``), each later commit continues it (``cell/continuation/1``)
    and charges ``100 * index`` in all.  Flaws: ``events-two`` (two events: ``Limit``),
    ``event-codec`` (a main event whose input has another codec: ``UnsupportedSchema``),
    ``no-invocation`` (no event at commit 1: ``Conflict``), ``usage-decrease`` (a cumulative
    charge lower than before: ``Conflict``), ``charge-overflow`` (a second invocation
    charged 2^64 - 1: ``Budget``), ``operation-length`` (an operation whose arguments
    artifact states another length: ``InvalidData``), ``operations-limit`` (65: ``Limit``)."""
    first = event(b, origin + b" invocation")
    seed = origin + b" %d" % index
    if index == 1:
        events, ops = [first], [resources(b, 100)]
    else:
        charged = 100 * index - (150 if flaw == "usage-decrease" else 0)
        events, ops = [], [continuation(b, seed, first, charged)]
    if flaw == "events-two":
        events = [first, event(b, seed + b" other")]
    elif flaw == "event-codec":
        events = [event(b, seed, "codec")]
    elif flaw == "no-invocation":
        events = []
    elif flaw == "charge-overflow":
        events, ops = [event(b, seed + b" second")], [resources(b, _U64)]
    elif flaw == "operation-length":
        ops = [operation(b, seed, "length"), *ops]
    listed = sequence(b, [b.ref(o) for o in ops])
    if flaw == "operations-limit":
        listed = _count(b, 65)
    return sequence(b, [b.ref(e) for e in events]), listed
