"""Decoding one bbg CLI frame's payload strictly: a signal, an intent or a finalize marker.

bbg's own reader (``cli/src/frame.rs`` ``deserialize_signal``) drops a payload it cannot read
and ignores bytes after it; the import is strict instead and names the fault.  Its guards are
kept: a link or box-move count that cannot fit in the bytes left (105 and 33 bytes at least)
is refused before any entry is read.  Offsets are relative to the payload start.
"""

from __future__ import annotations

import struct
from typing import Final

from importers.frame_log.model import LINK_BYTES, CliLink, CliSignal, Finalize
from importers.signal_log.model import BoxMove
from importers.signal_log.payload import PayloadError

_HEAD: Final = struct.Struct("<32sQI")  # neuron, height, link count
_LINK: Final = struct.Struct("<32s32s32sQb")  # 105 bytes
_U32: Final = struct.Struct("<I")
_MOVE: Final = struct.Struct("<32sB")  # nullifier, flag: 33 bytes
_COMMITMENT: Final = struct.Struct("<32sQ")  # 40 bytes
_FINALIZE: Final = Finalize()


def decode_cli_signal(p: bytes) -> CliSignal:
    """Decode a signal payload: header, links, box moves, nothing after."""
    end = len(p)
    if end < _HEAD.size:
        raise PayloadError("truncated-payload", end, f"the signal header needs {_HEAD.size} bytes")
    neuron, height, n_links = _HEAD.unpack_from(p, 0)
    pos = _HEAD.size
    if n_links > (end - pos) // LINK_BYTES:
        raise PayloadError("truncated-payload", end, f"{n_links} links announced; cut")
    links = tuple(CliLink(*_LINK.unpack_from(p, pos + LINK_BYTES * i)) for i in range(n_links))
    pos += LINK_BYTES * n_links
    if pos + 4 > end:
        raise PayloadError("truncated-payload", end, "the box-move count is cut")
    (n_moves,) = _U32.unpack_from(p, pos)
    pos += 4
    if n_moves > (end - pos) // _MOVE.size:
        raise PayloadError("truncated-payload", end, f"{n_moves} box moves announced; cut")
    moves = []
    for _ in range(n_moves):
        if pos + _MOVE.size > end:
            raise PayloadError("truncated-payload", end, "a box move is cut")
        nullifier, flag = _MOVE.unpack_from(p, pos)
        if flag > 1:
            raise PayloadError("bad-flag", pos + 32, f"box-move flag {flag}, not 0 or 1")
        pos += _MOVE.size
        if flag:
            if pos + _COMMITMENT.size > end:
                raise PayloadError("truncated-payload", end, "a box-move commitment is cut")
            commitment, value = _COMMITMENT.unpack_from(p, pos)
            pos += _COMMITMENT.size
            moves.append(BoxMove(nullifier, 1, commitment, value))
        else:
            moves.append(BoxMove(nullifier, 0))
    if pos != end:
        raise PayloadError("trailing-bytes", pos, f"{end - pos} bytes after the box moves")
    return CliSignal(neuron, height, links, tuple(moves))


def decode_finalize(p: bytes) -> Finalize:
    """A finalize frame carries nothing (bbg's ``encode_finalize`` writes an empty payload)."""
    if p:
        raise PayloadError(
            "bad-finalize-length", 0, f"a finalize frame with {len(p)} payload bytes, not 0"
        )
    return _FINALIZE
