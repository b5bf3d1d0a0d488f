"""Every verb of bbg-migrate as a plain function; the CLI is a thin layer over these.

| verb | what |
|---|---|
| :func:`detect` | kind of a path by content, redb header facts, lock state |
| :func:`inspect` | read-only report of a cell.redb, BBG store, Signal log or TextArchive |
| :func:`plan` | the dry run of ``run``: same checks, writes nothing |
| :func:`run` | seal, stage, validate, activate (and optionally retire the source) |
| :func:`seal`, :func:`stage`, :func:`validate`, :func:`activate` | the stages one at a time |
| :func:`discard` | give up an import in progress (e.g. its source changed since the seal) |
| :func:`retirement_preview`, :func:`retirement_lines` | what ``--retire-source`` will move |
| :func:`list_imports`, :func:`imports_summary` | every import of a store: state, stage, rows |
| :func:`fixtures_check` | replay legacy fixtures against golden results |
| :func:`redb_tables`, :func:`redb_dump`, :func:`redb_scan` | a redb file: tables, dump, scan |
| :func:`fjall_dump`, :func:`fjall_info`, :func:`fjall_check` | a Fjall keyspace: dump/info/check |
| :func:`fjall_open`, :func:`fjall_build`, :func:`fjall_publish`, :func:`fjall_append` | r/w |
| :func:`fjall_writer`, :func:`fjall_flush` | a Fjall writer session; journals into segments |
| :func:`make_job` | the job of the inputs as an operator types them (see below) |
| :func:`transfer_job` | the :class:`TransferJob` of a BBG store (UsageError otherwise) |
| :func:`write_receipt` | a receipt to a file: atomic, never over a different receipt |
| :func:`progress_phase` | the ``(rows, bytes)`` callback of one stage, for an observer |
| :func:`schema_titles`, :func:`schema_text` | the shipped JSON Schemas |
| :func:`versions`, :func:`version_text` | this build's version and each hot path's backend |
| :func:`hemera_file`, :func:`hemera_leaf`, :func:`hemera_node` | hemera, tree leaf, tree node |
| :func:`hemera_files` | hemera of several files at once (every core), in input order |
| :func:`nox_data_id` | the content id of a nox Data payload (Model B or tagged-v0) |
| :func:`tail`, :func:`follow`, :func:`follow_into` | event/1 history out, in ledger order |
| :func:`upgrade` | schema version 1 → 2 (the transaction ledger), in place, once |
| :func:`nohistory`, :func:`excise` | retention with redaction (sealed; plan with dry_run) |
| :func:`mcp_serve` | the read-only MCP server on stdio (``write``: also its mutating tool) |
| :func:`apply` (into a store path), :func:`apply_stream` (into an open store) | event/1 in |
| :func:`write_snapshot`, :func:`restore` | exact retained state out and in |
| :func:`backup`, :func:`doctor` | online backup; read-only health report |
| :func:`resolve_store_dir`, :func:`event_line` | the store a command means; one event as a line |
| :func:`demo` | migrate the bundled demo store into a temporary one and check it |
| :func:`transfer` | BBG → BBG sealed transfer (seal the source, copy, validate, activate) |
| :func:`transfer_plan`, ``transfer_seal/stage/validate/activate`` | its dry run and stages |
| :func:`is_store` | whether a path is a BBG store (the step verbs then mean a transfer) |
| :func:`is_transfer` | whether a job is a :class:`TransferJob` (without importing the transfer) |
| :func:`fleet_load`, :func:`fleet_plan`, :func:`fleet_run`, :func:`fleet_report` | fleets |

Pipeline verbs take a :class:`Job` (source, store, mapping, nonce, :class:`Bounds`);
transfer verbs a :class:`TransferJob` (source store, target store, nonce, page rows) and a
``(rows, bytes)`` callback as ``progress``.  Whether ``run``, ``plan`` and the four steps mean
a migration or a transfer is decided here, once: each takes either job, and a :class:`Job`
whose source is a BBG store runs as that store's transfer (:func:`make_job` returns the
:class:`TransferJob` already, naming the legacy-only options an operator gave).

Names defined elsewhere are listed once, in :data:`_EXPORTS`, and imported on first use
(``bbg-migrate detect`` and ``--version`` do not pay for the pipeline, the fleet, SQLite or
jsonschema).  ``__all__`` is derived from that table and the functions below; the
``if TYPE_CHECKING:`` block says the same for type checkers and editors, and
tests/test_api.py checks it against the table (its failure message is the block to paste).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from bbg_core.lazy import lazy_names

# name -> (module, attribute): every name this module offers but does not define.
_EXPORTS: dict[str, tuple[str, str]] = {
    # what the verbs take and give
    "Bounds": ("migrate.job", "Bounds"),
    "Job": ("migrate.job", "Job"),
    "Observer": ("migrate.progress", "Observer"),
    "Outcome": ("migrate.pipeline", "Outcome"),
    "TransferJob": ("migrate.transfer", "TransferJob"),
    "TransferOutcome": ("migrate.transfer", "TransferOutcome"),
    "progress_phase": ("migrate.progress", "phase"),
    # read-only verbs
    "detect": ("migrate.probe.detect", "detect"),
    "is_store": ("migrate.probe.detect", "is_store"),
    "versions": ("migrate.probe.versions", "versions"),
    "version_text": ("migrate.probe.versions", "version_text"),
    "hemera_file": ("migrate.probe.hashes", "file_digest"),
    "hemera_files": ("migrate.probe.hashes", "file_digests"),
    "hemera_leaf": ("migrate.probe.hashes", "tree_leaf"),
    "hemera_node": ("migrate.probe.hashes", "tree_node"),
    "nox_data_id": ("migrate.probe.hashes", "data_id"),
    "redb_dump": ("importers.redb.report", "dump"),
    "redb_tables": ("importers.redb.report", "tables_doc"),
    "fjall_append": ("migrate.store.fjall.session", "append_batch"),
    "fjall_build": ("migrate.store.fjall.writer", "build_keyspace"),
    "fjall_dump": ("migrate.store.fjall.report", "dump_path"),
    "fjall_open": ("migrate.store.fjall.reader", "open_keyspace"),
    "fjall_publish": ("migrate.store.fjall.session", "publish_segments"),
    "fjall_flush": ("migrate.store.fjall.session", "flush_keyspace"),
    "fjall_writer": ("migrate.store.fjall.session", "open_writer"),
    # the migration, its stores and imports
    "discard": ("migrate.pipeline", "discard"),
    "list_imports": ("migrate.pipeline.listing", "list_imports"),
    "imports_summary": ("migrate.pipeline.listing", "summary"),
    "retirement_preview": ("migrate.pipeline.retire", "preview"),
    "retirement_lines": ("migrate.pipeline.retire", "preview_lines"),
    "resolve_store_dir": ("migrate.store.layout", "resolve_store_dir"),
    "check_engine": ("migrate.store.engine", "check_engine"),
    "upgrade": ("migrate.store.store", "upgrade_store"),
    "demo": ("migrate.demo", "run_demo"),
    "fixtures_check": ("migrate.fixtures.check", "check"),
    # the BBG -> BBG transfer, verb by verb (``progress``: a (rows, bytes) callback)
    "transfer": ("migrate.transfer", "run"),
    "transfer_plan": ("migrate.transfer", "plan"),
    "transfer_seal": ("migrate.transfer", "seal"),
    "transfer_sealed": ("migrate.transfer", "is_sealed"),
    "transfer_stage": ("migrate.transfer", "stage"),
    "transfer_validate": ("migrate.transfer", "validate"),
    "transfer_activate": ("migrate.transfer", "activate"),
    # sharing: event/1, snapshots, backup, health, retention, MCP
    "MAX_LINE": ("migrate.share.common", "MAX_LINE"),
    "event_line": ("migrate.share.common", "canonical"),
    "tail": ("migrate.share", "tail"),
    "follow": ("migrate.share", "follow"),
    "follow_into": ("migrate.share.follow", "follow_into"),
    "verifiable_lines": ("migrate.share.verified", "framed"),
    "apply": ("migrate.share", "apply"),
    "apply_stream": ("migrate.share", "apply_stream"),
    "write_snapshot": ("migrate.share", "write_snapshot"),
    "restore": ("migrate.share", "restore"),
    "backup": ("migrate.share", "backup"),
    "doctor": ("migrate.share", "doctor"),
    "nohistory": ("migrate.share.retention", "nohistory"),
    "excise": ("migrate.share.retention", "excise"),
    "mcp_serve": ("migrate.share.mcp_server", "serve"),
    # fleets
    "fleet_load": ("migrate.fleet", "load_manifest"),
    "fleet_select": ("migrate.fleet", "jobs_of"),
    "fleet_shard": ("migrate.fleet", "parse_shard"),
    "fleet_plan": ("migrate.fleet", "plan_fleet"),
    "fleet_run": ("migrate.fleet", "run_fleet"),
    "fleet_report": ("migrate.fleet", "merge"),
    "fleet_report_dir": ("migrate.fleet", "ensure_report_dir"),
    "fleet_html": ("migrate.fleet", "write_html"),
    "fleet_default_workers": ("migrate.fleet", "default_workers"),
    "fleet_torn_tail": ("migrate.fleet.run", "torn_tail"),
    "fleet_seals": ("migrate.fleet", "sealing_jobs"),
}

__getattr__ = lazy_names(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and editors (checked against _EXPORTS)
    import importers.redb.report as _importers_redb_report
    import migrate.demo as _migrate_demo
    import migrate.fixtures.check as _migrate_fixtures_check
    import migrate.fleet as _migrate_fleet
    import migrate.fleet.run as _migrate_fleet_run
    import migrate.job as _migrate_job
    import migrate.pipeline as _migrate_pipeline
    import migrate.pipeline.listing as _migrate_pipeline_listing
    import migrate.pipeline.retire as _migrate_pipeline_retire
    import migrate.probe.detect as _migrate_probe_detect
    import migrate.probe.hashes as _migrate_probe_hashes
    import migrate.probe.versions as _migrate_probe_versions
    import migrate.progress as _migrate_progress
    import migrate.share as _migrate_share
    import migrate.share.common as _migrate_share_common
    import migrate.share.follow as _migrate_share_follow
    import migrate.share.mcp_server as _migrate_share_mcp_server
    import migrate.share.retention as _migrate_share_retention
    import migrate.share.verified as _migrate_share_verified
    import migrate.store.engine as _migrate_store_engine
    import migrate.store.fjall.reader as _migrate_store_fjall_reader
    import migrate.store.fjall.report as _migrate_store_fjall_report
    import migrate.store.fjall.session as _migrate_store_fjall_session
    import migrate.store.fjall.writer as _migrate_store_fjall_writer
    import migrate.store.layout as _migrate_store_layout
    import migrate.store.store as _migrate_store_store
    import migrate.transfer as _migrate_transfer
    Bounds = _migrate_job.Bounds
    Job = _migrate_job.Job
    Observer = _migrate_progress.Observer
    Outcome = _migrate_pipeline.Outcome
    TransferJob = _migrate_transfer.TransferJob
    TransferOutcome = _migrate_transfer.TransferOutcome
    progress_phase = _migrate_progress.phase
    detect = _migrate_probe_detect.detect
    is_store = _migrate_probe_detect.is_store
    versions = _migrate_probe_versions.versions
    version_text = _migrate_probe_versions.version_text
    hemera_file = _migrate_probe_hashes.file_digest
    hemera_files = _migrate_probe_hashes.file_digests
    hemera_leaf = _migrate_probe_hashes.tree_leaf
    hemera_node = _migrate_probe_hashes.tree_node
    nox_data_id = _migrate_probe_hashes.data_id
    redb_dump = _importers_redb_report.dump
    redb_tables = _importers_redb_report.tables_doc
    fjall_append = _migrate_store_fjall_session.append_batch
    fjall_build = _migrate_store_fjall_writer.build_keyspace
    fjall_dump = _migrate_store_fjall_report.dump_path
    fjall_open = _migrate_store_fjall_reader.open_keyspace
    fjall_publish = _migrate_store_fjall_session.publish_segments
    fjall_flush = _migrate_store_fjall_session.flush_keyspace
    fjall_writer = _migrate_store_fjall_session.open_writer
    discard = _migrate_pipeline.discard
    list_imports = _migrate_pipeline_listing.list_imports
    imports_summary = _migrate_pipeline_listing.summary
    retirement_preview = _migrate_pipeline_retire.preview
    retirement_lines = _migrate_pipeline_retire.preview_lines
    resolve_store_dir = _migrate_store_layout.resolve_store_dir
    check_engine = _migrate_store_engine.check_engine
    upgrade = _migrate_store_store.upgrade_store
    demo = _migrate_demo.run_demo
    fixtures_check = _migrate_fixtures_check.check
    transfer = _migrate_transfer.run
    transfer_plan = _migrate_transfer.plan
    transfer_seal = _migrate_transfer.seal
    transfer_sealed = _migrate_transfer.is_sealed
    transfer_stage = _migrate_transfer.stage
    transfer_validate = _migrate_transfer.validate
    transfer_activate = _migrate_transfer.activate
    MAX_LINE = _migrate_share_common.MAX_LINE
    event_line = _migrate_share_common.canonical
    tail = _migrate_share.tail
    follow = _migrate_share.follow
    follow_into = _migrate_share_follow.follow_into
    verifiable_lines = _migrate_share_verified.framed
    apply = _migrate_share.apply
    apply_stream = _migrate_share.apply_stream
    write_snapshot = _migrate_share.write_snapshot
    restore = _migrate_share.restore
    backup = _migrate_share.backup
    doctor = _migrate_share.doctor
    nohistory = _migrate_share_retention.nohistory
    excise = _migrate_share_retention.excise
    mcp_serve = _migrate_share_mcp_server.serve
    fleet_load = _migrate_fleet.load_manifest
    fleet_select = _migrate_fleet.jobs_of
    fleet_shard = _migrate_fleet.parse_shard
    fleet_plan = _migrate_fleet.plan_fleet
    fleet_run = _migrate_fleet.run_fleet
    fleet_report = _migrate_fleet.merge
    fleet_report_dir = _migrate_fleet.ensure_report_dir
    fleet_html = _migrate_fleet.write_html
    fleet_default_workers = _migrate_fleet.default_workers
    fleet_torn_tail = _migrate_fleet_run.torn_tail
    fleet_seals = _migrate_fleet.sealing_jobs


def inspect(
    path: str | os.PathLike[str], *, kind: str | None = None,
    progress: Observer | None = None, content_check: str = "codec",
) -> dict[str, Any]:  # fmt: skip
    """Read-only report of ``path`` (:func:`migrate.probe.inspect.inspect_path`), with the
    transfer's section for a BBG store; ``progress`` an observer (stage ``inspect``, rows of a
    cell.redb out of its table lengths)."""
    from bbg_core.lazy import LazyMapping
    from migrate.probe.inspect import inspect_path
    from migrate.progress import phase, source_rows

    rows = source_rows(path) if progress is not None else None
    # the transfer's modules load only for a BBG store, whose report reads them
    sections = LazyMapping("migrate.transfer.report", "STORE_SECTIONS")
    return inspect_path(path, kind=kind, content_check=content_check,
                        progress=phase(progress, "inspect", rows),
                        sections=sections)  # fmt: skip


def redb_scan(
    path: str | os.PathLike[str], *, progress: Observer | None = None
) -> dict[str, Any]:
    """Full scan of a redb file (:func:`importers.redb.scan.scan`); ``progress`` an observer
    (stage ``redb scan``, entries read out of the tables' lengths)."""
    from importers.redb.scan import scan
    from migrate.progress import phase, source_rows

    total = source_rows(path) if progress is not None else None
    return scan(path, progress=phase(progress, "redb scan", total, unit="entries"))


def fjall_info(
    path: str | os.PathLike[str], *, progress: Observer | None = None
) -> dict[str, Any]:
    """The ``info`` document of a Fjall keyspace (:func:`migrate.store.fjall.report.info`):
    journals, segments per level, live rows, bytes, seqnos; ``progress`` an observer (stage
    ``fjall info``, rows read)."""
    from migrate.progress import phase
    from migrate.store.fjall.report import info_path

    return info_path(path, phase(progress, "fjall info", None))


def fjall_check(
    path: str | os.PathLike[str], *, progress: Observer | None = None
) -> dict[str, Any]:
    """The ``check`` document of a Fjall keyspace (:func:`migrate.store.fjall.report.check`):
    every checksum and rule, the problems found (``ok`` false when there is one);
    ``progress`` an observer (stage ``fjall check``, items read)."""
    from migrate.progress import phase
    from migrate.store.fjall.report import check_path

    return check_path(path, phase(progress, "fjall check", None))


def schema_titles() -> dict[str, str]:
    """Every shipped JSON Schema by name, with its title."""
    import schemas

    return {name: str(schemas.load(name).get("title", "")) for name in schemas.names()}


def schema_text(name: str) -> str:
    """The text of the shipped schema ``name`` (UsageError naming the known ones if none)."""
    import schemas
    from bbg_core.errors import UsageError

    known = schemas.names()
    if name not in known:
        raise UsageError(f"no schema named {name!r}; known: {', '.join(known)}", key=name)
    return schemas.text(name)


# -- which pipeline a job takes: a migration, or the transfer of a BBG store ----------------


def make_job(
    source: Path,
    store: Path | None,
    *,
    nonce: str | None = None,
    subject: str | None = None,
    maps: list[str] | None = None,
    mapping_file: Path | None = None,
    import_nonce: str | None = None,
    bounds: Bounds | None = None,
    accept_torn_tail: bool = False,
    kind: str | None = None,
    content_check: str = "codec",  # migrate.job.CODEC (imported on first use)
    retire_source: bool = False,
    strict: bool = False,
    namespace: str | None = None,
) -> Job | TransferJob:
    """The job of the inputs as an operator types them: ``nonce`` in hex, a mapping as
    ``--subject`` plus ``ORIGIN=INSTALL_NONCE`` pairs or a mapping file (UsageError when
    malformed, SourceError when the file cannot be read).

    When ``source`` is a BBG store the verbs mean a BBG → BBG transfer: the result is its
    :class:`TransferJob` (the nonce as given, the page rows of ``bounds``), and the options
    that apply to legacy sources only (every other one here, ``retire_source`` of ``run``
    included) are a UsageError naming them as command-line options.
    """
    from migrate.job import CODEC, Bounds, Job
    from migrate.job import mapping as mapping_mod

    legacy = {"subject": subject, "map": maps, "mapping": mapping_file,
              "import_nonce": import_nonce, "kind": kind,
              "accept_torn_tail": accept_torn_tail, "content_check": content_check != CODEC,
              "retire_source": retire_source, "strict": strict,
              "namespace": namespace}  # fmt: skip
    given = ["--" + name.replace("_", "-") for name, value in sorted(legacy.items()) if value]
    bounds = bounds or Bounds()
    moving = _transfer_for(source, store, nonce, bounds.page_rows, given)
    if moving is not None:
        return moving
    return Job(
        source=source,
        store=store,
        mapping=mapping_mod.parse_cli(subject, maps, mapping_file, import_nonce),
        nonce=None if nonce is None else mapping_mod.parse_hex(nonce, "--nonce"),
        bounds=bounds,
        accept_torn_tail=accept_torn_tail,
        kind=kind,
        content_check=content_check,
        strict=strict,
        namespace=(
            None if namespace is None else mapping_mod.hex_bytes(namespace, "--namespace", 32)
        ),
    )


def transfer_job(
    source: Path, store: Path | None, *, nonce: str | None = None, page_rows: int | None = None
) -> TransferJob:
    """The :class:`TransferJob` of ``source``, which must be a BBG store: a path that cannot
    be read is the SourceError naming the reason, anything else a UsageError."""
    from bbg_core.errors import UsageError
    from migrate.job import MAX_PAGE_ROWS
    from migrate.probe.detect import detect

    moving = _transfer_for(source, store, nonce, page_rows or MAX_PAGE_ROWS)
    if moving is not None:
        return moving
    detect(source)  # a path that cannot be read: exit 1, naming the OS's reason
    raise UsageError(
        f"{source} is not a BBG store; migrate a legacy file with `bbg-migrate run`",
        path=str(source),
    )


def _transfer_for(
    source: Path, store: Path | None, nonce: str | None, page_rows: int,
    legacy_given: list[str] | None = None,
) -> TransferJob | None:  # fmt: skip
    """:func:`migrate.transfer.job_for` (which decides), asked only about a directory: a BBG
    store is one, and a legacy source (a file) then runs without importing the transfer."""
    if not os.path.isdir(source):
        return None
    from migrate import transfer

    return transfer.job_for(source, store, nonce, page_rows, legacy_given or ())


def is_transfer(job: object) -> TypeGuard[TransferJob]:
    """Whether ``job`` is a :class:`TransferJob`.  Nothing else imports the transfer for
    the question: a TransferJob can only exist once :mod:`migrate.transfer` is loaded."""
    transfer = sys.modules.get("migrate.transfer")
    return transfer is not None and isinstance(job, transfer.TransferJob)


def _routed(job: Job | TransferJob, *, retire_source: bool = False) -> Job | TransferJob:
    """``job`` as it runs: a :class:`Job` whose source is a BBG store becomes its transfer
    (the options that apply to legacy sources only refused, named as the Job's fields)."""
    from migrate.job import CODEC, Job

    if not isinstance(job, Job):
        given = ["retire_source"] if retire_source else []
        if given:
            from migrate import transfer

            transfer.job_for(job.source, job.store, job.nonce, job.page_rows, given)
        return job
    legacy = [name for name, value in (
        ("kind", job.kind is not None), ("accept_torn_tail", job.accept_torn_tail),
        ("mapping", job.mapping is not None), ("content_check", job.content_check != CODEC),
        ("retire_source", retire_source), ("strict", job.strict),
        ("namespace", job.namespace is not None),
    ) if value]  # fmt: skip
    return _transfer_for(job.source, job.store, job.nonce, job.bounds.page_rows, legacy) or job


def run(
    job: Job | TransferJob, *, max_pages: int | None = None, retire_source: bool = False,
    progress: Observer | None = None,
) -> Outcome | TransferOutcome:  # fmt: skip
    """Every stage in order (seal, stage, validate, activate; then ``retire_source``); an
    exact rerun returns the same receipt and changes nothing.  A BBG store source is
    transferred (stage ``transfer``)."""
    from migrate.job import Job
    from migrate.progress import phase

    job = _routed(job, retire_source=retire_source)
    if isinstance(job, Job):
        from migrate import pipeline

        return pipeline.run(
            job, max_pages=max_pages, retire_source=retire_source, progress=progress
        )
    from migrate import transfer

    return transfer.run(job, max_pages=max_pages, progress=phase(progress, "transfer"))


def plan(job: Job | TransferJob, progress: Observer | None = None) -> dict[str, Any]:
    """The dry run of :func:`run`: what it would do, through the same checks; writes nothing
    (``schemas/plan.schema.json``, or ``transfer-plan`` for a BBG store source)."""
    from migrate.job import Job
    from migrate.progress import phase

    job = _routed(job)
    if isinstance(job, Job):
        from migrate import pipeline

        return pipeline.plan(job, progress)
    from migrate import transfer

    return transfer.plan(job, phase(progress, "plan"))


def _step(
    job: Job | TransferJob, stage: str, progress: Observer | None, migration: str,
    moving: str | None = None, **options: Any,
) -> Outcome | TransferOutcome:  # fmt: skip
    """One step of either pipeline, each verb named (its module is imported only for the
    job that takes it): ``pipeline.<migration>(job, progress=observer, **options)`` for a
    migration, ``transfer.<moving>(job, progress=rows callback of stage, **options)`` (the
    same name by default) for a transfer."""
    from migrate.job import Job
    from migrate.progress import phase

    job = _routed(job)
    if isinstance(job, Job):
        from migrate import pipeline

        done: Outcome = getattr(pipeline, migration)(job, progress=progress, **options)
        return done
    from migrate import transfer

    outcome: TransferOutcome = getattr(transfer, moving or migration)(
        job, progress=phase(progress, stage), **options
    )
    return outcome


def seal(job: Job | TransferJob, progress: Observer | None = None) -> Outcome | TransferOutcome:
    """Step 1: lock and fingerprint the source, record the seal (a BBG store source: seal
    it for the transfer)."""
    return _step(job, "seal", progress, "seal_only", "seal")


def stage(
    job: Job | TransferJob, *, max_pages: int | None = None, progress: Observer | None = None
) -> Outcome | TransferOutcome:
    """Step 2: copy at most ``max_pages`` bounded pages into inert staging (all when None);
    call again to continue."""
    return _step(job, "stage", progress, "stage", max_pages=max_pages)


def _needs_store(job: Job | TransferJob) -> None:
    """A later step (``validate``, ``activate``) is not a creation: an unreadable source is
    named first (as every step names it), then a missing store is refused -- before any
    seal or store is made."""
    import os

    from bbg_core.files import cannot_read
    from migrate.store.layout import existing_store_dir

    source = Path(job.source)
    try:
        if source.is_dir():
            os.listdir(source)
        else:
            os.close(os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as exc:
        raise cannot_read(source, exc) from None
    existing_store_dir(job.store)


def validate(
    job: Job | TransferJob, progress: Observer | None = None
) -> Outcome | TransferOutcome:
    """Step 3: check the staged rows against the source and the destination."""
    _needs_store(job)
    return _step(job, "validate", progress, "validate")


def activate(
    job: Job | TransferJob, progress: Observer | None = None
) -> Outcome | TransferOutcome:
    """Step 4: publish the validated import in one transaction; returns the receipt."""
    _needs_store(job)
    return _step(job, "activate", progress, "activate")


def write_receipt(path: Path, doc: dict[str, Any]) -> bool:
    """Write ``doc`` (a receipt) to ``path`` atomically, never over a different receipt
    (Conflict, exit 4); True when written, False when ``path`` already holds this receipt."""
    from bbg_core.canonical import canonical_json
    from bbg_core.files import write_once

    text = canonical_json(doc, indent=2) + "\n"
    return write_once(path, text.encode("utf-8"))


__all__ = sorted(
    [*_EXPORTS, *(name for name, value in list(globals().items())
                  if callable(value) and getattr(value, "__module__", None) == __name__
                  and not name.startswith("_"))]
)  # fmt: skip
