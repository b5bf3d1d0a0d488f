"""Progress of long work, as the library reports it to whoever watches.

An *observer* is any callable ``observer(stage, done, total, unit)``: ``stage`` a short
label (``seal``, ``stage``, ``validate``, ``activate``, ``inspect``, ``transfer``, ...),
``done`` the units finished so far in that stage, ``total`` the units the stage will do (None
while unknown), ``unit`` what is counted (``rows``, ``bytes``, ``steps``, ...).  The CLI
draws it as a bar (``migrate.cli._progress``) or as JSON lines; the library never knows
which.  The readers underneath keep their plain ``callback(rows, nbytes)``;
:func:`phase` turns an observer into one for a named stage, so the hooks in the pipeline are
one call each.

Within one stage ``done`` never runs backwards (a reader that counts again from zero, e.g. a
second pass, is held at the highest value seen), and a total never falls below ``done``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class Observer(Protocol):
    def __call__(self, stage: str, done: int, total: int | None, unit: str = "rows") -> None:
        """Stage ``stage`` has finished ``done`` of ``total`` units."""


RowsCallback = Callable[[int, int], None]


class CountsCallback(Protocol):
    """``callback(rows, nbytes, total)``: a :data:`RowsCallback` that may also hear the
    current stage's total (the fleet's worker pipe)."""

    def __call__(self, rows: int, nbytes: int, total: int | None = None) -> None: ...


def phase(
    observer: Observer | None, stage: str, total: int | None = None, *, unit: str = "rows"
) -> RowsCallback | None:
    """The ``(rows, nbytes)`` callback of one stage (``unit``: which of the two counts); it
    can also say what the stage finishes with (:func:`finishing`)."""
    count = counter(observer, stage, total, unit)
    if observer is None or count is None:
        return None
    return _Phase(observer, stage, count, unit == "bytes")


#: How a stage that has counted all its units names what it still does (a check that runs
#: after the last row, a flush, a publication): ``STAGE: finishing: WHAT``.
FINISHING = "{stage}: finishing: {what}"


class _Phase:
    """The callback :func:`phase` returns."""

    def __init__(self, observer: Observer, stage: str, count: Callable[[int], None],
                 bytes_: bool) -> None:  # fmt: skip
        self._observer, self._stage, self._count, self._bytes = observer, stage, count, bytes_

    def __call__(self, rows: int, nbytes: int) -> None:
        self._count(nbytes if self._bytes else rows)

    def finishing(self, what: str) -> Callable[[], None]:
        return step(self._observer, FINISHING.format(stage=self._stage, what=what))


@contextmanager
def finishing(callback: object, what: str) -> Iterator[None]:
    """While the block runs, the stage that ``callback`` (a :func:`phase` callback) counts
    has counted every unit and does ``what``: reported as a step of its own, ``STAGE:
    finishing: WHAT``, so a display never sits at 100 % without saying why.  Any other
    callback (None, a plain function) reports nothing."""
    said = getattr(callback, "finishing", None)
    done = said(what) if callable(said) else None
    yield
    if done is not None:
        done()


CountCallback = Callable[[int], None]


def counter(
    observer: Observer | None, stage: str, total: int | None, unit: str
) -> CountCallback | None:
    """The ``done`` callback of one stage counting ``unit`` (bytes, pages, events,
    fixtures, ...) out of ``total``; None when nobody watches, so a hook costs one test.
    Reported as started now; ``done`` is held at the highest value seen."""
    if observer is None:
        return None
    seen = 0
    observer(stage, 0, total, unit)

    def report(done: int) -> None:
        nonlocal seen
        seen = max(seen, done)
        observer(stage, seen, None if total is None else max(total, seen), unit)

    return report


def stream_size(stream: object) -> int | None:
    """Bytes left to read in ``stream`` when it is a regular file (a total for a byte-counting
    stage), None for a pipe, a terminal or anything that cannot tell."""
    import stat

    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return max(st.st_size - os.lseek(fd, 0, os.SEEK_CUR), 0)
    except (AttributeError, OSError, ValueError):
        return None


def step(observer: Observer | None, stage: str) -> Callable[[], None]:
    """A stage of one unit (validate, activate): reported as started now; call the result
    when it is done."""
    if observer is None:
        return lambda: None
    observer(stage, 0, 1, "steps")
    return lambda: observer(stage, 1, 1, "steps")


def file_size(path: str | os.PathLike[str]) -> int | None:
    """The size of ``path`` in bytes (a total for byte-counting stages), None if unknown."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def source_rows(path: str | os.PathLike[str]) -> int | None:
    """The rows a redb file holds, from its table lengths (cheap: no entry is read); None
    for anything else or a file that cannot tell (the real read reports why)."""
    from importers.redb.sniff import MAGIC, looks_like_redb

    try:
        with open(path, "rb") as fh:
            if not looks_like_redb(fh.read(len(MAGIC))):
                return None
        from importers.redb.report import tables_doc

        return int(sum(t["len"] for t in tables_doc(path)["tables"]))
    except Exception:  # only a total for a progress bar
        return None


def as_observer(callback: CountsCallback) -> Observer:
    """An observer feeding a ``callback(rows, nbytes, total)`` (the fleet's worker pipe): row
    counts as rows, byte counts as bytes (``total``: the stage's, in that unit), steps not at
    all."""

    def observe(stage: str, done: int, total: int | None, unit: str = "rows") -> None:
        if unit == "rows":
            callback(done, 0, total)
        elif unit == "bytes":
            callback(0, done, total)

    return observe
