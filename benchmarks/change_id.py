"""What recording bbg's change id costs a SQLite write transaction (``bbg_changes``).

    .venv/bin/python benchmarks/change_id.py [--rows N] [--small M] [--repeat R] [--dir DIR]

Each case runs on a fresh SQLite store, ``--repeat`` times, modes interleaved; the median of
the CPU seconds of this process (user+sys, ``time.process_time``: SQLite runs in it; waiting
for an fsync is not counted) is printed with its ratio to the baseline of the same run, and
the median wall seconds beside it.  The baseline is the very same transaction with the id not
recorded (``store.bbg_tables = False``: what the records of a Fjall store do; nothing else
differs).

* ``put_many``: one transaction of ``--rows`` content rows of 132 bytes (32-byte key,
  100-byte value), in pages of 10,000 rows (as a pipeline page);
  ``held`` is the default (changed keys held in memory up to ``SPILL_BYTES``, then the TEMP
  table: 200,000 keys go past it), ``spilled`` forces every key through the TEMP table;
* ``activate``: the same rows staged by an import, then its activation (``INSERT … SELECT``),
  timed alone: the id's keys go through the TEMP table in one statement;
* ``one-row``: ``--small`` transactions of one 132-byte row each (each COMMIT an fsync).

Numbers depend on the disk and the machine's load; there are no assertions.  To compare with
another tree's implementation (e.g. an older ``bbg_changes``), run this script with
``PYTHONPATH=<that tree>`` (``--no-spill`` for a tree that has no spill), and compare the
ratios to the baseline of each run.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from migrate.store import Store, bbg_changes, bbgdb, imports, open_store
from migrate.store.engine import SQLITE

PAGE = 10_000
MODES = ("baseline", "held", "spilled")


def _rows(n: int, salt: int = 0) -> list[tuple[bytes, bytes]]:
    return [((salt << 40 | i).to_bytes(32, "big"), b"\x01" + i.to_bytes(8, "big") * 12 + bytes(3))
            for i in range(n)]  # fmt: skip


def _store(tmp: Path, mode: str) -> Store:
    store = open_store(tmp, create=True, engine=SQLITE)
    store.bbg_tables = mode != "baseline"
    return store


def _recorded(store: Path) -> str:
    conn = sqlite3.connect(store / "bbg.sqlite3")
    try:
        row = conn.execute(f"SELECT {bbg_changes.COLUMN} FROM bbg_storage_v1").fetchone()
    finally:
        conn.close()
    return "none" if not row[0] else bytes(row[0]).hex()[:16]


Times = tuple[float, float]  # (CPU seconds, wall seconds)


def _now() -> Times:
    return time.process_time(), time.perf_counter()


def _since(t0: Times) -> Times:
    cpu, wall = _now()
    return cpu - t0[0], wall - t0[1]


def put_many(store: Store, rows: list[tuple[bytes, bytes]]) -> Times:
    t0 = _now()
    with store.transaction() as tx:
        for i in range(0, len(rows), PAGE):
            tx.put_many("application_content", rows[i : i + PAGE])
    return _since(t0)


def activate(store: Store, rows: list[tuple[bytes, bytes]]) -> Times:
    with store.transaction(import_id="imp") as tx:
        imports.begin_import(tx, "imp")
        for i in range(0, len(rows), PAGE):
            imports.stage_rows(tx, "imp", "application_content", rows[i : i + PAGE])
    t0 = _now()
    with store.transaction(import_id="imp") as tx:
        imports.activate(tx, "imp")
    return _since(t0)


def one_row(store: Store, rows: list[tuple[bytes, bytes]]) -> Times:
    t0 = _now()
    for key, value in rows:
        with store.transaction() as tx:
            tx.put("application_content", key, value)
    return _since(t0)


Rows = list[tuple[bytes, bytes]]


def _case(base: Path, name: str, run: Callable[[Store, Rows], Times], rows: Rows, repeat: int,
          modes: tuple[str, ...]) -> None:  # fmt: skip
    times: dict[str, list[Times]] = {m: [] for m in modes}
    ids: dict[str, str] = {}
    for r in range(repeat):
        for mode in modes:
            # getattr: an older tree (PYTHONPATH=<tree>, for comparison) has no spill
            saved = getattr(bbg_changes, "SPILL_BYTES", None)
            if mode == "spilled":
                bbg_changes.SPILL_BYTES = 0
            try:
                with _store(base / f"{name}-{mode}-{r}", mode) as store:
                    times[mode].append(run(store, rows))
                ids[mode] = _recorded(base / f"{name}-{mode}-{r}")
            finally:
                if saved is not None:
                    bbg_changes.SPILL_BYTES = saved
    base_t = statistics.median(c for c, _ in times["baseline"])
    for mode in modes:
        t = statistics.median(c for c, _ in times[mode])
        wall = statistics.median(w for _, w in times[mode])
        print(f"{name:9} {mode:9} {t:8.3f} s CPU  x{t / base_t:5.2f} of baseline  "
              f"(+{t - base_t:6.3f} s; wall {wall:7.3f} s; median of {repeat}; "
              f"id {ids[mode]})")  # fmt: skip
    recorded = {ids[m] for m in modes if m != "baseline"}
    if len(recorded) > 1:
        raise SystemExit(f"{name}: the modes recorded different ids: {recorded}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--small", type=int, default=1_000, help="one-row transactions")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to make the stores")
    ap.add_argument("--cases", default="put_many,activate,one-row", help="which cases")
    ap.add_argument("--no-spill", action="store_true", help="no 'spilled' mode")
    args = ap.parse_args()
    cases = args.cases.split(",")
    rows = _rows(args.rows)
    assert all(len(k) + len(v) == 132 for k, v in rows[:1])
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        if "put_many" in cases:
            modes = MODES[:2] if args.no_spill else MODES
            _case(base, "put_many", put_many, rows, args.repeat, modes)
            changes = {("application_content", k): v for k, v in rows}
            t0 = _now()
            bbgdb.change_id(changes)
            print(f"hash only           {_since(t0)[0]:8.3f} s CPU  (bbgdb.change_id of "
                  "the same changes from memory: the id's own cost, in every mode but baseline)")
        if "activate" in cases:
            _case(base, "activate", activate, rows, args.repeat, ("baseline", "held"))
        if "one-row" in cases:
            _case(base, "one-row", one_row, _rows(args.small, 1), args.repeat, MODES[:2])


if __name__ == "__main__":
    main()
