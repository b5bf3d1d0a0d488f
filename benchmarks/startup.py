"""Start-up time of ``bbg-migrate --version`` and ``bbg-migrate detect FILE``.

Prints the median wall time of each over N runs, next to ``python -c pass`` measured in the
same run (the interpreter's own floor), and the difference and ratio against it.  With
``--root DIR`` (repeatable) the same commands are timed for other checkouts (e.g. the main
branch before a change), interleaved, so a busy machine affects all alike.

    python benchmarks/startup.py [--runs 21] [--root /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FILE = "fixtures/legacy/signals-small.log"


def _time(argv: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--root", action="append", default=[], type=Path,
                        help="another checkout to time too")  # fmt: skip
    args = parser.parse_args()
    roots = [HERE, *args.root]
    cases: dict[str, tuple[list[str], Path]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], HERE)
    }
    for root in roots:
        tag = "" if root == HERE else f" [{root}]"
        cases[f"--version{tag}"] = ([sys.executable, "-m", "migrate", "--version"], root)
        cases[f"detect FILE{tag}"] = ([sys.executable, "-m", "migrate", "detect", FILE], root)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, (argv, cwd) in cases.items():
            times[name].append(_time(argv, cwd))
    floor = statistics.median(times["python -c pass"])
    print(f"median of {args.runs} runs (load: {os.getloadavg()[0]:.1f})")
    for name, found in times.items():
        m = statistics.median(found)
        print(f"{name:50s} {m * 1000:8.1f} ms   +{(m - floor) * 1000:7.1f} ms over python, "
              f"x{m / floor:5.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
