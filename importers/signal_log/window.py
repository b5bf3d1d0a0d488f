"""A forward-moving read window over a log file, indexable like the bytes it holds.

Why not ``mmap``: a mapped file that another process truncates kills the reader with SIGBUS
and no message.  A buffered window reads the size the file had when opened, holds at most one
chunk or one frame (bounded by the payload limit), and turns a file that shrinks underneath
it into a clear :class:`~bbg_core.errors.SourceError`.
"""

from __future__ import annotations

from typing import BinaryIO, Final, overload

from bbg_core.errors import SourceError

CHUNK: Final = 1 << 20


class FileWindow:
    """``window[i]`` and ``window[a:b]`` for absolute offsets; reads forward in chunks.

    Looking back before the current window is not supported (the decoder never does).
    """

    def __init__(self, handle: BinaryIO, size: int, name: str, chunk: int = CHUNK) -> None:
        self._chunk = chunk
        self._handle = handle
        self._size = size
        self._name = name
        self._base = 0
        self._buf = b""

    def __len__(self) -> int:
        return self._size

    def _cover(self, start: int, stop: int) -> None:
        """Make ``[start, stop)`` resident (``stop`` ≤ size)."""
        if self._base <= start and stop <= self._base + len(self._buf):
            return
        if start < self._base:
            raise ValueError("FileWindow only moves forward")
        keep = self._buf[start - self._base :] if start < self._base + len(self._buf) else b""
        read_from = start + len(keep)
        want = max(self._chunk, stop - read_from)
        want = min(want, self._size - read_from)
        self._handle.seek(read_from)
        fresh = self._handle.read(want)
        if len(fresh) < min(want, stop - read_from):
            raise SourceError(
                f"{self._name}: the file shrank while it was being read; "
                "stop the process writing it and retry",
                path=self._name,
                offset=read_from + len(fresh),
            )
        self._buf = keep + fresh
        self._base = start

    @overload
    def __getitem__(self, key: int) -> int: ...

    @overload
    def __getitem__(self, key: slice) -> bytes: ...

    def __getitem__(self, key: int | slice) -> int | bytes:
        if isinstance(key, slice):
            start, stop = key.start or 0, min(key.stop, self._size)
            self._cover(start, stop)
            return self._buf[start - self._base : stop - self._base]
        if not 0 <= key < self._size:
            raise IndexError(key)
        self._cover(key, key + 1)
        return self._buf[key - self._base]
