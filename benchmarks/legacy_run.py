"""Benchmark: `run` of a legacy source, staged path against the one pass (new or existing store).

In one run, on the same generated file, each side in its own child process (``bbg-migrate
run --json``, so its peak RSS is its own):

* staged -- what `run` did before issue 29 goal 3: preflight, seal, stage item by item,
  validate the staging, activate (forced here with ``--pages`` set far past the page count:
  a bounded run always takes the staged path);
* one pass -- `run` into a new store: the preflight's row pass loads the store built aside,
  then one transaction and the publication (:mod:`migrate.pipeline.fresh_legacy`).

With ``--existing`` both sides run instead into a copy of a BBG database that already holds
history (a generated cell.redb of ``--history-rows`` rows, imported once and cached; the copy
is made before each side, untimed): the staged path (``--pages``) against the single pass
that writes the new segments aside and publishes them in place (:mod:`migrate.pipeline.existing`).
The real database only: into an existing SQLite store both sides are the staged path.

Prints the wall time, CPU seconds (the child's user+sys), items/s and peak RSS of each, the
ratios staged/one-pass of CPU and wall time (> 1: the one pass is faster), and whether both
receipts are byte-identical.  Sources: a TextArchive of
``--lines`` lines (default 200,000; unique texts of 40-200 bytes, raw TAB/CR included) and
a bbg CLI frame log of ``--events`` events (default 65,536, the format's limit), generated
into ``--cache DIR`` (default a temporary directory; never the repository) and reused there.

    python benchmarks/legacy_run.py [--lines N] [--events N] [--engine fjall,sqlite]
    python benchmarks/legacy_run.py --existing [--history-rows N] --cache DIR
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
_WORDS = ["cyber", "граф", "知识", "link", "tab\there", "cr\rhere", "🙂", "signal", "ελληνικά"]


def write_archive(path: Path, lines: int, seed: int) -> None:
    """A valid TextArchive: each line's particle is hemera(its text)."""
    from hashing.hemera import hash as hemera

    rng = random.Random(seed)
    with path.open("wb") as out:
        for i in range(lines):
            words = [rng.choice(_WORDS) for _ in range(rng.randrange(4, 24))]
            text = f"{i} " + " ".join(words)
            particle = hemera(text.encode()).hex()
            body = json.dumps(text, ensure_ascii=False).replace("\\t", "\t").replace("\\r", "\r")
            out.write(f'{{"particle":"{particle}","text":{body},"created":{1700000000000 + i}}}\n'
                      .encode())  # fmt: skip


def source(cache: Path, kind: str, n: int, seed: int) -> Path:
    path = cache / (f"texts-{n}-{seed}.jsonl" if kind == "archive" else f"cli-{n}-{seed}.log")
    if not path.exists():
        print(f"generating {path.name} ...", file=sys.stderr)
        tmp = path.with_suffix(".part")
        if kind == "archive":
            write_archive(tmp, n, seed)
        else:
            from importers.frame_log import write_sample

            write_sample(tmp, events=n, seed=seed)
        os.replace(tmp, path)
    return path


def history_store(cache: Path, rows: int, seed: int) -> Path:
    """A BBG database holding a generated cell.redb of ``rows`` rows (made once per cache)."""
    import gen_cell_store

    store = cache / f"history-r{rows}-s{seed}" / "bbg"
    if not store.exists():
        redb = gen_cell_store.cached(rows, seed=seed, namespaces=20, cache=cache)[0]
        print(f"importing the history ({rows:,} rows) ...", file=sys.stderr)
        work = Path(tempfile.mkdtemp(prefix="history-", dir=cache))
        done = subprocess.run([sys.executable, "-m", "migrate", "--engine", "fjall", "run",
                               str(redb), "--store", str(work / "bbg")], cwd=ROOT,
                              capture_output=True, text=True, check=False)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"history import failed: {done.stderr[-2000:]}")
        os.replace(work, store.parent)
    return store


def copy_store(store: Path, to: Path) -> None:
    """``store`` and its records beside it, copied to ``to``."""
    shutil.copytree(store, to, symlinks=True)
    shutil.copytree(store.with_name(store.name + ".bbg-migrate"),
                    to.with_name(to.name + ".bbg-migrate"))  # fmt: skip


def measure(src: Path, store: Path, engine: str, staged: bool) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in bytes, receipt JSON) of one `run` in a child
    process."""
    cmd = [sys.executable, "-m", "migrate", "--engine", engine, "run", str(src), "--store",
           str(store), "--json", *(("--pages", str(10**9)) if staged else ())]  # fmt: skip
    log = store.parent / "run.out"
    with log.open("wb") as out, (store.parent / "run.err").open("wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)  # the child's own rusage: its peak RSS
        seconds = time.perf_counter() - started
    child.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"run failed ({code}): {(store.parent / 'run.err').read_text()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, int(usage.ru_maxrss) * 1024, log.read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=65_536)
    parser.add_argument("--engine", default="fjall,sqlite")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--existing", action="store_true",
                        help="run into a copy of a store that already holds history")
    parser.add_argument("--history-rows", type=int, default=200_000)
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="bbg-legacy-bench-"))
    cache.mkdir(parents=True, exist_ok=True)
    history = None
    if args.existing:
        if args.engine != "fjall":
            print("--existing: the real database only (--engine fjall)", file=sys.stderr)
            args.engine = "fjall"
        history = history_store(cache, args.history_rows, args.seed)
        size = sum(f.stat().st_size for f in history.rglob("*") if f.is_file())
        print(f"into a store holding {args.history_rows:,} rows of history ({size / 1e6:.0f} MB)")
    print(f"load average at start: {os.getloadavg()}")
    sources = [("archive", args.lines), ("frame log", args.events)]
    for kind, n in sources:
        if n <= 0:
            continue
        src = source(cache, "archive" if kind == "archive" else "log", n, args.seed)
        print(f"{kind} {src.name}: {n:,} items, {src.stat().st_size / 1e6:.1f} MB")
        for engine in args.engine.split(","):
            results = {}
            for label, staged in (("staged", True), ("one pass", False)):
                work = Path(tempfile.mkdtemp(prefix="bbg-legacy-run-", dir=cache))
                try:
                    if history is not None:
                        copy_store(history, work / "bbg")
                    results[label] = measure(src, work / "bbg", engine, staged)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                seconds, cpu, rss, _ = results[label]
                print(f"  {engine:>6} {label:>8}: {seconds:8.2f} s wall  {cpu:8.2f} s CPU  "
                      f"{n / seconds:10,.0f} items/s  peak RSS {rss / 1e6:6.0f} MB")  # fmt: skip
            wall = results["staged"][0] / results["one pass"][0]
            cpu = results["staged"][1] / results["one pass"][1]
            same = results["staged"][3] == results["one pass"][3]
            print(f"  {engine:>6} ratio staged/one pass: {cpu:.2f}x CPU, {wall:.2f}x wall  "
                  f"receipts byte-identical: {'yes' if same else 'NO'}")  # fmt: skip
    print(f"load average at end: {os.getloadavg()}")
    if args.cache is None:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
