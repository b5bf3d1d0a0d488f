"""Writing frames the way bbg's CLI did (``cli/src/frame.rs`` ``encode_*``), for tests,
fixtures and benchmarks.  The decoder is the contract; this is its inverse."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Final

from importers.frame_log.model import FINALIZE, INTENT, SIGNAL, CliLink, CliSignal, Finalize
from importers.signal_log.encode import encode_intent, encode_leb128
from importers.signal_log.model import MARKER, RENDERER, BoxMove, Intent

_HEAD: Final = struct.Struct("<32sQI")
_LINK: Final = struct.Struct("<32s32s32sQb")


def encode_cli_signal(signal: CliSignal) -> bytes:
    """The payload bytes of ``signal`` (the box-move count is always written)."""
    parts = [_HEAD.pack(signal.neuron, signal.height, len(signal.links))]
    parts += [_LINK.pack(k.from_, k.to, k.token, k.amount, k.valence) for k in signal.links]
    parts.append(struct.pack("<I", len(signal.box_moves)))
    for move in signal.box_moves:
        parts.append(move.nullifier + bytes([move.flag]))
        if move.flag == 1:
            assert move.commitment is not None and move.value is not None
            parts.append(struct.pack("<32sQ", move.commitment, move.value))
    return b"".join(parts)


def frame(sigil: str, payload: bytes) -> bytes:
    """One tape frame: marker, sigil, ``b``, minimal LEB128 length, payload."""
    return bytes([MARKER, ord(sigil), RENDERER]) + encode_leb128(len(payload)) + payload


def encode_frame(body: CliSignal | Intent | Finalize) -> bytes:
    """The whole frame of ``body``."""
    if isinstance(body, CliSignal):
        return frame(SIGNAL, encode_cli_signal(body))
    if isinstance(body, Intent):
        return frame(INTENT, encode_intent(body))
    return frame(FINALIZE, b"")


def write_sample(path: Path, *, events: int, seed: int) -> None:
    """A synthetic log of ``events`` frames as the CLI writes them (random ids; a finalize
    every tenth event; signals of 1-3 links, some with box moves)."""
    rng = random.Random(seed)

    def b32() -> bytes:
        return rng.randbytes(32)

    frames = []
    height = 0
    for i in range(events):
        if i % 10 == 9:
            frames.append(encode_frame(Finalize()))
            height += 1
        elif i % 10 == 4:
            frames.append(encode_frame(Intent(b32(), height, b32(), bytes(64))))
        else:
            links = tuple(
                CliLink(b32(), b32(), bytes(32), rng.randrange(1, 1000), rng.choice((-1, 0, 1)))
                for _ in range(rng.randrange(1, 4))
            )
            moves = tuple(
                BoxMove(b32(), 1, b32(), rng.randrange(1 << 32)) if rng.random() < 0.5
                else BoxMove(b32(), 0)
                for _ in range(rng.choice((0, 0, 1, 2)))
            )  # fmt: skip
            frames.append(encode_frame(CliSignal(b32(), height, links, moves)))
    path.write_bytes(b"".join(frames))
