"""Decoding one frame's payload: a signal (``!``) or an intent (``^``), strictly.

Errors are :class:`PayloadError` with an offset relative to the payload start; the frame
decoder turns them into ``SignalLogError`` with the absolute offset.
"""

from __future__ import annotations

import struct
from typing import Final

from importers.signal_log.model import (
    INTENT_LEN,
    BoxMove,
    DeltaPi,
    Intent,
    Limits,
    Link,
    Signal,
)

_HEAD: Final = struct.Struct("<32sQ32sQI")  # neuron, step, prev, height, link count
_LINK: Final = struct.Struct("<32s32s32s32sQbQ")  # 145 bytes
_U32: Final = struct.Struct("<I")
_BOX_HEAD: Final = struct.Struct("<32sB")  # nullifier, flag
_PAIR: Final = struct.Struct("<32sQ")  # box commitment + value, or delta_pi entry
_INTENT: Final = struct.Struct("<32sQ32s64s")


class PayloadError(Exception):
    """A payload violation at an offset relative to the payload start (made absolute later)."""

    def __init__(self, code: str, offset: int, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.offset = offset
        self.detail = detail


def _decode_box_moves(p: bytes, pos: int, limits: Limits) -> tuple[tuple[BoxMove, ...], int]:
    end = len(p)
    if pos + 4 > end:
        raise PayloadError("partial-suffix", end, "box_moves count is cut")
    (count,) = _U32.unpack_from(p, pos)
    if count > limits.max_section_entries:
        raise PayloadError(
            "limit-exceeded", pos, f"{count} box_moves (limit {limits.max_section_entries})"
        )
    pos += 4
    # As foculus' Reader::count: a count that cannot fit at the smallest entry (33 bytes)
    # is a cut section before any entry is read.
    if count > (end - pos) // _BOX_HEAD.size:
        raise PayloadError("partial-suffix", end, f"box_moves announces {count} entries; cut")
    moves = []
    for _ in range(count):
        if pos + 33 > end:
            raise PayloadError("partial-suffix", end, "a box_moves entry is cut")
        nullifier, flag = _BOX_HEAD.unpack_from(p, pos)
        # foculus Reader::flag: the option tag is 0 (no commitment) or 1 (commitment ‖ u64).
        if flag > 1:
            raise PayloadError("bad-flag", pos + 32, f"box_moves flag {flag}, not 0 or 1")
        pos += 33
        if flag == 1:
            if pos + 40 > end:
                raise PayloadError("partial-suffix", end, "a box_moves commitment is cut")
            commitment, value = _PAIR.unpack_from(p, pos)
            pos += 40
            moves.append(BoxMove(nullifier, flag, commitment, value))
        else:
            moves.append(BoxMove(nullifier, flag))
    return tuple(moves), pos


def _decode_delta_pi(p: bytes, pos: int, limits: Limits) -> tuple[tuple[DeltaPi, ...], int]:
    end = len(p)
    if pos + 4 > end:
        raise PayloadError("partial-suffix", end, "delta_pi count is cut")
    (count,) = _U32.unpack_from(p, pos)
    if count > limits.max_section_entries:
        raise PayloadError(
            "limit-exceeded", pos, f"{count} delta_pi entries (limit {limits.max_section_entries})"
        )
    pos += 4
    if pos + 40 * count > end:
        raise PayloadError("partial-suffix", end, f"delta_pi announces {count} entries; cut")
    entries = tuple(DeltaPi(*_PAIR.unpack_from(p, pos + 40 * i)) for i in range(count))
    return entries, pos + 40 * count


def decode_signal(p: bytes, limits: Limits) -> Signal:
    """Decode a signal payload: fixed header, links, then none / box_moves / both sections.

    A cut in the header or link list is ``truncated-payload``, a cut in an optional section
    ``partial-suffix`` (both at the payload end); bytes after delta_pi are ``trailing-bytes``;
    a box-move flag other than 0 or 1 is ``bad-flag`` (at the flag byte).
    """
    end = len(p)
    if end < _HEAD.size:
        raise PayloadError("truncated-payload", end, "the signal header needs 84 bytes")
    neuron, step, prev, height, n_links = _HEAD.unpack_from(p, 0)
    if n_links > limits.max_links:
        raise PayloadError(
            "limit-exceeded", _HEAD.size - 4, f"{n_links} links (limit {limits.max_links})"
        )
    pos = _HEAD.size
    if pos + _LINK.size * n_links > end:
        raise PayloadError("truncated-payload", end, f"{n_links} links announced; cut")
    links = tuple(Link(*_LINK.unpack_from(p, pos + _LINK.size * i)) for i in range(n_links))
    pos += _LINK.size * n_links
    if pos == end:
        return Signal(neuron, step, prev, height, links)
    box_moves, pos = _decode_box_moves(p, pos, limits)
    if pos == end:
        return Signal(neuron, step, prev, height, links, box_moves)
    delta_pi, pos = _decode_delta_pi(p, pos, limits)
    if pos != end:
        raise PayloadError("trailing-bytes", pos, f"{end - pos} bytes after the last section")
    return Signal(neuron, step, prev, height, links, box_moves, delta_pi)


def decode_intent(p: bytes) -> Intent:
    """Decode an intent payload, which must be exactly 136 bytes."""
    if len(p) != INTENT_LEN:
        offset = INTENT_LEN if len(p) > INTENT_LEN else len(p)
        raise PayloadError("bad-intent-length", offset, f"intent of {len(p)} bytes, not 136")
    return Intent(*_INTENT.unpack_from(p, 0))
