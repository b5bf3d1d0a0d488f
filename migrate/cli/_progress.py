"""Progress on stderr while long work runs: the observer the CLI hands to ``migrate.api``.

* on a terminal: a rich display, one labelled task per stage (stage, done/total, percentage,
  rate, ETA), gone when the command ends;
* ``--json-progress``: one JSON line per second on stderr (``schemas/progress.schema.json``),
  plus a line when each stage starts and ends, for wrappers;
* silent with ``--json`` (unless ``--json-progress``), ``--quiet``, or when stderr is not a
  terminal.

The library calls the observer as ``observer(stage, done, total, unit)``; within a stage
``done`` never runs backwards here either (the display holds the highest value seen).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bbg_core.canonical import canonical_json
from migrate.cli._render import err, stderr_console
from migrate.cli._state import state

JSON_INTERVAL = 1.0  # seconds between JSON lines within a stage
#: A rate (and an ETA from it) is shown once a stage has run this long: before, a stage that
#: counted its rows in a millisecond would claim billions of rows a second.
MIN_RATE_SECONDS = 1.0
#: Said of a stage whose count is complete while its work is not (a commit, a flush).
FINISHING = "finishing"


@dataclass
class _Stage:
    name: str
    unit: str
    started: float
    done: int = 0
    total: int | None = None
    task: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def rate(self, now: float) -> float | None:
        """Units a second, None until the stage has run :data:`MIN_RATE_SECONDS`."""
        elapsed = now - self.started
        return self.done / elapsed if elapsed >= MIN_RATE_SECONDS else None

    def doc(self, now: float, status: str) -> dict[str, Any]:
        """The stage as a ``progress`` JSON line."""
        rate = self.rate(now)
        left = None
        if self.total is not None and self.done >= self.total:
            left = 0.0
        elif self.total is not None and rate:
            left = round((self.total - self.done) / rate, 3)
        percent = None
        if self.total:
            percent = round(100.0 * min(self.done, self.total) / self.total, 2)
        elif self.total == 0:
            percent = 100.0
        return {
            "format": "bbg-migrate/progress/1", "stage": self.name, "status": status,
            "done": self.done, "total": self.total, "unit": self.unit, "percent": percent,
            "rate_per_second": None if rate is None else round(rate, 3), "eta_seconds": left,
            "elapsed_seconds": round(now - self.started, 3),
        }  # fmt: skip


class _Watcher:
    """The observer: keeps one :class:`_Stage` per stage name and draws it."""

    def __init__(self, bar: Any, json_lines: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self._bar = bar
        self._json = json_lines
        self._clock = clock
        self._stages: dict[str, _Stage] = {}
        self._current: _Stage | None = None
        self._last_line = 0.0

    def __call__(self, stage: str, done: int, total: int | None, unit: str = "rows") -> None:
        now = self._clock()
        s = self._stages.get(stage)
        fresh = s is None
        if s is None:
            self._finish(now)
            s = self._stages[stage] = _Stage(stage, unit, now)
            self._current = s
            if self._bar is not None:
                s.task = self._bar.add_task(stage, total=total, unit=unit, note="")
        s.done = max(s.done, done)
        if total is not None:
            s.total = max(total, s.done)
        if fresh:
            self._line(s, now, "started")
            return
        if self._bar is not None:
            # A complete count whose stage has not ended says so, rather than sit at 100 %.
            note = FINISHING if s.total is not None and s.done >= s.total else ""
            self._bar.update(s.task, completed=s.done, total=s.total, note=note)
        if self._json and now - self._last_line >= JSON_INTERVAL:
            self._line(s, now, "running")

    def _finish(self, now: float, status: str = "finished") -> None:
        s = self._current
        if s is None:
            return
        if s.total is None:
            s.total = s.done
        if self._bar is not None:
            self._bar.update(s.task, completed=s.done, total=s.total, note="")
        self._line(s, now, status)
        self._current = None

    def _line(self, s: _Stage, now: float, status: str) -> None:
        if not self._json:
            return
        self._last_line = now
        doc = s.doc(now, status)
        try:
            sys.stderr.write(canonical_json(doc, ascii=True) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            # Progress is advisory: a reader that went away (`2>&1 | head`, a closed pipe)
            # must never stop the work. No more lines are tried.
            self._json = False

    def close(self, status: str = "finished") -> None:
        self._finish(self._clock(), status)


def _columns() -> list[Any]:
    from rich.progress import (
        BarColumn,
        ProgressColumn,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Counts(ProgressColumn):
        """``done/total unit`` with thousands separators (``done unit`` while unknown)."""

        def render(self, task: Any) -> Text:
            unit = task.fields.get("unit", "rows")
            done = int(task.completed)
            if task.total is None:
                return Text(f"{done:,} {unit}")
            return Text(f"{done:,}/{int(task.total):,} {unit}")

    class Rate(ProgressColumn):
        """Units a second once the stage has run :data:`MIN_RATE_SECONDS` (blank before)."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            unit = task.fields.get("unit", "rows")
            if speed is None or (task.elapsed or 0.0) < MIN_RATE_SECONDS:
                return Text("")
            return Text(f"{speed:,.0f} {unit}/s")

    return [
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=24),
        TaskProgressColumn(), Counts(), Rate(), TimeElapsedColumn(), TextColumn("ETA"),
        TimeRemainingColumn(), TextColumn("{task.fields[note]}"),
    ]  # fmt: skip


@contextmanager
def watch(as_json: bool = False) -> Iterator[_Watcher | None]:
    """The observer for one command (None when nothing is to be shown)."""
    json_lines = state.json_progress
    bar_wanted = not (as_json or state.quiet or json_lines) and err.is_terminal
    if not (json_lines or bar_wanted):
        yield None
        return
    if not bar_wanted:
        with _closing(_Watcher(None, json_lines)) as watcher:
            yield watcher
        return
    from rich.progress import Progress

    with Progress(*_columns(), console=stderr_console(), transient=True) as bar, _closing(
        _Watcher(bar, False)
    ) as watcher:
        yield watcher


@contextmanager
def _closing(watcher: _Watcher) -> Iterator[_Watcher]:
    """The last stage ends ``finished``, or ``stopped`` when the command fails."""
    try:
        yield watcher
    except BaseException:
        watcher.close("stopped")
        raise
    watcher.close()


@contextmanager
def working(stage: str, as_json: bool = False) -> Iterator[None]:
    """A one-step labelled task (spinner, elapsed time) for work the library does not count."""
    with watch(as_json) as observer:
        if observer is not None:
            observer(stage, 0, 1, "steps")
        yield
        if observer is not None:
            observer(stage, 1, 1, "steps")


def labelled(observer: _Watcher | None, name: str) -> Any:
    """``observer`` with ``name`` after each stage label (``hemera FILE``), or None."""
    if observer is None:
        return None

    def observe(stage: str, done: int, total: int | None, unit: str = "rows") -> None:
        observer(f"{stage} {name}", done, total, unit)

    return observe
