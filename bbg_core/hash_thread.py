"""A hash object fed from its own thread, so that hashing overlaps the work that makes the
bytes.

``hashlib`` releases the GIL while it hashes a buffer of 2 KiB or more, so one thread can
hash the lists a pass has already framed while the pass decodes, checks and writes the next
ones.  The bytes are hashed in exactly the order :meth:`HashThread.update` received them
(one FIFO queue, one worker), so the digest is the one a plain ``update`` loop gives.

Only immutable ``bytes`` may be queued: a buffer the caller could reuse (a ``memoryview`` of
a reader's page) goes through :meth:`HashThread.update_now`, which waits for the queue to
drain and hashes in the caller's thread.  At most ``depth`` buffers wait in the queue (the
caller blocks beyond that), so memory stays bounded by ``depth`` of the caller's buffers.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

#: Buffers at most waiting to be hashed.
DEPTH = 2


class HashThread:
    """``hasher`` (a ``hashlib`` object) updated from one worker thread, started on the first
    update; :meth:`hexdigest` waits for every queued buffer.  Use it as a context manager (or
    call :meth:`close`) so that the thread ends whatever the caller raises."""

    def __init__(self, hasher: Any, depth: int = DEPTH) -> None:
        self._hasher = hasher
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=depth)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def update(self, data: bytes) -> None:
        """Queue ``data`` (immutable ``bytes`` only) to be hashed after everything before."""
        if type(data) is not bytes:
            raise TypeError(f"HashThread.update takes bytes, not {type(data).__name__}")
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="hash-thread", daemon=True)
            self._thread.start()
        self._queue.put(data)

    def update_now(self, data: bytes | bytearray | memoryview) -> None:
        """Hash ``data`` in this thread, after everything queued (for buffers that may change
        once this returns)."""
        self._drain()
        self._hasher.update(data)

    def hexdigest(self) -> str:
        self._drain()
        return str(self._hasher.hexdigest())

    def close(self) -> None:
        """End the worker (after the queued buffers); the hash object stays readable."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        self._raise()

    def __enter__(self) -> HashThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drain(self) -> None:
        if self._thread is not None:
            self._queue.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _work(self) -> None:
        q, update = self._queue, self._hasher.update
        while True:
            data = q.get()
            try:
                if data is None:
                    return
                if self._error is None:
                    update(data)
            except BaseException as exc:  # reported to the caller's thread
                self._error = exc
            finally:
                q.task_done()


__all__ = ["DEPTH", "HashThread"]
