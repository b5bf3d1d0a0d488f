"""The live progress view of ``fleet plan``/``fleet run`` (stderr, terminals only).

Jobs done/running/failed/waiting, rows for the whole fleet, elapsed time and an ETA, and one
line per running job in the unit its current stage counts: rows (staging, a transfer), or
the source's bytes read (sealing a Signal log or a TextArchive reads it whole before any row
exists) -- never "0 rows" for a job that is reading.  The ETA scales the elapsed time by the
source bytes still to go over the source bytes done in this run (jobs kept from an earlier run
do not count as speed).
"""

from __future__ import annotations

import os
import time
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from bbg_core.closing import Closing


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class FleetView(Closing):
    """A :class:`migrate.fleet.Watcher` that draws on a rich console."""

    def __init__(self, console: Console, jobs: list[Any], label: str) -> None:
        self.label = label
        self.total = len(jobs)
        self.size = {j.key: self._size(j.source) for j in jobs}
        self.left_bytes = sum(self.size.values())
        self.running: dict[str, list[Any]] = {}  # key -> [name, rows, bytes read]
        self.done = self.failed = self.rows = 0
        self.bytes_done = 0
        self.t0 = time.monotonic()
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
        self.running[job.key] = [job.name, 0, 0]

    def progress(self, job: Any, rows: int, nbytes: int) -> None:
        # A stage counts rows or bytes (migrate.progress.as_observer sends the other as 0);
        # a stage's first report (0, 0) keeps what the job showed so far.
        entry = self.running.get(job.key)
        if entry is not None and (rows or nbytes):
            entry[1], entry[2] = rows, nbytes

    def doing(self, key: str) -> str:
        """What a running job has done so far, in the unit its stage counts."""
        _, rows, nbytes = self.running[key]
        if rows:
            return f"{rows:,} rows"
        if nbytes:
            total = self.size.get(key, 0)
            return f"{nbytes:,} of {total:,} bytes read" if total else f"{nbytes:,} bytes read"
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

    def tick(self) -> None:
        self.live.update(self.render(), refresh=True)

    # -- drawing ------------------------------------------------------------------------
    def eta(self) -> str:
        elapsed = time.monotonic() - self.t0
        if self.done >= self.total:
            return "0:00:00"
        if self.bytes_done <= 0:
            return "?"
        return _clock(elapsed * self.left_bytes / self.bytes_done)

    def render(self) -> Group:
        live_rows = sum(r for _, r, _ in self.running.values())
        waiting = self.total - self.done - len(self.running)
        head = Text.assemble(
            (f"{self.label}: ", "bold"),
            f"{self.done}/{self.total} done, ",
            (f"{self.failed} failed", "red" if self.failed else ""),
            f", {len(self.running)} running, {waiting} waiting; "
            f"{self.rows + live_rows:,} rows; "
            f"{_clock(time.monotonic() - self.t0)} elapsed, ETA {self.eta()}",
        )
        lines = [head] + [
            Text(f"  running: {name} ({self.doing(key)})", overflow="fold")
            for key, (name, _, _) in self.running.items()
        ]
        return Group(*lines)
