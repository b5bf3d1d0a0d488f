"""Benchmark: `run` throughput against a raw executemany load of the same rows into SQLite.

Both are measured in this one run, on the same file, each in its own child process (so the
peak RSS of each is its own):

* baseline -- read every row of the five tables with the same redb reader and load them
  with ``executemany`` into five WITHOUT ROWID tables (WAL, synchronous=FULL), one
  transaction per 512 rows, like a bare copy with no staging, checks or receipts;
* run -- the whole pipeline (preflight/inspect, seal, staging, validation, activation).

Prints rows/s of both, the ratio run/baseline (goal >= 0.5), the share of each stage of
``run`` and each peak RSS.  Stages: seal (the source's SHA-256), then into a new store (the
usual case here) preflight+stage (one pass checks the source and loads the store being
built), validate+activate (one transaction) and publish (fsync, rename); into an existing
store preflight, stage, validate, activate.

    python benchmarks/pipeline.py [--file cell.redb]   # default: the bundled demo store
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHILD = r"""
import json, resource, sqlite3, sys, time
from pathlib import Path
mode, src, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
t0 = time.perf_counter()
rows = 0
if mode == "baseline":
    from importers.redb import open_redb
    from migrate.cell_rules import DIGEST_ORDER
    conn = sqlite3.connect(work / "raw.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL"); conn.execute("PRAGMA synchronous=FULL")
    for t in DIGEST_ORDER:
        conn.execute(f"CREATE TABLE {t} (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
    with open_redb(src) as db:
        for t in DIGEST_ORDER:
            batch = []
            for kv in db.iter_table(t):
                batch.append(kv)
                if len(batch) == 512:
                    conn.execute("BEGIN"); conn.executemany(f"INSERT INTO {t} VALUES (?, ?)", batch)
                    conn.execute("COMMIT"); rows += len(batch); batch = []
            if batch:
                conn.execute("BEGIN"); conn.executemany(f"INSERT INTO {t} VALUES (?, ?)", batch)
                conn.execute("COMMIT"); rows += len(batch)
    conn.close()
else:
    from migrate import pipeline
    from migrate.pipeline import gate, stages
    # Each stage's wall time, by wrapping the functions ``run`` calls (no product change).
    shares = {}
    def timed(name, fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                shares[name] = shares.get(name, 0.0) + time.perf_counter() - t
        return wrapper
    gate.seal = timed("seal", gate.seal)
    gate.preflight = timed("preflight", gate.preflight)
    if hasattr(pipeline, "preflight"):
        pipeline.preflight = timed("preflight", pipeline.preflight)
    stages.seal_stage = timed("seal", stages.seal_stage)
    for name in ("stage", "validate", "activate"):
        setattr(stages, f"{name}_stage", timed(name, getattr(stages, f"{name}_stage")))
    try:  # a new destination: one pass checks and loads, one transaction seals to activates
        from migrate.pipeline import fresh
        from migrate.store import build
    except ImportError:  # a build without it (to measure "before")
        pass
    else:
        fresh.redb_report = timed("preflight+stage", fresh.redb_report)
        stages.activate_built = timed("validate+activate", stages.activate_built)
        build.Build.publish = timed("publish", build.Build.publish)
    out = pipeline.run(pipeline.Job(source=src, store=work / "bbg"))
    rows = sum(out.receipt["counts"]["rows"].values())
elapsed = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
doc = {"mode": mode, "rows": rows, "seconds": elapsed, "peak_rss_bytes": usage.ru_maxrss * 1024,
       "cpu_seconds": usage.ru_utime + usage.ru_stime}
if mode == "run":
    doc["stages"] = shares
print(json.dumps(doc))
"""


def measure(mode: str, src: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bbg-bench-") as work:
        res = subprocess.run(
            [sys.executable, "-c", CHILD, mode, str(src), work],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    doc: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="a legacy cell.redb (default: bundled demo)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = args.file
        if src is None:
            from migrate.demo import unpack_demo

            src = unpack_demo(Path(tmp))
        from migrate import backends

        print(f"file: {src} ({src.stat().st_size / 1e6:.1f} MB); readers: {backends.active()}")
        t = time.perf_counter()
        base = measure("baseline", src)
        run = measure("run", src)
        for doc in (base, run):
            print(
                f"{doc['mode']:>8}: {doc['rows']:,} rows in {doc['seconds']:.2f} s = "
                f"{doc['rows'] / doc['seconds']:,.0f} rows/s, "
                f"peak RSS {doc['peak_rss_bytes'] / 2**20:.0f} MiB, "
                f"CPU {doc['cpu_seconds']:.1f} s (all threads)"
            )
        stages: dict[str, float] = dict(run.get("stages", {}))
        stages["other"] = max(run["seconds"] - sum(stages.values()), 0.0)
        print(
            "  stages: "
            + ", ".join(
                f"{name} {sec:.2f} s ({100 * sec / run['seconds']:.0f}%)"
                for name, sec in stages.items()
            )
        )
        ratio = base["seconds"] / run["seconds"]
        total = time.perf_counter() - t
        print(f"ratio run/baseline throughput: {ratio:.2f} (goal >= 0.5); total {total:.1f} s")
        # On a shared machine the wall ratio follows the CPU each side gets; this one does not.
        cpu = base["cpu_seconds"] / run["cpu_seconds"]
        print(f"ratio of CPU time baseline/run: {cpu:.2f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
