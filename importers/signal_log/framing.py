"""The tape framing both legacy frame logs share, walked strictly: ``0x1F ‖ sigil ‖ 'b' ‖
LEB128 payload length ‖ payload`` (cyberia-to/tade ``impl/rust/src/lib.rs`` ``Chunk::encode``).

The rules are foculus' strict legacy reader (``src/frames/strict.rs``): the whole log's size
is checked first; then per frame the event count, the exact marker, a sigil of the dialect,
renderer ``b``, a minimal unsigned LEB128 length of at most 10 bytes whose 10th byte is 0 or
1, a payload length within the limit, and a payload the dialect's decoder consumes exactly.
A dialect supplies its sigils and payload decoder (:mod:`importers.signal_log.decode` for the
old cyb Signal log, :mod:`importers.frame_log` for bbg's CLI log).

Errors carry ``code``, the absolute ``offset`` (of the offending byte itself, where foculus
reports the position just past what it consumed), ``frame_index`` and
``frame_start``.  The walk never skips or resynchronises.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from typing import Final, Protocol, TypeVar

from bbg_core.errors import SignalLogError
from importers.signal_log.model import MARKER, MAX_LEB128_BYTES, RENDERER
from importers.signal_log.payload import PayloadError
from importers.signal_log.window import FileWindow

Buffer = bytes | bytearray | memoryview | mmap.mmap
Source = Buffer | FileWindow
PathLike = str | os.PathLike[str]
Body = TypeVar("Body")
FrameT = TypeVar("FrameT")

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


class FramingLimits(Protocol):
    """The limits the framing itself enforces."""

    @property
    def max_log_bytes(self) -> int: ...

    @property
    def max_events(self) -> int: ...

    @property
    def max_payload_bytes(self) -> int: ...


class ErrorFactory(Protocol):
    """Builds a dialect's error: (code, offset, frame_index, frame_start, detail, path)."""

    def __call__(
        self,
        code: str,
        offset: int,
        frame_index: int,
        frame_start: int,
        detail: str,
        path: str | None = None,
    ) -> SignalLogError: ...


def frame_error(
    cls: type[SignalLogError],
    what: str,
    code: str,
    offset: int,
    frame_index: int,
    frame_start: int,
    detail: str,
    path: str | None = None,
) -> SignalLogError:
    """An error of class ``cls`` with its keyword context and a message that says what to do."""
    where = path if path is not None else f"<{what}>"
    hint = _HINTS.get(code, _DEFAULT_HINT)
    message = (
        f"{where}: {code} at byte {offset} (frame {frame_index}, starting at byte "
        f"{frame_start}): {detail}; {hint}"
    )
    return cls(
        message,
        code=code,
        offset=offset,
        frame_index=frame_index,
        frame_start=frame_start,
        path=path,
    )


def walk_frames(
    data: Source,
    *,
    sigils: str,
    decode: Callable[[str, bytes], Body],
    make: Callable[[int, int, int, str, int, int, bytes, Body], FrameT],
    limits: FramingLimits,
    error: ErrorFactory,
    path: str | None = None,
) -> Iterator[FrameT]:
    """Yield ``make(index, start, end, sigil, payload_start, length, raw, body)`` per frame.

    ``decode(sigil, payload)`` returns the body or raises :class:`PayloadError` with an offset
    relative to the payload.  Frames are yielded as they are decoded, so a consumer sees
    every frame before the error.
    """
    size = len(data)
    if size > limits.max_log_bytes:
        # foculus checks the whole log's size before the first frame (position 0).
        raise error(
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
            return error(code, offset, index, start, detail, path)

        def need(end: int, fail: Callable[[str, int, str], SignalLogError] = fail) -> None:
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
        if sigil not in sigils:
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
        try:
            body = decode(sigil, raw[payload_start - start :])
        except PayloadError as exc:
            raise fail(exc.code, payload_start + exc.offset, exc.detail) from None
        yield make(index, start, end, sigil, payload_start, length, raw, body)
        index += 1
        pos = end
