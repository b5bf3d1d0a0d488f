"""Benchmark: a new keyspace's bulk build with the open segment's bloom hashes spilled past
``bloom.SPILL_KEYS`` (the default) against all of them held in memory, in one run.

    python benchmarks/bloom_spill.py                 # 1,500,000 rows of 32 B keys, 64 B values
    python benchmarks/bloom_spill.py --rows 3000000 --repeat 3

Each build runs in a child process (``build_keyspace`` into a temporary folder, rows made on
the fly in key order): prints its CPU seconds (user+sys, the rows' making included), wall
seconds and peak RSS (``VmHWM``), the best of ``--repeat``, then the ratios spilled/held.
Short rows are where the hashes weigh most (16 bytes a key against ~100 bytes of row).  The
two keyspaces' files are compared: they must be the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import hashlib, json, os, resource, sys, time
from pathlib import Path
from migrate.store.fjall import bloom, build_keyspace
rows, spill, out = int(sys.argv[1]), sys.argv[2] == "spill", Path(sys.argv[3])
if not spill:
    bloom.SPILL_KEYS = 1 << 62
def gen():  # ascending keys (a counter, then hash bytes), made as the build takes them
    for i in range(rows):
        key = b"%012d" % i + hashlib.sha256(b"%d" % i).digest()[:20]
        yield key, key * 2
t, c = time.perf_counter(), time.process_time()
build_keyspace(out, {"p": gen()}, created_at=1)
wall, cpu = time.perf_counter() - t, time.process_time() - c
with open("/proc/self/status") as status:  # the build's peak, before the files are read
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
digest = hashlib.sha256()
for f in sorted(p for p in out.rglob("*") if p.is_file()):
    digest.update(f.relative_to(out).as_posix().encode() + b"\0")
    with open(f, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
print(json.dumps({"cpu": cpu, "wall": wall, "peak": peak, "files": digest.hexdigest()}))
"""


def child(rows: int, mode: str) -> dict[str, float | str]:
    with tempfile.TemporaryDirectory(prefix="bbg-bloom-") as work:
        res = subprocess.run(
            [sys.executable, "-c", CHILD, str(rows), mode, str(Path(work) / "ks")],
            capture_output=True, text=True, cwd=ROOT, check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    doc: dict[str, float | str] = json.loads(res.stdout.strip().splitlines()[-1])
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_500_000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    best: dict[str, dict[str, float | str]] = {}
    for _ in range(args.repeat):
        for mode in ("held", "spill"):  # alternated, so both see the same load
            doc = child(args.rows, mode)
            if mode not in best or float(doc["cpu"]) < float(best[mode]["cpu"]):
                best[mode] = doc
    for mode, doc in best.items():
        print(f"{mode:>6}: {args.rows:,} rows, CPU {float(doc['cpu']):.2f} s, "
              f"wall {float(doc['wall']):.2f} s, peak RSS {float(doc['peak']) / 1e6:.1f} MB")
    held, spill = best["held"], best["spill"]
    same = "yes" if held["files"] == spill["files"] else "NO"
    print(f"spilled/held: CPU {float(spill['cpu']) / float(held['cpu']):.3f}x, peak RSS "
          f"{float(spill['peak']) / float(held['peak']):.3f}x "
          f"({(float(held['peak']) - float(spill['peak'])) / 1e6:+.1f} MB saved); "
          f"same files: {same}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
