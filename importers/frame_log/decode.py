"""The strict, streaming decoder for bbg's CLI frame log.

The framing is the one the old cyb Signal log uses, walked by the same strict code
(:func:`importers.signal_log.framing.walk_frames`) with this dialect's sigils (``!``, ``^``,
``.``) and payloads (:mod:`importers.frame_log.payload`).  Errors are
:class:`~bbg_core.errors.FrameLogError` with ``code``, ``offset``, ``frame_index``,
``frame_start`` and ``path``; the decoder never skips or resynchronises.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from bbg_core.errors import FrameLogError, SignalLogError, SourceError
from importers.frame_log.model import (
    DEFAULT_LIMITS,
    FINALIZE,
    SIGILS,
    SIGNAL,
    CliFrame,
    CliSignal,
    Finalize,
    Limits,
)
from importers.frame_log.payload import decode_cli_signal, decode_finalize
from importers.signal_log.framing import PathLike, Source, frame_error, walk_frames
from importers.signal_log.model import Intent
from importers.signal_log.payload import decode_intent
from importers.signal_log.window import FileWindow


def frame_log_error(
    code: str,
    offset: int,
    frame_index: int,
    frame_start: int,
    detail: str,
    path: str | None = None,
) -> SignalLogError:
    """Build the error (a :class:`FrameLogError`) with its context and what to do."""
    return frame_error(
        FrameLogError, "bbg frame log", code, offset, frame_index, frame_start, detail, path
    )


def _decode(sigil: str, payload: bytes) -> CliSignal | Intent | Finalize:
    if sigil == SIGNAL:
        return decode_cli_signal(payload)
    if sigil == FINALIZE:
        return decode_finalize(payload)
    return decode_intent(payload)


def decode_frames(
    data: Source, *, limits: Limits = DEFAULT_LIMITS, path: str | None = None
) -> Iterator[CliFrame]:
    """Yield every frame of ``data`` in order; raise ``FrameLogError`` at the first fault."""
    return walk_frames(
        data,
        sigils="".join(SIGILS),
        decode=_decode,
        make=CliFrame,
        limits=limits,
        error=frame_log_error,
        path=path,
    )


def read_frames(path: PathLike, *, limits: Limits = DEFAULT_LIMITS) -> Iterator[CliFrame]:
    """Decode the log file at ``path`` through a buffered forward window (bounded memory)."""
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # closed in the finally below
    except OSError as exc:
        raise SourceError(f"{name}: cannot open the frame log: {exc.strerror}", path=name) from exc
    try:
        size = os.fstat(handle.fileno()).st_size
        yield from decode_frames(FileWindow(handle, size, name), limits=limits, path=name)
    except OSError as exc:
        raise SourceError(f"{name}: cannot read the frame log: {exc.strerror}", path=name) from exc
    finally:
        handle.close()
