"""The strict, streaming decoder for the old cyb Signal log (codes: ``model.ERROR_CODES``).

It walks the log frame by frame and stops at the first violation with a
:class:`~bbg_core.errors.SignalLogError` carrying ``code``, the absolute ``offset`` (of the
offending byte), ``frame_index``, ``frame_start`` and ``path``.  It never skips or
resynchronises: the old writer never fsynced, so a torn tail is expected, and anything past
the first bad byte has no trustworthy frame boundary.

Memory is bounded: files are read through a forward window (one chunk plus the current frame,
itself bounded by ``Limits.max_payload_bytes``); in-memory logs may be bytes or an ``mmap``.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass

from bbg_core.errors import SignalLogError, SourceError
from importers.signal_log.framing import Buffer, PathLike, Source, frame_error, walk_frames
from importers.signal_log.model import DEFAULT_LIMITS, SIGILS, SIGNAL, Frame, Intent, Limits, Signal
from importers.signal_log.payload import decode_intent, decode_signal
from importers.signal_log.window import FileWindow

__all__ = ["Buffer", "PathLike", "Source", "ValidPrefix", "decode_frames", "read_frames"]


def signal_log_error(
    code: str,
    offset: int,
    frame_index: int,
    frame_start: int,
    detail: str,
    path: str | None = None,
) -> SignalLogError:
    """Build the error with its keyword context and a message that says what to do."""
    return frame_error(
        SignalLogError, "signal log", code, offset, frame_index, frame_start, detail, path
    )


def decode_frames(
    data: Source, *, limits: Limits = DEFAULT_LIMITS, path: str | None = None
) -> Iterator[Frame]:
    """Yield every frame of the log ``data`` in order; raise ``SignalLogError`` at the first fault.

    Frames are yielded as they are decoded, so a consumer sees every frame before the error.
    ``path`` only names the source in errors.  The framing rules are
    :func:`importers.signal_log.framing.walk_frames`; the payload rules
    :mod:`importers.signal_log.payload`.
    """

    def decode(sigil: str, payload: bytes) -> Signal | Intent:
        return decode_signal(payload, limits) if sigil == SIGNAL else decode_intent(payload)

    return walk_frames(
        data,
        sigils="".join(SIGILS),
        decode=decode,
        make=Frame,
        limits=limits,
        error=signal_log_error,
        path=path,
    )


def read_frames(path: PathLike, *, limits: Limits = DEFAULT_LIMITS) -> Iterator[Frame]:
    """Decode the log file at ``path`` with a buffered forward window; see :func:`decode_frames`.

    The file is read up to the size it had when opened; memory stays bounded by one chunk
    plus one frame.
    """
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # closed in the finally below
    except OSError as exc:
        raise SourceError(f"{name}: cannot open the signal log: {exc.strerror}", path=name) from exc
    try:
        size = os.fstat(handle.fileno()).st_size
        yield from decode_frames(FileWindow(handle, size, name), limits=limits, path=name)
    except OSError as exc:
        raise SourceError(f"{name}: cannot read the signal log: {exc.strerror}", path=name) from exc
    finally:
        handle.close()


@dataclass(frozen=True, slots=True)
class ValidPrefix:
    """The intact part of a log: ``events`` frames in bytes ``[0, end)`` of ``size``."""

    events: int
    end: int
    size: int
    error: SignalLogError | None

    @property
    def discarded_bytes(self) -> int:
        """Bytes after the valid prefix (0 for a valid log)."""
        return self.size - self.end


def valid_prefix(source: PathLike | Buffer, *, limits: Limits = DEFAULT_LIMITS) -> ValidPrefix:
    """Decode ``source`` (a path or the log's bytes) and report what precedes the first error.

    For a torn log this is what an operator may choose to import; ``error`` says why the
    rest is refused.  A valid log gives ``end == size`` and ``error is None``.
    """
    if isinstance(source, bytes | bytearray | memoryview | mmap.mmap):
        size = len(source)
        frames = decode_frames(source, limits=limits)
    else:
        size = _file_size(source)
        frames = read_frames(source, limits=limits)
    events = 0
    end = 0
    try:
        for frame in frames:
            events += 1
            end = frame.end
    except SignalLogError as exc:
        return ValidPrefix(events, end, size, exc)
    return ValidPrefix(events, end, size, None)


def _file_size(path: PathLike) -> int:
    name = os.fspath(path)
    try:
        return os.stat(name).st_size
    except OSError as exc:
        raise SourceError(f"{name}: cannot read the signal log: {exc.strerror}", path=name) from exc
