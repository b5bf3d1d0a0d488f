"""Benchmark: fleet throughput with 1 and 2 workers, against plain sequential runs.

Builds a fleet of N copies of a cell store (default: the bundled demo store, 215 rows; or
``--file cell.redb``) under a temporary directory, each into a store of its own, and measures
in this one run:

* baseline -- one process calling ``migrate.api.run`` for every job, one after another (no
  pool, no manifest, no reports);
* fleet, 1 worker and fleet, 2 workers -- ``bbg-migrate fleet run --workers W --report-dir``
  as an operator runs it (process start-up, pool start-up and report files included).

Every measurement starts from fresh stores.  Prints jobs/s and rows/s of each and the ratios
fleet/baseline and 2 workers/1 worker.  The machine's other load shows in the numbers: run
it on a quiet machine, more than once.

    python benchmarks/fleet.py [--jobs 40] [--file cell.redb]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "migrate" / "demo" / "cell-small.redb.gz"


def build(work: Path, jobs: int, data: bytes) -> Path:
    for i in range(jobs):
        cell = work / "nodes" / f"n{i:04d}" / "cell.redb"
        cell.parent.mkdir(parents=True)
        cell.write_bytes(data)
    manifest = work / "fleet.toml"
    manifest.write_text('[[jobs]]\nsource = "nodes/*/cell.redb"\nstore = "bbg/{node}"\n')
    return manifest


def baseline(work: Path) -> tuple[float, int]:
    child = (
        "import json, sys, time\n"
        "from pathlib import Path\n"
        "from migrate import api\n"
        "work = Path(sys.argv[1]); t0 = time.perf_counter(); rows = 0\n"
        "for cell in sorted(work.glob('nodes/*/cell.redb')):\n"
        "    out = api.run(api.Job(source=cell, store=work / 'bbg' / cell.parent.name))\n"
        "    rows += sum(out.receipt['counts']['rows'].values())\n"
        "print(json.dumps({'seconds': time.perf_counter() - t0, 'rows': rows}))\n"
    )
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", child, str(work)], capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - t0
    return wall, int(json.loads(res.stdout)["rows"])


def fleet(work: Path, manifest: Path, workers: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "fleet", "run", str(manifest), "--workers",
         str(workers), "--report-dir", str(work / f"reports-{workers}"), "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"fleet run failed ({res.returncode}): {res.stderr}")
    doc = json.loads(res.stdout)
    return wall, int(doc["totals"]["rows"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--file", type=Path, help="a cell.redb to copy (default: the demo store)")
    args = ap.parse_args()
    data = args.file.read_bytes() if args.file else gzip.decompress(DEMO.read_bytes())
    results: dict[str, tuple[float, int]] = {}
    with tempfile.TemporaryDirectory(prefix="bbg-fleet-bench-") as tmp:
        work = Path(tmp)
        manifest = build(work, args.jobs, data)
        results["baseline (sequential api.run)"] = baseline(work)
        for workers in (1, 2):
            shutil.rmtree(work / "bbg")
            results[f"fleet run --workers {workers}"] = fleet(work, manifest, workers)
    print(f"{args.jobs} jobs of {len(data):,} bytes each")
    print(f"{'':34} {'seconds':>8} {'jobs/s':>8} {'rows/s':>9}")
    for name, (secs, rows) in results.items():
        print(f"{name:34} {secs:8.2f} {args.jobs / secs:8.2f} {rows / secs:9.0f}")
    base = results["baseline (sequential api.run)"][0]
    one, two = results["fleet run --workers 1"][0], results["fleet run --workers 2"][0]
    print(f"fleet 1 worker / baseline (throughput): {base / one:.2f}")
    print(f"fleet 2 workers / baseline (throughput): {base / two:.2f}")
    print(f"2 workers / 1 worker (throughput): {one / two:.2f}")


if __name__ == "__main__":
    main()
