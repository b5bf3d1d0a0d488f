"""A mapped origin's history read as neuron's legacy reader reads it (and the subject's head
as neuron's ``inspect`` reads it: :func:`subject_refusal`).

neuron's semantic import (cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs`` ``inspect``)
walks an origin's history from index 0 and decodes each commit as a record of its data model
(neuron@dbebea3f ``model/src/data.rs`` ``Reader``): index 0 as ``cell/birth/1`` (7 fields),
each later entry as ``cell/commit/1`` (10 fields) whose ``cell`` (field 0) is the origin,
``index`` (field 1) the entry's index and ``previous`` (field 2) the commit before it.  The
records are nox Model B Data nodes:

* a content row is read as ``Reader::content``: present (else ``Missing``), its id the nox id
  of its payload (else ``InvalidData``); a pair must be a 64-byte Data payload and an atom an
  8-byte one -- a **Blob is never a pair or an atom** (``InvalidData``);
* a record is ``pair(schema ref, fields)``; a ref is ``pair(pair(a0, a1), pair(a2, a3))`` of
  four atoms, the id's u64 LE limbs; fields are right-nested pairs ending in the atom 0 (more
  than the record's count: ``Limit``, fewer: ``InvalidData``); a uint is ``pair(hi, lo)`` of
  two atoms each ``<= u32::MAX``.

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
and live continuation ``inspect`` reads, the earlier entries' snapshots, and the subject's
``neuron/root/1`` state.  Rune's ``validate_checkpoint`` is the only check of the import that
needs neuron's runtime, and it never refuses: an incompatible checkpoint pauses the imported
prog; the toolkit reports that verdict as "unknown (decided by neuron at import)".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hashing import nox
from migrate.rules.neuron_schema import legacy_profile, lifecycle_variants, schema_id, suite
from migrate.store.codec import CONTENT, HISTORY, history_key

Lookup = Callable[[str, bytes], bytes | None]
UNKNOWN = "unknown (decided by neuron at import)"
#: The checks of neuron's import this module leaves to neuron: all static (decidable from
#: the store's rows and the suite contract ids) except the last, none made here.
LEFT_TO_NEURON = (
    "definition and artifacts of each snapshot (codec label, Blob content of the stated length)",
    "the snapshots of earlier history entries (artifacts::snapshot)",
    "local policy (step limit, allowed acts)",
    "live continuation: its event, attempt and outcome records, and the history's accounting",
    "the subject's neuron/root/1 state (progs, imports, limits) and its request index",
    "the live checkpoint under neuron's Rune runtime (validate_checkpoint): needs the runtime; "
    "never refuses, an incompatible checkpoint pauses the imported prog",
)
BIRTH, COMMIT = ("cell/birth/1", 7), ("cell/commit/1", 10)
SNAPSHOT = ("cell/snapshot/1", 11)
_U32 = 0xFFFF_FFFF


class _Refused(Exception):
    """neuron's reader refuses: ``reason`` is neuron's error (``Data(InvalidData)`` ...)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _Reader:
    """neuron's ``Reader`` over a store's content rows (codec byte ‖ payload)."""

    def __init__(self, lookup: Lookup) -> None:
        self._get = lookup
        self._zero = nox.particle((0).to_bytes(8, "little"))

    def _data(self, cid: bytes, length: int, what: str) -> bytes:
        row = self._get(CONTENT, cid)
        if row is None:
            raise _Refused("Data(Missing)", f"{what} {cid.hex()} is not a content row")
        if row[:1] != b"\x00":
            raise _Refused(
                "Data(InvalidData)",
                f"{what} {cid.hex()} is a Blob, not a nox {length}-byte Data node",
            )
        payload = row[1:]
        if len(payload) != length:
            raise _Refused(
                "Data(InvalidData)",
                f"{what} {cid.hex()} is a {len(payload)}-byte Data node, not {length} bytes",
            )
        try:
            ok = nox.particle(payload) == cid
        except nox.NoxError:
            ok = False
        if not ok:
            raise _Refused(
                "Data(InvalidData)", f"{what} {cid.hex()}: the key is not the payload's nox id"
            )
        return payload

    def pair(self, cid: bytes, what: str) -> tuple[bytes, bytes]:
        payload = self._data(cid, 64, what)
        return payload[:32], payload[32:]

    def atom(self, cid: bytes, what: str) -> int:
        return int.from_bytes(self._data(cid, 8, what), "little")

    def uint(self, cid: bytes, what: str) -> int:
        hi, lo = (self.atom(c, what) for c in self.pair(cid, what))
        if hi > _U32 or lo > _U32:
            raise _Refused("Data(InvalidData)", f"{what}: a uint half over u32::MAX")
        return (hi << 32) | lo

    def reference(self, cid: bytes, what: str) -> bytes:
        left, right = self.pair(cid, what)
        limbs = [*self.pair(left, what), *self.pair(right, what)]
        return b"".join(self.atom(limb, what).to_bytes(8, "little") for limb in limbs)

    def record(self, cid: bytes, schema: tuple[str, int], what: str) -> list[bytes]:
        name, count = schema
        ref, cursor = self.pair(cid, what)
        got, want = self.reference(ref, f"{what} ({name} schema ref)"), schema_id(name)
        if got != want:
            raise _Refused(
                "Data(UnsupportedSchema)",
                f"{what}: its schema ref {got.hex()} is not the {name} schema id {want.hex()} "
                f"(derived from neuron's {suite(name)})",
            )
        fields: list[bytes] = []
        while cursor != self._zero:
            if len(fields) >= count:
                raise _Refused("Data(Limit)", f"{what}: more than the {count} fields of {name}")
            head, cursor = self.pair(cursor, f"{what} ({name} fields)")
            fields.append(head)
        if len(fields) != count:
            raise _Refused("Data(InvalidData)", f"{what}: {len(fields)} fields, {name} has {count}")
        return fields


def _snapshot(reader: _Reader, ref: bytes, what: str) -> None:
    """neuron's ``Snapshot::read`` of the snapshot ``ref`` names, then ``inspect``'s profile
    check: a ``cell/snapshot/1`` (11 fields) whose lifecycle (field 2) is one of the five
    lifecycle variants (else ``UnsupportedSchema``), its refs and epoch readable, and whose
    profile (field 4) is the one original profile (else ``Unsupported``)."""
    f = reader.record(reader.reference(ref, what), SNAPSHOT, what)
    if f[2] not in lifecycle_variants():
        raise _Refused(
            "Data(UnsupportedSchema)",
            f"{what}: its lifecycle {f[2].hex()} is none of the five cell/lifecycle variants",
        )
    for i in (0, 1, 3, 4, 6, 7, 8, 9, 10):
        if i == 6:
            reader.uint(f[5], f"{what} (epoch)")
        reader.reference(f[i], f"{what} (field {i})")
    profile = reader.reference(f[4], f"{what} (profile)")
    if profile != legacy_profile():
        raise _Refused(
            "Unsupported",
            f"{what}: its profile {profile.hex()} is not the original cell runtime profile "
            f"{legacy_profile().hex()}",
        )


def check_origin(lookup: Lookup, origin: bytes, head_index: int) -> dict[str, Any] | None:
    """The first refusal of neuron's legacy reader on ``origin``'s history (its head's record,
    then entries 0 .. ``head_index`` in order), as ``{code, namespace, index, reason,
    detail}``; None when every entry reads as neuron's records (for what is checked here)."""
    reader = _Reader(lookup)
    # neuron reads the head's record first (``records::snapshot_at``: the snapshot it names),
    # so a history that is no cell records at all is refused at its head.
    # Then the snapshot that record names and its profile (legacy.rs L24-30).
    top = lookup(HISTORY, history_key(origin, head_index))
    if top is not None:
        what = f"head index {head_index}"
        try:
            if head_index == 0 and top != origin:
                raise _Refused("Conflict", f"{what} commit {top.hex()} is not the origin id")
            f = reader.record(top, BIRTH if head_index == 0 else COMMIT, what)
            _snapshot(reader, f[5 if head_index == 0 else 4], f"{what} (snapshot)")
        except _Refused as refused:
            return _finding(origin, head_index, refused)
    previous = b""
    for index in range(head_index + 1):
        commit = lookup(HISTORY, history_key(origin, index))
        what = f"index {index} commit {'?' if commit is None else commit.hex()}"
        try:
            if commit is None:
                raise _Refused("Conflict", f"history index {index} is missing")
            if index == 0:
                if commit != origin:
                    raise _Refused("Conflict", f"{what} is not the origin id")
                reader.record(commit, BIRTH, what)
            else:
                f = reader.record(commit, COMMIT, what)
                if reader.reference(f[0], f"{what} (cell)") != origin:
                    raise _Refused("Conflict", f"{what}: its cell field is not the origin")
                if reader.uint(f[1], f"{what} (index)") != index:
                    raise _Refused("Conflict", f"{what}: its index field is not {index}")
                if reader.reference(f[2], f"{what} (previous)") != previous:
                    raise _Refused(
                        "Conflict", f"{what}: its previous field is not the commit at {index - 1}"
                    )
        except _Refused as refused:
            return _finding(origin, index, refused)
        previous = commit
    return None


def _finding(origin: bytes, index: int, refused: _Refused) -> dict[str, Any]:
    return {
        "code": "origin-not-cell-record",
        "namespace": origin.hex(),
        "index": index,
        "reason": refused.reason,
        "detail": f"origin {origin.hex()} {refused.detail}",
    }


def subject_refusal(
    lookup: Lookup, subject: bytes, index: int, commit: bytes
) -> tuple[str, str] | None:
    """neuron's ``Neuron::inspect`` (neuron@53dbf8d1 ``engine/src/neuron.rs``) on the
    subject's head ``(index, commit)``: a ``neuron/activation/1`` record (3 fields) at index 0,
    else ``neuron/commit/1`` (8 fields), under its schema id, whose field 0 is the subject and
    (index > 0) field 1 the head's index; ``(reason, detail)`` of the first refusal, None when
    it reads so.  The ``neuron/root/1`` state is neuron's to check."""
    reader = _Reader(lookup)
    schema = ("neuron/activation/1", 3) if index == 0 else ("neuron/commit/1", 8)
    what = f"head index {index} commit {commit.hex()}"
    try:
        f = reader.record(commit, schema, what)
        if reader.reference(f[0], f"{what} (neuron)") != subject:
            raise _Refused("Conflict", f"{what}: its neuron field is not the subject")
        if index > 0 and reader.uint(f[1], f"{what} (index)") != index:
            raise _Refused("Conflict", f"{what}: its index field is not {index}")
    except _Refused as refused:
        return refused.reason, refused.detail
    return None
