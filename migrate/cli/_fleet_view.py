"""The live progress view of ``fleet plan``/``fleet run`` (stderr, terminals only).

Jobs done/running/failed/waiting, rows for the whole fleet, elapsed time and an ETA, and one
line per running job in the unit its current stage counts: rows (staging, a transfer), or
the source's bytes read (sealing a Signal log or a TextArchive reads it whole before any row
exists) -- never "0 rows" for a job that is reading -- with the stage's total and percentage
when it is known, and never more than the total (a count past it is shown without one).

The ETA: the source bytes still to go at the speed of the jobs finished in this run (source
bytes over the time up to the last finish; jobs kept from an earlier run do not count as
speed), counted down from that finish.  While one large job runs nothing finishes, so the ETA
counts down instead of growing with the elapsed time; once it has run out while jobs still
run it is ``?``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from bbg_core.closing import Closing


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _of(done: int, total: int | None, unit: str) -> str:
    """``done of total unit (NN %)``; without the total when unknown or already passed."""
    if total is None or done > total:
        return f"{done:,} {unit}"
    percent = 100 * done // total if total else 100
    return f"{done:,} of {total:,} {unit} ({percent} %)"


class FleetView(Closing):
    """A :class:`migrate.fleet.Watcher` that draws on a rich console."""

    def __init__(self, console: Console, jobs: list[Any], label: str,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.label = label
        self.total = len(jobs)
        self.size = {j.key: self._size(j.source) for j in jobs}
        self.left_bytes = sum(self.size.values())
        self.running: dict[str, list[Any]] = {}  # key -> [name, rows, bytes read, total]
        self.done = self.failed = self.rows = 0
        self.bytes_done = 0
        self.clock = clock
        self.t0 = self.last_finish = clock()
        self.live = Live(console=console, transient=True, auto_refresh=False)

    @staticmethod
    def _size(path: Any) -> int:
        try:
            return os.stat(path).st_size
        except OSError:
            return 0

    def __enter__(self) -> FleetView:
        self.live.start()
        return self

    def close(self) -> None:
        """Stop the live view (leaving ``with`` does)."""
        self.live.stop()

    # -- Watcher ------------------------------------------------------------------------
    def started(self, job: Any) -> None:
        self.running[job.key] = [job.name, 0, 0, None]

    def progress(self, job: Any, rows: int, nbytes: int, total: int | None = None) -> None:
        # A stage counts rows or bytes (migrate.progress.as_observer sends the other as 0);
        # a stage's first report (0, 0) keeps what the job showed so far.
        entry = self.running.get(job.key)
        if entry is not None and (rows or nbytes):
            entry[1], entry[2], entry[3] = rows, nbytes, total

    def doing(self, key: str) -> str:
        """What a running job has done so far, in the unit its stage counts."""
        _, rows, nbytes, total = self.running[key]
        if rows:
            return _of(rows, total, "rows")
        if nbytes:
            return _of(nbytes, total or self.size.get(key) or None, "bytes read")
        return "starting"

    def finished(self, job: Any, result: dict[str, Any]) -> None:
        ran = self.running.pop(job.key, None) is not None
        self.done += 1
        self.failed += result["exit_code"] != 0
        self.rows += int(result.get("rows", 0))
        size = self.size.get(job.key, 0)
        self.left_bytes -= size
        if ran:
            self.bytes_done += size
            self.last_finish = self.clock()

    def tick(self) -> None:
        self.live.update(self.render(), refresh=True)

    # -- drawing ------------------------------------------------------------------------
    def eta(self) -> str:
        if self.done >= self.total:
            return "0:00:00"
        if self.bytes_done <= 0:
            return "?"
        speed_time = self.last_finish - self.t0  # the time the finished bytes took
        left = speed_time * self.left_bytes / self.bytes_done - (self.clock() - self.last_finish)
        return _clock(left) if left > 0 else "?"

    def render(self) -> Group:
        live_rows = sum(entry[1] for entry in self.running.values())
        waiting = self.total - self.done - len(self.running)
        head = Text.assemble(
            (f"{self.label}: ", "bold"),
            f"{self.done}/{self.total} done, ",
            (f"{self.failed} failed", "red" if self.failed else ""),
            f", {len(self.running)} running, {waiting} waiting; "
            f"{self.rows + live_rows:,} rows; "
            f"{_clock(self.clock() - self.t0)} elapsed, ETA {self.eta()}",
        )
        lines = [head] + [
            Text(f"  running: {name} ({self.doing(key)})", overflow="fold")
            for key, (name, *_) in self.running.items()
        ]
        return Group(*lines)
