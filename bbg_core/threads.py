"""Worker threads that give way to the thread that drives the work.

A run's main thread reads, checks and writes; worker threads hash content (hemera) beside it.
On a machine with few cores the workers could take the cores the main thread needs, and then
the run waits on its slowest part.  Workers therefore lower their own scheduling priority
(their niceness, per thread on Linux): idle cores still go to them, and a busy core goes to
the main thread first.  Nothing else changes: the same work, the same results.
"""

from __future__ import annotations

import os
import sys
import threading

#: How much a worker thread raises its niceness (``BBG_MIGRATE_WORKER_NICE``; 0: not at all).
WORKER_NICE = 5


def _nice() -> int:
    raw = os.environ.get("BBG_MIGRATE_WORKER_NICE", "")
    try:
        return max(0, min(19, int(raw))) if raw.strip() else WORKER_NICE
    except ValueError:
        return WORKER_NICE


def give_way() -> None:
    """Lower the calling thread's priority by :data:`WORKER_NICE` (a pool's initializer).

    Linux only: there ``setpriority(PRIO_PROCESS, tid)`` sets one thread's niceness, where
    other systems would set the whole process's.  A failure leaves the priority as it was."""
    step = _nice()
    if sys.platform != "linux" or step == 0:
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + step))
    except OSError:
        pass


__all__ = ["WORKER_NICE", "give_way"]
