"""Which content rows an import legitimately carries beyond history commits (``doctor``).

A content row that is not the commit of any history entry is not an orphan when the rules
that wrote the store put it there (fixtures/legacy/README.md "Write semantics";
:mod:`migrate.pipeline.legacy_records`).  Each such row gets the first class that holds:

* ``commit_items``: an item id a cell commit record lists (``"cell/commit/1\\0"`` ‖ ns ‖
  index u64 LE ‖ previous ‖ n u32 LE ‖ n ids ‖ u64): event Blobs, Data events, shared artifacts;
* ``data_children``: a child of a Data pair (nox Model B: 64-byte payload = left ‖ right; the
  tagged scheme: ``0x03`` ‖ left ‖ right): cybergraph's commit requires both children;
* ``record_payloads``: the raw bytes of a legacy event or line, named by its item record's
  ``raw.id``, and the text and raw line a cybergraph text observation names (``text``,
  ``provenance.raw``);
* ``birth_content``: written by a namespace's birth transaction (birth record plus one shared
  artifact): the index-0 request's fingerprint covers exactly {namespace, id};
* ``receipt_commits``: the commit a request receipt names as its head, whose history entry
  ``nohistory`` dropped (every receipt stays resolvable); its record's items count as above;
* ``orphans``: none of these -- a true orphan.

The fingerprint is the fixtures' formula (README "Fingerprint"):
hemera(``"cybergraph/application-transaction/1\\0"`` ‖ ns ‖ request ‖ 0x00 ‖ head index u64 LE
‖ head commit ‖ n u64 LE ‖ sorted ids ‖ 0 u64 LE ‖ m u64 LE ‖ claims), with no expected head,
head (0, ns), n = 2 and no claims for a birth.

The referenced ids are kept in a private scratch map (:class:`migrate.store.references.FirstClass`,
deleted on close), so the memory used does not grow with the store; the store itself is only
read, through :mod:`migrate.store.references`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from migrate.store import references
from migrate.store.codec import (
    COMMIT_PREFIX,
    ITEM_PREFIX,
    OBSERVATION_PREFIX,
    Head,
    commit_items,
    record_payload,
)
from migrate.store.connection import Connection
from migrate.store.references import FirstClass

CLASSES = (
    "commit_items", "data_children", "record_payloads", "birth_content", "receipt_commits"
)  # fmt: skip
# Hemera calls the birth check may spend (unresolved rows x birth transactions).
MAX_BIRTH_TRIALS = 200_000


def _data_children(value: bytes) -> list[bytes]:
    payload = value[1:]
    if len(payload) == 64:
        return [payload[:32], payload[32:]]
    if len(payload) == 65 and payload[0] == 3:
        return [payload[1:33], payload[33:]]
    return []


def _collect(conn: Connection, refs: FirstClass) -> None:
    # The commits of history entries, and of receipts whose entry nohistory dropped.
    for value in references.referenced_commits(conn):
        if value.startswith(COMMIT_PREFIX):
            refs.add(0, commit_items(value))
        elif value.startswith((ITEM_PREFIX, OBSERVATION_PREFIX)):
            refs.add(2, record_payload(value))
    for value in references.data_pairs(conn):
        refs.add(1, _data_children(value))
    refs.add(4, references.receipt_heads(conn))


def _births(conn: Connection) -> list[tuple[bytes, bytes, bytes]]:
    """(namespace, request, fingerprint) of every birth transaction's request."""
    return [(k[:32], k[32:], v[:32]) for k, v in references.birth_receipts(conn)]


def _birth_fingerprint(ns: bytes, request: bytes, other: bytes) -> bytes:
    from migrate.pipeline.identity import cybergraph_fingerprint

    return cybergraph_fingerprint(ns, request, None, Head(0, ns), [ns, other])


def classify(conn: Connection, candidates: Iterator[bytes], sample: int) -> dict[str, Any]:
    """Classify the ``candidates`` (content ids that are no history commit, in key order):
    ``{"classes": {class: count, ..., "orphans": n}, "orphans": [first ids], "unchecked": n}``
    where ``unchecked`` orphans were too many to try against every birth fingerprint."""
    refs = FirstClass()
    try:
        _collect(conn, refs)
        counts = dict.fromkeys((*CLASSES, "orphans"), 0)
        unresolved: list[bytes] = []
        loose = 0
        for key in candidates:
            cls = refs.of(key)
            if cls is not None:
                counts[CLASSES[cls]] += 1
            elif len(unresolved) < MAX_BIRTH_TRIALS:
                unresolved.append(key)
            else:
                loose += 1
    finally:
        refs.close()
    births = _births(conn) if unresolved else []
    checkable = not loose and len(unresolved) * len(births) <= MAX_BIRTH_TRIALS
    orphans: list[bytes] = []
    for key in unresolved:
        if checkable and any(fp == _birth_fingerprint(ns, req, key) for ns, req, fp in births):
            counts["birth_content"] += 1
        else:
            orphans.append(key)
    counts["orphans"] = len(orphans) + loose
    return {
        "classes": counts,
        "orphans": [k.hex() for k in orphans[:sample]],
        "unchecked": 0 if checkable else counts["orphans"],
    }
