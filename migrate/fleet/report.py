"""``fleet report``: merge per-job results and per-run (per-shard) reports into one report.

Inputs are report directories (``jobs/*.json`` and ``run-*.json`` as ``fleet run
--report-dir`` writes them) or fleet report files (``fleet run --json > shard0.json``).
Results are merged by job key; the same job seen twice with the same outcome is one job.

Anomalies (each makes the merged exit status at least 1):

* ``conflicting-results`` - one job with two different receipts, or a success followed by a
  later failure (the latest, by finish time, is kept in ``jobs``; every file is named).  A
  failure followed by a success is a retry, not an anomaly;
* ``missing-shard`` - run reports of ``I/N`` shards are present but not all N of them;
* ``mixed-shard-counts`` - run reports of one fleet split into different numbers of shards;
* ``missing-job`` - with ``--manifest``: a job of the manifest has no result.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import schemas
from bbg_core.canonical import canonical_json
from bbg_core.errors import UsageError
from bbg_core.files import cannot_read
from migrate.fleet import results
from migrate.fleet.manifest import Manifest
from migrate.fleet.run import REPORT_FORMAT, sort_jobs, totals, worst

Found = list[tuple[str, dict[str, Any]]]


def _inputs(paths: list[Path]) -> tuple[Found, Found]:
    """(file, job result) pairs and (file, run report) pairs of every input."""
    jobs: Found = []
    runs: Found = []
    for path in paths:
        if path.is_dir():
            try:
                os.listdir(path)  # an unreadable directory: one named error, exit 1
            except OSError as exc:
                raise cannot_read(path, exc) from exc
            jobs += [(str(p), doc) for p, doc in results.read_jobs(path)]
            runs += [
                (str(p), results.read_json(p, "fleet-report"))
                for p in sorted(path.glob("run-*.json"))
            ]
            if not (path / results.JOBS_DIR).is_dir() and not list(path.glob("run-*.json")):
                raise UsageError(
                    f"{path}: not a fleet report directory (no jobs/ and no run-*.json); "
                    "give the --report-dir of a fleet run",
                    path=str(path),
                )
        elif path.is_file():
            runs.append((str(path), results.read_json(path, "fleet-report")))
        else:
            try:
                os.stat(path)
            except OSError as exc:
                raise cannot_read(path, exc) from exc
            raise UsageError(f"{path}: not a report directory or file", path=str(path))
    for file, run in runs:
        jobs += [(file, job) for job in run["jobs"]]
    return jobs, runs


def _signature(job: dict[str, Any]) -> str:
    """What must agree between two copies of one job's result (not timings or host)."""
    error = job.get("error")
    return canonical_json(
        {
            "source": job["source"],
            "store": job["store"],
            "exit_code": job["exit_code"],
            "receipt": job.get("receipt"),
            "error": None if error is None else [error["code"], error["exit_code"]],
        }
    )


def _conflicting(results: list[dict[str, Any]]) -> bool:
    """Results of one job, oldest first: two different receipts, or a success followed by a
    failure.  A failure followed by another outcome is a retry, not an anomaly."""
    receipts = {canonical_json(r["receipt"]) for r in results if "receipt" in r}
    return len(receipts) > 1 or (bool(receipts) and "receipt" not in results[-1])


def _shard_anomalies(runs: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    counts: dict[int, set[int]] = {}
    for _, run in runs:
        if run.get("shard") is not None:
            counts.setdefault(run["shard"]["count"], set()).add(run["shard"]["index"])
    out: list[dict[str, Any]] = []
    if len(counts) > 1:
        out.append(
            {
                "code": "mixed-shard-counts",
                "detail": "run reports split the fleet into "
                + " and ".join(str(n) for n in sorted(counts))
                + " shards; merge the reports of one split",
            }
        )
    for count, present in sorted(counts.items()):
        missing = sorted(set(range(count)) - present)
        if missing:
            out.append(
                {
                    "code": "missing-shard",
                    "detail": "no run report for shard(s) "
                    + ", ".join(f"{i}/{count}" for i in missing)
                    + f" of {count}",
                }
            )
    return out


def merge(paths: list[Path], manifest: Manifest | None = None) -> dict[str, Any]:
    """The merged fleet report of ``paths`` (directories or report files)."""
    if not paths:
        raise UsageError("give at least one report directory")
    seen, runs = _inputs(paths)
    by_key: dict[str, dict[str, tuple[str, dict[str, Any], list[str]]]] = {}
    for file, job in seen:
        variants = by_key.setdefault(job["job"], {})
        sig = _signature(job)
        if sig in variants:
            kept_file, kept, files = variants[sig]
            if file not in files:
                files.append(file)
            if job["finished"] > kept["finished"]:
                variants[sig] = (file, job, files)
        else:
            variants[sig] = (file, job, [file])
    jobs: list[dict[str, Any]] = []
    anomalies: list[dict[str, Any]] = []
    for key, variants in sorted(by_key.items()):
        choices = sorted(variants.values(), key=lambda v: v[1]["finished"])
        jobs.append(choices[-1][1])
        if _conflicting([c[1] for c in choices]):
            files = sorted({f for _, _, fs in choices for f in fs})
            outcomes = "; ".join(
                f"exit {c[1]['exit_code']}"
                + (f" import {c[1]['receipt']['import_id']}" if "receipt" in c[1] else "")
                + (f" {c[1]['error']['code']}" if "error" in c[1] else "")
                + f" ({', '.join(c[2])})"
                for c in choices
            )
            anomalies.append(
                {
                    "code": "conflicting-results",
                    "job": key,
                    "detail": f"{choices[-1][1]['source']} -> {choices[-1][1]['store']}: "
                    f"different results: {outcomes}; the latest is reported",
                    "files": files,
                }
            )
    anomalies += _shard_anomalies(runs)
    if manifest is not None:
        for wanted in manifest.jobs:
            if wanted.key not in by_key:
                anomalies.append(
                    {
                        "code": "missing-job",
                        "job": wanted.key,
                        "detail": f"{wanted.source} -> {wanted.store}: no result in the reports",
                    }
                )
    jobs = sort_jobs(jobs)
    manifests = {run.get("manifest") for _, run in runs}
    named = str(manifest.path) if manifest is not None else None
    doc: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "manifest": named or (manifests.pop() if len(manifests) == 1 else None),
        "shard": None,
        "inputs": [str(p) for p in paths],
        "shards": sorted({Path(f).name for f, _ in runs}),
        "jobs": jobs,
        "totals": totals(jobs),
        "anomalies": anomalies,
        "exit_code": max(worst([j["exit_code"] for j in jobs]), 1 if anomalies else 0),
    }
    if jobs:
        doc["started"] = min(j["started"] for j in jobs)
        doc["finished"] = max(j["finished"] for j in jobs)
    schemas.validate(doc, "fleet-report")
    return doc
