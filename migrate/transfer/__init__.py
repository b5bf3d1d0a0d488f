"""BBG → BBG sealed transfer (cyberia-to/bbg ``specs/application-transfer.md``).

``transfer SOURCE_STORE --store TARGET`` = read → seal → prepare → stage → validate →
activate; the step verbs (``seal``, ``stage``, ``validate``, ``activate``) go one stage at a
time and ``plan`` runs the same checks without writing.  Every call re-reads the source in
one snapshot (shape, content ids and links of every row), re-derives the same seal and
manifest, and continues where the journal says; a call stopped anywhere (even by kill -9)
is finished by the next one, forward, with the same manifest.

* :mod:`.source` — the transfer reader and the seal (the only write to the source);
* :mod:`.target` — reserve, stage, validate, activate, the receipt;
* :mod:`.cursor` — bbg's copy cursor;
* :mod:`.report` — what ``inspect`` and ``doctor`` say about sealed sources and transfers
  in progress.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import schemas
from bbg_core.errors import CommitUnknown, MigrateError, UsageError
from fences import generations
from migrate.job import MAX_PAGE_ROWS, Bounds, Job
from migrate.pipeline.preflight import Preflight
from migrate.rules.transfer_form import Cursor
from migrate.store import imports, open_store
from migrate.store.engine import FJALL, engine_of, has_store_id, records_dir
from migrate.store.layout import resolve_store_dir, store_id_of
from migrate.store.store import Store
from migrate.transfer import target as tgt
from migrate.transfer.source import ExportSeal, SourceState, SourceStore, check_same_seal

__all__ = [
    "TransferJob", "TransferOutcome", "activate", "job_for", "plan", "run", "seal", "stage",
    "validate",
]  # fmt: skip

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class TransferJob:
    """What the operator asked for: a source store, a target store, an optional nonce."""

    source: Path
    store: Path | None
    nonce: str | None = None  # 64 hex digits; default: derived from the source store
    page_rows: int = MAX_PAGE_ROWS
    #: How the source's content rows are checked before sealing: ``codec`` (cybergraph's
    #: codec-checked content, the default) or ``none`` (content is bytes: bbg's transfer
    #: with an accepting ``validate_content``, as its own tests run it).
    content_check: str = "codec"

    def nonce_bytes(self, state: SourceState) -> bytes:
        if self.nonce is None:
            return tgt.default_nonce(state.store_id)
        try:
            raw = bytes.fromhex(self.nonce)
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise UsageError(
                f"--nonce must be 64 hex digits (a 32-byte transfer nonce), not {self.nonce!r}",
                nonce=self.nonce,
            )
        return raw


def job_for(
    source: Path, store: Path | None, nonce: str | None, page_rows: int,
    legacy_given: Sequence[str] = (),
) -> TransferJob | None:  # fmt: skip
    """The transfer job when ``source`` is a BBG store, else None: the one place that decides
    whether ``run``, ``plan`` and the step verbs mean a migration or a BBG → BBG transfer.

    ``legacy_given`` names, in the caller's words, the options given that apply to a legacy
    source only; a store source with any of them is a UsageError naming them.
    """
    from migrate.probe.detect import is_store

    if not is_store(source):
        return None
    if legacy_given:
        raise UsageError(
            f"{source} is a BBG store (a transfer source): {', '.join(legacy_given)} apply to "
            "legacy sources only",
            path=str(source),
        )
    return TransferJob(source=source, store=store, nonce=nonce, page_rows=page_rows)


@dataclass
class TransferOutcome:
    """What a transfer call achieved: a receipt when activated, else how far it got."""

    status: str  # "sealed", "staging", "staged", "validated", "complete"
    manifest: str
    receipt: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None

    @property
    def import_id(self) -> str:
        return self.manifest

    def to_json(self) -> dict[str, Any]:
        """The report of a call that did not end in a receipt (``transfer-report``)."""
        doc: dict[str, Any] = {"status": self.status, "manifest": self.manifest}
        doc.update(self.detail or {})
        schemas.validate(doc, "transfer-report")
        return doc


@dataclass
class _Session:
    source: SourceStore
    state: SourceState
    target: Store
    seal: ExportSeal
    pre: Preflight
    job: Job

    def detail(self, **extra: Any) -> dict[str, Any]:
        cursor = tgt.cursor_of(self.target, self.pre.import_id) or Cursor()
        return {
            "target": self.seal.target.hex(),
            "nonce": self.seal.nonce.hex(),
            "rows_total": self.state.rows,
            "progress": cursor.to_json(),
            **extra,
        }


def _target_dir(job: TransferJob) -> Path:
    directory = resolve_store_dir(job.store, create=True)
    if directory.resolve() == Path(job.source).resolve():
        raise UsageError(
            f"{directory}: the target is the source store; name another --store",
            path=str(directory),
        )
    return directory


def _seal_into(
    job: TransferJob, source: SourceStore, state: SourceState
) -> tuple[Store, ExportSeal]:
    """Open (or create) the target and seal the source for it.

    A target this call created is removed again when the seal is refused, so a refused
    transfer leaves no empty store behind; once the seal may have landed, it stays.
    """
    directory = _target_dir(job)
    fresh = not directory.exists()
    target = open_store(directory, create=True)
    try:
        info = target.info()
        if info["store_id"] == state.store_id:
            raise UsageError(
                f"{directory}: the target is the source store (same store id); name another "
                "--store",
                path=str(directory),
            )
        detail = {"target_store": {"store_id": info["store_id"], "path": str(directory.resolve())}}
        target_id, nonce = tgt.target_id(str(info["store_id"])), job.nonce_bytes(state)
        if state.seal is None:
            # Sealing is for good: refuse a transfer that could not reserve its namespaces
            # before the source is sealed (prepare checks again, atomically).
            tgt.refuse_collisions(
                target, _would_be_manifest(state, target_id, nonce).hex(), target_id, state
            )
        sealed = source.seal(state, target_id, nonce, detail)
    except MigrateError as exc:
        untouched = not isinstance(exc, CommitUnknown) and target.info()["last_transaction"] == 1
        target.close()
        if fresh and untouched:
            shutil.rmtree(directory, ignore_errors=True)
            if target.engine == FJALL:
                shutil.rmtree(records_dir(directory), ignore_errors=True)
        raise
    except BaseException:
        target.close()
        raise
    return target, sealed


@contextmanager
def _session(
    job: TransferJob, progress: Progress | None, *, reserve: bool = True
) -> Iterator[_Session]:
    with _records_of_a_refused_source(Path(job.source)), \
            SourceStore(Path(job.source), job.content_check) as source:  # fmt: skip
        state = source.read(progress)
        target, sealed = _seal_into(job, source, state)
        try:
            if reserve:
                tgt.prepare(target, state, sealed)
            yield _Session(
                source=source,
                state=state,
                target=target,
                seal=sealed,
                pre=tgt.preflight(state, sealed),
                job=Job(
                    source=Path(job.source),
                    store=target.directory,
                    bounds=Bounds(page_rows=job.page_rows),
                ),
            )
        finally:
            target.close()


@contextmanager
def _records_of_a_refused_source(source: Path) -> Iterator[None]:
    """A Fjall source without the toolkit's records (a store the cyber code wrote) gets them
    when the transfer opens it; when the transfer is refused before the seal landed, they are
    removed again, so a refused transfer leaves such a source exactly as it found it.  Once
    the keyspace holds a seal they stay (they name the store id the default nonce is bound
    to)."""
    fresh = engine_of(source) == FJALL and not records_dir(source).exists()
    try:
        yield
    except BaseException:
        if fresh and records_dir(source).exists() and not _sealed_keyspace(source):
            shutil.rmtree(records_dir(source), ignore_errors=True)
        raise


def _sealed_keyspace(source: Path) -> bool:
    from migrate.store import bbgdb, export
    from migrate.store.fjall import open_keyspace

    ks = open_keyspace(source)
    try:
        return ks.get(bbgdb.MIGRATION, export.SEAL_KEY) is not None
    finally:
        ks.close()


def _stage(s: _Session, max_pages: int | None, progress: Progress | None) -> bool:
    from migrate.pipeline import stages

    res = stages.stage_stage(
        s.target, s.job, s.pre, s.source, max_pages=max_pages, progress=progress
    )
    return res.complete


def run(
    job: TransferJob, *, max_pages: int | None = None, progress: Progress | None = None
) -> TransferOutcome:
    """The whole transfer; an exact rerun returns the same receipt and changes nothing."""
    with _session(job, progress) as s:
        manifest = s.seal.manifest.hex()
        if imports.import_state(s.target, manifest) != "active":
            if not _stage(s, max_pages, progress):
                return TransferOutcome("staging", manifest, detail=s.detail())
            tgt.validate(s.target, s.job, s.pre)
        receipt = tgt.activate(s.target, s.source, s.state, s.seal)
    return TransferOutcome("complete", manifest, receipt)


def seal(job: TransferJob, progress: Progress | None = None) -> TransferOutcome:
    """Seal the source for the target and reserve its namespaces in the target."""
    with _session(job, progress) as s:
        manifest = s.seal.manifest.hex()
        done = imports.import_state(s.target, manifest) == "active"
        return TransferOutcome("complete" if done else "sealed", manifest, detail=s.detail())


def stage(
    job: TransferJob, *, max_pages: int | None = None, progress: Progress | None = None
) -> TransferOutcome:
    """Copy at most ``max_pages`` bounded pages (all when None); call again to continue."""
    with _session(job, progress) as s:
        manifest = s.seal.manifest.hex()
        if imports.import_state(s.target, manifest) == "active":
            return TransferOutcome("complete", manifest, detail=s.detail())
        complete = _stage(s, max_pages, progress)
        return TransferOutcome("staged" if complete else "staging", manifest, detail=s.detail())


def validate(job: TransferJob, progress: Progress | None = None) -> TransferOutcome:
    """Validate the staged rows against the sealed source and the target."""
    with _session(job, progress) as s:
        manifest = s.seal.manifest.hex()
        if imports.import_state(s.target, manifest) == "active":
            return TransferOutcome("complete", manifest, detail=s.detail())
        result = tgt.validate(s.target, s.job, s.pre)
        return TransferOutcome(
            "validated",
            manifest,
            detail=s.detail(archive_digest_sha256=result["archive_digest_sha256"]),
        )


def activate(job: TransferJob, progress: Progress | None = None) -> TransferOutcome:
    """Activate a validated transfer in one transaction; returns the receipt."""
    with _session(job, progress) as s:
        receipt = tgt.activate(s.target, s.source, s.state, s.seal)
        return TransferOutcome("complete", s.seal.manifest.hex(), receipt)


def is_sealed(source: Path) -> bool:
    """True if the BBG store at ``source`` already carries a transfer seal, so a transfer of
    it seals nothing new (the CLI asks before the first seal only); reads only."""
    from migrate.store.readonly import open_readonly
    from migrate.transfer.source import export_seal

    with open_readonly(Path(source)) as conn:
        return export_seal(conn) is not None


def plan(job: TransferJob, progress: Progress | None = None) -> dict[str, Any]:
    """The dry run of ``transfer``: the same reads and checks, and nothing written.

    Refusals ``transfer`` would give before copying (a source that cannot be a transfer
    source, a seal for another target or nonce, a target that refuses writes, a namespace
    that collides in the target) are raised with the same error.
    """
    from migrate.store.readonly import open_readonly
    from migrate.transfer.source import read_state

    with open_readonly(Path(job.source)) as conn:
        state = read_state(conn, Path(job.source), progress, job.content_check)
    state.check()
    # A Fjall source the cyber code wrote has no records, so no store id yet: the seal makes
    # one (at random), and the default nonce derives from it.  The plan does not invent one.
    unknown = job.nonce is None and state.seal is None and not has_store_id(Path(job.source))
    nonce = None if unknown else job.nonce_bytes(state)
    directory = _target_dir(job)
    exists = engine_of(directory) is not None
    target_doc: dict[str, Any] = {"path": str(directory), "exists": exists}
    action = "transfer"
    cursor: Cursor | None = None
    if target_doc["exists"]:
        with open_readonly(directory) as db:
            generations.require_readable(db)
            store_id = store_id_of(db)
            if store_id == state.store_id:
                raise UsageError(
                    f"{directory}: the target is the source store", path=str(directory)
                )
            target = tgt.target_id(store_id)
            # No seal and no import of it can exist yet when the nonce is unknown.
            iid = "(its id is made when the source is sealed)"
            if nonce is not None:
                check_same_seal(state.seal, target, nonce, state.path)
                manifest = (
                    state.seal.manifest
                    if state.seal is not None
                    else _would_be_manifest(state, target, nonce)
                )
                iid = manifest.hex()
                cursor = tgt.cursor_of(db, iid)
            if cursor is None:
                tgt.refuse_collisions(db, iid, target, state)
            elif imports.import_state(db, iid) == "active":
                action = "none (already activated; transfer returns the same receipt)"
            else:
                action = "resume"
            marker, _ = generations.read_status(db)
            target_doc.update(store_id=store_id, target=target.hex(), status=marker)
    elif state.seal is not None:
        # The source is sealed for an existing target: a new store cannot be it.
        from bbg_core.errors import Conflict

        raise Conflict(
            f"{state.path}: the source is already sealed for target {state.seal.target.hex()} "
            f"(manifest {state.seal.manifest.hex()}); {directory} does not exist yet, so it "
            "cannot be that target",
            manifest=state.seal.manifest.hex(),
        )
    doc: dict[str, Any] = {
        "kind": "transfer-plan",
        "action": action,
        "source": {
            "path": str(job.source),
            "store_id": None if unknown else state.store_id,
            "status": state.marker,
            "sealed": state.seal is not None,
            "seal": None if state.seal is None else state.seal.to_json(),
            "last_transaction": state.last_transaction,
        },
        "target": target_doc,
        "nonce": None if nonce is None else nonce.hex(),
        "namespaces": [
            {"namespace": ns.hex(), "index": h.index, "commit": h.commit.hex()}
            for ns, h in state.sources
        ],
        "tables": {name: t["rows"] for name, t in sorted(state.report["tables"].items())},
        "rows": state.rows,
        "key_value_bytes": state.nbytes,
        "archive_digest_sha256": state.report["archive_digest_sha256"],
        "progress": None if cursor is None else cursor.to_json(),
        "generation_after": "neuron-v1",
    }
    if state.seal is None and state.prior_warning is not None:
        doc["source"]["prior_warning"] = state.prior_warning
    schemas.validate(doc, "transfer-plan")
    return doc


def _would_be_manifest(state: SourceState, target: bytes, nonce: bytes) -> bytes:
    from migrate.rules.transfer_form import manifest_of

    return manifest_of(target, nonce, state.prior, state.sources)
