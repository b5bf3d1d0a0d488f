"""The live progress view of ``fleet plan``/``fleet run`` (stderr, terminals only).

Jobs done/running/failed/waiting, rows for the whole fleet, elapsed time and an ETA, and one
line per running job.  The ETA scales the elapsed time by the source bytes still to go over
the source bytes done in this run (jobs kept from an earlier run do not count as speed).
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
        self.running: dict[str, list[Any]] = {}
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
        self.running[job.key] = [job.name, 0]

    def progress(self, job: Any, rows: int, nbytes: int) -> None:
        if job.key in self.running:
            self.running[job.key][1] = rows

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
        live_rows = sum(r for _, r in self.running.values())
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
            Text(f"  running: {name} ({rows:,} rows)", overflow="fold")
            for name, rows in self.running.values()
        ]
        return Group(*lines)
