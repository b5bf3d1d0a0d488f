"""bbg's CLI frame log (cyberia-to/bbg ``cli/src/frame.rs``): the second legacy frame-log
dialect -- strict streaming decoder, encoder, inspect report and dialect detection.

Public API::

    read_frames(path, *, limits=Limits()) -> Iterator[CliFrame]     # bounded memory
    decode_frames(data, *, limits=Limits(), path=None) -> Iterator[CliFrame]
    inspect_frame_log(path, *, limits=Limits(), hasher=None) -> dict
    looks_like_frame_log(head) -> bool          # a tape frame of either dialect
    frame_log_dialect(path) -> "signal-log" | "bbg-frame-log"
    encode_frame(CliSignal | Intent | Finalize) -> bytes

Every fault raises :class:`bbg_core.errors.FrameLogError` (a ``SignalLogError``) with
``code`` (one of :data:`ERROR_CODES`), ``offset``, ``frame_index``, ``frame_start``, ``path``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bbg_core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers
    from importers.frame_log.decode import decode_frames, frame_log_error, read_frames
    from importers.frame_log.dialect import (
        FRAME_LOG,
        SIGNAL_LOG,
        frame_log_dialect,
        looks_like_frame_log,
        signal_dialect,
    )
    from importers.frame_log.encode import encode_cli_signal, encode_frame, frame, write_sample
    from importers.frame_log.model import (
        DEFAULT_LIMITS,
        ERROR_CODES,
        SIGILS,
        CliFrame,
        CliLink,
        CliSignal,
        Finalize,
        Limits,
    )
    from importers.frame_log.report import inspect_frame_log

# Imported when first read: `detect` needs only the sniffing module (bbg_core.lazy).
__getattr__ = lazy_exports(
    __name__,
    {
        "decode": ("decode_frames", "frame_log_error", "read_frames"),
        "dialect": (
            "FRAME_LOG",
            "SIGNAL_LOG",
            "frame_log_dialect",
            "looks_like_frame_log",
            "signal_dialect",
        ),
        "encode": ("encode_cli_signal", "encode_frame", "frame", "write_sample"),
        "report": ("inspect_frame_log",),
        "model": (
            "DEFAULT_LIMITS",
            "ERROR_CODES",
            "SIGILS",
            "CliFrame",
            "CliLink",
            "CliSignal",
            "Finalize",
            "Limits",
        ),
    },
)

__all__ = [
    "DEFAULT_LIMITS",
    "ERROR_CODES",
    "FRAME_LOG",
    "SIGILS",
    "SIGNAL_LOG",
    "CliFrame",
    "CliLink",
    "CliSignal",
    "Finalize",
    "Limits",
    "decode_frames",
    "encode_cli_signal",
    "encode_frame",
    "frame",
    "frame_log_dialect",
    "frame_log_error",
    "inspect_frame_log",
    "looks_like_frame_log",
    "read_frames",
    "signal_dialect",
    "write_sample",
]
