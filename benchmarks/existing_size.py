"""Benchmark: `run` of a small cell.redb into stores holding more and more history.

The single pass into an existing BBG database compares the import's rows with the store's
(:class:`migrate.store.keyspace_aside._Existing`).  That comparison must cost what the import
brings, not what the store holds: a run of the same small source should take about as long
into a store of 2 million rows as into a new one (issue 29 goal 2 on big stores; before,
every run read the store's five tables whole).

In one run, each side in its own child process (``bbg-migrate run --json``): the small source
into a new store (the baseline), then into a copy of a store holding each ``--history-rows``
size (a generated cell.redb imported once into ``--cache`` and reused; copies are untimed).
Prints CPU seconds (user+sys of the child), wall time and peak RSS of each, the ratio
existing/new of CPU, whether every receipt counts the same rows read, and the new rows of each.

    python benchmarks/existing_size.py --cache DIR [--rows 20000] [--history-rows 200000,2000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_cell_store
import legacy_run  # history_store, copy_store, measure: the same child process and copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, required=True, help="where generated stores are kept")
    ap.add_argument("--rows", type=int, default=20_000, help="rows of the small source")
    ap.add_argument("--history-rows", default="200000,2000000",
                    help="sizes of the stores' history, comma-separated")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=2, help="runs of each side (best CPU kept)")
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    src = gen_cell_store.cached(args.rows, seed=4242, namespaces=5, cache=args.cache)[0]
    sizes = [int(x) for x in args.history_rows.split(",") if x]
    histories = {n: legacy_run.history_store(args.cache, n, 29) for n in sizes}
    print(f"source {src.name}: {args.rows:,} rows; load average {os.getloadavg()[0]:.1f}")
    results: dict[int, tuple[float, float, int, str]] = {}
    for n in [0, *sizes]:
        best = None
        for _ in range(args.repeat):
            work = Path(tempfile.mkdtemp(prefix="bbg-existing-size-", dir=args.cache))
            try:
                if n:
                    legacy_run.copy_store(histories[n], work / "bbg")
                got = legacy_run.measure(src, work / "bbg", "fjall", staged=False)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if best is None or got[1] < best[1]:
                best = got
        assert best is not None
        results[n] = best
        wall, cpu, rss, _ = best
        what = "a new store" if n == 0 else f"a store of {n:,} rows"
        ratio = "baseline" if n == 0 else f"{cpu / results[0][1]:.2f}x of new"
        print(f"into {what:>26}: {cpu:7.2f} s CPU {wall:7.2f} s wall  peak RSS "
              f"{rss / 1e6:5.0f} MB  {ratio}")  # fmt: skip
    # The rows each run read are the same source's; its new rows depend on what the store
    # held (the generator repeats some content), so they are printed, not compared.
    rows = {json.dumps(json.loads(r[3])["counts"]["rows"], sort_keys=True)
            for r in results.values()}  # fmt: skip
    fresh = [sum(json.loads(r[3])["counts"]["new_rows"].values()) for r in results.values()]
    print(f"same rows read in every receipt: {'yes' if len(rows) == 1 else 'NO'}; new rows "
          f"{', '.join(f'{n:,}' for n in fresh)}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
