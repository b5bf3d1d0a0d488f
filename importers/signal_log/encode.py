"""Encoding frames the way the old cyb writer did (used by tests and fixture tooling).

The decoder is the contract; this is its inverse so that round trips can be checked.
"""

from __future__ import annotations

import struct
from typing import Final

from importers.signal_log.model import INTENT, MARKER, RENDERER, SIGNAL, Intent, Signal

_HEAD: Final = struct.Struct("<32sQ32sQI")
_LINK: Final = struct.Struct("<32s32s32s32sQbQ")
_U32: Final = struct.Struct("<I")
_PAIR: Final = struct.Struct("<32sQ")
_INTENT: Final = struct.Struct("<32sQ32s64s")


def encode_leb128(value: int) -> bytes:
    """Minimal unsigned LEB128 of ``value``."""
    if value < 0:
        raise ValueError("LEB128 length must be non-negative")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_signal(signal: Signal) -> bytes:
    """The payload bytes of ``signal``."""
    parts = [_HEAD.pack(signal.neuron, signal.step, signal.prev, signal.height, len(signal.links))]
    parts += [
        _LINK.pack(lk.neuron, lk.from_, lk.to, lk.token, lk.amount, lk.valence, lk.height)
        for lk in signal.links
    ]
    if signal.box_moves is not None:
        parts.append(_U32.pack(len(signal.box_moves)))
        for move in signal.box_moves:
            parts.append(move.nullifier + bytes([move.flag]))
            if move.flag == 1:
                assert move.commitment is not None and move.value is not None
                parts.append(_PAIR.pack(move.commitment, move.value))
        if signal.delta_pi is not None:
            parts.append(_U32.pack(len(signal.delta_pi)))
            parts += [_PAIR.pack(d.particle, d.amount) for d in signal.delta_pi]
    elif signal.delta_pi is not None:
        raise ValueError("delta_pi cannot be present without box_moves")
    return b"".join(parts)


def encode_intent(intent: Intent) -> bytes:
    """The 136 payload bytes of ``intent``."""
    return _INTENT.pack(intent.neuron, intent.h0, intent.scope_hash, intent.signature)


def encode_frame(body: Signal | Intent) -> bytes:
    """One whole frame: marker, sigil, renderer, minimal LEB128 length, payload."""
    if isinstance(body, Signal):
        sigil, payload = SIGNAL, encode_signal(body)
    else:
        sigil, payload = INTENT, encode_intent(body)
    return bytes([MARKER, ord(sigil), RENDERER]) + encode_leb128(len(payload)) + payload
