"""The ``bbg-migrate hemera`` command against baselines measured in the same run.

    python benchmarks/hemera_cli.py                 # 4 files of 64 MB, one of 256 MB, 3 rounds
    python benchmarks/hemera_cli.py --mb 16 --long-mb 64 --repeat 5
    python benchmarks/hemera_cli.py --json

Inputs are random files in a temporary directory (removed at the end).  Each round times, in
turn (so every row of a round sees the same load):

* ``in-process hash``: ``hashing.hemera.hash`` of one file's bytes already in memory, one
  thread: the C core's serial sponge with no command, no reads (the baseline);
* ``command, 1 file`` and ``command, long input``: the command on one file / the long file;
* ``command, N files, 1 thread``: the command with ``BBG_MIGRATE_HEMERA_THREADS=1`` (one
  file at a time, as before several files were hashed at once);
* ``command, N files``: the command as it runs by default (every core);
* ``sha256sum x N, 1 / 2 at once``: what the machine's cores give right now (on a shared
  machine, often much less than the core count).

MB/s means 10^6 bytes per second of wall time.  Ratios: one-input rows against the
in-process hash; ``command, N files, 1 thread`` against ``command, 1 file``; ``command, N
files`` against ``command, N files, 1 thread`` (same start-up, same bytes): the scaling the
goal asks of several files (>= 1.8x on 2 cores); the second sha256sum row against the
first.  Every row reports min / median / max over the rounds: on a loaded machine the spread
is wide.  ``cores``: the median CPU seconds (this process and the commands it ran) per wall
second -- how many cores a row kept busy, which a loaded machine caps below the core count.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hashing import hemera

ROOT = Path(__file__).resolve().parent.parent


def command(*names: Path, threads: int | None = None) -> Callable[[], object]:
    env = dict(os.environ)
    env.pop("BBG_MIGRATE_HEMERA_THREADS", None)
    if threads is not None:
        env["BBG_MIGRATE_HEMERA_THREADS"] = str(threads)
    argv = [sys.executable, "-m", "migrate", "hemera", *map(str, names)]
    return lambda: subprocess.run(argv, env=env, check=True, capture_output=True, cwd=ROOT)


def sha256sum(names: list[Path], at_once: int) -> Callable[[], object]:
    tool = shutil.which("sha256sum")
    if tool is None:
        return lambda: None

    def run() -> None:
        groups = [names[k::at_once] for k in range(at_once)]
        procs = [subprocess.Popen([tool, *map(str, g)], stdout=subprocess.DEVNULL)
                 for g in groups]
        for p in procs:
            p.wait()

    return run


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and the children it waited for)."""
    def cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
            resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    c, t = cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t, cpu() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64, help="size of each of the files (10^6 B)")
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--long-mb", type=int, default=256, help="size of the long input")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bbg-hemera-bench-") as tmp:
        names = []
        for i in range(args.files):
            p = Path(tmp) / f"f{i}"
            p.write_bytes(os.urandom(args.mb * 10**6))
            names.append(p)
        long = Path(tmp) / "long"
        with open(long, "wb") as f:
            for _ in range(args.long_mb):
                f.write(os.urandom(10**6))
        one = names[0].read_bytes()
        n, size, long_size = args.files, args.mb * 10**6, args.long_mb * 10**6
        rows: list[tuple[str, int, Callable[[], object]]] = [
            ("in-process hash", size, lambda: hemera.hash(one)),
            ("command, 1 file", size, command(names[0])),
            (f"command, {n} files, 1 thread", n * size, command(*names, threads=1)),
            (f"command, {n} files", n * size, command(*names)),
            ("command, long input", long_size, command(long)),
            (f"sha256sum x {n}, 1 at once", n * size, sha256sum(names, 1)),
            (f"sha256sum x {n}, 2 at once", n * size, sha256sum(names, 2)),
        ]
        rates: dict[str, list[float]] = {name: [] for name, _, _ in rows}
        cores: dict[str, list[float]] = {name: [] for name, _, _ in rows}
        for _ in range(args.repeat):
            for name, nbytes, fn in rows:
                secs, cpu = timed(fn)
                rates[name].append(nbytes / secs / 1e6)
                cores[name].append(cpu / secs)
    med = {k: statistics.median(v) for k, v in rates.items()}
    against = {"command, 1 file": "in-process hash", "command, long input": "in-process hash",
               f"command, {n} files, 1 thread": "command, 1 file",
               f"command, {n} files": f"command, {n} files, 1 thread",
               f"sha256sum x {n}, 2 at once": f"sha256sum x {n}, 1 at once"}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    doc: dict[str, Any] = {
        "backend": hemera.BACKEND, "details": hemera.details(), "load_average_1min": load,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "rows": [{"what": k, "mb_s": v, "median_mb_s": med[k], "cores_used": cores[k],
                  "ratio": med[k] / med[against[k]] if k in against else None,
                  "against": against.get(k)} for k, v in rates.items()],
    }  # fmt: skip
    if args.json:
        print(json.dumps(doc, sort_keys=True))
        return
    print(f"hemera command: backend {doc['backend']} ({doc['details']}); {doc['cores']} cores, "
          f"load average {load}; {args.repeat} rounds; MB = 10^6 bytes")
    print(f"{'':<30} {'min':>7} {'median':>7} {'max':>7} MB/s  cores  ratio (medians)")
    for r in doc["rows"]:
        lo, hi = min(r["mb_s"]), max(r["mb_s"])
        ratio = f"{r['ratio']:.2f}x {r['against']}" if r["ratio"] else "baseline"
        used = statistics.median(r["cores_used"])
        print(f"{r['what']:<30} {lo:7.1f} {r['median_mb_s']:7.1f} {hi:7.1f}  {used:9.2f}  {ratio}")


if __name__ == "__main__":
    main()
