"""Run one task per job on a worker pool, never two jobs of one lane at once.

A lane is a set of jobs that share a source or a destination store
(:func:`migrate.fleet.manifest.load` computes it).  Why the scheduler serialises them instead
of relying on the store: a pipeline step holds the store's run lock for its whole length
(:mod:`migrate.store.runlock`), so two runs into one store wait for each other -- but the
waiting job would hold a pool worker meanwhile, a long transaction of another writer can
outlast SQLite's 30 s busy timeout (exit 11), and two jobs reading one source contend for its
lock (exit 11).  Serialising per lane avoids all three.

Lanes are started largest first (total source bytes, then manifest order), which shortens
the whole run when sizes are skewed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from migrate.fleet.manifest import FleetJob
from migrate.fleet.pool import Pool, Task


class Watcher(Protocol):
    """What a progress view hears (all calls in the parent process)."""

    def started(self, job: FleetJob) -> None: ...
    def progress(self, job: FleetJob, rows: int, nbytes: int,
                 total: int | None = None) -> None: ...  # fmt: skip
    def finished(self, job: FleetJob, result: dict[str, Any]) -> None: ...
    def tick(self) -> None: ...


def source_bytes(job: FleetJob) -> int:
    """The source's size (0 when it cannot be read: the job will say why)."""
    try:
        return os.stat(job.source).st_size
    except OSError:
        return 0


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _lane_order(jobs: list[FleetJob]) -> list[list[FleetJob]]:
    lanes: dict[str, list[FleetJob]] = {}
    for job in jobs:
        lanes.setdefault(job.lane, []).append(job)
    ordered = sorted(
        enumerate(lanes.values()), key=lambda p: (-sum(source_bytes(j) for j in p[1]), p[0])
    )
    return [lane for _, lane in ordered]


def schedule(
    jobs: list[FleetJob],
    workers: int,
    task: Task,
    make_arg: Callable[[FleetJob], Any],
    on_died: Callable[[FleetJob, int | None], dict[str, Any]],
    watcher: Watcher | None = None,
) -> dict[str, dict[str, Any]]:
    """``task(make_arg(job), progress)`` for every job; results by job key."""
    results: dict[str, dict[str, Any]] = {}
    if not jobs:
        return results
    lanes = _lane_order(jobs)
    busy: set[int] = set()
    by_key = {j.key: j for j in jobs}
    with Pool(max(1, min(workers, len(lanes)))) as pool:
        while any(lanes) or busy:
            for i, lane in enumerate(lanes):
                if pool.free == 0:
                    break
                if lane and i not in busy:
                    job = lane.pop(0)
                    busy.add(i)
                    pool.submit((i, job.key), task, make_arg(job))
                    if watcher is not None:
                        watcher.started(job)
            for (i, key), what, payload in pool.events(0.25):
                job = by_key[key]
                if what == "progress":
                    if watcher is not None:
                        watcher.progress(job, *payload)
                    continue
                result = payload if what == "done" else on_died(job, payload)
                results[key] = result
                busy.discard(i)
                if watcher is not None:
                    watcher.finished(job, result)
            if watcher is not None:
                watcher.tick()
    return results
