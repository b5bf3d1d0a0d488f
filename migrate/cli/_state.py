"""Process-wide CLI options set by the top-level callback (``--debug``, ``--store``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class State:
    debug: bool = False
    store: str | None = None


state = State()
