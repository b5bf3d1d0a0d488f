"""Speed and memory of the Fjall reader and writer, against baselines measured in the same
run.

    python benchmarks/fjall.py                      # ~512 MB keyspace in a temporary dir
    python benchmarks/fjall.py --mb 64 --repeat 1   # quicker
    python benchmarks/fjall.py --shape small        # 100-byte values: per-row costs
    python benchmarks/fjall.py --json               # one JSON document on stdout

Rows: 16-byte keys in order, values of 64..4,096 bytes (``--shape mixed``, the default) or
100 bytes (``--shape small``), sliced from a random pool so LZ4 cannot shrink them much;
``--mb`` is the key+value bytes.  Everything is generated into a temporary directory (or
``--dir``), never committed, and removed unless ``--keep``.  Measured, in this order, each
step in a fresh child process (peak RSS = its VmHWM):

(a) ``write+fsync``: the same key+value bytes written to one file in 1 MiB chunks, fsynced
    (the write floor);
(b) ``build``: :func:`build_keyspace` with the C twin (LZ4, checksums, index, bloom
    filters, fsyncs); ``build-python`` the same with the pure-Python twin on at most
    ``--python-mb`` of the rows;
(c) ``cat``: every file of the keyspace read in 1 MiB chunks (the read floor; it also warms
    the page cache for what follows);
(d) ``scan-c`` and ``scan-python``: every row of the keyspace through ``scan_runs``,
    counting rows and key+value bytes in a Python loop, every block checksum verified (the
    open is timed apart); best of ``--repeat``;
(e) ``redb-c``: the same rows written to a redb file (the test writer) and read by our redb
    reader's C path (``iter_batches``), best of ``--repeat``.

Reported: rows/s and MB/s (10^6 bytes of keys+values per second), the ratios scan-c/cat,
build/write+fsync and scan-c/redb-c, and the goals (scan >= 1 GB/s from page cache with
the C twin, bulk write >= 0.5x write+fsync, RSS <= 150 MB).  Numbers are measured, never
asserted (tests/benchmarks runs this script on a tiny size only to prove it works).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MB = 1_000_000
POOL = 1 << 20


def _peak_kib() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rows(total: int, shape: str, seed: int = 1) -> Iterator[tuple[bytes, bytes]]:
    """Rows of about ``total`` key+value bytes (deterministic)."""
    rng = random.Random(seed)
    pool = rng.randbytes(POOL + 4096)
    done = i = 0
    while done < total:
        size = 100 if shape == "small" else rng.randrange(64, 4097)
        off = rng.randrange(POOL)
        value = pool[off : off + size]
        key = b"%016d" % i
        yield key, value
        done += 16 + size
        i += 1


def _children(args: argparse.Namespace, step: str, *extra: str) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", step, "--dir",
           str(args.dir), "--mb", str(args.mb), "--shape", args.shape, "--repeat",
           str(args.repeat), "--python-mb", str(args.python_mb), *extra]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{step} failed:\n{res.stderr}")
    doc: dict[str, Any] = json.loads(res.stdout.splitlines()[-1])
    return doc


def worker(step: str, args: argparse.Namespace) -> dict[str, Any]:
    total = int(args.mb * MB)
    work = Path(args.dir)
    if step == "raw":
        path = work / "raw.bin"
        t = time.perf_counter()
        size = 0
        with open(path, "wb", buffering=0) as fh:
            buf = bytearray()
            for key, value in rows(total, args.shape):
                buf += key
                buf += value
                if len(buf) >= 1 << 20:
                    fh.write(buf)
                    size += len(buf)
                    buf = bytearray()
            fh.write(buf)
            size += len(buf)
            os.fsync(fh.fileno())
        seconds = time.perf_counter() - t
        path.unlink()
        return {"seconds": seconds, "bytes": size}
    if step in ("build", "build-python"):
        from migrate.store.fjall import backend
        from migrate.store.fjall.writer import build_keyspace

        backend.set_default("c" if step == "build" else "python")
        limit = total if step == "build" else min(total, int(args.python_mb * MB))
        target = work / ("ks" if step == "build" else "ks-python")
        t = time.perf_counter()
        report = build_keyspace(target, {"data": rows(limit, args.shape)})
        seconds = time.perf_counter() - t
        files = sum(p.stat().st_size for p in (target / "partitions").rglob("*") if p.is_file())
        if step == "build-python":
            shutil.rmtree(target)
        return {"seconds": seconds, "rows": report["rows"], "bytes": report["key_value_bytes"],
                "files": files, "segments": len(report["partitions"]["data"]["segments"]),
                "peak_kib": _peak_kib()}  # fmt: skip
    if step == "cat":
        size = 0
        t = time.perf_counter()
        for p in sorted((work / "ks").rglob("*")):
            if p.is_file():
                with open(p, "rb", buffering=0) as fh:
                    while chunk := fh.read(1 << 20):
                        size += len(chunk)
        return {"seconds": time.perf_counter() - t, "bytes": size}
    if step in ("scan-c", "scan-python"):
        from migrate.store.fjall import open_keyspace

        twin = step.removeprefix("scan-")
        best = None
        for _ in range(args.repeat):
            t = time.perf_counter()
            ks = open_keyspace(work / "ks", backend_name=twin)
            opened = time.perf_counter()
            n = size = 0
            for run in ks.scan_runs("data"):
                n += len(run)
                for key, value in run:
                    size += len(key) + len(value)
            done = time.perf_counter()
            ks.close()
            if best is None or done - opened < best["seconds"]:
                best = {"seconds": done - opened, "open_seconds": opened - t, "rows": n,
                        "bytes": size}  # fmt: skip
        assert best is not None
        return {**best, "peak_kib": _peak_kib()}
    if step == "redb-write":
        from tests.support.redb_writer import RedbWriter

        with RedbWriter(work / "same.redb") as w:
            w.add_table("data", rows(total, args.shape))
        return {"bytes": (work / "same.redb").stat().st_size}
    if step == "redb-c":
        from importers.redb import open_redb

        best = None
        for _ in range(args.repeat):
            db = open_redb(work / "same.redb", backend="c")
            t = time.perf_counter()
            n = size = 0
            for batch in db.iter_batches("data"):
                n += len(batch)
                for key, value in batch:
                    size += len(key) + len(value)
            seconds = time.perf_counter() - t
            db.close()
            if best is None or seconds < best["seconds"]:
                best = {"seconds": seconds, "rows": n, "bytes": size}
        assert best is not None
        return {**best, "peak_kib": _peak_kib()}
    raise SystemExit(f"unknown step {step}")


def _rate(doc: dict[str, Any]) -> str:
    rows = f"{doc['rows'] / doc['seconds']:>12,.0f} rows/s" if "rows" in doc else " " * 19
    return f"{doc['seconds']:8.3f} s  {doc['bytes'] / doc['seconds'] / MB:9.1f} MB/s  {rows}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=512, help="key+value megabytes (10^6)")
    ap.add_argument("--shape", choices=["mixed", "small"], default="mixed")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python-mb", type=float, default=64)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return
    own = args.dir is None
    args.dir = Path(tempfile.mkdtemp(prefix="bbg-fjall-bench-")) if own else args.dir
    args.dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"mb": args.mb, "shape": args.shape, "dir": str(args.dir)}
    try:
        for step in ("raw", "build", "build-python", "cat", "scan-c", "scan-python",
                     "redb-write", "redb-c"):  # fmt: skip
            print(f"... {step}", file=sys.stderr, flush=True)
            out[step] = _children(args, step)
    finally:
        if own and not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    ratios = {
        "scan_c_vs_cat": out["cat"]["seconds"] / out["scan-c"]["seconds"],
        "build_vs_write_fsync": out["raw"]["seconds"] / out["build"]["seconds"],
        "scan_c_vs_redb_c": out["redb-c"]["seconds"] / out["scan-c"]["seconds"],
        "scan_c_vs_python": out["scan-python"]["seconds"] / out["scan-c"]["seconds"],
    }
    out["ratios"] = ratios
    peak = max(out[s]["peak_kib"] for s in ("build", "scan-c", "scan-python")) / 1024
    scan_gbs = out["scan-c"]["bytes"] / out["scan-c"]["seconds"] / 1e9
    out["goals"] = {
        "scan_c_gb_per_s": scan_gbs, "scan_goal_met": scan_gbs >= 1.0,
        "build_goal_met": ratios["build_vs_write_fsync"] >= 0.5,
        "peak_rss_mib": peak, "rss_goal_met": peak * 1.048576 <= 150,
    }  # fmt: skip
    try:
        out["load_average"] = os.getloadavg()
    except OSError:
        pass
    if args.json:
        print(json.dumps(out, indent=2))
        return
    b = out["build"]
    print(f"keyspace: {b['rows']:,} rows, {b['bytes'] / MB:,.1f} MB of keys+values "
          f"({args.shape}), {b['files'] / MB:,.1f} MB of segment files, {b['segments']} segments")
    for step in ("raw", "build", "build-python", "cat", "scan-c", "scan-python", "redb-c"):
        extra = ""
        if "peak_kib" in out[step]:
            extra = f"  peak RSS {out[step]['peak_kib'] / 1024:6.1f} MiB"
        if "open_seconds" in out[step]:
            extra += f"  (open {out[step]['open_seconds'] * 1000:.1f} ms)"
        print(f"{step:>13}: {_rate(out[step])}{extra}")
    print(f"ratio scan-c/cat {ratios['scan_c_vs_cat']:.2f}  build/write+fsync "
          f"{ratios['build_vs_write_fsync']:.2f}  scan-c/redb-c {ratios['scan_c_vs_redb_c']:.2f}"
          f"  scan-c/scan-python {ratios['scan_c_vs_python']:.2f}")
    g = out["goals"]
    print(f"goals: scan {scan_gbs:.2f} GB/s (>= 1: {'met' if g['scan_goal_met'] else 'NOT met'})"
          f"; bulk write {ratios['build_vs_write_fsync']:.2f}x write+fsync (>= 0.5: "
          f"{'met' if g['build_goal_met'] else 'NOT met'}); peak RSS {peak:.1f} MiB (<= 150 "
          f"MB: {'met' if g['rss_goal_met'] else 'NOT met'}); load average "
          f"{' '.join(f'{x:.2f}' for x in out.get('load_average', ()))}")


if __name__ == "__main__":
    main()
