"""Benchmark: `run` throughput against a raw executemany load of the same rows into SQLite.

In one run: the disk (``cp`` + fsync of the source), the raw SQLite load, our own unchecked
copy into a new Fjall keyspace (read the redb file, write the same rows as segments, fsync),
then `run` into a new store on each engine (Fjall, the real BBG database, and SQLite), and
with ``--existing`` into a store that already holds history, on each engine.

Reproduce the 1M-row measurement with one command (a generated ~1M-row store, ~580 bytes a
row, generated on first use into a cache outside the repository and reused afterwards):

    python benchmarks/pipeline.py --rows 1000000           # ~1M rows
    python benchmarks/pipeline.py --rows 200000 --existing # also `run` into a non-empty store
    python benchmarks/pipeline.py --file cell.redb         # a store you have
    python benchmarks/pipeline.py                          # the bundled demo store

``--rows N`` generates with ``benchmarks/gen_cell_store.py`` (``--seed``, default 239000; 50
namespaces) into ``--cache DIR`` (default ``$XDG_CACHE_HOME/bbg-migrate-bench``, else
``~/.cache/bbg-migrate-bench``); a store of the same N, seed and generator source is reused.
Nothing generated is ever written into the repository.

Each side is measured in this one run, on the same file, in its own child process (so the
peak RSS of each is its own):

* baseline -- read every row of the five tables with the same redb reader and load them
  with ``executemany`` into five WITHOUT ROWID tables (WAL, synchronous=FULL), one
  transaction per 512 rows, like a bare copy with no staging, checks or receipts;
* run -- the whole pipeline (preflight/inspect, seal, staging, validation, activation) into
  a new store;
* existing (with ``--existing``) -- ``run`` into a store that already holds another import
  (a small generated store of other namespaces, loaded first and not timed): on the Fjall
  engine the single pass (:mod:`migrate.pipeline.existing`: preflight+stage writes segments
  aside, publish adopts them, validate+activate is the one transaction), and
  ``existing-staged``, the same with that path switched off -- the staged path (preflight,
  seal, stage, validate, activate) that SQLite stores and mapped runs take.  Goal 2 of issue
  29 is ``existing / new-store rows/s >= 0.8``, printed after each.

* hemera floor -- every ``application_content`` payload hashed with the batch calls on all
  cores (``hash_many`` for Blobs, ``hash_leaf_many``/``hash_node_many`` for Data atoms and
  pairs, 16 MB batches); only the hash calls are timed, reading the rows is not.  This is the
  hemera work no run that verifies content ids can avoid.  Goal 1 of issue 29 is
  ``run (fjall) / (fjall-raw + hemera floor) <= 1.5``, printed after the Fjall run.

Prints the load average at the start and the end (the machine is shared: compare ratios
within one run), rows/s of each, the ratio to the baseline (goal >= 0.5), the share of
each stage and each peak RSS.  Stages: seal (the source's SHA-256), then into a new store
(the usual case here) preflight+stage (one pass checks the source and loads the store being built),
validate+activate (one transaction) and publish (fsync, rename); into an existing store
preflight, stage, validate, activate.  ``--profile N`` also prints the N functions of the
largest cumulative time of each `run` (cProfile).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gen_cell_store  # noqa: E402

CHILD = r"""
import json, os, resource, sqlite3, sys, time
from pathlib import Path
mode, src, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
prefill, profile = sys.argv[4], int(sys.argv[5])
t0 = time.perf_counter()
rows = 0
prof = None
if mode == "copy":  # the disk: cp + sync of the source file
    import shutil, os
    shutil.copyfile(src, work / "copy.redb")
    fd = os.open(work / "copy.redb", os.O_RDONLY); os.fsync(fd); os.close(fd)
    rows = 1
elif mode == "fjall-raw":  # our own unchecked copy: read the redb file, write the same rows
    from importers.redb import open_redb  # as segments of a new keyspace, fsync
    from migrate.rules.shape import DIGEST_ORDER
    from migrate.store.fjall import build_keyspace
    with open_redb(src) as db:
        counts = {}
        def table_rows(t):
            for kv in db.iter_table(t):
                counts[t] = counts.get(t, 0) + 1
                yield kv
        build_keyspace(work / "raw", {t: table_rows(t) for t in sorted(DIGEST_ORDER)})
    rows = sum(counts.values())
elif mode == "hemera-floor":  # the hemera work no checked run avoids: every content id,
    from hashing import hemera  # batch-hashed on all cores; only the hash calls are timed
    from importers.redb import open_redb
    elapsed = hash_cpu = 0.0
    def flush(blobs, atoms, pairs):
        global elapsed, hash_cpu
        t, c = time.perf_counter(), time.process_time()
        hemera.hash_many(blobs); hemera.hash_leaf_many(atoms); hemera.hash_node_many(pairs)
        elapsed += time.perf_counter() - t
        hash_cpu += time.process_time() - c
    content_bytes = 0
    with open_redb(src) as db:
        blobs, atoms, pairs, size = [], [], [], 0
        for _, value in db.iter_table("application_content"):
            payload = bytes(value[1:])
            rows += 1
            content_bytes += len(payload)
            size += len(payload)
            if value[0] == 1:
                blobs.append(payload)
            elif len(payload) == 64:
                pairs.append(payload)
            else:
                atoms.append(payload)
            if size >= 16 << 20:
                flush(blobs, atoms, pairs)
                blobs, atoms, pairs, size = [], [], [], 0
        flush(blobs, atoms, pairs)
elif mode == "baseline":
    from importers.redb import open_redb
    from migrate.rules.shape import DIGEST_ORDER
    conn = sqlite3.connect(work / "raw.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL"); conn.execute("PRAGMA synchronous=FULL")
    for t in DIGEST_ORDER:
        conn.execute(f"CREATE TABLE {t} (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
    with open_redb(src) as db:
        for t in DIGEST_ORDER:
            batch = []
            for kv in db.iter_table(t):
                batch.append(kv)
                if len(batch) == 512:
                    conn.execute("BEGIN"); conn.executemany(f"INSERT INTO {t} VALUES (?, ?)", batch)
                    conn.execute("COMMIT"); rows += len(batch); batch = []
            if batch:
                conn.execute("BEGIN"); conn.executemany(f"INSERT INTO {t} VALUES (?, ?)", batch)
                conn.execute("COMMIT"); rows += len(batch)
    conn.close()
else:
    from migrate import pipeline
    from migrate.pipeline import gate, stages
    # Each stage's wall time, by wrapping the functions ``run`` calls (no product change).
    shares, cpu_shares = {}, {}
    def timed(name, fn):
        def wrapper(*a, **k):
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                shares[name] = shares.get(name, 0.0) + time.perf_counter() - t
                cpu_shares[name] = cpu_shares.get(name, 0.0) + time.process_time() - c
        return wrapper
    gate.seal = timed("seal", gate.seal)
    gate.preflight = timed("preflight", gate.preflight)
    if hasattr(pipeline, "preflight"):
        pipeline.preflight = timed("preflight", pipeline.preflight)
    stages.seal_stage = timed("seal", stages.seal_stage)
    for name in ("stage", "validate", "activate"):
        setattr(stages, f"{name}_stage", timed(name, getattr(stages, f"{name}_stage")))
    try:  # a new destination: one pass checks and loads, one transaction seals to activates
        from migrate.pipeline import fresh
        from migrate.store import build
    except ImportError:  # a build without it (to measure "before")
        pass
    else:
        fresh.redb_report = timed("preflight+stage", fresh.redb_report)
        stages.activate_built = timed("validate+activate", stages.activate_built)
        build.Build.publish = timed("publish", build.Build.publish)
    try:  # the Fjall path: the one pass builds the keyspace aside; publish renames it
        from migrate.store import keyspace_build
    except ImportError:
        pass
    else:
        keyspace_build.FjallBuild.publish = timed("publish", keyspace_build.FjallBuild.publish)
    try:  # an existing Fjall store: the one pass writes segments aside; publish adopts them
        from migrate.pipeline import existing
        from migrate.store import keyspace_aside
    except ImportError:  # a build without it (to measure "before")
        existing = None
    else:
        stages.activate_published = timed("validate+activate", stages.activate_published)
        keyspace_aside.AsideSegments.publish = timed("publish",
                                                     keyspace_aside.AsideSegments.publish)
    if mode == "existing-staged" and existing is not None:  # the staged path, as before
        existing.destination = lambda *a, **k: None
    if mode.startswith("existing"):  # another import first (untimed): the destination is non-empty
        pipeline.run(pipeline.Job(source=Path(prefill), store=work / "bbg"))
        shares.clear()
        cpu_shares.clear()
        t0 = time.perf_counter()
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    out = pipeline.run(pipeline.Job(source=src, store=work / "bbg"))
    if prof is not None:
        prof.disable()
    rows = sum(out.receipt["counts"]["rows"].values())
if mode != "hemera-floor":
    elapsed = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
# This process's own peak (VmHWM): ru_maxrss also holds the parent's RSS at the spawn.
peak = usage.ru_maxrss * 1024
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
if mode.startswith(("run", "existing")):
    mode += f" ({os.environ.get('BBG_MIGRATE_ENGINE', 'default')} engine)"
doc = {"mode": mode, "rows": rows, "seconds": elapsed, "peak_rss_bytes": peak,
       "cpu_seconds": usage.ru_utime + usage.ru_stime}
if "engine" in mode:
    doc["stages"] = shares
    doc["stages_cpu"] = cpu_shares
if mode == "hemera-floor":
    from hashing import hemera
    doc["content_bytes"] = content_bytes
    doc["hash_cpu_seconds"] = hash_cpu
    doc["threads"] = hemera.details()
if prof is not None:
    import io, pstats
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(profile)
    sys.stderr.write(text.getvalue())
print(json.dumps(doc))
"""


def measure(mode: str, src: Path, prefill: Path | None = None, profile: int = 0,
            engine: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One child process: ``copy`` (cp + fsync of the source), ``fjall-raw`` (read the redb
    file, write the same rows as a new keyspace's segments, unchecked), ``baseline`` (the raw
    SQLite load), ``run`` (a new store) or ``existing`` (into a store that ``prefill`` was
    migrated into first) on ``engine``; its JSON report."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if engine is not None:
        env["BBG_MIGRATE_ENGINE"] = engine
    with tempfile.TemporaryDirectory(prefix="bbg-bench-") as work:
        res = subprocess.run(
            [sys.executable, "-c", CHILD, mode, str(src), work, str(prefill or ""), str(profile)],
            capture_output=True, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
    if res.returncode != 0:
        sys.exit(f"{mode} failed (exit {res.returncode}):\n{res.stderr}")
    if profile:
        print(res.stderr, end="")
    doc: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return doc


def source_of(args: argparse.Namespace, tmp: Path) -> Path:
    """The store to measure: ``--file``, a cached generated one (``--rows``), or the demo."""
    if args.file is not None:
        path: Path = args.file
        return path
    if args.rows is not None:
        return gen_cell_store.cached(args.rows, seed=args.seed, cache=args.cache)[0]
    from migrate.demo import unpack_demo

    return unpack_demo(tmp)


def prefill_of(args: argparse.Namespace) -> Path:
    """The other import an ``existing`` destination holds: 2,000 rows of other namespaces."""
    return gen_cell_store.cached(2000, seed=args.seed + 1, namespaces=5, cache=args.cache)[0]


def report(doc: dict[str, Any], base: dict[str, Any] | None = None,
           raw: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Print one child's line (and its stages and ratio to ``base``, and its time over
    ``raw``'s, our unchecked copy into a new keyspace)."""
    print(
        f"{doc['mode']:>8}: {doc['rows']:,} rows in {doc['seconds']:.2f} s = "
        f"{doc['rows'] / doc['seconds']:,.0f} rows/s, "
        f"peak RSS {doc['peak_rss_bytes'] / 2**20:.0f} MiB, "
        f"CPU {doc['cpu_seconds']:.1f} s (all threads)"
    )
    if base is None:
        return
    stages: dict[str, float] = dict(doc.get("stages", {}))
    stages["other"] = max(doc["seconds"] - sum(stages.values()), 0.0)
    print(
        "  stages: "
        + ", ".join(
            f"{name} {sec:.2f} s ({100 * sec / doc['seconds']:.0f}%)"
            for name, sec in stages.items()
        )
    )
    if doc.get("stages_cpu"):  # the CPU of each stage (all threads): steadier under load
        cpu_stages = dict(doc["stages_cpu"])
        cpu_stages["other"] = max(doc["cpu_seconds"] - sum(cpu_stages.values()), 0.0)
        print("  stages CPU: "
              + ", ".join(f"{name} {sec:.2f} s" for name, sec in cpu_stages.items()))
    ratio = (doc["rows"] / doc["seconds"]) / (base["rows"] / base["seconds"])
    # On a shared machine the wall ratio follows the CPU each side gets; this one does not.
    cpu = base["cpu_seconds"] / doc["cpu_seconds"]
    print(f"  ratio {doc['mode']}/baseline throughput: {ratio:.2f} (goal >= 0.5); "
          f"CPU time baseline/{doc['mode']}: {cpu:.2f}")  # fmt: skip
    if raw is not None:
        print(f"  time over our unchecked Fjall copy: {doc['seconds'] / raw['seconds']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--file", type=Path, help="a legacy cell.redb (default: bundled demo)")
    size.add_argument("--rows", type=int, help="generate (once, cached) a store of ~N rows")
    parser.add_argument("--seed", type=int, default=239000, help="generator seed (--rows)")
    parser.add_argument("--cache", type=Path, help="where generated stores are kept")
    parser.add_argument("--existing", action="store_true",
                        help="also measure `run` into a non-empty store (the staged path)")
    parser.add_argument("--no-new", action="store_true", help="skip `run` into a new store")
    parser.add_argument("--engines", default="fjall,sqlite",
                        help="the engines `run` is measured on (comma-separated)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the top N functions (cumulative) of each `run`")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = source_of(args, Path(tmp))
        prefill = prefill_of(args) if args.existing else None
        from migrate.probe import versions as backends

        print(f"load average at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        print(f"file: {src} ({src.stat().st_size / 1e6:.1f} MB); readers: {backends.active()}")
        t = time.perf_counter()
        copy = measure("copy", src)
        print(f"    copy: cp + fsync of the source, {copy['seconds']:.2f} s "
              f"({src.stat().st_size / copy['seconds'] / 1e6:,.0f} MB/s)")
        base = measure("baseline", src)
        report(base)
        raw = measure("fjall-raw", src)
        report(raw, base)
        floor = measure("hemera-floor", src)
        print(f"  hemera floor: {floor['content_bytes'] / 1e6:,.1f} MB of content "
              f"({floor['rows']:,} rows) batch-hashed in {floor['seconds']:.2f} s = "
              f"{floor['content_bytes'] / floor['seconds'] / 1e6:,.1f} MB/s "
              f"({floor['threads']}, CPU {floor['hash_cpu_seconds']:.2f} s)")
        new_runs: dict[str, dict[str, Any]] = {}
        if not args.no_new:
            for engine in args.engines.split(","):
                doc = measure("run", src, profile=args.profile, engine=engine)
                new_runs[engine] = doc
                report(doc, base, raw)
                if engine == "fjall":
                    need = raw["seconds"] + floor["seconds"]
                    print(f"  goal 1: run / (unchecked copy + hemera floor) = "
                          f"{doc['seconds']:.2f} / ({raw['seconds']:.2f} + "
                          f"{floor['seconds']:.2f}) = {doc['seconds'] / need:.2f} (goal <= 1.5)")
                    # The same in CPU seconds (all threads): what load does not move much.
                    cpu_need = raw["cpu_seconds"] + floor["hash_cpu_seconds"]
                    print(f"  the same in CPU: {doc['cpu_seconds']:.2f} / "
                          f"({raw['cpu_seconds']:.2f} + {floor['hash_cpu_seconds']:.2f}) = "
                          f"{doc['cpu_seconds'] / cpu_need:.2f}")
        if prefill is not None:
            for engine in args.engines.split(","):
                for mode in ("existing-staged", "existing") if engine == "fjall" else ("existing",):
                    doc = measure(mode, src, prefill, profile=args.profile, engine=engine)
                    report(doc, base, raw)
                    if new_runs.get(engine) is not None:
                        ratio = ((doc["rows"] / doc["seconds"])
                                 / (new_runs[engine]["rows"] / new_runs[engine]["seconds"]))
                        cpu = new_runs[engine]["cpu_seconds"] / doc["cpu_seconds"]
                        print(f"  goal 2: {mode} / new-store rows/s = {ratio:.2f} (goal >= 0.8; "
                              f"CPU new/{mode}: {cpu:.2f})")
        total = time.perf_counter() - t
        print(f"total {total:.1f} s; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
