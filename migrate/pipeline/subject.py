"""A mapped run's subject neuron, read as neuron's semantic import reads it.

A mapping names a subject neuron and the legacy origins it will take over.  neuron's
import (cyberia-to/neuron@fd24e768 ``engine/src/migration.rs`` ``prepare_import``) inspects
the subject first (``engine/src/neuron.rs`` ``inspect``): the subject's namespace **is** the
subject id, and a namespace with no head is refused with ``Error::Missing``.  The import
manifest is then bound to the subject's current head commit and to the network, policy and
epoch of its ``neuron/root/1`` state.

The toolkit holds no authority of the subject, so it cannot publish neuron's import (the
evidence is signed by the subject's key over the post-import state; see
``docs/operations.md`` "Mapped runs").  A mapped run therefore ends *prepared, validated and
inert*, in the state neuron's own operator path leaves (``neuron legacy-export SOURCE DEST
--target SUBJECT``): the origins converted into the destination that holds the subject and
staged in bbg's transfer form pinned to the subject (:func:`stage_transfer`), nothing written
in the subject's namespace, no neuron fence and no import manifest; ``neuron import``
completes it.  This module refuses a missing subject (``plan`` and ``run`` alike, before
anything is written), then a mapping whose post-import state neuron would refuse
(:func:`check_post_import`, :mod:`migrate.rules.neuron_import`), and describes that end
state.

The transfer (cyberia-to/bbg@36cc420b ``rs/src/storage/application/transfer.rs``): the
manifest is bbg's (L50-60, :func:`migrate.rules.transfer_form.manifest_of`) with target = the
subject, key = the run's 32-byte nonce and prior = 32 zero bytes (a ``cell.redb`` has no bbg
``last_transaction``: ``unwrap_or([0; 32])``, L49), over every origin's converted head in
namespace order; the activating transaction writes what ``prepare_target`` (L186-224) and a
completed ``stage`` leave: status at least ``neuron-v1``, ``'s' ‖ origin = manifest`` per
origin, ``'u' ‖ manifest = subject`` and ``'t' ‖ manifest`` = the cursor at table 5 with the
rows and key+value bytes of the five tables (L281-304).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bbg_core.errors import ImportConflict, ImportStateInvalid, SubjectNotActivated, UsageError
from migrate.job import Job
from migrate.job.mapping import Mapping
from migrate.pipeline.destination import read_destination
from migrate.rules import neuron_state
from migrate.rules.cell_records import LegacyView
from migrate.rules.neuron_import import after_import
from migrate.rules.neuron_reader import Refused
from migrate.rules.neuron_schema import prog_id, request_id
from migrate.rules.shape import DIGEST_ORDER
from migrate.rules.transfer_form import DONE, Cursor, manifest_of
from migrate.store import export
from migrate.store.codec import REQUESTS, Head, request_key
from migrate.store.graph import head as live_head
from migrate.store.live import LiveReader

STATE = "prepared, validated, inert"
#: A live continuation's checkpoint is judged by neuron's Rune runtime
#: (``validate_checkpoint``, migration.rs); the toolkit has no such runtime.
CHECKPOINT = "unknown (decided by neuron at import)"


def binding(db: LiveReader | None, directory: Path, mapping: Mapping) -> dict[str, Any]:
    """The subject's binding as neuron's import takes it: its head commit and index and the
    network, policy and epoch of its ``neuron/root/1`` state (:func:`checked_state`)."""
    current, state = checked_state(db, directory, mapping)
    return {
        "subject": mapping.subject.hex(),
        "head": {"index": current.index, "commit": current.commit.hex()},
        "root": state.root.hex(),
        "network": state.network.hex(),
        "policy": state.policy.hex(),
        "epoch": state.epoch,
    }


def checked_state(
    db: LiveReader | None, directory: Path, mapping: Mapping
) -> tuple[Head, neuron_state.State]:
    """The subject's head and ``neuron/root/1`` state, read as neuron's import reads them.
    SubjectNotActivated (exit 3)
    when the subject's namespace has no head here (``db`` None: no store there yet; neuron's
    ``Missing``), or when neuron's ``inspect`` refuses its head or state
    (:func:`migrate.rules.neuron_state.inspect`: neuron's ``Data(...)`` or ``Conflict``);
    ImportConflict (exit 3) when that state already holds what the mapping would add
    (:func:`import_conflicts`)."""
    subject = mapping.subject
    current = None if db is None else live_head(db, subject)
    if db is None or current is None:
        raise SubjectNotActivated(
            f"{directory}: subject {subject.hex()} not activated: its namespace has no head "
            "in this store, and neuron's import refuses such a subject (Missing). Activate the "
            "subject neuron in this store first, then map origins to it; nothing was written",
            path=str(directory),
            subject=subject.hex(),
        )
    try:
        state = neuron_state.inspect(db.live_get, subject, current.index, current.commit)
    except Refused as refused:
        raise SubjectNotActivated(
            f"{directory}: subject {subject.hex()} is not an activated neuron here: its head "
            "or its neuron/root/1 state does not read as neuron's records of this subject, and "
            f"neuron's import refuses it ({refused.reason}): {refused.detail}; nothing was "
            "written",
            path=str(directory),
            subject=subject.hex(),
            reason=refused.reason,
        ) from None
    import_conflicts(db, directory, mapping, state)
    return current, state


def check_post_import(directory: Path, mapping: Mapping, state: neuron_state.State,
                      views: tuple[LegacyView, ...]) -> None:  # fmt: skip
    """The state neuron's import would build from ``state`` and the mapped origins' ``views``
    (:func:`migrate.rules.neuron_import.after_import`), validated as neuron's ``prepare``
    validates it: ImportConflict (exit 3) for its ``Conflict`` (a live event that keys an
    invocation already), ImportStateInvalid (exit 3) for anything else it refuses
    (``Budget``, ``Data(Limit)``, ``Data(InvalidData)``)."""
    nonces = {o.origin: o.install_nonce for o in mapping.origins}
    origins = [(v, nonces[v.origin]) for v in views if v.origin in nonces]
    try:
        after_import(state, mapping.subject, origins)
    except Refused as refused:
        where = dict(path=str(directory), subject=mapping.subject.hex(), reason=refused.reason)
        text = (
            f"{directory}: the state neuron's import would give subject "
            f"{mapping.subject.hex()} is one neuron refuses ({refused.reason}): "
            f"{refused.detail}; nothing was written"
        )
        if refused.reason == "Conflict":
            raise ImportConflict(text, conflict="invocation", **where) from None
        raise ImportStateInvalid(text, **where) from None


def import_conflicts(
    db: LiveReader, directory: Path, mapping: Mapping, state: neuron_state.State
) -> None:
    """neuron's ``prepare_import`` checks against the subject's state (neuron@fd24e768
    ``engine/src/migration.rs``), each ``Conflict``, in neuron's order: the import's request
    id ``neuron/request-id/1(subject, nonce(import nonce))`` already in the subject's request
    index (L50-53: the store's ``application_requests``, key subject ‖ request, which neuron's
    ``GraphPort::resolve`` reads) -- checked only when the mapping names the import nonce;
    then, per origin, one already in the state's imports (L58-60), or whose prog id
    ``neuron/prog-id/1(subject, nonce(install nonce))`` is already a key of its progs
    (L62-66).  ImportConflict (exit 3) naming the first."""
    subject = mapping.subject
    if mapping.import_nonce is not None:
        request = request_id(subject, mapping.import_nonce)
        if db.live_get(REQUESTS, request_key(subject, request)) is not None:
            raise ImportConflict(
                f"{directory}: import nonce {mapping.import_nonce.hex()} gives request "
                f"{request.hex()}, which subject {subject.hex()} has already committed (its "
                "request index holds it); neuron's import refuses it (Conflict); choose "
                "another --import-nonce; nothing was written",
                path=str(directory),
                subject=subject.hex(),
                request=request.hex(),
                reason="Conflict",
                conflict="request",
            )
    for o in mapping.origins:
        prog = prog_id(subject, o.install_nonce)
        if o.origin in state.imports:
            what, detail = "origin", (
                f"origin {o.origin.hex()} is already imported by subject {subject.hex()} "
                f"(its neuron/root/1 imports name it: {state.imports[o.origin].hex()}); map "
                "only origins the subject has not imported"
            )
        elif prog in state.progs:
            what, detail = "prog", (
                f"install nonce {o.install_nonce.hex()} of origin {o.origin.hex()} gives prog "
                f"{prog.hex()}, which subject {subject.hex()} already has installed (a key of "
                "its neuron/root/1 progs); choose another install nonce"
            )
        else:
            continue
        raise ImportConflict(
            f"{directory}: {detail}; neuron's import refuses it (Conflict); nothing was written",
            path=str(directory),
            subject=subject.hex(),
            origin=o.origin.hex(),
            prog=prog.hex(),
            reason="Conflict",
            conflict=what,
        )


def require(job: Job, directory: Path) -> None:
    """Refuse a mapped job whose subject is not activated at ``directory``, read through a
    read-only handle before the store is opened for writing (which would create it)."""
    if job.mapping is None:
        return
    if job.nonce is not None:
        transfer_nonce(job.nonce)
    with read_destination(directory) as db:
        binding(db, directory, job.mapping)


def completion(directory: Path, mapping: Mapping) -> str:
    """The neuron command that completes the import (KEYFILE: the subject's key file; the
    import nonce the mapping names, else N: a fresh one of the operator's choice)."""
    pairs = " ".join(f"{o.origin.hex()}={o.install_nonce.hex()}" for o in mapping.origins)
    request = "N" if mapping.import_nonce is None else mapping.import_nonce.hex()
    return (
        f"neuron --store {directory} --key-file KEYFILE import {mapping.subject.hex()} "
        f"{pairs} --nonce {request}"
    )


def transfer_nonce(nonce_hex: str) -> bytes:
    """The run's nonce as the transfer's 32-byte key (bbg's ``key``); a UsageError for a
    mapped run whose ``--nonce`` is not 32 bytes (the default nonce is)."""
    nonce = bytes.fromhex(nonce_hex)
    if len(nonce) != 32:
        raise UsageError(
            f"--nonce: {nonce_hex!r} must be 32 bytes (64 hex digits) for a mapped run: it is "
            "the key of the bbg transfer the origins are staged in; nothing was written",
            value=nonce_hex,
        )
    return nonce


def _sources(namespaces: dict[str, Any]) -> list[tuple[bytes, Head]]:
    return [
        (bytes.fromhex(ns), Head(int(n["head_index"]), bytes.fromhex(n["head_commit"])))
        for ns, n in sorted(namespaces.items())
    ]


def transfer(
    mapping: Mapping, nonce_hex: str, namespaces: dict[str, Any], tables: dict[str, Any]
) -> dict[str, Any]:
    """The bbg transfer the origins are staged in, pinned to the subject (module docstring):
    manifest, target, key, prior and the final cursor (table 5, rows, key+value bytes)."""
    nonce, prior = transfer_nonce(nonce_hex), bytes(32)
    manifest = manifest_of(mapping.subject, nonce, prior, _sources(namespaces))
    rows = sum(int(tables.get(t, {}).get("rows", 0)) for t in DIGEST_ORDER)
    nbytes = sum(int(tables.get(t, {}).get("total_bytes", 0)) for t in DIGEST_ORDER)
    return {
        "manifest": manifest.hex(),
        "target": mapping.subject.hex(),
        "nonce": nonce.hex(),
        "prior": prior.hex(),
        "cursor": Cursor(DONE, None, rows, nbytes).encode().hex(),
        "origins": "pinned: bbg refuses writes to them (Fenced)",
    }


def stage_transfer(tx: Any, staged: dict[str, Any], namespaces: dict[str, Any],
                   import_id: str) -> None:  # fmt: skip
    """Write the transfer ``staged`` (:func:`transfer`) in the activating transaction ``tx``:
    each origin reserved (bbg's ``'s'`` key on Fjall, a fence record naming the transfer on
    either engine), ``'u'`` and ``'t'`` on Fjall, the status promoted to ``neuron-v1``."""
    from fences import generations

    manifest = bytes.fromhex(staged["manifest"])
    for ns, _ in _sources(namespaces):
        export.reserve_source(tx, ns, manifest, import_id)
    export.put_target(tx, manifest, bytes.fromhex(staged["target"]))
    export.put_cursor(tx, manifest, bytes.fromhex(staged["cursor"]))
    generations.promote(tx, "neuron-v1")


def prepared(
    directory: Path,
    mapping: Mapping,
    bound: dict[str, Any],
    namespaces: dict[str, Any],
    staged: dict[str, Any],
) -> dict[str, Any]:
    """What a mapped run leaves (``plan`` says it will): the binding, each origin's head
    as converted, the transfer the origins are pinned by, and the command that completes
    the import."""
    return {
        "state": STATE,
        "binding": bound,
        "transfer": staged,
        "origins": [
            {
                "origin": o.origin.hex(),
                "head": {
                    "index": namespaces[o.origin.hex()]["head_index"],
                    "commit": namespaces[o.origin.hex()]["head_commit"],
                },
                "install_nonce": o.install_nonce.hex(),
                "checkpoint": CHECKPOINT,
            }
            for o in mapping.origins
        ],
        "complete_with": completion(directory, mapping),
    }
