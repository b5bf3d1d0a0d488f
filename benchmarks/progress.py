"""What watching costs: each long verb with no observer, then with an observer that does
nothing (the library's hooks alone), on the same store, in the same run.

    .venv/bin/python benchmarks/progress.py [--namespaces 100] [--commits 50] [--repeat 3]
                                            [--json]

Builds the store of ``benchmarks/share.py`` (``--namespaces x (--commits + 1)`` history
entries), then times ``snapshot``, ``restore``, ``apply``, ``backup`` and ``doctor`` (and the
hemera of the snapshot, which is bytes on disk) best of ``--repeat``, alternating unwatched and
watched runs so load on the machine falls on both.  Prints seconds and the ratio watched /
unwatched per verb (1.00: watching is free; the machine's noise is a few per cent either way).
Watched runs take totals up front (row counts, ``PRAGMA page_count``, file sizes) and, for a
backup, copy the database in steps inside one read transaction instead of one step.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.share import build
from migrate.probe.hashes import file_digest
from migrate.share import apply_stream, backup, doctor, restore, tail, write_snapshot
from migrate.share.common import canonical
from migrate.store import open_store


def _null(stage: str, done: int, total: int | None, unit: str = "rows") -> None:
    """An observer that only receives."""


def _best(run: Callable[[Any], None], observer: Any, repeat: int, clean: Callable[[], None]
          ) -> float:  # fmt: skip
    best = float("inf")
    for _ in range(repeat):
        clean()
        start = time.perf_counter()
        run(observer)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--namespaces", type=int, default=100)
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        store = base / "s"
        build(store, args.namespaces, args.commits, 1024)
        events = b"".join(canonical(e) for e in tail(store))
        out = io.BytesIO()
        write_snapshot(store, out)
        snap = out.getvalue()
        (base / "snap").write_bytes(snap)

        def gone(*names: str) -> Callable[[], None]:
            def clean() -> None:
                for name in names:
                    shutil.rmtree(base / name, ignore_errors=True)

            return clean

        def do_snapshot(observer: Any) -> None:
            write_snapshot(store, io.BytesIO(), progress=observer)

        def do_restore(observer: Any) -> None:
            with open(base / "snap", "rb") as fh:
                restore(fh, base / "r", progress=observer)

        def do_apply(observer: Any) -> None:
            with open_store(base / "a", create=True) as st:
                apply_stream(st, io.BytesIO(events), progress=observer)

        def do_backup(observer: Any) -> None:
            backup(store, base / "b", progress=observer)

        def do_doctor(observer: Any) -> None:
            doctor(store, progress=observer)

        def do_hemera(observer: Any) -> None:
            file_digest(str(base / "snap"), progress=observer)

        verbs: dict[str, tuple[Callable[[Any], None], Callable[[], None]]] = {
            "snapshot": (do_snapshot, gone()),
            "restore": (do_restore, gone("r")),
            "apply": (do_apply, gone("a")),
            "backup": (do_backup, gone("b")),
            "doctor": (do_doctor, gone()),
            "hemera": (do_hemera, gone()),
        }
        doc: dict[str, Any] = {"snapshot_bytes": len(snap), "event_bytes": len(events)}
        for name, (run, clean) in verbs.items():
            plain = watched = float("inf")
            for _ in range(args.repeat):  # alternate, so the load falls on both
                plain = min(plain, _best(run, None, 1, clean))
                watched = min(watched, _best(run, _null, 1, clean))
            doc[name] = {"unwatched_s": round(plain, 4), "watched_s": round(watched, 4),
                         "ratio": round(watched / plain, 3)}  # fmt: skip
    if args.json:
        print(json.dumps(doc, sort_keys=True))
    else:
        for name, value in doc.items():
            if isinstance(value, dict):
                print(f"{name:>9}: unwatched {value['unwatched_s']:.4f} s, watched "
                      f"{value['watched_s']:.4f} s, ratio {value['ratio']:.3f}")  # fmt: skip
            else:
                print(f"{name:>14}: {value}")


if __name__ == "__main__":
    main()
