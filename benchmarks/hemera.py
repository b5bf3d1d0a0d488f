"""Throughput of hemera (C core and pure-Python twin) against hashlib.sha256, same run.

    python benchmarks/hemera.py              # 1 MiB and 64 MiB; Python's 64 MiB extrapolated
    python benchmarks/hemera.py --python-full  # also time Python on 64 MiB (minutes)
    python benchmarks/hemera.py --quick      # 1 MiB and 8 MiB only
    python benchmarks/hemera.py --json       # one JSON document on stdout
    python benchmarks/hemera.py --reference PATH  # also time a reference `PATH hemera`

MB/s means 10^6 bytes per second.  Each figure is the best of ``--repeat`` runs on random
bytes (one run for inputs of 64 MiB and more), on one core (hemera is a serial sponge).
``c`` is the C core as this process uses it (the best permutation the CPU has: AVX-512,
AVX2 or plain C); ``c-avx2`` and ``c-scalar`` force the slower ones other CPUs get.
A ``--reference`` program reads frames (u32 LE length || bytes) on stdin and prints one
hex hash per frame; its time includes the pipe and process start.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from importers import hemera  # noqa: E402

MiB = 1 << 20


def best_seconds(fn: Callable[[bytes], object], data: bytes, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - t)
    return best


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def c_at(level: int) -> Callable[[bytes], object]:
    """The C core forced onto one of its slower permutations (what other CPUs get)."""
    from importers.hemera import _c

    def run(data: bytes) -> object:
        before = _c.simd_level()
        _c.use_simd(level)
        try:
            return _c.hash(data)
        finally:
            _c.use_simd(before)

    return run


def reference(tool: str) -> Callable[[bytes], object]:
    def run(data: bytes) -> object:
        frame = struct.pack("<I", len(data)) + data
        return subprocess.run([tool, "hemera"], input=frame, capture_output=True, check=True)

    return run


def measure(
    sizes: list[int], repeat: int, python_full: bool, tool: str | None
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    python_rate: float | None = None
    for size in sizes:
        data = os.urandom(size)
        reps = 1 if size >= 64 * MiB else repeat
        sha = size / best_seconds(sha256, data, reps) / 1e6
        rows.append({"size": size, "impl": "sha256", "mb_s": sha, "ratio": 1.0, "how": "measured"})
        impls: list[tuple[str, Callable[[bytes], object] | None]] = [
            ("c", hemera.c_impl.hash if hemera.c_impl else None)
        ]
        if hemera.c_impl is not None:
            from importers.hemera import _c

            impls += [(f"c-{_c.SIMD_LEVELS[lv]}", c_at(lv)) for lv in range(_c.BEST_LEVEL)]
        if tool:
            impls.append(("ref", reference(tool)))
        impls.append(("python", hemera.python_impl.hash))
        for name, impl in impls:
            if impl is None:
                rows.append({"size": size, "impl": name, "mb_s": None, "ratio": None,
                             "how": "not built"})
                continue
            if name == "python" and python_rate is not None and size > MiB and not python_full:
                # A serial sponge runs at a size-independent rate; minutes saved.
                rate, how = python_rate, f"extrapolated from {sizes[0] // MiB} MiB"
            else:
                rate = size / best_seconds(impl, data, 1 if name == "python" else reps)
                rate /= 1e6
                how = "measured"
                if name == "python" and python_rate is None:
                    python_rate = rate
            rows.append({"size": size, "impl": name, "mb_s": rate, "ratio": rate / sha,
                         "how": how})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 MiB and 8 MiB only")
    ap.add_argument("--python-full", action="store_true", help="time Python on every size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reference", metavar="PATH", help="reference program to time as well")
    args = ap.parse_args()
    sizes = [MiB, 8 * MiB] if args.quick else [MiB, 64 * MiB]
    rows = measure(sizes, args.repeat, args.python_full, args.reference)
    if args.json:
        simd = getattr(sys.modules.get("importers.hemera._c"), "SIMD", None)
        print(json.dumps({"active_backend": hemera.BACKEND, "c_permutation": simd,
                          "suite": hemera.SUITE, "rows": rows}, sort_keys=True))
        return
    simd = getattr(sys.modules.get("importers.hemera._c"), "SIMD", "-")
    print(f"hemera {hemera.SUITE}; active backend: {hemera.BACKEND} (C permutation: {simd});"
          " MB = 10^6 bytes")
    print(f"{'size':>7}  {'impl':<8} {'MB/s':>9}  {'x sha256':>9}  how")
    for r in rows:
        mb = f"{r['mb_s']:9.2f}" if isinstance(r["mb_s"], float) else f"{'-':>9}"
        ratio = f"{r['ratio']:9.4f}" if isinstance(r["ratio"], float) else f"{'-':>9}"
        size = int(str(r["size"])) // MiB
        print(f"{size:>3} MiB  {r['impl']:<8} {mb}  {ratio}  {r['how']}")


if __name__ == "__main__":
    main()
