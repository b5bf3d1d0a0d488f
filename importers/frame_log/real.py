"""bbg's CLI frame log read as bbg's own reader reads it (the import's default).

The real reader is ``decode_events`` (cyberia-to/bbg ``cli/src/frame.rs`` @ 742075ae) over
tade's ``Reader::next_chunk`` (cyberia-to/tade ``impl/rust/src/lib.rs`` @ 94bc494c).  What it
does, and what this module does the same way:

* framing (tade): bytes before a ``0x1F`` marker are skipped (``bad-marker``); the renderer
  byte is never checked (``bad-renderer``); a LEB128 length need not be minimal
  (``overlong-leb128``; a 10th byte without continuation keeps its low 64 bits); a header of
  fewer than 4 bytes, a cut length, a length past the end of the file, or a continuation after
  the 10th length byte ends the stream silently (``truncated-frame`` / ``overlong-leb128``,
  disposition ``stopped``): nothing after it is read;
* frames (bbg): an unknown sigil is skipped (``unknown-sigil``); a finalize frame's payload is
  ignored (``bad-finalize-length``); an intent shorter than 136 bytes is dropped and a longer
  one read from its first 136 (``bad-intent-length``); a signal any of whose fields is cut is
  dropped (``truncated-payload``); a box-move flag other than 1 means "no commitment" and the
  next move starts right after the flag (``bad-flag``); bytes after the last box move are
  ignored (``trailing-bytes``).

Every frame skipped, dropped or read leniently is a :class:`Finding` (code, disposition,
absolute offset, frame index, frame span, and ``hemera`` of the bytes it concerns when a
hasher is given).  An event is a :class:`CliFrame` whose ``index`` is the event's position
among the events.  Our own bounds (:class:`Limits`) still raise ``limit-exceeded``.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from bbg_core.errors import SourceError
from importers.frame_log.decode import frame_log_error
from importers.frame_log.model import (
    DEFAULT_LIMITS,
    FINALIZE,
    INTENT,
    LINK_BYTES,
    SIGNAL,
    CliFrame,
    CliLink,
    CliSignal,
    Finalize,
    Limits,
)
from importers.signal_log.framing import PathLike
from importers.signal_log.model import MARKER, RENDERER, BoxMove, Intent
from importers.signal_log.payload import decode_intent

SKIPPED, DROPPED, LENIENT, STOPPED = "skipped", "dropped", "lenient", "stopped"
INTENT_LEN: Final = 136
_HEAD: Final = struct.Struct("<32sQI")
_LINK: Final = struct.Struct("<32s32s32sQb")
_U32: Final = struct.Struct("<I")
_COMMITMENT: Final = struct.Struct("<32sQ")
#: Bytes bbg's reader reserves per announced link / box move (``Vec::with_capacity``) before
#: it reads one: a Rust ``Cyberlink`` is 112 bytes, a ``BoxMove`` 80.  Above this many bytes
#: the real CLI may abort on the allocation instead of dropping the frame.
_RESERVE: Final = {"links": 112, "box moves": 80}
_MAY_ABORT_BYTES: Final = 1 << 32
_FINALIZE: Final = Finalize()

Hasher = Callable[[bytes], bytes]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the real reader skipped, dropped, read leniently or stopped at."""

    code: str
    disposition: str
    offset: int
    frame_index: int
    start: int
    end: int
    detail: str
    raw_id: bytes | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "code": self.code, "disposition": self.disposition, "offset": self.offset,
            "frame_index": self.frame_index, "span": [self.start, self.end],
            "detail": self.detail,
        }  # fmt: skip
        if self.raw_id is not None:
            doc["raw_id"] = self.raw_id.hex()
        return doc


# A payload-level note: (code, offset relative to the payload, detail).
_Note = tuple[str, int, str]


def _may_abort(count: int, what: str) -> str:
    if count * _RESERVE[what] <= _MAY_ABORT_BYTES:
        return ""
    return (f"; bbg's reader reserves {count} {what} before reading them (Vec::with_capacity):"
            " the real CLI may abort here instead of dropping the frame")  # fmt: skip


def real_signal(p: bytes) -> tuple[CliSignal | None, list[_Note]]:
    """``deserialize_signal``: the signal, or None (dropped); and the lenient notes."""
    end = len(p)
    if end < _HEAD.size:
        return None, [("truncated-payload", end, f"the signal header needs {_HEAD.size} bytes")]
    neuron, height, n_links = _HEAD.unpack_from(p, 0)
    pos = _HEAD.size
    if n_links > (end - pos) // LINK_BYTES:
        why = f"{n_links} links announced; cut{_may_abort(n_links, 'links')}"
        return None, [("truncated-payload", end, why)]
    links = tuple(CliLink(*_LINK.unpack_from(p, pos + LINK_BYTES * i)) for i in range(n_links))
    pos += LINK_BYTES * n_links
    if pos + 4 > end:
        return None, [("truncated-payload", end, "the box-move count is cut")]
    (n_moves,) = _U32.unpack_from(p, pos)
    pos += 4
    if n_moves > (end - pos) // 33:
        why = f"{n_moves} box moves announced; cut{_may_abort(n_moves, 'box moves')}"
        return None, [("truncated-payload", end, why)]
    notes: list[_Note] = []
    moves = []
    for _ in range(n_moves):
        if pos + 33 > end:
            return None, [("truncated-payload", end, "a box move is cut")]
        nullifier, flag = p[pos : pos + 32], p[pos + 32]
        pos += 33
        if flag == 1:
            if pos + _COMMITMENT.size > end:
                return None, [("truncated-payload", end, "a box-move commitment is cut")]
            commitment, value = _COMMITMENT.unpack_from(p, pos)
            pos += _COMMITMENT.size
            moves.append(BoxMove(nullifier, 1, commitment, value))
            continue
        if flag != 0:
            notes.append(("bad-flag", pos - 1, f"box-move flag {flag}: read as no commitment"))
        moves.append(BoxMove(nullifier, 0))
    if pos != end:
        notes.append(("trailing-bytes", pos, f"{end - pos} bytes after the box moves, ignored"))
    return CliSignal(neuron, height, links, tuple(moves)), notes


def real_body(sigil: str, p: bytes) -> tuple[CliSignal | Intent | Finalize | None, list[_Note]]:
    """One known sigil's payload as bbg's reader reads it (None: the frame is dropped)."""
    if sigil == SIGNAL:
        return real_signal(p)
    if sigil == FINALIZE:
        notes = [("bad-finalize-length", 0, f"{len(p)} payload bytes, ignored")] if p else []
        return _FINALIZE, notes
    if len(p) < INTENT_LEN:
        return None, [("bad-intent-length", len(p), f"intent of {len(p)} bytes, not 136")]
    notes = []
    if len(p) > INTENT_LEN:
        notes = [("bad-intent-length", INTENT_LEN, f"{len(p) - INTENT_LEN} bytes after the "
                  "136-byte intent, ignored")]  # fmt: skip
    return decode_intent(p[:INTENT_LEN]), notes


def _varint(data: Any, pos: int, size: int) -> tuple[int, int] | str:
    """tade ``decode_varint``: (value, next position), or why the stream stops."""
    value = shift = 0
    cur = pos
    while True:
        if cur >= size:
            return "truncated-frame"
        byte = data[cur]
        cur += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value & 0xFFFF_FFFF_FFFF_FFFF, cur
        if shift >= 64:
            return "overlong-leb128"


def _minimal_len(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def walk_real(
    data: Any,
    findings: list[Finding],
    *,
    limits: Limits = DEFAULT_LIMITS,
    path: str | None = None,
    hash_fn: Hasher | None = None,
) -> Iterator[CliFrame]:
    """Yield the events bbg's reader returns from ``data`` (bytes or an mmap), appending
    every skip, drop, leniency and the stop to ``findings`` as they are met."""
    size = len(data)
    if size > limits.max_log_bytes:
        raise frame_log_error("limit-exceeded", limits.max_log_bytes, 0, 0,
                              f"log of {size} bytes (> {limits.max_log_bytes})", path)  # fmt: skip
    pos = chunks = events = 0

    def note(code: str, disposition: str, offset: int, start: int, end: int, why: str) -> None:
        raw_id = hash_fn(bytes(data[start:end])) if hash_fn is not None else None
        findings.append(Finding(code, disposition, offset, chunks, start, end, why, raw_id))

    while pos < size:
        m = data.find(bytes([MARKER]), pos)
        if m < 0:
            note("bad-marker", SKIPPED, pos, pos, size, f"{size - pos} bytes with no frame marker")
            return
        if m > pos:
            note("bad-marker", SKIPPED, pos, pos, m, f"{m - pos} bytes before a frame marker")
        if size - m < 4:
            note("truncated-frame", STOPPED, size, m, size, "a frame header is cut: the real "
                 "reader stops here")  # fmt: skip
            return
        got = _varint(data, m + 3, size)
        if isinstance(got, str):
            why = ("the length runs past 10 bytes" if got == "overlong-leb128"
                   else "the length is cut")  # fmt: skip
            note(got, STOPPED, size if got == "truncated-frame" else m + 3, m, size,
                 f"{why}: the real reader stops here")  # fmt: skip
            return
        length, start = got
        end = start + length
        if end > size:
            note("truncated-frame", STOPPED, size, m, size, f"a frame of {length} payload bytes "
                 f"runs {end - size} bytes past the end: the real reader stops here")  # fmt: skip
            return
        if length > limits.max_payload_bytes:
            raise frame_log_error("limit-exceeded", m + 3, chunks, m,
                                  f"payload of {length} bytes (> {limits.max_payload_bytes})",
                                  path)  # fmt: skip
        sigil_byte, renderer = data[m + 1], data[m + 2]
        if renderer != RENDERER:
            note("bad-renderer", LENIENT, m + 2, m, end, f"renderer {renderer:#04x}, not 'b'")
        if start - (m + 3) != _minimal_len(length):
            note("overlong-leb128", LENIENT, m + 3, m, end, "a non-minimal length")
        sigil = chr(sigil_byte)
        if sigil not in (SIGNAL, INTENT, FINALIZE):
            note("unknown-sigil", SKIPPED, m + 1, m, end, f"sigil {sigil_byte:#04x} skipped")
        else:
            payload = bytes(data[start:end])
            body, notes = real_body(sigil, payload)
            for code, rel, why in notes:
                note(code, LENIENT if body is not None else DROPPED, start + rel, m, end, why)
            if body is not None:
                if events >= limits.max_events:
                    why = f"more than {limits.max_events} events"
                    raise frame_log_error("limit-exceeded", m, chunks, m, why, path)
                yield CliFrame(events, m, end, sigil, start, length, bytes(data[m:end]), body)
                events += 1
        chunks += 1
        pos = end


def read_real(
    path: PathLike,
    findings: list[Finding],
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: Hasher | None = None,
) -> Iterator[CliFrame]:
    """:func:`walk_real` over the file at ``path`` (memory-mapped: bounded resident memory)."""
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # closed in the finally below
    except OSError as exc:
        raise SourceError(f"{name}: cannot open the frame log: {exc.strerror}", path=name) from exc
    try:
        if os.fstat(handle.fileno()).st_size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            yield from walk_real(view, findings, limits=limits, path=name, hash_fn=hash_fn)
    except OSError as exc:
        raise SourceError(f"{name}: cannot read the frame log: {exc.strerror}", path=name) from exc
    finally:
        handle.close()


def decode_real_frame(raw: bytes) -> CliFrame | None:
    """The event one frame's exact bytes give under the real reader (None: none)."""
    return next(iter(walk_real(raw, [])), None)
