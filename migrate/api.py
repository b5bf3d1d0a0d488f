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
| :func:`make_job` | a pipeline :class:`Job` from command-line-shaped inputs (hex, mapping file) |
| :func:`write_receipt` | a receipt to a file: atomic, never over a different receipt |
| :func:`progress_phase` | the ``(rows, bytes)`` callback of one stage, for an observer |
| :func:`schema_titles`, :func:`schema_text` | the shipped JSON Schemas |
| :func:`versions` | this build's version and which implementation each hot path uses |
| :func:`hemera_file`, :func:`hemera_leaf`, :func:`hemera_node` | hemera, tree leaf, tree node |
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
| :func:`fleet_load`, :func:`fleet_plan`, :func:`fleet_run`, :func:`fleet_report` | fleets |

Pipeline verbs take a :class:`Job` (source, store, mapping, nonce, :class:`Bounds`);
transfer verbs a :class:`TransferJob` (source store, target store, nonce, page rows).
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:

    from importers.redb.report import dump as redb_dump
    from importers.redb.report import tables_doc as redb_tables
    from migrate.demo import run_demo as demo
    from migrate.detect import detect
    from migrate.fixtures_check import check as fixtures_check
    from migrate.fleet import default_workers as fleet_default_workers
    from migrate.fleet import ensure_report_dir as fleet_report_dir
    from migrate.fleet import jobs_of as fleet_select
    from migrate.fleet import load_manifest as fleet_load
    from migrate.fleet import merge as fleet_report
    from migrate.fleet import parse_shard as fleet_shard
    from migrate.fleet import plan_fleet as fleet_plan
    from migrate.fleet import run_fleet as fleet_run
    from migrate.fleet import write_html as fleet_html
    from migrate.hashing import data_id as nox_data_id
    from migrate.hashing import file_digest as hemera_file
    from migrate.hashing import tree_leaf as hemera_leaf
    from migrate.hashing import tree_node as hemera_node
    from migrate.pipeline import (
        Bounds,
        Job,
        Outcome,
        activate,
        discard,
        plan,
        run,
        stage,
        validate,
    )
    from migrate.pipeline import seal_only as seal
    from migrate.pipeline.listing import list_imports
    from migrate.pipeline.listing import summary as imports_summary
    from migrate.pipeline.retire import preview as retirement_preview
    from migrate.pipeline.retire import preview_lines as retirement_lines
    from migrate.progress import Observer
    from migrate.progress import phase as progress_phase
    from migrate.share import (
        apply,
        apply_stream,
        backup,
        doctor,
        follow,
        restore,
        tail,
        write_snapshot,
    )
    from migrate.share.common import MAX_LINE
    from migrate.share.common import canonical as event_line
    from migrate.share.follow import follow_into
    from migrate.share.mcp_server import serve as mcp_serve
    from migrate.share.retention import excise, nohistory
    from migrate.store.fjall.reader import open_keyspace as fjall_open
    from migrate.store.fjall.report import dump_path as fjall_dump
    from migrate.store.fjall.session import flush_keyspace as fjall_flush
    from migrate.store.fjall.session import open_writer as fjall_writer
    from migrate.store.fjall.writer import append_batch as fjall_append
    from migrate.store.fjall.writer import build_keyspace as fjall_build
    from migrate.store.fjall.writer import publish_segments as fjall_publish
    from migrate.store.layout import resolve_store_dir
    from migrate.store.store import upgrade_store as upgrade
    from migrate.transfer import TransferJob, TransferOutcome
    from migrate.transfer import activate as transfer_activate
    from migrate.transfer import plan as transfer_plan
    from migrate.transfer import run as transfer
    from migrate.transfer import seal as transfer_seal
    from migrate.transfer import stage as transfer_stage
    from migrate.transfer import validate as transfer_validate

# Every name above is imported on first use (PEP 562), so ``bbg-migrate detect`` and
# ``--version`` do not pay for the pipeline, the fleet, SQLite or jsonschema (issue 13.8).
_LAZY: dict[str, tuple[str, str]] = {
    "list_imports": ("migrate.pipeline.listing", "list_imports"),
    "imports_summary": ("migrate.pipeline.listing", "summary"),
    "retirement_preview": ("migrate.pipeline.retire", "preview"),
    "retirement_lines": ("migrate.pipeline.retire", "preview_lines"),
    "follow_into": ("migrate.share.follow", "follow_into"),
    "mcp_serve": ("migrate.share.mcp_server", "serve"),
    "excise": ("migrate.share.retention", "excise"),
    "nohistory": ("migrate.share.retention", "nohistory"),
    "upgrade": ("migrate.store.store", "upgrade_store"),
    "Bounds": ("migrate.pipeline", "Bounds"),
    "CODEC": ("migrate.content_ids", "CODEC"),
    "Observer": ("migrate.progress", "Observer"),
    "TransferJob": ("migrate.transfer", "TransferJob"),
    "TransferOutcome": ("migrate.transfer", "TransferOutcome"),
    "Job": ("migrate.pipeline", "Job"),
    "MAX_LINE": ("migrate.share.common", "MAX_LINE"),
    "Outcome": ("migrate.pipeline", "Outcome"),
    "UsageError": ("bbg_core.errors", "UsageError"),
    "activate": ("migrate.pipeline", "activate"),
    "apply": ("migrate.share", "apply"),
    "apply_stream": ("migrate.share", "apply_stream"),
    "backup": ("migrate.share", "backup"),
    "demo": ("migrate.demo", "run_demo"),
    "detect": ("migrate.detect", "detect"),
    "discard": ("migrate.pipeline", "discard"),
    "doctor": ("migrate.share", "doctor"),
    "event_line": ("migrate.share.common", "canonical"),
    "fixtures_check": ("migrate.fixtures_check", "check"),
    "fjall_append": ("migrate.store.fjall.writer", "append_batch"),
    "fjall_build": ("migrate.store.fjall.writer", "build_keyspace"),
    "fjall_dump": ("migrate.store.fjall.report", "dump_path"),
    "fjall_open": ("migrate.store.fjall.reader", "open_keyspace"),
    "fjall_publish": ("migrate.store.fjall.writer", "publish_segments"),
    "fjall_flush": ("migrate.store.fjall.session", "flush_keyspace"),
    "fjall_writer": ("migrate.store.fjall.session", "open_writer"),
    "fleet_default_workers": ("migrate.fleet", "default_workers"),
    "fleet_html": ("migrate.fleet", "write_html"),
    "fleet_load": ("migrate.fleet", "load_manifest"),
    "fleet_plan": ("migrate.fleet", "plan_fleet"),
    "fleet_report": ("migrate.fleet", "merge"),
    "fleet_report_dir": ("migrate.fleet", "ensure_report_dir"),
    "fleet_run": ("migrate.fleet", "run_fleet"),
    "fleet_select": ("migrate.fleet", "jobs_of"),
    "fleet_shard": ("migrate.fleet", "parse_shard"),
    "follow": ("migrate.share", "follow"),
    "hemera_file": ("migrate.hashing", "file_digest"),
    "hemera_leaf": ("migrate.hashing", "tree_leaf"),
    "hemera_node": ("migrate.hashing", "tree_node"),
    "inspect_path": ("migrate.inspect", "inspect_path"),
    "mapping_mod": ("migrate.pipeline", "mapping"),
    "nox_data_id": ("migrate.hashing", "data_id"),
    "plan": ("migrate.pipeline", "plan"),
    "progress_phase": ("migrate.progress", "phase"),
    "redb_dump": ("importers.redb.report", "dump"),
    "redb_tables": ("importers.redb.report", "tables_doc"),
    "resolve_store_dir": ("migrate.store.layout", "resolve_store_dir"),
    "restore": ("migrate.share", "restore"),
    "run": ("migrate.pipeline", "run"),
    "seal": ("migrate.pipeline", "seal_only"),
    "stage": ("migrate.pipeline", "stage"),
    "tail": ("migrate.share", "tail"),
    "transfer": ("migrate.transfer", "run"),
    "transfer_activate": ("migrate.transfer", "activate"),
    "transfer_plan": ("migrate.transfer", "plan"),
    "transfer_seal": ("migrate.transfer", "seal"),
    "transfer_stage": ("migrate.transfer", "stage"),
    "transfer_validate": ("migrate.transfer", "validate"),
    "validate": ("migrate.pipeline", "validate"),
    "write_once": ("bbg_core.files", "write_once"),
    "write_snapshot": ("migrate.share", "write_snapshot"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value



def inspect(
    path: str | os.PathLike[str], *, kind: str | None = None,
    progress: Observer | None = None, content_check: str = "codec",
) -> dict[str, Any]:  # fmt: skip
    """Read-only report of ``path`` (:func:`migrate.inspect.inspect_path`); ``progress`` an
    observer (stage ``inspect``, rows of a cell.redb out of its table lengths)."""
    from migrate.inspect import inspect_path
    from migrate.progress import phase as progress_phase
    from migrate.progress import source_rows

    rows = source_rows(path) if progress is not None else None
    return inspect_path(path, kind=kind, content_check=content_check,
                        progress=progress_phase(progress, "inspect", rows))  # fmt: skip


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


def versions() -> dict[str, str]:
    """``{"bbg-migrate": version, "redb reader": "c"|"python", "hemera": ...}``."""
    from migrate import backends

    return backends.versions()


def version_text() -> str:
    """``bbg-migrate --version``: the package version and which readers are active."""
    from migrate import backends

    return backends.version_text()


def make_job(
    source: Path,
    store: Path | None,
    *,
    nonce: str | None = None,
    subject: str | None = None,
    maps: list[str] | None = None,
    mapping_file: Path | None = None,
    bounds: Bounds | None = None,
    accept_torn_tail: bool = False,
    kind: str | None = None,
    content_check: str = "codec",  # migrate.content_ids.CODEC (imported on first use)
) -> Job:
    """A :class:`Job` from the inputs as an operator types them: ``nonce`` in hex, a mapping
    as ``--subject`` plus ``ORIGIN=INSTALL_NONCE`` pairs or a mapping file (UsageError when
    malformed, SourceError when the file cannot be read)."""
    from migrate.pipeline import Bounds, Job
    from migrate.pipeline import mapping as mapping_mod

    return Job(
        source=source,
        store=store,
        mapping=mapping_mod.parse_cli(subject, maps, mapping_file),
        nonce=None if nonce is None else mapping_mod.parse_hex(nonce, "--nonce"),
        bounds=bounds or Bounds(),
        accept_torn_tail=accept_torn_tail,
        kind=kind,
        content_check=content_check,
    )


def write_receipt(path: Path, doc: dict[str, Any]) -> bool:
    """Write ``doc`` (a receipt) to ``path`` atomically, never over a different receipt
    (Conflict, exit 4); True when written, False when ``path`` already holds this receipt."""
    from bbg_core.files import write_once

    text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    return write_once(path, text.encode("utf-8"))


def is_store(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a BBG store directory (judged by content, like ``detect``)."""
    from migrate.detect import detect

    return os.path.isdir(path) and detect(path)["kind"] == "bbg"


__all__ = [
    "hemera_file",
    "hemera_leaf",
    "hemera_node",
    "nox_data_id",
    "MAX_LINE",
    "event_line",
    "resolve_store_dir",
    "Bounds",
    "Job",
    "Outcome",
    "TransferJob",
    "TransferOutcome",
    "activate",
    "discard",
    "imports_summary",
    "list_imports",
    "retirement_lines",
    "retirement_preview",
    "apply",
    "apply_stream",
    "backup",
    "demo",
    "detect",
    "doctor",
    "fixtures_check",
    "fjall_append",
    "fjall_build",
    "fjall_check",
    "fjall_dump",
    "fjall_flush",
    "fjall_info",
    "fjall_open",
    "fjall_publish",
    "fjall_writer",
    "fleet_default_workers",
    "fleet_html",
    "fleet_load",
    "fleet_plan",
    "fleet_report",
    "fleet_report_dir",
    "fleet_run",
    "fleet_select",
    "fleet_shard",
    "follow",
    "follow_into",
    "excise",
    "nohistory",
    "mcp_serve",
    "upgrade",
    "inspect",
    "is_store",
    "plan",
    "progress_phase",
    "Observer",
    "make_job",
    "redb_dump",
    "redb_scan",
    "redb_tables",
    "versions",
    "schema_text",
    "schema_titles",
    "write_receipt",
    "restore",
    "run",
    "seal",
    "stage",
    "tail",
    "transfer",
    "transfer_activate",
    "transfer_plan",
    "transfer_seal",
    "transfer_stage",
    "transfer_validate",
    "validate",
    "write_snapshot",
]
