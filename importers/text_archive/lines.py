"""Splitting a TextArchive into LF-terminated lines with bounded memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, Final

from importers.text_archive.model import RawLine

_SKIP_CHUNK: Final = 1 << 20


def split_lines(handle: BinaryIO, max_line_bytes: int) -> Iterator[RawLine]:
    """Yield every line of ``handle`` (LF kept), numbering from 1, with its byte span.

    A line longer than ``max_line_bytes`` (LF included) is consumed in chunks and yielded
    with ``raw=None``, so one huge line never has to fit in memory.
    """
    line = 0
    pos = 0
    while True:
        piece = handle.readline(max_line_bytes + 1)
        if not piece:
            return
        line += 1
        start = pos
        if len(piece) <= max_line_bytes:
            pos += len(piece)
            yield RawLine(line, start, pos, piece.endswith(b"\n"), piece)
            continue
        pos += len(piece)
        terminated = piece.endswith(b"\n")
        while not terminated:
            chunk = handle.readline(_SKIP_CHUNK)
            if not chunk:
                break
            pos += len(chunk)
            terminated = chunk.endswith(b"\n")
        yield RawLine(line, start, pos, terminated, None)
