"""Benchmark: peak RSS of `run` across source sizes (issue 29 goal 6: flat, <= 150 MB from a
10 MB to a 10 GB source), into a new store and into an existing non-empty one.

    python benchmarks/rss_sizes.py                        # ~10 MB, ~100 MB, ~500 MB, ~1 GB
    python benchmarks/rss_sizes.py --sizes 10,3500,10000  # MB (10^6 bytes) each, approximate
    python benchmarks/rss_sizes.py --cache DIR --modes existing

For each size a legacy cell store is generated (``benchmarks/gen_cell_store.py``: about
580 bytes a row, so ~1.7M rows for 1 GB and ~17M for 10 GB; a source above 4 GiB spans
several redb regions; once, into the cache outside the repository that
``benchmarks/pipeline.py --rows`` uses, and reused afterwards; it needs about twice the
source's size of free disk while it is generated), then ``run`` migrates it in a child
process whose peak RSS is its own (``VmHWM``: ``ru_maxrss`` would also hold the parent's
RSS at the spawn; stores are generated in a child process for the same reason):

* new -- into a new store (built aside and published by a rename);
* existing -- into a store that already holds another import (on Fjall the single pass:
  segments written aside and published into the keyspace), whose memory must be bounded
  as well.

Prints, for each: file size, rows, rows/s, CPU seconds (user+sys, all threads), peak RSS;
then the ratio largest/smallest peak RSS of each path and whether every peak is within the
goal.  Nothing is committed or written into the repository.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_cell_store
import pipeline  # benchmarks/pipeline.py: the child process that runs `run`

BYTES_PER_ROW = 580  # what the generator writes on average (cells-large shape)
GOAL_BYTES = 150 * 10**6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,500,1000",
                    help="source sizes in MB, comma-separated (default 10,100,500,1000)")
    ap.add_argument("--cache", type=Path, help="where generated stores are kept")
    ap.add_argument("--seed", type=int, default=239000)
    ap.add_argument("--modes", default="new,existing",
                    help="which paths, comma-separated: new, existing (default both)")
    ap.add_argument("--no-existing", action="store_true", help="the same as --modes new")
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    start = time.perf_counter()
    chosen = {m.strip() for m in args.modes.split(",") if m.strip()}
    if args.no_existing:
        chosen.discard("existing")
    if not chosen or chosen - {"new", "existing"}:
        ap.error("--modes takes new and/or existing")
    prefill = None
    if "existing" in chosen:
        prefill = gen_cell_store.cached(2000, seed=args.seed + 1, namespaces=5, cache=args.cache)[0]
    modes = (["run"] if "new" in chosen else []) + (["existing"] if prefill else [])
    peaks: dict[str, list[int]] = {m: [] for m in modes}
    print(f"{'path':>8} {'source MB':>10} {'rows':>11} {'rows/s':>9} {'CPU s':>8} "
          f"{'peak RSS MB':>12}")  # fmt: skip
    for mb in sizes:
        rows = max(100, round(mb * 10**6 / BYTES_PER_ROW))
        src, _ = gen_cell_store.cached(rows, seed=args.seed, cache=args.cache)
        size = src.stat().st_size
        for mode in modes:
            first = prefill if mode == "existing" else None
            doc: dict[str, Any] = pipeline.measure(mode, src, first)
            peaks[mode].append(doc["peak_rss_bytes"])
            name = "new" if mode == "run" else mode
            print(f"{name:>8} {size / 1e6:10.1f} {doc['rows']:11,} "
                  f"{doc['rows'] / doc['seconds']:9,.0f} {doc['cpu_seconds']:8.1f} "
                  f"{doc['peak_rss_bytes'] / 1e6:12.1f}", flush=True)  # fmt: skip
    ok = True
    for mode in modes:
        values = peaks[mode]
        name = "new" if mode == "run" else mode
        worst = max(values)
        ok = ok and worst <= GOAL_BYTES
        print(f"{name}: peak RSS largest/smallest source {values[-1] / values[0]:.2f}x "
              f"({values[0] / 1e6:.0f} -> {values[-1] / 1e6:.0f} MB); max {worst / 1e6:.0f} MB "
              f"(goal <= {GOAL_BYTES / 1e6:.0f} MB: {'met' if worst <= GOAL_BYTES else 'NOT met'})")
    verdict = "all within the goal" if ok else "goal NOT met"
    print(f"{verdict}; total {time.perf_counter() - start:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
