"""The store's one clock: ledger times and snapshot creation times, in UTC microseconds.

Wall time by default.  ``BBG_MIGRATE_CLOCK=<µs>`` makes it deterministic (tests, conformance
fixtures, reproducible runs): the first ledger transaction of a store gets that value and each
later one the previous time plus one second; a snapshot's creation time is that value.
"""

from __future__ import annotations

import os
import time

ENV = "BBG_MIGRATE_CLOCK"
_STEP = 1_000_000


def _fixed() -> int | None:
    raw = os.environ.get(ENV)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(
            f"{ENV}={raw!r} is not integer microseconds (e.g. 1767225600000000)"
        ) from None
    if value < 0:
        raise ValueError(f"{ENV}={raw!r} must not be negative")
    return value


def now_us() -> int:
    """The current time in microseconds since the Unix epoch (UTC), or the injected one."""
    fixed = _fixed()
    return time.time_ns() // 1000 if fixed is None else fixed


def next_at(prev: int | None) -> int:
    """The time of a new ledger transaction whose predecessor has time ``prev`` (None: the
    first): the wall clock, but always strictly after ``prev`` (a clock stepped back never
    makes the ledger go back in time)."""
    fixed = _fixed()
    if fixed is not None:
        return fixed if prev is None else max(fixed, prev + _STEP)
    now = time.time_ns() // 1000
    return now if prev is None else max(now, prev + 1)
