"""The old TextArchive (JSONL): strict line reader, inspect report and sniffing.

Public API::

    read_records(path, *, limits=Limits(), hash_fn=None) -> Iterator[TextRecord]
    iter_records(binary_stream, *, limits=Limits(), hash_fn=None, path=None) -> Iterator[TextRecord]
    decode_records(data: bytes, *, limits=Limits(), hash_fn=None, path=None) -> Iterator[TextRecord]
    decode_line(raw, line, start, *, hash_fn, path=None) -> TextRecord
    inspect_text_archive(path, *, limits=Limits(), hash_fn=None, hasher=None) -> dict
    looks_like_text_archive(head: bytes) -> bool

``hash_fn`` (bytes -> 32-byte digest) defaults to ``hashing.hemera.hash`` and ``hasher`` to
``hashing.hemera.Hasher``.  Every fault raises :class:`bbg_core.errors.TextArchiveError`
with ``code`` (one of :data:`ERROR_CODES`), the 1-based ``line`` and ``path``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bbg_core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers
    from importers.text_archive.lines import split_lines
    from importers.text_archive.model import (
        DEFAULT_LIMITS,
        ERROR_CODES,
        Limits,
        RawLine,
        TextRecord,
    )
    from importers.text_archive.reader import (
        decode_line,
        decode_records,
        iter_records,
        read_records,
        text_archive_error,
    )
    from importers.text_archive.report import (
        MAX_REPORTED_ERRORS,
        file_digests,
        inspect_text_archive,
    )
    from importers.text_archive.sniff import looks_like_text_archive

# Imported when first read: `detect` needs only the sniffing module (bbg_core.lazy).
__getattr__ = lazy_exports(
    __name__,
    {
        "report": ("MAX_REPORTED_ERRORS", "file_digests", "inspect_text_archive"),
        "lines": ("split_lines",),
        "model": ("DEFAULT_LIMITS", "ERROR_CODES", "Limits", "RawLine", "TextRecord"),
        "reader": (
            "decode_line",
            "decode_records",
            "iter_records",
            "read_records",
            "text_archive_error",
        ),
        "sniff": ("looks_like_text_archive",),
    },
)

__all__ = [
    "DEFAULT_LIMITS",
    "ERROR_CODES",
    "MAX_REPORTED_ERRORS",
    "Limits",
    "RawLine",
    "TextRecord",
    "decode_line",
    "decode_records",
    "file_digests",
    "inspect_text_archive",
    "iter_records",
    "looks_like_text_archive",
    "read_records",
    "split_lines",
    "text_archive_error",
]
