"""The strict TextArchive line reader (BRIEF §2.3, error codes §2.4).

Rules, in the order they are checked for each line: LF-terminated, not blank, UTF-8, raw TAB
and CR bytes read as the escapes ``\\t`` and ``\\r`` (the old writer left them raw inside
strings; the raw bytes stay in ``TextRecord.raw``), one JSON object, no duplicate field,
no unknown field, both required fields, ``particle`` 64 lowercase hex, ``text`` a string,
``created`` (optional) a u64 parsed exactly, and ``particle == hemera(text as UTF-8)``.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from typing import Any, BinaryIO, Final

from bbg_core.errors import SourceError, TextArchiveError
from importers.text_archive._hashing import HashFn, default_hash
from importers.text_archive.lines import split_lines
from importers.text_archive.model import (
    DEFAULT_LIMITS,
    FIELDS,
    REQUIRED,
    Limits,
    RawLine,
    TextRecord,
)

PathLike = str | os.PathLike[str]

_PARTICLE: Final = re.compile(r"[0-9a-f]{64}")
_U64_MAX: Final = (1 << 64) - 1
_INT_DIGITS: Final = 32  # longer integer literals cannot be a u64; never build them

_HINTS: Final = {
    "unterminated-line": "the last write was cut before its LF; the lines before it are intact",
    "limit-exceeded": "raise the limit explicitly if this source is trusted",
}
_DEFAULT_HINT: Final = "fix or remove this line; the archive is read strictly, nothing is skipped"


class _OutOfRange:
    """Stands in for an integer literal too long to be a u64 (Python caps int parsing)."""


class _Object(dict[str, Any]):
    """A parsed JSON object that remembers which keys it saw more than once."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dupes: list[str] = []
        for key, _ in pairs:
            if key in seen:
                dupes.append(key)
            seen.add(key)
        obj.duplicates = tuple(dupes)
    return obj


def _parse_int(literal: str) -> int | _OutOfRange:
    return int(literal) if len(literal) <= _INT_DIGITS else _OutOfRange()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_int=_parse_int, parse_constant=_reject_constant
)


def text_archive_error(
    code: str, line: int, detail: str, path: str | None = None
) -> TextArchiveError:
    """Build the error with its keyword context and a message that says what to do."""
    where = path if path is not None else "<text archive>"
    hint = _HINTS.get(code, _DEFAULT_HINT)
    return TextArchiveError(
        f"{where}:{line}: {code}: {detail}; {hint}", code=code, line=line, path=path
    )


def decode_line(
    raw: bytes, line: int, start: int, *, hash_fn: HashFn, path: str | None = None
) -> TextRecord:
    """Check one raw line (LF included) against every rule; return its record or raise."""

    def fail(code: str, detail: str) -> TextArchiveError:
        return text_archive_error(code, line, detail, path)

    if not raw.endswith(b"\n"):
        raise fail("unterminated-line", "the file ends without a final LF")
    if raw == b"\n":
        raise fail("blank-line", "empty line")
    try:
        body = raw[:-1].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail("invalid-utf8", f"invalid UTF-8 at byte {exc.start} of the line") from None
    # Outside strings a raw TAB/CR also becomes an escape and so fails to parse: the rule is
    # a byte rule, the same as the reference checker's.
    body = body.replace("\t", "\\t").replace("\r", "\\r")
    try:
        obj = _DECODER.decode(body)
    except (ValueError, RecursionError) as exc:
        raise fail("invalid-json", f"not valid JSON ({exc})") from None
    if not isinstance(obj, _Object):
        raise fail("invalid-json", "not a JSON object")
    if obj.duplicates:
        raise fail("duplicate-field", f"field {obj.duplicates[0]!r} appears more than once")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise fail("unknown-field", f"unknown field {unknown[0]!r}")
    for name in REQUIRED:
        if name not in obj:
            raise fail("missing-field", f"field {name!r} is missing")
    particle = obj["particle"]
    if type(particle) is not str or not _PARTICLE.fullmatch(particle):
        raise fail("bad-particle", "particle is not 64 lowercase hex digits")
    text = obj["text"]
    if type(text) is not str:
        raise fail("bad-text", "text is not a string")
    try:
        text_bytes = text.encode("utf-8")
    except UnicodeEncodeError:
        raise fail("bad-text", "text holds an unpaired surrogate escape") from None
    created = obj.get("created")
    if "created" in obj and (type(created) is not int or not 0 <= created <= _U64_MAX):
        raise fail("bad-created", "created is not an unsigned 64-bit integer")
    actual = hash_fn(text_bytes).hex()
    if actual != particle:
        raise fail("particle-mismatch", f"particle {particle} but hemera(text) = {actual}")
    return TextRecord(line, start, start + len(raw), raw, particle, text, created)


def check_raw_line(piece: RawLine, limits: Limits, path: str | None) -> bytes:
    """The line's bytes, or ``limit-exceeded`` when it breaks a limit (count or length)."""
    if piece.line > limits.max_lines:
        raise text_archive_error(
            "limit-exceeded", piece.line, f"more than {limits.max_lines} lines", path
        )
    if piece.raw is None:
        raise text_archive_error(
            "limit-exceeded",
            piece.line,
            f"line of {piece.end - piece.start} bytes (limit {limits.max_line_bytes})",
            path,
        )
    return piece.raw


def iter_records(
    handle: BinaryIO,
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: HashFn | None = None,
    path: str | None = None,
) -> Iterator[TextRecord]:
    """Yield each record of the binary stream ``handle``; raise at the first fault."""
    check = hash_fn or default_hash()
    for piece in split_lines(handle, limits.max_line_bytes):
        raw = check_raw_line(piece, limits, path)
        yield decode_line(raw, piece.line, piece.start, hash_fn=check, path=path)


def decode_records(
    data: bytes,
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: HashFn | None = None,
    path: str | None = None,
) -> Iterator[TextRecord]:
    """Yield each record of the archive bytes ``data``; see :func:`iter_records`."""
    return iter_records(io.BytesIO(data), limits=limits, hash_fn=hash_fn, path=path)


def read_records(
    path: PathLike, *, limits: Limits = DEFAULT_LIMITS, hash_fn: HashFn | None = None
) -> Iterator[TextRecord]:
    """Yield each record of the archive file at ``path`` (buffered, bounded memory)."""
    name = os.fspath(path)
    check = hash_fn or default_hash()
    try:
        handle = open(name, "rb")  # noqa: SIM115 - closed in the finally below
    except OSError as exc:
        raise SourceError(
            f"{name}: cannot open the text archive: {exc.strerror}", path=name
        ) from exc
    try:
        yield from iter_records(handle, limits=limits, hash_fn=check, path=name)
    finally:
        handle.close()
