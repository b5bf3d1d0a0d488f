"""Process-wide CLI options set by the top-level callback (``--debug``, ``--store``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class State:
    debug: bool = False
    store: str | None = None
    quiet: bool = False  # --quiet: no progress display
    json_progress: bool = False  # --json-progress: one JSON line per second on stderr
    # A JSON document is already on stdout: a failure after it (inspect/doctor exit 3 with
    # their report) adds no second document.
    emitted: bool = False


state = State()
