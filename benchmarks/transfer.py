"""Benchmark: `transfer` (BBG → BBG) against `run` (cell.redb → BBG) on the same rows.

Both are measured in this one run, each in its own child process:

* run -- the whole pipeline from the legacy cell.redb into a new store A;
* transfer -- the whole sealed transfer of store A into a new store B (read and validate the
  source, seal, reserve, bounded pages with their cursor, validation, activation).

Prints rows/s and MB/s (key+value bytes) of each and the ratio transfer/run.  The numbers
are noisy on a shared machine; compare the ratio, not the absolute rates.

    python benchmarks/transfer.py [--file cell.redb] [--repeat N]   # default: the demo store
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, shutil, sys, time
from pathlib import Path
from migrate import api
mode, src, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
t0 = time.perf_counter()
if mode == "run":
    out = api.run(api.Job(source=src, store=work / "a"))
    rows = sum(out.receipt["counts"]["rows"].values())
    nbytes = None
else:
    shutil.rmtree(work / "b", ignore_errors=True)
    out = api.transfer(api.TransferJob(source=work / "a", store=work / "b"))
    rows = sum(out.receipt["counts"]["rows"].values())
    nbytes = out.receipt["counts"]["key_value_bytes"]
elapsed = time.perf_counter() - t0
print(json.dumps({"mode": mode, "rows": rows, "bytes": nbytes, "seconds": elapsed}))
"""


def measure(mode: str, src: Path, work: Path) -> dict[str, float]:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(src), str(work)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    doc: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="a legacy cell.redb (default: bundled demo)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is shown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bbg-bench-") as tmp:
        src = args.file
        if src is None:
            from migrate.demo import unpack_demo

            src = unpack_demo(Path(tmp))
        print(f"file: {src} ({src.stat().st_size / 1e6:.1f} MB)")
        t = time.perf_counter()
        best: dict[str, dict[str, float]] = {}
        for i in range(args.repeat):
            work = Path(tmp) / f"w{i}"
            work.mkdir()
            run = measure("run", src, work)
            moved = measure("transfer", src, work)
            run["bytes"] = moved["bytes"]  # the same rows: the same key+value bytes
            for doc in (run, moved):
                mode = str(doc["mode"])
                if mode not in best or doc["seconds"] < best[mode]["seconds"]:
                    best[mode] = doc
        for mode in ("run", "transfer"):
            doc = best[mode]
            print(
                f"{mode:>9}: {doc['rows']:,.0f} rows, {doc['bytes'] / 1e6:.1f} MB in "
                f"{doc['seconds']:.2f} s = {doc['rows'] / doc['seconds']:,.0f} rows/s, "
                f"{doc['bytes'] / 1e6 / doc['seconds']:.1f} MB/s"
            )
        ratio = best["run"]["seconds"] / best["transfer"]["seconds"]
        print(f"ratio transfer/run throughput: {ratio:.2f} (total {time.perf_counter() - t:.1f} s)")


if __name__ == "__main__":
    main()
