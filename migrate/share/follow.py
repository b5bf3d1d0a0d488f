"""``tail --follow``: the events after a transaction, then each new transaction as it commits.

A follower remembers one number, the last ledger transaction it emitted in full (and, inside
the transaction it was cut off in, how many events it emitted), so it never skips or repeats:

* :func:`follow` streams from ``since`` (after that transaction), then polls the ledger;
* :func:`follow_into` appends to a file and resumes from the file itself: after a kill at any
  point it drops a torn last line, reads the ``tx`` of the last line and how many lines of that
  transaction are there, and continues with the next event.  The union of everything it ever
  wrote is exactly the ledger's event stream, each event once.

The connection is read-only and holds no read transaction between polls, so the writer can
checkpoint (even ``TRUNCATE``) the WAL at any time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bbg_core import documents
from bbg_core.errors import MigrateError, UsageError
from bbg_core.files import PRIVATE_FILE, refuse_special_output
from migrate.share.common import (
    canonical,
    damaged_reads,
    require_ledger,
    require_sound,
)
from migrate.share.events import Event, entry_events, iter_events
from migrate.store import ledger
from migrate.store.engine import FJALL, engine_of
from migrate.store.readonly import open_sqlite_readonly


def follow(
    store_dir: Path,
    since: int = 0,
    *,
    skip: int = 0,
    poll: float = 0.5,
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[Event]:
    """Events of the transactions after ``since`` (skipping the first ``skip`` events of the
    first one), then of every transaction committed later, until ``stop()`` or Ctrl-C.
    On a Fjall store: its batches (:func:`migrate.share.events_fjall.follow`)."""
    if engine_of(Path(store_dir)) == FJALL:
        from migrate.share.events_fjall import follow as follow_batches

        yield from follow_batches(store_dir, since, skip=skip, poll=poll, stop=stop)
        return
    with open_sqlite_readonly(store_dir, live=True) as conn, damaged_reads(conn.path):
        last = since
        with conn.read():
            require_ledger(conn)
            require_sound(conn, "exported")
            for event in iter_events(conn, since, skip):
                last = max(last, int(event["tx"]))
                yield event
            last = max(last, ledger.last_tx(conn))
        while not stop():
            time.sleep(poll)
            with conn.read():
                for entry in ledger.entries(conn, last):
                    yield from entry_events(conn, entry)
                    last = entry.tx


def resume_point(path: Path) -> tuple[int, int] | None:
    """``(since, skip)`` to continue the event file ``path`` (None: empty or absent).

    A torn last line (no LF: the writer was killed mid-write) is cut off first.
    """
    refuse_special_output(path)  # a FIFO would block, a device never ends
    try:
        fh = open(path, "r+b")  # closed below
    except FileNotFoundError:
        return None
    with fh:
        size = fh.seek(0, os.SEEK_END)
        # Find the end of the last complete line.
        end = size
        block = 65536
        pos = size
        while pos > 0:
            step = min(block, pos)
            fh.seek(pos - step)
            chunk = fh.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                end = pos - step + cut + 1
                break
            pos -= step
        else:
            end = 0
        if end != size:
            fh.truncate(end)
            fh.flush()
            os.fsync(fh.fileno())
        if end == 0:
            return None
        lines = _last_lines(fh, end)
        last_tx: int | None = None
        count = 0
        for line in lines:
            try:
                tx = int(documents.parse(line, path)["tx"])
            except (MigrateError, ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{path}: the last lines are not event/1 events with a tx; "
                                 "name a file tail --follow wrote", path=str(path)) from exc
            if last_tx is None:
                last_tx = tx
            if tx != last_tx:
                break
            count += 1
        assert last_tx is not None
        return last_tx - 1, count


def _last_lines(fh: object, end: int) -> Iterator[bytes]:
    """The complete lines before ``end``, last first (read backwards in blocks)."""
    import io

    assert isinstance(fh, io.BufferedRandom)
    pos = end
    tail = b""
    while pos > 0:
        step = min(1 << 20, pos)
        fh.seek(pos - step)
        data = fh.read(step) + tail
        pos -= step
        parts = data.split(b"\n")
        # parts[-1] is b"" (data ends with LF) on the first block; parts[0] may be partial.
        tail = parts[0]
        for part in reversed(parts[1:]):
            if part:
                yield part
    if tail:
        yield tail


def follow_into(
    store_dir: Path,
    path: Path,
    since: int = 0,
    *,
    poll: float = 0.5,
    stop: Callable[[], bool] = lambda: False,
    on_event: Callable[[Event], None] | None = None,
) -> None:
    """Append the event stream to ``path``, resuming from what it already holds (``since`` is
    used only when it holds nothing)."""
    point = resume_point(path)
    start, skip = (since, 0) if point is None else point
    from migrate.share.follow_bind import check

    check(store_dir, path, point)  # the file must be this store's stream
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        for event in follow(store_dir, start, skip=skip, poll=poll, stop=stop):
            data = canonical(event)
            while data:
                data = data[os.write(fd, data):]
            if on_event is not None:
                on_event(event)
    finally:
        os.close(fd)
