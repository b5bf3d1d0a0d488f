"""The old cyb Signal log: strict streaming decoder, encoder, inspect report and sniffing.

Public API::

    read_frames(path, *, limits=Limits()) -> Iterator[Frame]        # mmap, bounded memory
    decode_frames(data, *, limits=Limits(), path=None) -> Iterator[Frame]
    valid_prefix(path_or_bytes, *, limits=Limits()) -> ValidPrefix   # the torn-tail case
    inspect_signal_log(path, *, limits=Limits(), hasher=None) -> dict
    looks_like_signal_log(head: bytes) -> bool
    encode_frame(Signal | Intent) -> bytes

Every fault raises :class:`bbg_core.errors.SignalLogError` with ``code`` (one of
:data:`ERROR_CODES`), ``offset``, ``frame_index``, ``frame_start`` and ``path``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bbg_core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers
    from importers.signal_log.decode import (
        ValidPrefix,
        decode_frames,
        read_frames,
        signal_log_error,
        valid_prefix,
    )
    from importers.signal_log.encode import (
        encode_frame,
        encode_intent,
        encode_leb128,
        encode_signal,
    )
    from importers.signal_log.model import (
        DEFAULT_LIMITS,
        ERROR_CODES,
        SUFFIX_KINDS,
        BoxMove,
        DeltaPi,
        Frame,
        Intent,
        Limits,
        Link,
        Signal,
        SuffixKind,
    )
    from importers.signal_log.report import (
        LEGACY_SOURCE_DOMAIN,
        file_digests,
        inspect_signal_log,
        looks_like_signal_log,
    )

# Imported when first read: `detect` needs only the sniffing module (bbg_core.lazy).
__getattr__ = lazy_exports(
    __name__,
    {
        "decode": (
            "ValidPrefix",
            "decode_frames",
            "read_frames",
            "signal_log_error",
            "valid_prefix",
        ),
        "encode": ("encode_frame", "encode_intent", "encode_leb128", "encode_signal"),
        "report": (
            "LEGACY_SOURCE_DOMAIN",
            "file_digests",
            "inspect_signal_log",
            "looks_like_signal_log",
        ),
        "model": (
            "DEFAULT_LIMITS",
            "ERROR_CODES",
            "SUFFIX_KINDS",
            "BoxMove",
            "DeltaPi",
            "Frame",
            "Intent",
            "Limits",
            "Link",
            "Signal",
            "SuffixKind",
        ),
    },
)

__all__ = [
    "DEFAULT_LIMITS",
    "ERROR_CODES",
    "LEGACY_SOURCE_DOMAIN",
    "SUFFIX_KINDS",
    "BoxMove",
    "DeltaPi",
    "Frame",
    "Intent",
    "Limits",
    "Link",
    "Signal",
    "SuffixKind",
    "ValidPrefix",
    "decode_frames",
    "encode_frame",
    "encode_intent",
    "encode_leb128",
    "encode_signal",
    "file_digests",
    "inspect_signal_log",
    "looks_like_signal_log",
    "read_frames",
    "signal_log_error",
    "valid_prefix",
]
