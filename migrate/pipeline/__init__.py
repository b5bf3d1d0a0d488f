"""The staged migration of a legacy source into a BBG store.

Sources: a cell.redb (its five tables copied byte for byte), an old cyb Signal log or bbg
frame log (each becomes one namespace of provenance records: :mod:`.legacy`), or an old
TextArchive (cybergraph's text observations: :mod:`.legacy_text`).

``run`` = detect → seal → preflight (inspect) → admit → stage → validate → activate [→ retire].
Into a new or empty destination, a cell.redb, log or archive is instead built aside in one
checking pass and published by one rename (:mod:`.fresh`); into a BBG database that holds
history, the same pass -- a cell.redb's, a log's or archive's, a mapped run's -- writes new
segments beside it, published in place with one activation (:mod:`.existing`): the same
records and receipt, one read of the source.
Every step that writes holds the store's run lock (:mod:`migrate.store.runlock`).
``plan`` walks the same path up to the first write (:mod:`.gate`: the source's lock, its
preflight, the store's location and writability, the import's admission) through a
read-only store handle, and reports what ``run`` would do -- or fails with the exit code and
message ``run`` would fail with.  The step
verbs (``seal``, ``stage``, ``validate``, ``activate``) let an operator go one stage at a time;
each re-takes the source's lock and re-derives the same import id from the same inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbg_core.errors import Conflict, StoreRefused
from fences import generations
from fences.seal import Seal
from migrate.job import Bounds, Job
from migrate.pipeline import existing, fresh, gate, retire, stages, subject
from migrate.pipeline.gate import admit, gated
from migrate.pipeline.legacy import LegacySource
from migrate.pipeline.preflight import Preflight, preflight
from migrate.progress import Observer, file_size, phase, source_rows
from migrate.rules.sources import RedbSource
from migrate.store import imports, open_store
from migrate.store.layout import resolve_store_dir
from migrate.store.runlock import run_lock
from migrate.store.store import Store

__all__ = [
    "Bounds", "Job", "Outcome", "activate", "discard", "plan", "run", "seal_only", "stage",
    "validate",
]  # fmt: skip

# Verbs take an observer ``progress(stage, done, total, unit)`` (:mod:`migrate.progress`).
Progress = Observer
# Per-row overhead of a staged row and of a table row in SQLite (key, value, b-tree cells).
_ROW_OVERHEAD = 48


@dataclass
class Outcome:
    """What a pipeline call achieved: a receipt when complete, else how far it got."""

    status: str  # "complete", "retired", "sealed", "staging", "staged", "validated"
    import_id: str
    receipt: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    # The import was already active before this call: nothing was written (an exact rerun).
    already: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON report of a stage that did not end in a receipt."""
        doc: dict[str, Any] = {"status": self.status, "import_id": self.import_id}
        doc.update(self.detail or {})
        return doc


@contextmanager
def _sealed(job: Job, progress: Progress | None) -> Iterator[tuple[Seal, Preflight]]:
    with gated(job, _preflight(job, progress), dry=False) as g:
        yield g.seal, g.pre


def _preflight(job: Job, progress: Progress | None) -> Callable[[int, int], None] | None:
    """The seal stage's callback (its preflight read): rows of a cell.redb, bytes of a log
    or archive."""
    if progress is None:
        return None
    rows = source_rows(job.source)
    if rows is not None:
        return phase(progress, "seal", rows)
    return phase(progress, "seal", file_size(job.source), unit="bytes")


def _open_source(job: Job, pre: Preflight) -> RedbSource | LegacySource:
    """The staging reader of the preflighted source (a context manager with ``pages``)."""
    if pre.legacy is not None:
        return LegacySource(pre.legacy)
    return RedbSource(job.source)


@contextmanager
def _store(job: Job) -> Iterator[Store]:
    # A normal open: a store whose status marker is not a generation this build writes
    # (sealed ``export-v1``, ``copying``, unknown) is refused here, before any write.
    # Then the store's run lock: one step at a time, so two runs of one import into one
    # store never interleave (:mod:`migrate.store.runlock`).  A mapped job's subject must be
    # activated there first: checked read-only, so a refusal creates no store.
    subject.require(job, resolve_store_dir(job.store, create=True))
    with open_store(job.store, create=True, engine=job.engine) as store, \
            run_lock(store.directory):
        yield store


def _retired(job: Job) -> Outcome | None:
    """A retired source (its interrupted retirement finished first) answers only for the
    import that retired it: the same store, nonce and mapping; else Conflict (exit 4)."""
    record = retire.resume(job.source)
    if record is None:
        return None
    mapping = job.mapping.to_json() if job.mapping is not None else None
    retire.require_same_import(
        job.source, record, resolve_store_dir(job.store, create=True), job.nonce, mapping
    )
    receipt: dict[str, Any] = record["receipt"]
    return Outcome("retired", receipt["import_id"], receipt)


def run(
    job: Job,
    *,
    max_pages: int | None = None,
    retire_source: bool = False,
    progress: Progress | None = None,
) -> Outcome:
    """Every stage in order; an exact rerun returns the same receipt and changes nothing."""
    done = _retired(job)
    if done is not None:
        return done
    # The seal's hash runs beside the work until the fingerprint is needed: a new
    # destination's single pass reads every row first (:mod:`.fresh`).
    with gate.sealed_source(job, background=True) as (kind, held):
        pre: Preflight | None = None
        fresh_dir = fresh.destination(job, kind, max_pages, held)
        if fresh_dir is not None:
            # A new or empty destination: built aside in one pass, published by a rename.
            pre, built = fresh.run_fresh(
                job, kind, held, fresh_dir, _preflight(job, progress), progress
            )
            if built is not None:
                return _finish_single(job, pre, built, retire_source)
        elif (existing_dir := existing.destination(job, kind, max_pages)) is not None:
            # A BBG database holding history: one pass writes segments aside, published
            # in place with one activation (else the staged path, with that preflight).
            pre, built = existing.run_existing(
                job, kind, held, existing_dir, _preflight(job, progress), progress
            )
            if built is not None:
                return _finish_single(job, pre, built, retire_source)
        if pre is None:
            pre = preflight(job, kind, held.fingerprint, _preflight(job, progress))
        gate.locate(job)
        return _run_staged(job, pre, held, max_pages, retire_source, progress)


def _finish_single(job: Job, pre: Preflight | None, receipt: dict[str, Any],
                   retire_source: bool) -> Outcome:  # fmt: skip
    """The outcome of a single-pass ``run`` (its receipt), the source retired when asked."""
    assert pre is not None
    if retire_source:
        with _store(job) as store:
            mapping = job.mapping.to_json() if job.mapping is not None else None
            if retire.retire_import(store, job.source, receipt, mapping, asked=True):
                return Outcome("retired", pre.import_id, receipt)
    return Outcome("complete", pre.import_id, receipt)


def _run_staged(
    job: Job,
    pre: Preflight,
    held: Seal,
    max_pages: int | None,
    retire_source: bool,
    progress: Progress | None,
) -> Outcome:
    """``run`` into a store through inert staging (the destination holds a store already)."""
    with _store(job) as store:
        already = stages.seal_stage(store, job, pre) == "active"
        if not already:
            with _open_source(job, pre) as src:
                res = stages.stage_stage(
                    store, job, pre, src, max_pages=max_pages,
                    progress=phase(progress, "stage", pre.rows),
                )  # fmt: skip
            if not res.complete:
                return Outcome(
                    "staging",
                    pre.import_id,
                    detail={"pages": res.pages, "rows_staged": res.rows, "rows_total": pre.rows},
                )
            stages.validate_stage(store, job, pre, held, phase(progress, "validate", pre.rows))
        receipt = stages.activate_stage(store, job, pre, held,
                                        phase(progress, "activate", pre.rows))  # fmt: skip
        mapping = job.mapping.to_json() if job.mapping is not None else None
        if retire.retire_import(store, job.source, receipt, mapping, asked=retire_source):
            return Outcome("retired", pre.import_id, receipt)
    return Outcome("complete", pre.import_id, receipt, already=already)


def seal_only(job: Job, progress: Progress | None = None) -> Outcome:
    """Seal: lock and fingerprint the source, record the seal, pin the namespaces."""
    with _sealed(job, progress) as (_, pre), _store(job) as store:
        state = stages.seal_stage(store, job, pre)
    return Outcome("complete" if state == "active" else "sealed", pre.import_id,
                   detail={"fingerprint": pre.fingerprint})  # fmt: skip


def stage(job: Job, *, max_pages: int | None = None, progress: Progress | None = None) -> Outcome:
    """Stage at most ``max_pages`` bounded pages (all when None); call again to continue."""
    with _sealed(job, progress) as (_, pre), _store(job) as store:
        if stages.seal_stage(store, job, pre) == "active":
            return Outcome("complete", pre.import_id)
        with _open_source(job, pre) as src:
            res = stages.stage_stage(store, job, pre, src, max_pages=max_pages,
                                     progress=phase(progress, "stage", pre.rows))  # fmt: skip
    return Outcome(
        "staged" if res.complete else "staging",
        pre.import_id,
        detail={"pages": res.pages, "rows_staged": res.rows, "rows_total": pre.rows},
    )


def validate(job: Job, progress: Progress | None = None) -> Outcome:
    """Validate the staged import against the source and the destination."""
    with _sealed(job, progress) as (held, pre), _store(job) as store:
        detail = stages.validate_stage(store, job, pre, held,
                                       phase(progress, "validate", pre.rows))  # fmt: skip
    return Outcome("validated", pre.import_id, detail=detail)


def activate(job: Job, progress: Progress | None = None) -> Outcome:
    """Activate a validated import in one transaction; returns the receipt."""
    with _sealed(job, progress) as (held, pre), _store(job) as store:
        receipt = stages.activate_stage(store, job, pre, held,
                                        phase(progress, "activate", pre.rows))  # fmt: skip
    return Outcome("complete", pre.import_id, receipt)


def discard(store_dir: Path | None, import_id: str) -> Outcome:
    """Give up an import in progress: drop its staged rows and release its namespaces, so a
    source that changed since it was sealed can be migrated afresh (idempotent)."""
    with (
        open_store(store_dir) as store,
        run_lock(store.directory),
        store.transaction(import_id=import_id) as tx,
    ):
        state = imports.import_state(tx, import_id)
        if state is None:
            raise StoreRefused(
                f"{store.directory}: no import {import_id} in this store; "
                f"`bbg-migrate --store {store.directory} imports` lists them",
                path=str(store.directory),
                import_id=import_id,
            )
        if state == "active":
            raise Conflict(
                f"{store.directory}: import {import_id} is active (published): it cannot be "
                "discarded (only an import in progress can); nothing was changed. "
                f"`bbg-migrate --store {store.directory} imports` lists the imports and "
                "their states",
                path=str(store.directory),
                import_id=import_id,
                state=state,
            )
        if state == "staging":
            imports.discard(tx, import_id)
            imports.journal(tx, import_id, "discarded", {})
    return Outcome("discarded", import_id)


def plan(job: Job, progress: Progress | None = None) -> dict[str, Any]:
    """The dry run of ``run``: what it would do, through the same checks; writes nothing."""
    done = _retired(job)
    if done is not None:
        return {
            "import_id": done.import_id,
            "action": "none (source already retired)",
            "receipt": done.receipt,
        }
    with gated(job, _preflight(job, progress), dry=True) as g:
        pre = g.pre
        admission = admit(g.db, g.directory, job, pre)
        prepared = None
        if job.mapping is not None:  # admit refused a subject that is not activated
            bound = subject.binding(g.db, g.directory, job.mapping)
            staged = subject.transfer(job.mapping, pre.nonce, pre.namespaces,
                                      pre.report["tables"])  # fmt: skip
            prepared = subject.prepared(g.directory, job.mapping, bound, pre.namespaces, staged)
        marker, reached = generations.read_status(g.db) if g.db is not None else (None, "original")
    dest: dict[str, Any] = {
        "path": str(g.directory),
        "exists": g.db is not None,
        "state": admission.state,
        # Conflicts stop ``plan`` as they stop ``run`` (exit 4): a report lists none.
        "conflicts": [],
        "status": marker,
        "generation": reached,
    }
    mapping = job.mapping
    already = admission.state == "active"
    doc: dict[str, Any] = {
        "import_id": pre.import_id,
        "nonce": pre.nonce,
        "source": pre.fingerprint,
        # ``plan`` takes the source's lock as ``run`` does: held elsewhere, it exits 11.
        "source_locked": False,
        "destination": dest,
        "action": admission.action,
        "namespaces": pre.namespaces,
        "tables": pre.report["tables"],
        "rows": pre.rows,
        "key_value_bytes": pre.nbytes,
        "pages": -(-pre.rows // job.bounds.page_rows) if pre.rows else 0,
        "archive_digest_sha256": pre.report["archive_digest_sha256"],
        **({"legacy": pre.report["legacy"]} if pre.legacy is not None else {}),
        **({"content_check": job.content_check} if pre.legacy is None else {}),
        "mapping": mapping.to_json() if mapping is not None else None,
        # A mapped run sets no neuron fence (neuron's import does); it pins the origins by
        # bbg's transfer keys and promotes the store to neuron-v1, as bbg's prepare_target.
        "fences": [],
        "generation_after": (
            generations.at_least(dest["generation"] or "original", "neuron-v1")
            if prepared is not None and not already
            else dest["generation"] or "original"
        ),
        **({"neuron_import": prepared} if prepared is not None else {}),
        # Staged copy + published copy + SQLite's per-row overhead, and the WAL of one page.
        "disk_bytes_needed": 0
        if already
        else 2 * (pre.nbytes + _ROW_OVERHEAD * pre.rows) + job.bounds.page_bytes,
    }
    return doc
