"""The strict, streaming decoder for the old cyb Signal log (BRIEF §2.2, error codes §2.4).

It walks the log frame by frame and stops at the first violation with a
:class:`~bbg_core.errors.SignalLogError` carrying ``code``, the absolute ``offset`` (as §2.4
defines it per code), ``frame_index``, ``frame_start`` and ``path``.  It never skips or
resynchronises: the old writer never fsynced, so a torn tail is expected, and anything past
the first bad byte has no trustworthy frame boundary.

Memory is bounded: files are read through a forward window (one chunk plus the current frame,
itself bounded by ``Limits.max_payload_bytes``); in-memory logs may be bytes or an ``mmap``.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from bbg_core.errors import SignalLogError, SourceError
from importers.signal_log.model import (
    DEFAULT_LIMITS,
    MARKER,
    MAX_LEB128_BYTES,
    RENDERER,
    SIGILS,
    SIGNAL,
    Frame,
    Limits,
)
from importers.signal_log.payload import PayloadError, decode_intent, decode_signal
from importers.signal_log.window import FileWindow

_Fail = Callable[[str, int, str], SignalLogError]
Buffer = bytes | bytearray | memoryview | mmap.mmap
Source = Buffer | FileWindow
PathLike = str | os.PathLike[str]

_HINTS: Final = {
    "truncated-frame": (
        "the log ends inside this frame (a torn write by the old, never-fsynced writer); "
        "the frames before it are intact, and importing only that valid prefix is an "
        "explicit operator choice"
    ),
    "limit-exceeded": "raise the limit explicitly if this source is trusted",
}
_DEFAULT_HINT: Final = (
    "the log is corrupt here and the decoder never skips or resynchronises; "
    "repair the file or leave this source out"
)


def signal_log_error(
    code: str,
    offset: int,
    frame_index: int,
    frame_start: int,
    detail: str,
    path: str | None = None,
) -> SignalLogError:
    """Build the error with its keyword context and a message that says what to do."""
    where = path if path is not None else "<signal log>"
    hint = _HINTS.get(code, _DEFAULT_HINT)
    message = (
        f"{where}: {code} at byte {offset} (frame {frame_index}, starting at byte "
        f"{frame_start}): {detail}; {hint}"
    )
    return SignalLogError(
        message,
        code=code,
        offset=offset,
        frame_index=frame_index,
        frame_start=frame_start,
        path=path,
    )


def decode_frames(
    data: Source, *, limits: Limits = DEFAULT_LIMITS, path: str | None = None
) -> Iterator[Frame]:
    """Yield every frame of the log ``data`` in order; raise ``SignalLogError`` at the first fault.

    Frames are yielded as they are decoded, so a consumer sees every frame before the error.
    ``path`` only names the source in errors.
    """
    size = len(data)
    if size > limits.max_log_bytes:
        # foculus checks the whole log's size before the first frame (position 0).
        raise signal_log_error(
            "limit-exceeded", 0, 0, 0, f"log of {size} bytes (limit {limits.max_log_bytes})", path
        )
    pos = 0
    index = 0
    while pos < size:
        start = pos

        # Bound per frame (default arguments), so errors name this frame's index and start.
        def fail(
            code: str, offset: int, detail: str, index: int = index, start: int = start
        ) -> SignalLogError:
            return signal_log_error(code, offset, index, start, detail, path)

        def need(end: int, fail: _Fail = fail) -> None:
            if end > size:
                raise fail("truncated-frame", size, f"the file ends {end - size} byte(s) short")

        if index >= limits.max_events:
            raise fail("limit-exceeded", start, f"more than {limits.max_events} events")
        # The longest possible header in one read: marker, sigil, renderer, 10 LEB128 bytes.
        # Reading from the frame start only keeps a file window moving forward.
        head = bytes(data[start : min(start + 3 + MAX_LEB128_BYTES, size)])
        if head[0] != MARKER:
            raise fail("bad-marker", start, f"frame starts with 0x{head[0]:02x}, not 0x1f")
        need(start + 2)
        sigil = chr(head[1])
        if sigil not in SIGILS:
            raise fail("unknown-sigil", start + 1, f"sigil 0x{head[1]:02x}")
        need(start + 3)
        if head[2] != RENDERER:
            raise fail("bad-renderer", start + 2, f"renderer 0x{head[2]:02x}, not 'b'")
        length_at = start + 3
        length = 0
        pos = length_at
        for i in range(MAX_LEB128_BYTES):
            need(pos + 1)
            byte = head[pos - start]
            pos += 1
            # The 10th byte may only carry bit 63 (foculus: "LEB128 overflow").
            if i == MAX_LEB128_BYTES - 1 and byte > 1:
                raise fail("overlong-leb128", length_at, "payload length overflows 64 bits")
            length |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if byte == 0 and i > 0:
                    raise fail("overlong-leb128", length_at, "payload length is not minimal")
                break
        if length > limits.max_payload_bytes:
            raise fail(
                "limit-exceeded",
                length_at,
                f"payload of {length} bytes (limit {limits.max_payload_bytes})",
            )
        payload_start = pos
        end = payload_start + length
        need(end)
        raw = bytes(data[start:end])
        payload = raw[payload_start - start :]
        try:
            body = decode_signal(payload, limits) if sigil == SIGNAL else decode_intent(payload)
        except PayloadError as exc:
            raise fail(exc.code, payload_start + exc.offset, exc.detail) from None
        yield Frame(index, start, end, sigil, payload_start, length, raw, body)
        index += 1
        pos = end


def read_frames(path: PathLike, *, limits: Limits = DEFAULT_LIMITS) -> Iterator[Frame]:
    """Decode the log file at ``path`` with a buffered forward window; see :func:`decode_frames`.

    The file is read up to the size it had when opened; memory stays bounded by one chunk
    plus one frame.
    """
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # noqa: SIM115 - closed in the finally below
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
