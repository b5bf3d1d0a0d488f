"""hemera tree mode and nox Data ids (C core and pure-Python twin), and what the content
checks cost an ``inspect``, all against baselines measured in the same run.

    python benchmarks/content_ids.py                    # tree hashes/s, Data ids/s
    python benchmarks/content_ids.py --file cell.redb   # also inspect: none vs codec
    python benchmarks/content_ids.py --json

Tree rows: ``hash_leaf`` of 8-byte atoms and ``hash_node`` of 64-byte pairs in batches, as the
Data-id verifier calls them; the baseline is ``hashlib.sha256`` of the same inputs, one call
each.  ``inspect`` rows: the same store inspected with ``--content-check none`` (no content
decoding, the baseline) and ``codec`` (every Blob and Data id verified, pair children looked
up).  Numbers are noisy on a shared machine; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hashing import hemera, nox

P = nox.P


def best(fn: Callable[[], object], repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def tree_rows(n: int, n_python: int, repeat: int) -> list[dict[str, Any]]:
    atoms = [(int.from_bytes(os.urandom(8), "little") % P).to_bytes(8, "little")
             for _ in range(n)]  # fmt: skip
    pairs = [os.urandom(64) for _ in range(n)]
    rows: list[dict[str, Any]] = []
    for what, items in (("hash_leaf(atom)", atoms), ("hash_node(pair)", pairs)):
        sha = n / best(lambda items=items: [hashlib.sha256(x).digest() for x in items], repeat)
        rows.append({"what": what, "impl": "sha256", "per_s": sha, "ratio": 1.0})
        backends: list[tuple[str, Any, int]] = [("python", hemera.python_impl, n_python)]
        if hemera.c_impl is not None:
            backends.insert(0, ("c", hemera.c_impl, n))
        for name, b, count in backends:
            sub = items[:count]
            if what.startswith("hash_leaf"):
                secs = best(lambda b=b, sub=sub: b.hash_leaf_many(sub, 0, False), repeat)
            else:
                secs = best(lambda b=b, sub=sub: b.hash_node_many(sub, False), repeat)
            rate = count / secs
            rows.append({"what": what, "impl": name, "per_s": rate, "ratio": rate / sha})
    mixed = [a for pair in zip(atoms, pairs, strict=True) for a in pair][:n]
    sha = n / best(lambda: [hashlib.sha256(x).digest() for x in mixed], repeat)
    rows.append({"what": "nox ids (half atoms, half pairs)", "impl": "sha256", "per_s": sha,
                 "ratio": 1.0})  # fmt: skip
    for name, b, count in (("c", hemera.c_impl, n), ("python", hemera.python_impl, n_python)):
        if b is None:
            continue
        sub = mixed[:count]
        rate = count / best(lambda b=b, sub=sub: nox.particles(sub, b), repeat)
        rows.append({"what": "nox ids (half atoms, half pairs)", "impl": name, "per_s": rate,
                     "ratio": rate / sha})  # fmt: skip
    return rows


def inspect_rows(path: Path, repeat: int) -> list[dict[str, Any]]:
    from migrate.probe.inspect import inspect_redb

    rows: list[dict[str, Any]] = []
    base = None
    for mode in ("none", "codec"):
        report: dict[str, Any] = {}

        def run(mode: str = mode, report: dict[str, Any] = report) -> None:
            report.update(inspect_redb(path, content_check=mode))

        secs = best(run, repeat)
        base = base or secs
        rows.append({"what": f"inspect --content-check {mode}", "seconds": secs,
                     "ratio": secs / base, "data_rows": report["content_codecs"]["data"],
                     "blob_rows": report["content_codecs"]["blob"],
                     "valid": report["valid"]})  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="inputs per C measurement")
    ap.add_argument("--n-python", type=int, default=2_000, help="inputs per Python measurement")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file", type=Path, help="a cell.redb to inspect in both modes")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    doc: dict[str, Any] = {"backend": hemera.BACKEND, "tree": tree_rows(args.n, args.n_python,
                                                                          args.repeat)}  # fmt: skip
    if args.file:
        doc["inspect"] = inspect_rows(args.file, args.repeat)
    if args.json:
        print(json.dumps(doc, sort_keys=True))
        return
    print(f"hemera {hemera.SUITE}; active backend {hemera.BACKEND}")
    print(f"{'what':<34} {'impl':<7} {'per second':>12}  {'x sha256':>9}")
    for r in doc["tree"]:
        print(f"{r['what']:<34} {r['impl']:<7} {r['per_s']:>12,.0f}  {r['ratio']:>9.3f}")
    for r in doc.get("inspect", []):
        print(f"{r['what']:<34} {r['seconds']:8.2f} s  x{r['ratio']:.2f} of none  "
              f"({r['blob_rows']} Blob, {r['data_rows']} Data rows, valid {r['valid']})")


if __name__ == "__main__":
    main()
