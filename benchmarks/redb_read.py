"""Full-scan speed of the redb reader (C path and pure-Python path) against the I/O floor and
the native crate, on one file, in one run.

    python benchmarks/redb_read.py --file F
    python benchmarks/redb_read.py --file F --native CMD
    python benchmarks/redb_read.py --file F --json      # one JSON document on stdout

``F`` is any redb file; the workload that matters is a cell store, e.g. 1,000,000 rows from
``benchmarks/gen_cell_store.py``.  ``CMD`` is a reference program built on your machine from
the real redb crate (none is shipped, and none may be committed): ``CMD bench F`` opens
``F``, iterates every entry of every table (``&[u8]`` keys and values) and prints one JSON
line with ``entries``, ``key_value_bytes``, ``seconds`` (the scan, open excluded),
``entries_per_s``, ``mb_per_s`` and ``open_s``.  The crate may repair a file on its first
open (so give it a copy, and run it once before measuring).  Measured, in this order:

(a) ``read``: the file's bytes read once in 1 MiB chunks (the I/O floor; it also warms the
    page cache for what follows);
(d) ``native``: ``CMD bench F`` (the real crate's own full scan, JSON; open time excluded);
(b) ``c`` and (c) ``python``: every (key, value) of every table through ``iter_table``, in a
    fresh child process each, counting entries and key+value bytes in a Python loop, every
    page verified; the open (header, commit selection, table tree) is timed apart, as the
    native figure excludes it.  ``*-batches`` is the same scan through ``iter_batches`` (what
    ``bbg-migrate redb scan`` does), summing every key's and value's length in Python;
    ``*-deliver`` is ``iter_batches`` alone (every key and value delivered as Python bytes,
    only the lists counted): the reader's own speed, which is what the native figure is.

entries/s and MB/s (10^6 bytes of keys+values per second) for each; the ratios (b)/(d) and
(c)/(d); and each child's RSS before and after the scan and its peak (the reader reads pages
with pread and keeps none, so RSS does not grow with the file).  Timings are the best of
``--repeat`` runs (the native program's too).  The reference program is a development
tool: nothing here is needed by the project itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from itertools import chain
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MB = 1_000_000


def _status() -> dict[str, int]:
    """VmRSS and VmHWM (peak) of this process in KiB (Linux)."""
    found: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    found[key] = int(value.split()[0])
    except OSError:
        pass
    return found


def read_floor(path: Path) -> dict[str, Any]:
    size = 0
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(1 << 20):
            size += len(chunk)
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "file_mb_per_s": size / seconds / MB, "file_size": size}


def worker(path: Path, backend: str, repeat: int) -> dict[str, Any]:
    """Runs in a child process: open, then scan every table (best of ``repeat``)."""
    from importers.redb import open_redb

    t = time.perf_counter()
    db = open_redb(path, backend=backend)
    names = [info.name for info in db.tables()]
    open_s = time.perf_counter() - t
    before = _status()
    best: dict[str, float] = {}
    entries = size = 0
    for _ in range(repeat):
        t = time.perf_counter()
        entries = size = 0
        for name in names:
            for key, value in db.iter_table(name):
                entries += 1
                size += len(key) + len(value)
        best["iter"] = min(best.get("iter", float("inf")), time.perf_counter() - t)
        t = time.perf_counter()
        batch_entries = 0
        for name in names:
            for batch in db.iter_batches(name):
                batch_entries += len(batch)
                sum(map(len, chain.from_iterable(batch)))
        best["batches"] = min(best.get("batches", float("inf")), time.perf_counter() - t)
        assert batch_entries == entries
        t = time.perf_counter()
        batch_entries = 0
        for name in names:
            for batch in db.iter_batches(name):
                batch_entries += len(batch)
        best["deliver"] = min(best.get("deliver", float("inf")), time.perf_counter() - t)
        assert batch_entries == entries
    after = _status()
    db.close()
    return {
        "backend": db.backend,
        "open_s": open_s,
        "entries": entries,
        "key_value_bytes": size,
        "iter_s": best["iter"],
        "batches_s": best["batches"],
        "deliver_s": best["deliver"],
        "rss_before_kib": before.get("VmRSS"),
        "rss_after_kib": after.get("VmRSS"),
        "rss_peak_kib": after.get("VmHWM"),
    }


def child(path: Path, backend: str, repeat: int) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("BBG_MIGRATE_PURE", None)
    res = subprocess.run(
        [
            sys.executable,
            __file__,
            "--file",
            str(path),
            "--worker",
            backend,
            "--repeat",
            str(repeat),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr else "failed"}
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def native(cmd: str, path: Path, repeat: int) -> dict[str, Any]:
    """``CMD bench FILE``, best (fastest scan) of ``repeat`` runs, as our readers get."""
    best: dict[str, Any] = {}
    for _ in range(max(1, repeat)):
        res = subprocess.run([cmd, "bench", str(path)], capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            return {"error": res.stderr.strip() or f"exit {res.returncode}"}
        doc: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
        if not best or doc["entries_per_s"] > best["entries_per_s"]:
            best = doc
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--file", required=True, type=Path, help="the redb file to scan")
    ap.add_argument("--native", help="reference program: `CMD bench FILE` prints JSON")
    ap.add_argument("--repeat", type=int, default=1, help="best of N scans per reader")
    ap.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ap.add_argument("--worker", choices=["c", "python"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.file, args.worker, args.repeat)))
        return 0

    from importers.redb import backend

    doc: dict[str, Any] = {"file": str(args.file), "read": read_floor(args.file)}
    if args.native:
        doc["native"] = native(args.native, args.file, args.repeat)
    for name in ("c", "python"):
        if name in backend.available():
            doc[name] = child(args.file, name, args.repeat)
    rows: list[tuple[str, float | None, float | None, str]] = []
    nat = doc.get("native", {})
    nat_rate = nat.get("entries_per_s")
    rows.append(("read (I/O floor)", None, doc["read"]["file_mb_per_s"], "MB/s of file bytes"))
    if nat_rate:
        rows.append(("native redb", nat_rate, nat.get("mb_per_s"), f"open {nat.get('open_s')} s"))
    ratios: dict[str, float] = {}
    for name in ("c", "python"):
        r = doc.get(name)
        if not r or "error" in r:
            continue
        for how in ("iter", "batches", "deliver"):
            seconds = r[f"{how}_s"]
            rate = r["entries"] / seconds
            r[f"{how}_entries_per_s"] = rate
            r[f"{how}_mb_per_s"] = r["key_value_bytes"] / seconds / MB
            label = name if how == "iter" else f"{name}-{how}"
            note = (
                f"open {r['open_s']:.3f} s; RSS {r['rss_before_kib'] / 1024:.1f} -> "
                f"{r['rss_after_kib'] / 1024:.1f} MiB, peak {r['rss_peak_kib'] / 1024:.1f} MiB"
                if how == "iter" and r.get("rss_before_kib")
                else ""
            )
            rows.append((label, rate, r[f"{how}_mb_per_s"], note))
            if nat_rate:
                ratios[f"{label}/native"] = rate / nat_rate
    doc["ratios"] = ratios
    if args.json:
        print(json.dumps(doc, sort_keys=True))
        return 0
    print(f"{args.file}: {doc['read']['file_size']:,} bytes")
    print(f"{'':22} {'entries/s':>12} {'MB/s':>9}")
    for label, rate, mbs, note in rows:
        shown = f"{rate:12,.0f}" if rate else f"{'':12}"
        print(f"{label:22} {shown} {mbs or 0:9.1f}  {note}")
    if nat.get("error"):
        print(f"native: failed: {nat['error']}")
    for name in ("c", "python"):
        if doc.get(name, {}).get("error"):
            print(f"{name}: failed: {doc[name]['error']}")
    for label, ratio in ratios.items():
        print(f"ratio {label:18} {ratio:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
