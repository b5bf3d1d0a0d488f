"""An activated subject neuron in a destination store, for mapped-run tests.

neuron's import needs the subject's namespace (the subject id) to have a head
(cyberia-to/neuron@53dbf8d1 ``engine/src/neuron.rs`` ``inspect``: ``self.graph.head(neuron)?
.ok_or(Error::Missing)?``).  The toolkit checks that head exists and reports it; whether it is
a valid ``neuron/activation/1`` is decided by neuron at import, so a test's stand-in head is
one Blob commit at index 0, written behind the tool's back as neuron's own writer would
(its activation commit is a record id, not the namespace, so the tool's birth-rule check on
first commits does not apply to it), with its content row and its request receipt.
"""

from __future__ import annotations

from pathlib import Path

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
from tests.support.stores import put_raw

#: The subject the mapped-run tests use.
SUBJECT = "ab" * 32


def activate_subject(store_dir: Path, subject: str = SUBJECT) -> Head:
    """Give ``subject`` a head (index 0) in the store at ``store_dir`` (created if absent)."""
    ns = bytes.fromhex(subject)
    payload = b"test stand-in for neuron/activation/1 of " + ns
    commit = hemera(payload)
    head = Head(0, commit)
    with open_store(store_dir, create=True):
        pass
    put_raw(store_dir, CONTENT, commit, CODEC_BLOB + payload)
    put_raw(store_dir, HISTORY, history_key(ns, 0), commit)
    put_raw(store_dir, REQUESTS, request_key(ns, ns), request_value(commit, head))
    put_raw(store_dir, HEADS, ns, head.encode())
    return head
