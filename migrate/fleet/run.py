"""``fleet run``: every job of a manifest (or of one shard) is the ordinary ``run``.

Each job runs in a worker process as a plain :func:`migrate.pipeline.run` (sealed, staged,
resumable), or as the sealed transfer when its source is a BBG store
(:mod:`migrate.fleet.sources`), so a killed fleet resumes where every job stood: rerun the
same command.  A job's failure is its own result; it never stops another job.  The worker
writes the job's result into ``REPORT_DIR/jobs/<key>.json`` itself (atomically) as soon as
the job ends, so results survive even if the parent dies, and shards and reruns merge by
key.  At the end the whole report is also written as ``REPORT_DIR/run-<shard>.json``.

The fleet's exit status is the highest exit code among its jobs (0 when all succeeded).
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import schemas
from bbg_core.errors import Interrupted, UsageError, error_document
from migrate.fleet import results, sources
from migrate.fleet.manifest import FleetJob, Manifest, select
from migrate.fleet.scheduler import Watcher, default_workers, schedule
from migrate.progress import CountsCallback

REPORT_FORMAT = "bbg-migrate/fleet-report/1"


def now() -> str:
    """UTC time for reports, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _base(job: FleetJob) -> dict[str, Any]:
    return {
        "format": results.JOB_FORMAT,
        "job": job.key,
        "name": job.name,
        "source": str(job.source),
        "store": str(job.store),
        "host": socket.gethostname(),
    }


def rows_of(receipt: dict[str, Any]) -> int:
    return sum(int(v) for v in receipt["counts"]["rows"].values())


@dataclass(frozen=True)
class RunArg:
    job: FleetJob
    report_dir: Path | None


def run_job(arg: RunArg, progress: CountsCallback) -> dict[str, Any]:
    """The worker's task: ``run`` one job; its result document (written when asked)."""
    job = arg.job
    doc = _base(job)
    doc["started"] = now()
    t0 = time.monotonic()
    try:
        status, kind, receipt = sources.run(job, progress)
        doc.update(exit_code=0, status=status, kind=kind, rows=rows_of(receipt), receipt=receipt)
    except Exception as exc:  # every failure is this job's result
        error = error_document(exc)
        doc.update(exit_code=error["exit_code"], status="failed", kind=job.kind, error=error)
    doc["finished"] = now()
    doc["seconds"] = round(time.monotonic() - t0, 3)
    if arg.report_dir is not None:
        results.write_job(arg.report_dir, doc)
    return doc


def _died(report_dir: Path | None) -> Callable[[FleetJob, int | None], dict[str, Any]]:
    def result(job: FleetJob, exitcode: int | None) -> dict[str, Any]:
        how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"{exitcode}"
        doc = _base(job)
        doc.update(
            exit_code=1,
            status="failed",
            kind=job.kind,
            error={
                "code": "worker-died",
                "exit_code": 1,
                "message": f"{job.source}: the worker process died ({how}) while running this "
                "job; nothing else was affected. Rerun the fleet to resume it",
                "context": {"path": str(job.source), "worker_exit": exitcode},
            },
            started=now(),
            finished=now(),
            seconds=0.0,
        )
        if report_dir is not None:
            results.write_job(report_dir, doc)
        return doc

    return result


def torn_tail(job: dict[str, Any]) -> dict[str, Any] | None:
    """The torn tail a job's import accepted (``--accept-torn-tail``: bytes dropped), or None."""
    legacy = (job.get("receipt") or {}).get("legacy") or {}
    torn: dict[str, Any] | None = legacy.get("torn_tail")
    return torn if job["exit_code"] == 0 else None


def totals(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by outcome and exit code, rows imported, and the torn tails accepted (a job
    that imported a log's valid prefix dropped bytes: the fleet says so, not only its job)."""
    by_code: dict[str, int] = {}
    for j in jobs:
        by_code[str(j["exit_code"])] = by_code.get(str(j["exit_code"]), 0) + 1
    torn = [t for t in map(torn_tail, jobs) if t is not None]
    return {
        "torn_tails": len(torn),
        "torn_bytes_dropped": sum(int(t["discarded_bytes"]) for t in torn),
        "jobs": len(jobs),
        "ok": sum(1 for j in jobs if j["exit_code"] == 0),
        "failed": sum(1 for j in jobs if j["exit_code"] != 0),
        "rows": sum(int(j.get("rows", 0)) for j in jobs if j["exit_code"] == 0),
        "by_exit_code": dict(sorted(by_code.items(), key=lambda kv: int(kv[0]))),
    }


def sort_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(jobs, key=lambda j: (j["source"], j["store"], j["job"]))


def worst(codes: list[int]) -> int:
    """The fleet's exit code: the highest of its jobs' (0 for none)."""
    return max(codes, default=0)


def shard_name(shard: tuple[int, int] | None) -> str:
    return "all" if shard is None else f"{shard[0]}-of-{shard[1]}"


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a scheduler cancelling the job) ends the run like Ctrl-C: exit 130."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_fleet(
    manifest: Manifest,
    *,
    workers: int | None = None,
    shard: tuple[int, int] | None = None,
    report_dir: Path | None = None,
    skip_done: bool = False,
    watcher: Watcher | None = None,
) -> dict[str, Any]:
    """Run the manifest's jobs (one shard's when ``shard``); the fleet report document."""
    jobs = select(manifest.jobs, shard)
    started, t0 = now(), time.monotonic()
    kept: dict[str, dict[str, Any]] = {}
    if skip_done and report_dir is not None:
        wanted = {j.key for j in jobs}
        for _, doc in results.read_jobs(report_dir):
            if doc["job"] in wanted and doc["exit_code"] == 0:
                kept[doc["job"]] = doc
    todo = [j for j in jobs if j.key not in kept]
    if watcher is not None:
        for job in jobs:
            if job.key in kept:  # finished without being started: no part of the speed
                watcher.finished(job, kept[job.key])
    n = workers if workers is not None else default_workers()
    try:
        with _sigterm_interrupts():
            done = schedule(
                todo,
                n,
                run_job,
                lambda job: RunArg(job, report_dir),
                _died(report_dir),
                watcher,
            )
    except KeyboardInterrupt as exc:
        raise Interrupted(
            "fleet run interrupted; every job is resumable: rerun the same command"
            + (f" (finished jobs are in {report_dir / results.JOBS_DIR})" if report_dir else ""),
            report_dir=str(report_dir) if report_dir else None,
        ) from exc
    all_jobs = sort_jobs([*kept.values(), *done.values()])
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "manifest": str(manifest.path),
        "shard": None if shard is None else {"index": shard[0], "count": shard[1]},
        "workers": n,
        "started": started,
        "finished": now(),
        "seconds": round(time.monotonic() - t0, 3),
        "jobs": all_jobs,
        "totals": totals(all_jobs),
        "anomalies": [],
        "exit_code": worst([j["exit_code"] for j in all_jobs]),
    }
    schemas.validate(report, "fleet-report")
    if report_dir is not None:
        results.atomic_write_json(report_dir / f"run-{shard_name(shard)}.json", report)
    return report


def ensure_report_dir(report_dir: Path | None) -> None:
    """Create the report directory up front, so a bad path fails before any job runs."""
    if report_dir is not None:
        try:
            os.makedirs(report_dir / results.JOBS_DIR, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"{report_dir}: cannot create the report directory: {exc.strerror}",
                path=str(report_dir),
            ) from exc
