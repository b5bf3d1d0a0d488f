"""Read-only report on a TextArchive (``inspect``); the sniffing for ``detect`` is in
:mod:`importers.text_archive.sniff` (re-exported here)."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Final

from bbg_core.errors import SourceError, TextArchiveError
from hashing import hemera
from hashing.hemera import HasherFactory, HashFn
from importers.text_archive.lines import split_lines
from importers.text_archive.model import DEFAULT_LIMITS, Limits
from importers.text_archive.reader import (
    PathLike,
    archive_budget,
    check_raw_line,
    check_source_size,
    decode_line,
)
from importers.text_archive.sniff import looks_like_text_archive

__all__ = ["MAX_REPORTED_ERRORS", "file_digests", "inspect_text_archive", "looks_like_text_archive"]

_CHUNK: Final = 1 << 20
MAX_REPORTED_ERRORS: Final = 100


def file_digests(path: PathLike, hasher: HasherFactory | None = None) -> tuple[str, str]:
    """(SHA-256, hemera) of the whole file at ``path``, in hex, streaming."""
    name = os.fspath(path)
    sha = hashlib.sha256()
    hem = (hasher or hemera.Hasher)()
    try:
        with open(name, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                sha.update(chunk)
                hem.update(chunk)
    except OSError as exc:
        raise SourceError(
            f"{name}: cannot read the text archive: {exc.strerror}", path=name
        ) from exc
    return sha.hexdigest(), hem.digest().hex()


def inspect_text_archive(
    path: PathLike,
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: HashFn | None = None,
    hasher: HasherFactory | None = None,
) -> dict[str, Any]:
    """The read-only report (schema ``text-archive-inspect``) of the archive at ``path``.

    Lines are self-delimiting, so unlike a Signal log every line is checked: ``errors``
    lists the first :data:`MAX_REPORTED_ERRORS` faults in line order (``error_count`` counts
    all) and ``distinct_texts`` counts distinct particles among the valid lines.  The
    archive-wide limits apply to the valid lines in order; past the first error a line's
    exact transaction budget is not computed (the real reader never gets there), and a
    ``limit-exceeded`` on the line count or the source size stops the scan.
    """
    name = os.fspath(path)
    check = hash_fn or hemera.hash
    streaming = hasher or (None if hash_fn is not None else hemera.Hasher)
    errors: list[dict[str, Any]] = []
    error_count = 0
    line_count = 0

    def report(exc: TextArchiveError) -> None:
        nonlocal error_count
        error_count += 1
        if len(errors) < MAX_REPORTED_ERRORS:
            ctx = exc.context
            errors.append({"code": ctx["code"], "line": ctx["line"], "message": exc.message})

    try:
        handle = open(name, "rb")  # closed by the with below
    except OSError as exc:
        raise SourceError(
            f"{name}: cannot open the text archive: {exc.strerror}", path=name
        ) from exc
    with handle:
        budget = archive_budget(handle, limits, check, name, streaming)
        try:
            check_source_size(handle, limits, name)
        except TextArchiveError as exc:
            report(exc)
        else:
            for piece in split_lines(handle, limits.max_line_bytes):
                line_count = piece.line
                try:
                    raw = check_raw_line(piece, limits, name)
                    record = decode_line(raw, piece.line, piece.start, hash_fn=check, path=name)
                    budget.check(record)
                except TextArchiveError as exc:
                    report(exc)
                    budget.exact = False
                    if piece.line > limits.max_lines:
                        line_count = piece.line - 1
                        break
    sha256, hemera_file = file_digests(name, hasher)
    return {
        "kind": "text-archive",
        "path": name,
        "size_bytes": os.stat(name).st_size,
        "valid": error_count == 0,
        "line_count": line_count,
        "distinct_texts": budget.distinct_texts,
        "errors": errors,
        "error_count": error_count,
        "sha256": sha256,
        "hemera_file": hemera_file,
    }
