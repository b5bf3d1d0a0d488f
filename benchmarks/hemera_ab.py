"""One long input through hemera's C core: this tree's build against another revision's, same run.

    python benchmarks/hemera_ab.py                    # against main, a 64 MB input, 3 rounds
    python benchmarks/hemera_ab.py --base REV --mb 128 --repeat 5

The other revision's ``hemera.c`` (with the headers it includes) is taken from git and built
with cffi into a temporary directory as its own module; this tree's is the installed
extension.  Rounds alternate between the two, so both see the same load.  Four rows, each the
best user CPU time over the rounds: each build in memory (one C call), and each through the
command's path (the file read in 1 MiB chunks, one C call each: this tree's
``migrate.probe.hashes.file_digest``, for the base the same loop on its own library).  The
ratios base/this are what to compare on a shared machine; the digests must agree.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hashing.hemera import _c
from hashing.hemera._build import CDEF
from migrate.probe.hashes import file_digest

ROOT = Path(__file__).resolve().parent.parent

SOURCES = ("hemera.c", "hemera_simd.h", "hemera_lanes.h")


def build_base(rev: str, tmp: Path) -> Any:
    """The revision's C core as a cffi module (``.ffi``, ``.lib``), set up."""
    from cffi import FFI

    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:hashing/hemera/{name}"],
                               capture_output=True, check=False)
        if shown.returncode == 0:  # older revisions had fewer headers
            (src / name).write_bytes(shown.stdout)
    ffi = FFI()
    ffi.cdef(CDEF)
    ffi.set_source("hemera_base", (src / "hemera.c").read_text(encoding="utf-8"),
                   include_dirs=[str(src)], extra_compile_args=["-O3"])
    ffi.compile(tmpdir=str(tmp), verbose=False)
    sys.path.insert(0, str(tmp))
    module = importlib.import_module("hemera_base")
    module.lib.hemera_setup()
    return module


def user_seconds(fn: Callable[[], bytes]) -> tuple[float, bytes]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    digest = fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime - before, digest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="the git revision to compare with")
    ap.add_argument("--mb", type=int, default=64, help="input size (10^6 bytes)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bbg-hemera-ab-") as tmp_name:
        tmp = Path(tmp_name)
        base = build_base(args.base, tmp)
        ffi, lib = base.ffi, base.lib
        path = tmp / "input"
        path.write_bytes(os.urandom(args.mb * 10**6))
        data = path.read_bytes()

        def base_memory() -> bytes:
            out = ffi.new("char[]", 32)
            lib.hemera_hash(ffi.from_buffer(data), len(data), out)
            return bytes(ffi.buffer(out))

        def base_command() -> bytes:
            ctx = ffi.new("hemera_ctx *")
            lib.hemera_init(ctx)
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    lib.hemera_update(ctx, ffi.from_buffer(chunk), len(chunk))
            out = ffi.new("char[]", 32)
            lib.hemera_digest(ctx, out)
            return bytes(ffi.buffer(out))

        rows: dict[str, Callable[[], bytes]] = {
            f"{args.base}, in memory": base_memory,
            "this tree, in memory": lambda: _c.hash(data),
            f"{args.base}, command path": base_command,
            "this tree, command path": lambda: file_digest(str(path)),
        }
        best = dict.fromkeys(rows, float("inf"))
        digests = set()
        for _ in range(args.repeat):
            for name, fn in rows.items():
                secs, digest = user_seconds(fn)
                best[name] = min(best[name], secs)
                digests.add(digest)
    if len(digests) != 1:
        raise SystemExit("the two builds' digests differ")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"hemera one long input, {args.mb} MB, {args.repeat} rounds, load average {load}; "
          f"C permutation {_c.SIMD}; MB = 10^6 bytes per user CPU second")
    for name, secs in best.items():
        print(f"{name:<28} {args.mb / secs:7.1f} MB/s")
    names = list(best)
    print(f"this tree / {args.base}: in memory {best[names[0]] / best[names[1]]:.3f}x, "
          f"command path {best[names[2]] / best[names[3]]:.3f}x")


if __name__ == "__main__":
    main()
