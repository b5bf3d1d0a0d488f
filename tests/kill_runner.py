"""Run the bbg-migrate CLI with a SIGKILL at the N-th commit phase or file operation
(crash tests only).

``python -m tests.kill_runner N ARGS...``: every store connection in this process calls the
hook just before and just after each COMMIT; the N-th call kills the process with SIGKILL, as
a power cut or ``kill -9`` would.

``python -m tests.kill_runner file-op:N ARGS...``: the N-th file operation of the source's
retirement (:mod:`migrate.pipeline.retire`: mkdir, link, open for writing, write, fsync,
replace, rename, unlink) is never made: the process is SIGKILLed just before it.

``python -m tests.kill_runner sigint:N ARGS...``: at the N-th commit phase the process sends
itself a real SIGINT (a Ctrl-C landing at a known point of the work).

``python -m tests.kill_runner pause:N:SECONDS:FLAG ARGS...``: at the N-th commit phase the
process creates the file FLAG and sleeps SECONDS, then goes on (two-process race tests: a
second run starts while the first is paused half-way).

``python -m tests.kill_runner share-op:N ARGS...``: the N-th file operation of a Fjall
store's build and publication by ``restore`` / ``backup`` (:mod:`migrate.store.fjall.writer`,
:mod:`migrate.share.publish`, and :mod:`bbg_core.files` while a store is published; a SQLite
store's publication too) is never made: the process is SIGKILLed just before it.

``python -m tests.kill_runner rewrite-op:N ARGS...``: the same for the rewrite of a Fjall
store by ``excise`` / ``nohistory`` (:mod:`migrate.store.keyspace_retention`; the exchange
of the directories counts as one operation, and the moment after it as another).

``KILL_RUNNER_BATCH_ROWS=N`` in the environment lowers the rows an activation writes in one
batch (:data:`migrate.pipeline.stages.BATCH_ROWS`), so a small source goes in as segments.

The hooks live here, in the tests, not in the product.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

# The calls of ``os`` that change the file system (or make a change durable).
FILE_OPS = frozenset({"mkdir", "link", "unlink", "rename", "replace", "fsync", "write"})


class _KillingOs:
    """``os`` for one module, SIGKILLing the process before its N-th file operation."""

    def __init__(self, target: int) -> None:
        self._target = target
        self._seen = 0

    def _count(self) -> None:
        self._seen += 1
        if self._seen == self._target:
            os.kill(os.getpid(), signal.SIGKILL)

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name == "open":

            def opener(path: Any, flags: int, *args: Any, **kw: Any) -> int:
                if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                    self._count()
                return os.open(path, flags, *args, **kw)

            return opener
        if name in FILE_OPS:

            def op(*args: Any, **kw: Any) -> Any:
                self._count()
                return real(*args, **kw)

            return op
        return real


def _files_killing_during(owner: Any, name: str, killing: _KillingOs) -> None:
    """While ``owner.name`` runs, :mod:`bbg_core.files` counts its file operations too."""
    from bbg_core import files

    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        files.os = killing  # type: ignore[assignment]
        try:
            return real(*args, **kwargs)
        finally:
            files.os = os

    setattr(owner, name, counted)


def main() -> None:
    spec = sys.argv[1]
    if spec.startswith("file-op:"):
        from migrate.pipeline import retire

        killing = _KillingOs(int(spec.removeprefix("file-op:")))
        retire.os = killing  # type: ignore[assignment]
        # The retirement writes its record with bbg_core.files.atomic_write: count those
        # operations too, but only while a retirement runs (the store's own fsyncs are not).
        _files_killing_during(retire, "retire", killing)
    elif spec.startswith("share-op:"):
        from migrate.share import publish
        from migrate.store.fjall import writer

        killing = _KillingOs(int(spec.removeprefix("share-op:")))
        publish.os = killing  # type: ignore[assignment]
        writer.os = killing  # type: ignore[assignment]
        # The publication's fsyncs go through bbg_core.files: count them too (the one after
        # the rename is where a kill leaves a complete store that the command did not report).
        _files_killing_during(publish.Aside, "publish", killing)
    elif spec.startswith("rewrite-op:"):
        from migrate.store import keyspace_retention as rewriting
        from migrate.store.fjall import writer

        killing = _KillingOs(int(spec.removeprefix("rewrite-op:")))
        rewriting.os = killing  # type: ignore[assignment]
        writer.os = killing  # type: ignore[assignment]
        exchange = rewriting._exchange

        def exchanging(a: Any, b: Any) -> None:  # the swap counts as an operation, and after
            killing._count()
            exchange(a, b)
            killing._count()

        rewriting._exchange = exchanging  # type: ignore[assignment]
    else:
        pause: tuple[float, str] | None = None
        sig = signal.SIGKILL
        if spec.startswith("sigint:"):
            target, sig = int(spec.removeprefix("sigint:")), signal.SIGINT
        elif spec.startswith("pause:"):
            n, seconds, flag = spec.removeprefix("pause:").split(":", 2)
            target, pause = int(n), (float(seconds), flag)
        else:
            target = int(spec)
        seen = 0

        def hook(phase: str) -> None:
            nonlocal seen
            seen += 1
            if seen != target:
                return
            if pause is None:
                os.kill(os.getpid(), sig)
            else:
                with open(pause[1], "w"):
                    pass
                time.sleep(pause[0])

        from migrate.store.connection import Connection

        Connection.commit_hook = staticmethod(hook)  # type: ignore[assignment]
    batch_rows = os.environ.get("KILL_RUNNER_BATCH_ROWS")
    if batch_rows:  # a small source activates in segments, as a big one does
        from migrate.pipeline import stages

        stages.BATCH_ROWS = int(batch_rows)
    sys.argv = ["bbg-migrate", *sys.argv[2:]]
    from migrate.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
