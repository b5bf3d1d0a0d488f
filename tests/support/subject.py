"""An activated subject neuron in a destination store, for mapped-run tests.

neuron's import needs the subject's namespace (the subject id) to have a head
(cyberia-to/neuron@53dbf8d1 ``engine/src/neuron.rs`` ``inspect``: ``self.graph.head(neuron)?
.ok_or(Error::Missing)?``).  The toolkit checks that head exists and reports it.
The toolkit reads that head as neuron's ``inspect`` does: a ``neuron/activation/1`` record
``(neuron, root, authorization)`` under its schema id whose field 0 is the subject (the
``neuron/root/1`` state is neuron's).  The stand-in written here is such a record in nox Model
B nodes (:mod:`tests.support.cell_records`; root and authorization are stand-in ids), at index
0, written behind the tool's back as neuron's own writer would (its activation commit is a
record id, not the namespace, so the tool's birth-rule check on first commits does not apply
to it), with its content rows and its request receipt (request = the subject, as neuron's
``activate`` commits it).  ``blob=True`` writes a plain Blob head instead (neuron refuses it).
"""

from __future__ import annotations

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
from tests.support.cell_records import Builder
from tests.support.stores import put_raw

#: The subject the mapped-run tests use.
SUBJECT = "ab" * 32


def activate_subject(
    store_dir: Path, subject: str = SUBJECT, *, blob: bool = False, schema: bytes | None = None
) -> Head:
    """Give ``subject`` a head (index 0) in the store at ``store_dir`` (created if absent);
    ``schema``: the activation record's field 0 refers to it instead of the schema id."""
    ns = bytes.fromhex(subject)
    if blob:
        payload = b"a plain Blob where neuron/activation/1 belongs, of " + ns
        commit = hemera(payload)
        rows = {commit: CODEC_BLOB + payload}
    else:
        b = Builder()
        stand = [b.ref(hemera_mod.hash(b"stand-in %s" % w)) for w in (b"root", b"authorization")]
        values = [b.ref(ns), *stand]
        if schema is None:
            commit = b.record("neuron/activation/1", values)
        else:
            commit = b.record_as(schema, values)
        rows = b.content
    head = Head(0, commit)
    with open_store(store_dir, create=True):
        pass
    for cid, value in sorted(rows.items()):
        put_raw(store_dir, CONTENT, cid, value)
    put_raw(store_dir, HISTORY, history_key(ns, 0), commit)
    put_raw(store_dir, REQUESTS, request_key(ns, ns), request_value(commit, head))
    put_raw(store_dir, HEADS, ns, head.encode())
    return head
