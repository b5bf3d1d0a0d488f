"""``fleet plan``: ``plan`` for every job, totals, and the disk each destination filesystem needs.

Each job's row comes from :func:`migrate.pipeline.plan` (the dry run of ``run``; it writes
nothing).  Its predicted exit code is the plan's own when the plan document carries one;
when ``plan`` raises, it is the error's exit code through the project's one mapping
(:func:`bbg_core.errors.error_document`), which is the code ``run`` would exit with.

Disk: the destinations are grouped by filesystem (``st_dev`` of the nearest existing
ancestor of each store directory); the bytes the plans say they need are added up per
filesystem and compared with its free space.  A filesystem that is short is a problem of
the fleet (exit 1: ``run`` would fail writing).

The fleet's exit status is the highest predicted exit code (and at least 1 when a
filesystem is short).  Nothing is written: plans open stores read-only and create nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import schemas
from bbg_core.errors import error_document
from migrate.fleet import sources
from migrate.fleet.manifest import FleetJob, Manifest, select
from migrate.fleet.scheduler import Watcher, default_workers, schedule
from migrate.progress import CountsCallback

PLAN_FORMAT = "bbg-migrate/fleet-plan/1"


def _predicted(doc: dict[str, Any]) -> tuple[int, list[str]]:
    """Exit code and problems from a plan document that did not raise."""
    conflicts = doc.get("destination", {}).get("conflicts", [])
    problems = [f"{c['code']}: {c['detail']}" for c in conflicts]
    if isinstance(doc.get("exit_code"), int):
        return int(doc["exit_code"]), problems
    # Until ``plan`` reports its predicted exit code itself: the two cases it lists
    # without raising (the codes ``run`` gives for them).
    if problems:
        return 4, problems
    if doc.get("source_locked"):
        return 11, ["another process holds the source's lock (the old binary, or another "
                    "bbg-migrate run of this source); wait for it or stop it, then rerun"]
    return 0, problems


def plan_job(job: FleetJob, progress: CountsCallback) -> dict[str, Any]:
    """The worker's task: one plan row."""
    row: dict[str, Any] = {
        "job": job.key,
        "name": job.name,
        "source": str(job.source),
        "store": str(job.store),
        "kind": job.kind,
        "rows": 0,
        "bytes": 0,
        "namespaces": 0,
        "disk_bytes_needed": 0,
    }
    try:
        kind, doc = sources.plan(job, progress)
        code, problems = _predicted(doc)
        ident = doc.get("import_id") or doc.get("manifest")
        row.update(
            kind=kind,
            **({"import_id": ident} if isinstance(ident, str) else {}),
            rows=int(doc.get("rows", 0)),
            bytes=int(doc.get("key_value_bytes", 0)),
            namespaces=len(doc.get("namespaces", {})),
            disk_bytes_needed=int(doc.get("disk_bytes_needed", 0)),
            action=str(doc["action"]),
            exit_code=code,
            outcome="ok" if code == 0 else (doc.get("outcome") or "refused"),
            problems=problems,
        )
    except Exception as exc:  # the job's own predicted failure
        error = error_document(exc)
        row.update(
            action="fail",
            exit_code=error["exit_code"],
            outcome=error["code"],
            problems=[error["message"]],
            error=error,
        )
    return row


def _died(job: FleetJob, exitcode: int | None) -> dict[str, Any]:
    message = f"{job.source}: the worker process died ({exitcode}) while planning this job"
    return {
        "job": job.key,
        "name": job.name,
        "source": str(job.source),
        "store": str(job.store),
        "kind": job.kind,
        "rows": 0,
        "bytes": 0,
        "namespaces": 0,
        "disk_bytes_needed": 0,
        "action": "fail",
        "exit_code": 1,
        "outcome": "worker-died",
        "problems": [message],
        "error": {"code": "worker-died", "exit_code": 1, "message": message, "context": {}},
    }


def nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (where a new store would be created)."""
    probe = Path(os.path.abspath(path))
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def filesystems(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Disk needed per destination filesystem (jobs predicted to succeed), against free space."""
    groups: dict[int, dict[str, Any]] = {}
    for row in rows:
        where = nearest_existing(Path(row["store"]))
        dev = os.stat(where).st_dev
        group = groups.setdefault(
            dev,
            {"device": dev, "path": str(where), "stores": [], "needed_bytes": 0},
        )
        if row["store"] not in group["stores"]:
            group["stores"].append(row["store"])
        if row["exit_code"] == 0:
            group["needed_bytes"] += row["disk_bytes_needed"]
    out = []
    for group in groups.values():
        group["free_bytes"] = shutil.disk_usage(group["path"]).free
        group["enough"] = group["needed_bytes"] <= group["free_bytes"]
        out.append(group)
    return sorted(out, key=lambda g: g["path"])


def plan_fleet(
    manifest: Manifest,
    *,
    workers: int | None = None,
    shard: tuple[int, int] | None = None,
    watcher: Watcher | None = None,
) -> dict[str, Any]:
    """Plan every job (of one shard when ``shard``); the fleet plan document."""
    jobs = select(manifest.jobs, shard)
    n = workers if workers is not None else default_workers()
    got = schedule(jobs, n, plan_job, lambda job: job, _died, watcher)
    rows = [got[j.key] for j in jobs]
    disks = filesystems(rows)
    problems = [
        f"{d['path']}: the stores on this filesystem need {d['needed_bytes']} bytes, "
        f"{d['free_bytes']} are free"
        for d in disks
        if not d["enough"]
    ]
    code = max([r["exit_code"] for r in rows] + ([1] if problems else []), default=0)
    doc: dict[str, Any] = {
        "format": PLAN_FORMAT,
        "manifest": str(manifest.path),
        "shard": None if shard is None else {"index": shard[0], "count": shard[1]},
        "jobs": rows,
        "totals": {
            "jobs": len(rows),
            "ok": sum(1 for r in rows if r["exit_code"] == 0),
            "failing": sum(1 for r in rows if r["exit_code"] != 0),
            "rows": sum(r["rows"] for r in rows),
            "bytes": sum(r["bytes"] for r in rows),
            "namespaces": sum(r["namespaces"] for r in rows),
            "disk_bytes_needed": sum(r["disk_bytes_needed"] for r in rows if r["exit_code"] == 0),
        },
        "filesystems": disks,
        "problems": problems,
        "exit_code": code,
    }
    schemas.validate(doc, "fleet-plan")
    return doc
