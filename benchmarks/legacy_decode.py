"""Benchmark: strict legacy decoders against a bare parse of the same file, in one run.

For each file (default: the medium Signal log and TextArchive of the shared fixtures, and a
generated bbg CLI frame log when that importer is present):

* baseline -- the least a reader must do: a bare frame walk (marker, LEB128 length, skip the
  payload) for logs; ``json.loads`` of every line for archives;
* strict -- the importer's strict decoder (every rule; archives with a no-op particle hash,
  so the number is the reader's own cost, and again with hemera, the real cost).

Prints MB/s and items/s of each and the ratio strict/baseline throughput.  Numbers are noisy
on a shared machine; compare ratios measured in the same run.

    python benchmarks/legacy_decode.py [--log FILE] [--archive FILE] [--repeat N]
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SHARED = Path(os.environ.get("BBG_SHARED_FIXTURES", "/work/shared/fixtures")) / "legacy"


def _best(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, items = float("inf"), 0
    for _ in range(repeat):
        t = time.perf_counter()
        items = fn()
        best = min(best, time.perf_counter() - t)
    return best, items


def _bare_frames(data: bytes) -> int:
    pos, n = 0, 0
    while pos < len(data):
        pos += 3
        length, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        pos += length
        n += 1
    return n


def _bare_lines(data: bytes) -> int:
    n = 0
    for line in io.BytesIO(data):
        json.loads(line, strict=False)  # raw TAB/CR in strings
        n += 1
    return n


def _report(name: str, size: int, rows: list[tuple[str, float, int]]) -> None:
    base = rows[0][1]
    print(f"{name} ({size / 1e6:.2f} MB)")
    for label, seconds, items in rows:
        print(
            f"  {label:>18}: {size / seconds / 1e6:8.1f} MB/s  {items / seconds:12,.0f} items/s"
            f"  ratio {base / seconds:5.2f}"
        )


def bench_log(path: Path, repeat: int) -> None:
    from importers.signal_log import decode_frames

    data = path.read_bytes()
    rows = [("baseline (framing)", *_best(lambda: _bare_frames(data), repeat))]
    rows.append(("strict", *_best(lambda: sum(1 for _ in decode_frames(data)), repeat)))
    _report(f"signal log {path.name}", len(data), rows)


def bench_frame_log(repeat: int) -> None:
    try:
        module = importlib.import_module("importers.frame_log")
    except ImportError:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log"
        module.write_sample(path, events=20_000, seed=7)
        data = path.read_bytes()
    rows = [("baseline (framing)", *_best(lambda: _bare_frames(data), repeat))]
    rows.append(("strict", *_best(lambda: sum(1 for _ in module.decode_frames(data)), repeat)))
    _report("bbg CLI frame log (generated, 20,000 events)", len(data), rows)


def bench_archive(path: Path, repeat: int) -> None:
    from hashing.hemera import hash as hemera
    from importers.text_archive import decode_records

    data = path.read_bytes()

    def strict(fn: Callable[[bytes], bytes]) -> Callable[[], int]:
        return lambda: sum(1 for _ in decode_records(data, hash_fn=fn))

    matching = {r.text.encode(): r.particle_bytes for r in decode_records(data, hash_fn=hemera)}
    rows = [("baseline json", *_best(lambda: _bare_lines(data), repeat))]
    rows.append(("strict, no hash", *_best(strict(lambda b: matching[b]), repeat)))
    rows.append(("strict, hemera", *_best(strict(hemera), max(1, repeat // 2))))
    _report(f"text archive {path.name}", len(data), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, default=SHARED / "signals-medium.log")
    parser.add_argument("--archive", type=Path, default=SHARED / "texts-medium.jsonl")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bench_log(args.log, args.repeat)
    bench_frame_log(args.repeat)
    bench_archive(args.archive, args.repeat)


if __name__ == "__main__":
    main()
