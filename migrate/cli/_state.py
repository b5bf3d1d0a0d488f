"""Process-wide CLI options set by the top-level callback (``--debug``, ``--store``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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


def named_store(option: Path | None) -> Path | None:
    """The store a command names: its own ``--store``, else the root ``--store`` given
    before the command, else None (the library's default store)."""
    if option is not None:
        return option
    return Path(state.store) if state.store else None
