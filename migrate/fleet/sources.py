"""What one fleet job runs: the ordinary ``run`` for a legacy source, or the sealed BBG → BBG
transfer when the source is a BBG store (judged by content, as ``run``/``plan`` on the
command line do).

A BBG store source takes ``store``, ``nonce`` (64 hex) and ``bounds.page_rows``; ``kind``,
``accept_torn_tail`` and a mapping apply to legacy sources only and are refused for it, and
the other bounds (``max_rows``, ``max_bytes``, ``max_namespaces``) do not apply to it.
"""

from __future__ import annotations

from typing import Any

import schemas
from bbg_core.errors import MigrateError
from migrate import pipeline, transfer
from migrate.fleet.manifest import FleetJob
from migrate.job import MAX_PAGE_BYTES, MAX_PAGE_ROWS
from migrate.progress import CountsCallback, as_observer

Progress = CountsCallback
STORE_KIND = "bbg"
_ROW_OVERHEAD = 48  # as the pipeline's plan counts a row's overhead in SQLite


def _transfer_job(job: FleetJob) -> transfer.TransferJob | None:
    """The job's transfer when its source is a BBG store (:func:`migrate.transfer.job_for`),
    the options that apply to legacy sources only named as the manifest names them."""
    legacy = [
        name
        for name, given in (
            ("kind", job.kind is not None),
            ("accept_torn_tail", job.accept_torn_tail),
            ("mapping", job.mapping is not None),
        )
        if given
    ]
    page_rows = job.bounds.get("page_rows", MAX_PAGE_ROWS)
    return transfer.job_for(job.source, job.store, job.nonce, page_rows, legacy)


def seals(jobs: list[FleetJob]) -> list[tuple[FleetJob, transfer.TransferJob]]:
    """The jobs whose run would seal a BBG store source for good (a transfer of a source not
    yet sealed), in order; reads only.  A job whose options or source cannot even be read
    is left out: it fails as its own result, sealing nothing."""
    found: list[tuple[FleetJob, transfer.TransferJob]] = []
    for job in jobs:
        try:
            moving = _transfer_job(job)
            if moving is not None and not transfer.is_sealed(moving.source):
                found.append((job, moving))
        except MigrateError:
            continue
    return found


def run(job: FleetJob, progress: Progress) -> tuple[str, str, dict[str, Any]]:
    """Run the job; (status, kind, receipt) - the receipt checked against its schema."""
    kind: str | None = None
    moving = _transfer_job(job)
    if moving is not None:
        moved = transfer.run(moving, progress=progress)
        schema, status, receipt, kind = "transfer-receipt", moved.status, moved.receipt, STORE_KIND
    else:
        done = pipeline.run(job.job(), progress=as_observer(progress))
        schema, status, receipt = "receipt", done.status, done.receipt
    if receipt is None:  # pragma: no cover - a run without max_pages always completes
        raise RuntimeError(f"{job.source}: ended at status {status} without a receipt")
    schemas.validate(receipt, schema)
    return status, kind or str(receipt["source"]["kind"]), receipt


def plan(job: FleetJob, progress: Progress) -> tuple[str | None, dict[str, Any]]:
    """The job's dry run; (kind, plan document with rows, bytes, namespaces and disk)."""
    moving = _transfer_job(job)
    if moving is not None:
        doc = transfer.plan(moving, progress)
        if "disk_bytes_needed" not in doc:
            # The transfer plan does not say: estimate as the pipeline's plan does (staged copy
            # + published copy + per-row overhead, and the WAL of one page).
            busy = doc["action"].startswith("none")
            nbytes, rows = int(doc["key_value_bytes"]), int(doc["rows"])
            doc["disk_bytes_needed"] = (
                0 if busy else 2 * (nbytes + _ROW_OVERHEAD * rows) + (MAX_PAGE_BYTES)
            )
        return STORE_KIND, doc
    doc = pipeline.plan(job.job(), as_observer(progress))
    return doc.get("source", {}).get("kind", job.kind), doc
