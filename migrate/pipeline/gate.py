"""The checks ``run`` makes before it writes anything -- and which ``plan`` makes instead of
writing.

``run`` and ``plan`` share one path (:func:`gated`): detect the source's kind, take the
source's lock (exit 11 while the old binary runs), preflight the source (exit 3 when it breaks
a rule or a bound), locate the store (default-store guard, exit 1 when it cannot be written),
and :func:`admit` the import against what the store already holds (exit 4 on a conflict).
Only then does ``run`` open the store for writing and act; ``plan`` reads the same store
through the read-only handle (:mod:`migrate.store.readonly`: read-only descriptor, ``PRAGMA
query_only``, an authorizer that denies writes), so it cannot write by construction, and
reports what :func:`admit` says ``run`` would do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bbg_core.errors import Conflict, HeadMismatch
from fences import FenceReader
from fences.namespaces import fence_of
from fences.seal import Seal, seal
from migrate.job import CODEC, Job
from migrate.pipeline import continuity, subject
from migrate.pipeline.destination import read_destination
from migrate.pipeline.preflight import Preflight, preflight, refuse_origins, source_kind
from migrate.store import creation, imports
from migrate.store.graph import head as live_head
from migrate.store.layout import (
    require_writable,
    resolve_store_dir,
)
from migrate.store.live import LiveReader
from migrate.store.readonly import ReadHandle

Progress = Callable[[int, int], None]
ROWS_STREAM = "rows"


class Reader(FenceReader, LiveReader, Protocol):
    """What the checks read through: a store, a write transaction or a read-only handle."""

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


@dataclass(frozen=True)
class Admission:
    """What ``run`` would do with this import, given the store as it is."""

    state: str | None  # the import's state in the store: None (new), "staging", "active"
    rows_staged: int
    staged: bool
    validated: bool

    @property
    def action(self) -> str:
        if self.state == "active":
            return "none (already activated; run returns the same receipt)"
        if self.validated:
            return "activate (staged and validated)"
        if self.staged:
            return "validate and activate (staging complete)"
        if self.state == "staging":
            return f"resume: stage the rows after the first {self.rows_staged}, validate, activate"
        return "migrate: seal, stage, validate, activate"


@dataclass
class Gate:
    """The source sealed and preflighted, and the store located (``db``: the read-only
    handle ``plan`` reads through, None when no store exists yet)."""

    seal: Seal
    pre: Preflight
    directory: Path
    db: ReadHandle | None


@contextmanager
def sealed_source(job: Job, *, background: bool = False) -> Iterator[tuple[str, Seal]]:
    """The first checks of every step: the source's kind, its lock and fingerprint
    (``background``: its SHA-256 hashed on a thread, :func:`fences.seal.seal`)."""
    # An import of this source in progress is continued, never silently replaced by a new
    # one because the bytes changed since it was sealed (exit 3 naming it).
    continuity.require_unchanged(job)
    kind = source_kind(job)
    with seal(job.source, kind, background=background) as held:
        yield kind, held


def locate(job: Job) -> Path:
    """The store directory a writer would use: the default-store guard, a destination that
    is a store or new or empty, and writable (checked after the preflight, in run's order)."""
    directory = resolve_store_dir(job.store, create=True)
    creation.check_destination(directory)
    require_writable(directory)
    return directory


@contextmanager
def gated(job: Job, progress: Progress | None, *, dry: bool) -> Iterator[Gate]:
    """Every check before the first write, in ``run``'s order (see the module docstring).

    ``dry``: also admit the import through a read-only handle (what ``plan`` does); a
    writer admits it inside its first transaction instead (:func:`admit`).
    """
    with sealed_source(job) as (kind, held):
        pre = preflight(job, kind, held.fingerprint, progress)
        directory = locate(job)
        if not dry:
            yield Gate(held, pre, directory, None)
            return
        with read_destination(directory) as db:
            yield Gate(held, pre, directory, db)


def admit(db: Reader | None, directory: Path, job: Job, pre: Preflight, *,
          planned: bool = False) -> Admission:  # fmt: skip
    """Every refusal ``run`` makes at the store before it writes, in its order; else what it
    would do.  ``db`` is None when no store exists yet (everything is new).  ``planned``:
    the import's activation is planned already outside the records (the single pass's plan,
    kept by its guard: :mod:`.existing`), as a journal ``activating`` entry says it."""
    iid = pre.import_id
    state = None if db is None else imports.import_state(db, iid)
    if state == "active":
        return Admission(state, pre.rows, True, True)
    if job.mapping is not None:
        _, subject_state = subject.checked_state(db, directory, job.mapping)  # Missing first
        refuse_origins(job, pre)  # then each origin (neuron's legacy reader)
        subject.check_post_import(directory, job.mapping, subject_state, pre.views)
    if db is None:
        return Admission(None, 0, False, False)
    if state == "discarded":
        raise Conflict(
            f"{directory}: import {iid} was discarded; use a new --nonce", import_id=iid
        )
    owner = imports.import_of_nonce(db, pre.nonce)
    if owner is not None and owner != iid:
        raise _nonce_conflict(db, directory, job, pre, owner)
    for ns in pinned_namespaces(job, pre):
        owner = imports.import_of_staged_namespace(db, ns)
        if owner is not None and owner != iid:
            raise Conflict(
                f"{db.path}: namespace {ns.hex()} is already staged by import {owner}",
                path=str(db.path),
                namespace=ns,
                import_id=iid,
            )
    if imports.journal_of(db, iid, "sealed") is not None:
        check_pins(db, iid)
    # Once its activation is planned (the real database: the plan is recorded before rows go
    # in), what the store holds of this import's namespaces is this import's own.
    planned = planned or imports.journal_of(db, iid, "activating") is not None
    conflicts = [] if planned else destination_conflicts(db, pre, iid)
    if conflicts:
        first = conflicts[0]
        raise Conflict(
            f"{directory}: import {iid} conflicts with the destination: {first['code']}: "
            f"{first['detail']}"
            + (f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else "")
            + "; nothing was written",
            import_id=iid,
            errors=conflicts,
        )
    cursor = imports.cursor_of(db, iid, ROWS_STREAM)
    return Admission(
        state,
        cursor[1] if cursor else 0,
        imports.journal_of(db, iid, "staged") is not None,
        imports.journal_of(db, iid, "validated") is not None,
    )


def require_known(db: Reader, directory: Path, job: Job, pre: Preflight) -> None:
    """A step that continues an import (``validate``, ``activate``) on inputs that name no
    import here, while its nonce is bound to another one: say which input differs."""
    if imports.import_state(db, pre.import_id) is not None:
        return
    owner = imports.import_of_nonce(db, pre.nonce)
    if owner is not None:
        raise _nonce_conflict(db, directory, job, pre, owner)


def pinned_namespaces(job: Job, pre: Preflight) -> list[bytes]:
    """Namespaces this import pins (stages): the source's.  A mapped run writes nothing in
    its subject's namespace (neuron binds the import to the subject's head when it
    imports), so that namespace is not pinned."""
    return [bytes.fromhex(ns) for ns in sorted(pre.namespaces)]


def destination_conflicts(db: Reader, pre: Preflight, import_id: str) -> list[dict[str, str]]:
    """What in the destination stands in the way of this import (read-only)."""
    out: list[dict[str, str]] = []
    for ns_hex, facts in sorted(pre.namespaces.items()):
        ns = bytes.fromhex(ns_hex)
        current = live_head(db, ns)
        if current is not None and (current.index, current.commit.hex()) != (
            facts["head_index"],
            facts["head_commit"],
        ):
            out.append(
                {
                    "code": "head-conflict",
                    "detail": f"namespace {ns_hex}: destination head {current.describe()} differs "
                    f"from the source head ({facts['head_index']}, {facts['head_commit']})",
                }
            )
        record = fence_of(db, ns)
        if record is not None and record["import_id"] != import_id:
            out.append(
                {
                    "code": "fenced",
                    "detail": f"namespace {ns_hex} is fenced by import {record['import_id']}",
                }
            )
    return out


def check_pins(db: Reader, iid: str) -> None:
    """HeadMismatch if a namespace pinned when the import was sealed has moved since (not
    checked again once the activation is planned: the pins were checked then, and the rows
    that went in since are the import's own)."""
    if imports.journal_of(db, iid, "activating") is not None:
        return
    sealed = imports.journal_of(db, iid, "sealed")
    assert sealed is not None
    for ns_hex, pinned in sealed["prior_heads"].items():
        current = live_head(db, bytes.fromhex(ns_hex))
        now = None if current is None else [current.index, current.commit.hex()]
        if now != pinned:
            raise HeadMismatch(
                f"{db.path}: namespace {ns_hex} moved since the import was sealed "
                f"(pinned {pinned}, now {now}); nothing was activated",
                namespace=ns_hex,
                import_id=iid,
            )


def _mapping_options(mapping: dict[str, Any] | None) -> str:
    if mapping is None:
        return "no mapping"
    maps = " ".join(f"--map {o['origin']}={o['install_nonce']}" for o in mapping["origins"])
    request = mapping.get("import_nonce")
    tail = "" if request is None else f" --import-nonce {request}"
    return f"--subject {mapping['subject']} {maps}{tail}"


def _nonce_conflict(
    db: Reader, directory: Path, job: Job, pre: Preflight, owner: str
) -> Conflict:
    """The nonce is bound to another import: say which input differs, and how to repeat the
    sealed one (or start a new migration)."""
    sealed = imports.seal_of(db, owner)
    my_mapping = job.mapping.to_json() if job.mapping is not None else None
    derived = "" if job.nonce else " (derived from the source's SHA-256: no --nonce was given)"
    if sealed is None:  # bound by something other than a pipeline import
        return Conflict(
            f"{directory}: nonce {pre.nonce}{derived} was already used by import {owner} "
            "with other inputs; use a new --nonce for a different migration",
            nonce=pre.nonce,
            import_id=pre.import_id,
        )
    theirs_source = sealed.get("source") or {}
    differences: list[str] = []
    repeat: list[str] = []
    if theirs_source.get("kind") != pre.kind:
        differences.append(
            f"kind: sealed as {theirs_source.get('kind')}, this call reads a {pre.kind}"
        )
        repeat.append(f"--kind {theirs_source.get('kind')}")
    if theirs_source.get("sha256") != pre.fingerprint["sha256"]:
        differences.append(
            f"source: sealed {theirs_source.get('size_bytes')} bytes with SHA-256 "
            f"{theirs_source.get('sha256')}, this call's file has {pre.fingerprint['size_bytes']} "
            f"bytes with SHA-256 {pre.fingerprint['sha256']} (another file, or it changed)"
        )
        repeat.append("the source file it sealed")
    if sealed.get("mapping") != my_mapping:
        differences.append(
            f"mapping: sealed with {_mapping_options(sealed.get('mapping'))}, this call has "
            f"{_mapping_options(my_mapping)}"
        )
        repeat.append(_mapping_options(sealed.get("mapping")))
    sealed_check = sealed.get("content_check", CODEC)
    if sealed_check != job.content_check:
        differences.append(
            f"content check: sealed with --content-check {sealed_check}, this call uses "
            f"{job.content_check}"
        )
        repeat.append(f"--content-check {sealed_check}")
    if bool(sealed.get("strict")) != job.strict:
        was, now = ("with" if flag else "without" for flag in (sealed.get("strict"), job.strict))
        differences.append(f"strict: sealed {was} --strict, this call {now}")
        repeat.append("--strict" if sealed.get("strict") else "no --strict")
    if not differences:
        differences.append("the import's other inputs")
    how = f"To continue import {owner}, give {' and '.join(repeat)}; to" if repeat else "To"
    return Conflict(
        f"{directory}: nonce {pre.nonce}{derived} was already used by import {owner} with other "
        f"inputs: {'; '.join(differences)}. {how} start a different migration, pass a new "
        "--nonce",
        nonce=pre.nonce,
        import_id=pre.import_id,
        sealed_import=owner,
        differences=differences,
    )
