"""A small process pool that knows which job each worker holds.

Why not ``concurrent.futures.ProcessPoolExecutor``: when one of its workers dies (a
segfault in a C extension, the OOM killer) it marks the whole pool broken and fails every
running and pending future, so one job's crash would stop the others.  Here each worker has
its own pipe; a dead worker fails only the job it held and is replaced.

Workers start with the ``forkserver`` method (``spawn`` where that is missing): they never
inherit the parent's threads or locks (fork + threads is unsafe), and they ignore SIGINT so
that Ctrl-C is handled once, by the parent, which then stops them.  Killing a worker at any
point is safe because every job is the crash-safe, resumable ``run``.

Messages from a worker: ``("progress", rows, nbytes, total)`` any number of times (``total``:
the current stage's total in the unit it counts, None while unknown), then
``("done", result)``.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from bbg_core.closing import Closing
from migrate.progress import CountsCallback

Task = Callable[[Any, CountsCallback], Any]
PROGRESS_EVERY = 0.2  # seconds between progress messages of one job
PRELOAD = ("migrate.fleet.run", "migrate.fleet.plan", "migrate.pipeline")


def _worker(conn: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        if item is None:
            return
        task, arg = item
        last = 0.0

        def progress(rows: int, nbytes: int, total: int | None = None) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY:
                last = now
                conn.send(("progress", rows, nbytes, total))

        conn.send(("done", task(arg, progress)))


@dataclass
class _Slot:
    process: BaseProcess
    conn: Connection
    busy: Any = None  # the token of the task it holds


class Pool(Closing):
    """``workers`` processes; :meth:`submit` a task to a free one, :meth:`events` to listen."""

    def __init__(self, workers: int) -> None:
        methods = multiprocessing.get_all_start_methods()
        method = "forkserver" if "forkserver" in methods else "spawn"
        self._ctx: Any = multiprocessing.get_context(method)
        if method == "forkserver":
            # Import the pipeline once in the fork server; every worker then starts warm.
            self._ctx.set_forkserver_preload(["__main__", *PRELOAD])
        self._slots = [self._start() for _ in range(workers)]

    def _start(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_worker, args=(child,), daemon=True)
        process.start()
        child.close()
        return _Slot(process, parent)

    @property
    def free(self) -> int:
        return sum(1 for s in self._slots if s.busy is None)

    def submit(self, token: Any, task: Task, arg: Any) -> None:
        """Give ``task(arg, progress)`` to a free worker; ``token`` names it in events."""
        slot = next(s for s in self._slots if s.busy is None)
        if not slot.process.is_alive():  # died while idle: replace it before use
            slot.conn.close()
            slot.process.join()
            replacement = self._start()
            self._slots[self._slots.index(slot)] = replacement
            slot = replacement
        slot.busy = token
        slot.conn.send((task, arg))

    def events(self, timeout: float) -> list[tuple[Any, str, Any]]:
        """``(token, "progress", (rows, nbytes, total))``, ``(token, "done", result)`` or
        ``(token, "died", exitcode)`` for whatever happened within ``timeout`` seconds."""
        busy = [s for s in self._slots if s.busy is not None]
        if not busy:
            return []
        waitables: list[Any] = [s.conn for s in busy] + [s.process.sentinel for s in busy]
        ready = set(wait(waitables, timeout))
        out: list[tuple[Any, str, Any]] = []
        for slot in busy:
            token = slot.busy
            died = slot.process.sentinel in ready
            while slot.busy is not None and (slot.conn in ready or died) and slot.conn.poll():
                try:
                    msg = slot.conn.recv()
                except (EOFError, OSError):
                    died = True
                    break
                if msg[0] == "progress":
                    out.append((token, "progress", tuple(msg[1:])))
                else:
                    slot.busy = None
                    out.append((token, "done", msg[1]))
                if not died:
                    break
            if died:
                slot.process.join()
                if slot.busy is not None:
                    out.append((token, "died", slot.process.exitcode))
                slot.conn.close()
                self._slots[self._slots.index(slot)] = self._start()
        return out

    def close(self) -> None:
        """Stop every worker: politely when idle, with SIGTERM when busy (runs are crash-safe)."""
        for slot in self._slots:
            if slot.busy is None:
                try:
                    slot.conn.send(None)
                except OSError:
                    pass
            else:
                slot.process.terminate()
        for slot in self._slots:
            slot.process.join(5)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join()
            slot.conn.close()
