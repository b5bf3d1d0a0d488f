"""A mapped origin's history read as neuron's legacy reader reads it (the subject is read in
:mod:`migrate.rules.neuron_state`).

neuron's semantic import (cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs`` ``inspect``)
walks an origin's history from index 0 and decodes each commit as a record of its data model
(:class:`migrate.rules.neuron_reader.Reader`): index 0 as ``cell/birth/1`` (7 fields),
each later entry as ``cell/commit/1`` (10 fields) whose ``cell`` (field 0) is the origin,
``index`` (field 1) the entry's index and ``previous`` (field 2) the commit before it.

Schema identity is checked too: field 0 of each record must be neuron's schema id of its
name (:func:`migrate.rules.neuron_schema.schema_id`, derived from the hash of neuron's suite
file; neuron's ``Reader::record`` refuses another with ``UnsupportedSchema``, before the field
count).  So is the head's snapshot, as ``inspect`` reads it first (``records::snapshot_at``,
legacy.rs L27-30): the ``cell/snapshot/1`` record the head names (birth field 5, commit field
4), its lifecycle one of the five ``cell/lifecycle/<name>/1`` variants (else
``UnsupportedSchema``) and its profile (field 4) the one original profile particle
(:func:`migrate.rules.neuron_schema.legacy_profile`; else ``Unsupported``).

What is **not** decided here (:data:`LEFT_TO_NEURON`), although all of it but the checkpoint's
runtime verdict is static given the same suite contract id: the definition, artifacts, policy
and live continuation ``inspect`` reads and the earlier entries' snapshots; the import request
check needs the import nonce, which a mapping carries only when the operator names it.
Rune's ``validate_checkpoint`` is the only check of the import that needs neuron's runtime,
and it never refuses: an incompatible checkpoint pauses the imported prog; the toolkit
reports that verdict as "unknown (decided by neuron at import)".
"""

from __future__ import annotations

from typing import Any

from migrate.rules.neuron_reader import Lookup, Reader, Refused
from migrate.rules.neuron_schema import legacy_profile, lifecycle_variants
from migrate.store.codec import HISTORY, history_key

UNKNOWN = "unknown (decided by neuron at import)"
#: The checks of neuron's import the toolkit leaves to neuron: all static (decidable from
#: the store's rows and the suite contract ids) except the last two (an input the toolkit is
#: not given; neuron's runtime), none made here (the
#: subject's root state and its imports/progs conflicts are read in
#: :mod:`migrate.rules.neuron_state` and :mod:`migrate.pipeline.subject`).
LEFT_TO_NEURON = (
    "definition and artifacts of each snapshot (codec label, Blob content of the stated length)",
    "the snapshots of earlier history entries (artifacts::snapshot)",
    "local policy (step limit, allowed acts)",
    "live continuation: its event, attempt and outcome records, and the history's accounting",
    "the import request id in the subject's request index when the mapping names no import "
    "nonce: the id depends on the nonce the operator gives neuron import",
    "the live checkpoint under neuron's Rune runtime (validate_checkpoint): needs the runtime; "
    "never refuses, an incompatible checkpoint pauses the imported prog",
)
BIRTH, COMMIT = ("cell/birth/1", 7), ("cell/commit/1", 10)
SNAPSHOT = ("cell/snapshot/1", 11)


def _snapshot(reader: Reader, ref: bytes, what: str) -> None:
    """neuron's ``Snapshot::read`` of the snapshot ``ref`` names, then ``inspect``'s profile
    check: a ``cell/snapshot/1`` (11 fields) whose lifecycle (field 2) is one of the five
    lifecycle variants (else ``UnsupportedSchema``), its refs and epoch readable, and whose
    profile (field 4) is the one original profile (else ``Unsupported``)."""
    f = reader.record(reader.reference(ref, what), SNAPSHOT, what)
    if f[2] not in lifecycle_variants():
        raise Refused(
            "Data(UnsupportedSchema)",
            f"{what}: its lifecycle {f[2].hex()} is none of the five cell/lifecycle variants",
        )
    for i in (0, 1, 3, 4, 6, 7, 8, 9, 10):
        if i == 6:
            reader.uint(f[5], f"{what} (epoch)")
        reader.reference(f[i], f"{what} (field {i})")
    profile = reader.reference(f[4], f"{what} (profile)")
    if profile != legacy_profile():
        raise Refused(
            "Unsupported",
            f"{what}: its profile {profile.hex()} is not the original cell runtime profile "
            f"{legacy_profile().hex()}",
        )


def check_origin(lookup: Lookup, origin: bytes, head_index: int) -> dict[str, Any] | None:
    """The first refusal of neuron's legacy reader on ``origin``'s history (its head's record,
    then entries 0 .. ``head_index`` in order), as ``{code, namespace, index, reason,
    detail}``; None when every entry reads as neuron's records (for what is checked here)."""
    reader = Reader(lookup)
    # neuron reads the head's record first (``records::snapshot_at``: the snapshot it names),
    # so a history that is no cell records at all is refused at its head.
    # Then the snapshot that record names and its profile (legacy.rs L24-30).
    top = lookup(HISTORY, history_key(origin, head_index))
    if top is not None:
        what = f"head index {head_index}"
        try:
            if head_index == 0 and top != origin:
                raise Refused("Conflict", f"{what} commit {top.hex()} is not the origin id")
            f = reader.record(top, BIRTH if head_index == 0 else COMMIT, what)
            _snapshot(reader, f[5 if head_index == 0 else 4], f"{what} (snapshot)")
        except Refused as refused:
            return _finding(origin, head_index, refused)
    previous = b""
    for index in range(head_index + 1):
        commit = lookup(HISTORY, history_key(origin, index))
        what = f"index {index} commit {'?' if commit is None else commit.hex()}"
        try:
            if commit is None:
                raise Refused("Conflict", f"history index {index} is missing")
            if index == 0:
                if commit != origin:
                    raise Refused("Conflict", f"{what} is not the origin id")
                reader.record(commit, BIRTH, what)
            else:
                f = reader.record(commit, COMMIT, what)
                if reader.reference(f[0], f"{what} (cell)") != origin:
                    raise Refused("Conflict", f"{what}: its cell field is not the origin")
                if reader.uint(f[1], f"{what} (index)") != index:
                    raise Refused("Conflict", f"{what}: its index field is not {index}")
                if reader.reference(f[2], f"{what} (previous)") != previous:
                    raise Refused(
                        "Conflict", f"{what}: its previous field is not the commit at {index - 1}"
                    )
        except Refused as refused:
            return _finding(origin, index, refused)
        previous = commit
    return None


def _finding(origin: bytes, index: int, refused: Refused) -> dict[str, Any]:
    return {
        "code": "origin-not-cell-record",
        "namespace": origin.hex(),
        "index": index,
        "reason": refused.reason,
        "detail": f"origin {origin.hex()} {refused.detail}",
    }
