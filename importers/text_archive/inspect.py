"""Read-only report on a TextArchive (``inspect``), and content sniffing for ``detect``."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Final

from bbg_core.errors import SourceError, TextArchiveError
from importers.text_archive._hashing import HasherFactory, HashFn, default_hash, default_hasher
from importers.text_archive.lines import split_lines
from importers.text_archive.model import DEFAULT_LIMITS, Limits
from importers.text_archive.reader import PathLike, check_raw_line, decode_line

_CHUNK: Final = 1 << 20
MAX_REPORTED_ERRORS: Final = 100


def looks_like_text_archive(head: bytes) -> bool:
    """True if ``head`` (the first bytes of a file) starts like a TextArchive line.

    Content only, never the name: the first line opens a JSON object naming ``particle`` or
    ``text``.  An empty head is not claimed (see ``looks_like_signal_log``).
    """
    if not head.startswith(b"{"):
        return False
    first = head.split(b"\n", 1)[0]
    return b'"particle"' in first or b'"text"' in first


def file_digests(path: PathLike, hasher: HasherFactory | None = None) -> tuple[str, str]:
    """(SHA-256, hemera) of the whole file at ``path``, in hex, streaming."""
    name = os.fspath(path)
    sha = hashlib.sha256()
    hem = (hasher or default_hasher())()
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
    all) and ``distinct_texts`` counts distinct particles among the valid lines.  A
    ``limit-exceeded`` on the line count stops the scan there.
    """
    name = os.fspath(path)
    check = hash_fn or default_hash()
    errors: list[dict[str, Any]] = []
    error_count = 0
    line_count = 0
    particles: set[str] = set()
    try:
        handle = open(name, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise SourceError(
            f"{name}: cannot open the text archive: {exc.strerror}", path=name
        ) from exc
    with handle:
        for piece in split_lines(handle, limits.max_line_bytes):
            try:
                raw = check_raw_line(piece, limits, name)
                record = decode_line(raw, piece.line, piece.start, hash_fn=check, path=name)
            except TextArchiveError as exc:
                error_count += 1
                if len(errors) < MAX_REPORTED_ERRORS:
                    errors.append(
                        {"code": exc.context["code"], "line": piece.line, "message": exc.message}
                    )
                if piece.line > limits.max_lines:
                    break
                line_count = piece.line
                continue
            line_count = piece.line
            particles.add(record.particle)
    sha256, hemera_file = file_digests(name, hasher)
    return {
        "kind": "text-archive",
        "path": name,
        "size_bytes": os.stat(name).st_size,
        "valid": error_count == 0,
        "line_count": line_count,
        "distinct_texts": len(particles),
        "errors": errors,
        "error_count": error_count,
        "sha256": sha256,
        "hemera_file": hemera_file,
    }
