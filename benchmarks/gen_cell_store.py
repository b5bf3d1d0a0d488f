"""Generate a valid legacy cell store (redb) for benchmarks: by default ~1,000,000 rows.

    python benchmarks/gen_cell_store.py OUT.redb                 # ~1M rows, 50 namespaces
    python benchmarks/gen_cell_store.py OUT.redb --rows 200000
    python benchmarks/gen_cell_store.py OUT.redb --writes 239000 --namespaces 50 --seed 239000
    python benchmarks/gen_cell_store.py OUT.redb --json          # the summary as JSON

The rows have the shape of ``../shared/tools/cell-fixtures cells-large`` (issue 17's 1M-row
store): see ``tests/support/cell_store.py`` for what is generated and how it differs.  The
store is generated, never committed, and nothing here needs ``../shared/tools``.  Other
benchmarks import :func:`tests.support.cell_store.generate` directly.  Uses the C hemera core
when it is built (the pure-Python fallback works but is some 400x slower on the Blobs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from importers import hemera  # noqa: E402
from tests.support.cell_store import generate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("out", type=Path, help="the redb file to write (replaced if it exists)")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--rows", type=int, help="stop at this many rows (default 1,000,000)")
    size.add_argument("--writes", type=int, help="exactly this many application writes")
    ap.add_argument("--namespaces", type=int, default=50)
    ap.add_argument("--seed", type=int, default=239000)
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    rows = args.rows if args.rows is not None or args.writes is not None else 1_000_000

    def progress(writes: int, rows: int) -> None:
        if not args.json and writes % (100 * 1024) < 1024:
            print(f"  {writes:,} writes, {rows:,} rows", file=sys.stderr)

    summary = generate(
        args.out, rows=rows if args.writes is None else None, writes=args.writes,
        namespaces=args.namespaces, seed=args.seed, progress=progress,
    )
    doc = summary.to_json()
    doc["hemera_backend"] = hemera.BACKEND
    if args.json:
        print(json.dumps(doc, sort_keys=True))
        return 0
    print(f"wrote {doc['path']}: {doc['total_rows']:,} rows ({doc['writes']:,} writes, "
          f"{doc['namespaces']} namespaces), {doc['file_size']:,} bytes in "
          f"{doc['seconds']:.1f} s = {doc['rows_per_s']:,} rows/s (hemera: {hemera.BACKEND})")
    for table, count in doc["rows"].items():
        print(f"  {table:26} {count:>10,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
