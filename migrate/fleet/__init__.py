"""Fleets: many migrations from one manifest, on one machine or across a job scheduler.

| module | what |
|---|---|
| :mod:`.manifest` | ``fleet.toml``/JSON: validation, globs and placeholders, lanes, shards |
| :mod:`.pool` | worker processes (forkserver) that fail one job, not the pool, on a crash |
| :mod:`.scheduler` | one task per job, never two jobs of one lane at once |
| :mod:`.plan` | ``fleet plan``: ``plan`` per job, totals, disk per destination filesystem |
| :mod:`.run` | ``fleet run``: ``run`` per job; per-job results in a report directory |
| :mod:`.sources` | what one job runs (a migration, or the sealed transfer of a BBG store) |
| :mod:`.results` | result and error documents, atomic report files |
| :mod:`.report` | ``fleet report``: merge results of shards and reruns, anomalies |
| :mod:`.html` | the merged report as one self-contained HTML page |
"""

from __future__ import annotations

from migrate.fleet.html import render as render_html
from migrate.fleet.html import write_html
from migrate.fleet.manifest import FleetJob, Manifest, jobs_of, parse_shard, select, shard_of
from migrate.fleet.manifest import load as load_manifest
from migrate.fleet.plan import plan_fleet
from migrate.fleet.report import merge
from migrate.fleet.run import ensure_report_dir, run_fleet
from migrate.fleet.scheduler import Watcher, default_workers
from migrate.fleet.sources import seals as sealing_jobs

__all__ = [
    "FleetJob",
    "Manifest",
    "Watcher",
    "default_workers",
    "ensure_report_dir",
    "jobs_of",
    "load_manifest",
    "merge",
    "parse_shard",
    "plan_fleet",
    "render_html",
    "run_fleet",
    "sealing_jobs",
    "select",
    "shard_of",
    "write_html",
]
