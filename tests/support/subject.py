"""An activated subject neuron in a destination store, for mapped-run tests.

neuron's import needs the subject's namespace (the subject id) to have a head
(cyberia-to/neuron@53dbf8d1 ``engine/src/neuron.rs`` ``inspect``: ``self.graph.head(neuron)?
.ok_or(Error::Missing)?``).  The toolkit checks that head exists and reports it.
The toolkit reads that head as neuron's ``inspect`` does: a ``neuron/activation/1`` record
``(neuron, root, authorization)`` under its schema id whose field 0 is the subject, and its
root a ``neuron/root/1`` state (neuron@7d214e02 ``model/src/execution.rs`` ``NeuronState``):
:func:`neuron_root` writes one as neuron's ``activate`` does (epoch 0, nothing charged or
held, empty maps, no worker) unless told to hold progs, imports or a flaw.  The nodes are nox
Model B nodes (:mod:`tests.support.model_b`; network, policy, authorization and the
progs' artifacts are stand-in ids), at index 0, written behind the tool's back as neuron's own
writer would (its activation commit is a record id, not the namespace, so the tool's
birth-rule check on first commits does not apply to it), with its content rows and its request
receipt (request = the subject, as neuron's ``activate`` commits it).  ``blob=True`` writes a
plain Blob head instead (neuron refuses it).  The rows go in as one batch (one commit).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hashing import hemera as hemera_mod
from migrate.pipeline.identity import CODEC_BLOB, hemera
from migrate.store import open_store
from migrate.store.codec import (
    CONTENT,
    HEADS,
    HISTORY,
    REQUESTS,
    Head,
    history_key,
    request_key,
    request_value,
)
from tests.support.model_b import Builder, mapping, optional, sequence
from tests.support.stores import put_rows

#: The subject the mapped-run tests use.
SUBJECT = "ab" * 32


def prog(b: Builder, step_limit: int = 1_000_000, acts: tuple[int, ...] = ()) -> bytes:
    """A ``neuron/prog/1`` record (7 fields): stand-in source and state artifacts, revision
    0, lifecycle active (1), ``step_limit``, max inflight 1, ``acts``."""
    stand = [b.ref(hemera_mod.hash(b"stand-in prog %s" % w)) for w in (b"source", b"state")]
    tags = sequence(b, [b.uint(a) for a in acts])
    return b.record("neuron/prog/1", [*stand, b.uint(0), b.uint(1), b.uint(step_limit),
                                      b.uint(1), tags])  # fmt: skip


def neuron_root(
    b: Builder, ns: bytes, *, progs: tuple[bytes, ...] = (), imports: tuple[bytes, ...] = (),
    neuron: bytes | None = None, limit: int = 1_000_000, charged: int = 0, held: int = 0,
    step_limit: int = 1_000_000, keep_order: bool = False, schema: bytes | None = None,
    invocations: tuple[tuple[bytes, bytes], ...] = (),
) -> bytes:  # fmt: skip
    """A ``neuron/root/1`` state (13 fields) of ``ns`` (``neuron``: another id in field 0)
    holding a prog under each id of ``progs`` (of ``step_limit``), an import record (a
    stand-in id) for each origin of ``imports`` (sorted unless ``keep_order``), the given
    limit, charged and held, the ``invocations`` (id, record) given, cursor 0, writer
    generation 0, no worker; ``schema``: field 0 refers to it instead of the root schema id."""
    net, policy = (hemera_mod.hash(b"stand-in %s" % w) for w in (b"network", b"policy"))
    entries = [(o, hemera_mod.hash(b"stand-in import of " + o)) for o in imports]
    values = [
        b.ref(ns if neuron is None else neuron), b.ref(net), b.ref(policy), b.uint(0),
        b.uint(limit), b.uint(charged), b.uint(held),
        b.ref(mapping(b, sorted((p, prog(b, step_limit)) for p in progs))),
        b.ref(mapping(b, sorted(invocations))),
        b.ref(mapping(b, entries if keep_order else sorted(entries))),
        b.uint(0), b.uint(0), optional(b, None),
    ]  # fmt: skip
    if schema is None:
        return b.record("neuron/root/1", values)
    return b.record_as(schema, values)


def invocation(
    b: Builder, prog_id: bytes, *, limit: int = 100, charged: int = 0, status: int = 0
) -> bytes:
    """A ``neuron/invocation/1`` record (19 fields) of ``prog_id``: running (status 0) with a
    stand-in checkpoint, no pending operation, result, fault, parent or children, nothing
    reserved, used or delegated; stand-in code and input."""
    code, data, point = (hemera_mod.hash(b"stand-in invocation %s" % w)
                         for w in (b"code", b"input", b"checkpoint"))  # fmt: skip
    none = optional(b, None)
    values = [
        b.ref(prog_id), b.ref(code), b.ref(data), none, b.uint(0), optional(b, point),
        b.uint(status), b.uint(limit), b.uint(charged), b.uint(0), b.uint(0), none, none, none,
        none, b.uint(0), sequence(b, []), b.uint(0), b.uint(1),
    ]  # fmt: skip
    return b.record("neuron/invocation/1", values)


def activate_subject(
    store_dir: Path, subject: str = SUBJECT, *, blob: bool = False, schema: bytes | None = None,
    root: Callable[[Builder, bytes], bytes] = neuron_root,
) -> Head:  # fmt: skip
    """Give ``subject`` a head (index 0) in the store at ``store_dir`` (created if absent);
    ``schema``: the activation record's field 0 refers to it instead of the schema id;
    ``root``: writes the state its field 1 names (:func:`neuron_root` by default)."""
    ns = bytes.fromhex(subject)
    if blob:
        payload = b"a plain Blob where neuron/activation/1 belongs, of " + ns
        commit = hemera(payload)
        rows = {commit: CODEC_BLOB + payload}
    else:
        b = Builder()
        stand = [b.ref(root(b, ns)), b.ref(hemera_mod.hash(b"stand-in authorization"))]
        values = [b.ref(ns), *stand]
        if schema is None:
            commit = b.record("neuron/activation/1", values)
        else:
            commit = b.record_as(schema, values)
        rows = b.content
    head = Head(0, commit)
    with open_store(store_dir, create=True):
        pass
    changes: dict[tuple[str, bytes], bytes | None] = {(CONTENT, c): v for c, v in rows.items()}
    changes[HISTORY, history_key(ns, 0)] = commit
    changes[REQUESTS, request_key(ns, ns)] = request_value(commit, head)
    changes[HEADS, ns] = head.encode()
    put_rows(store_dir, changes)
    return head
