"""The strict TextArchive line reader, as cybergraph reads it (error codes: :data:`ERROR_CODES`).

The rules are cybergraph's ``src/text_archive/legacy.rs`` (``decode``) with serde_json's
reading of ``struct LegacyLine { particle: String, text: String, created: Option<u64> }``
under ``deny_unknown_fields``; per line, in this order:

* at most ``Limits.max_line_bytes`` bytes, LF included (``limit-exceeded``), LF-terminated;
* a raw TAB or CR **inside a JSON string** (not right after a backslash) reads as ``\\t`` /
  ``\\r``; outside strings both are JSON whitespace, so CRLF endings and TABs between tokens
  are valid; a line of whitespace only is ``blank-line``;
* UTF-8, one JSON value, nothing after it but whitespace;
* the value is an object -- or, as serde reads a struct, an array of exactly the three
  fields in order ``[particle, text, created]`` -- checked member by member in the order
  written: an unknown key, a key seen before, or a value of the wrong type is the error
  met first; then ``particle`` and ``text`` must be present (``created`` defaults to null);
* ``created`` is null or a JSON integer in 0..2^64-1 (``-0``, fractions and exponents are
  not: serde reads them as floats);
* ``particle`` is 64 hex digits of either case, and the id it spells equals hemera(text).

The archive-wide limits (line count, per-line transaction budget, distinct-text bytes,
source size) are in :mod:`importers.text_archive.budget`.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from typing import Any, BinaryIO, Final

from bbg_core.errors import SourceError, TextArchiveError
from hashing import hemera
from hashing.hemera import HasherFactory, HashFn
from importers.text_archive.budget import ArchiveBudget, ChainSource, Rereader, source_cap_line
from importers.text_archive.lines import split_lines
from importers.text_archive.model import (
    DEFAULT_LIMITS,
    FIELDS,
    Limits,
    RawLine,
    TextRecord,
)

PathLike = str | os.PathLike[str]

_PARTICLE: Final = re.compile(r"[0-9a-fA-F]{64}")
_U64_MAX: Final = (1 << 64) - 1
_U64_DIGITS: Final = 20  # longer integer literals cannot be a u64; never build them
_SPECIAL: Final = re.compile(rb'["\\\t\r]')
_JSON_SPACE: Final = b" \t\r\n"
_ARRAY_FIELDS: Final = ("particle", "text", "created")

_HINTS: Final = {
    "unterminated-line": "the last write was cut before its LF; the lines before it are intact",
    "limit-exceeded": "raise the limit explicitly if this source is trusted",
}
_DEFAULT_HINT: Final = "fix or remove this line; the archive is read strictly, nothing is skipped"


class _NotU64:
    """Stands in for an integer literal that cannot be a u64 (negative, ``-0`` or too long)."""


class _Members(list[tuple[str, Any]]):
    """A parsed JSON object: its members in the order written (duplicates kept)."""


def _parse_int(literal: str) -> int | _NotU64:
    # serde_json reads "-0" as a float and any negative as i64: neither is a u64.
    if literal.startswith("-") or len(literal) > _U64_DIGITS:
        return _NotU64()
    return int(literal)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_Members, parse_int=_parse_int, parse_constant=_reject_constant
)


def text_archive_error(
    code: str, line: int, detail: str, path: str | None = None
) -> TextArchiveError:
    """Build the error with its keyword context and a message that says what to do.  The
    message names ``line N`` as cybergraph's ``legacy text line {n}: ...`` does
    (cybergraph@546853d9 ``src/text_archive/legacy.rs`` ``malformed``)."""
    where = path if path is not None else "<text archive>"
    hint = _HINTS.get(code, _DEFAULT_HINT)
    return TextArchiveError(
        f"{where}:{line}: {code}: line {line}: {detail}; {hint}",
        code=code, line=line, path=path,
    )  # fmt: skip


def normalise(raw: bytes) -> bytes:
    """``raw`` with each TAB / CR inside a JSON string (and not escaped) as ``\\t`` / ``\\r``.

    The state machine is cybergraph's: a quote toggles "inside a string" unless escaped; a
    backslash inside a string escapes the next byte, whatever it is.
    """
    if b"\t" not in raw and b"\r" not in raw:
        return raw
    out = bytearray()
    quoted = False
    escape_at = -2  # position of a pending backslash inside a string
    last = 0
    for match in _SPECIAL.finditer(raw):
        at = match.start()
        if at == escape_at + 1:
            continue  # the escaped byte: kept as written, no other meaning
        byte = raw[at]
        if byte == 0x22:  # quote
            quoted = not quoted
        elif byte == 0x5C:  # backslash
            if quoted:
                escape_at = at
        elif quoted:  # TAB or CR inside a string
            out += raw[last:at]
            out += b"\\t" if byte == 0x09 else b"\\r"
            last = at + 1
    out += raw[last:]
    return bytes(out)


def _field_error(name: str, value: Any) -> tuple[str, str] | None:
    """(code, detail) when ``value`` has the wrong type for field ``name``, else None."""
    if name == "particle":
        if type(value) is not str:
            return "bad-particle", "particle is not a string"
    elif name == "text":
        if type(value) is not str:
            return "bad-text", "text is not a string"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "bad-text", "text holds an unpaired surrogate escape"
    elif value is not None and (type(value) is not int or not 0 <= value <= _U64_MAX):
        return "bad-created", "created is not an unsigned 64-bit integer or null"
    return None


def _fields(value: Any) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """The three fields of a parsed line, or the first rule it breaks as (code, detail)."""
    found: dict[str, Any] = {}
    if isinstance(value, _Members):
        for name, member in value:
            if name not in FIELDS:
                return None, ("unknown-field", f"unknown field {name!r}")
            if name in found:
                return None, ("duplicate-field", f"field {name!r} appears more than once")
            wrong = _field_error(name, member)
            if wrong is not None:
                return None, wrong
            found[name] = member
        for name in ("particle", "text"):
            if name not in found:
                return None, ("missing-field", f"field {name!r} is missing")
        return found, None
    if isinstance(value, list):
        # serde's visit_seq: the fields in declaration order, every one present.
        for name, member in zip(_ARRAY_FIELDS, value, strict=False):
            wrong = _field_error(name, member)
            if wrong is not None:
                return None, wrong
            found[name] = member
        if len(value) < len(_ARRAY_FIELDS):
            missing = _ARRAY_FIELDS[len(value)]
            return None, ("missing-field", f"field {missing!r} is missing from the array")
        if len(value) > len(_ARRAY_FIELDS):
            return None, ("invalid-json", "an array of more than the three fields")
        return found, None
    return None, ("invalid-json", "not a JSON object")


def decode_line(
    raw: bytes, line: int, start: int, *, hash_fn: HashFn, path: str | None = None
) -> TextRecord:
    """Check one raw line (LF included) against every per-line rule; return its record."""

    def fail(code: str, detail: str) -> TextArchiveError:
        return text_archive_error(code, line, detail, path)

    if not raw.endswith(b"\n"):
        raise fail("unterminated-line", "the file ends without a final LF")
    if not raw.strip(_JSON_SPACE):
        raise fail("blank-line", "the line holds no JSON value")
    try:
        body = normalise(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail("invalid-utf8", f"invalid UTF-8 at byte {exc.start} of the line") from None
    try:
        value = _DECODER.decode(body)
    except (ValueError, RecursionError) as exc:
        raise fail("invalid-json", f"not valid JSON ({exc})") from None
    fields, wrong = _fields(value)
    if wrong is not None:
        raise fail(*wrong)
    assert fields is not None
    particle: str = fields["particle"]
    if not _PARTICLE.fullmatch(particle):
        raise fail("bad-particle", "particle is not 64 hex digits")
    text: str = fields["text"]
    text_bytes = text.encode("utf-8")
    expected = bytes.fromhex(particle)
    actual = hash_fn(text_bytes)
    if actual != expected:
        raise fail("particle-mismatch", f"particle {particle} but hemera(text) = {actual.hex()}")
    return TextRecord(
        line, start, start + len(raw), raw, expected.hex(), text, fields.get("created"),
        len(text_bytes),
    )  # fmt: skip


def check_raw_line(piece: RawLine, limits: Limits, path: str | None) -> bytes:
    """The line's bytes, or ``limit-exceeded`` when it is longer than the line limit."""
    if piece.raw is None:
        raise text_archive_error(
            "limit-exceeded",
            piece.line,
            f"line of {piece.end - piece.start} bytes (limit {limits.max_line_bytes}, LF included)",
            path,
        )
    return piece.raw


def check_source_size(
    handle: BinaryIO, limits: Limits, path: str | None, size: int | None = None
) -> None:
    """``limit-exceeded`` naming the line past the source cap, before any line is read.

    ``handle`` must be seekable and at offset 0; it is left at offset 0.
    """
    if size is None:
        size = handle.seek(0, io.SEEK_END)
        handle.seek(0)
    if size <= limits.max_source_bytes:
        return
    line = source_cap_line(handle, limits.max_source_bytes)
    handle.seek(0)
    raise text_archive_error(
        "limit-exceeded",
        line,
        f"the archive has {size} bytes (source limit {limits.max_source_bytes}); "
        "this line holds the first byte past it",
        path,
    )


def archive_budget(
    handle: BinaryIO,
    limits: Limits,
    hash_fn: HashFn,
    path: str | None,
    hasher: HasherFactory | None = None,
) -> ArchiveBudget:
    """The archive-wide limit checker for lines read from ``handle`` (seekable)."""

    def decode(raw: bytes, line: int, start: int) -> TextRecord:
        return decode_line(raw, line, start, hash_fn=hash_fn, path=path)

    def fail(code: str, line: int, detail: str) -> TextArchiveError:
        return text_archive_error(code, line, detail, path)

    chain: ChainSource = Rereader(handle, hash_fn, hasher, decode)
    return ArchiveBudget(limits, hash_fn, fail, chain)


def iter_records(
    handle: BinaryIO,
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: HashFn | None = None,
    hasher: HasherFactory | None = None,
    path: str | None = None,
) -> Iterator[TextRecord]:
    """Yield each record of the seekable binary stream ``handle`` (at offset 0); raise at the
    first fault.  ``hasher`` (streaming, the same function as ``hash_fn``) is used only for
    the source id an exact transaction budget needs; without it the source is hashed whole.
    """
    check = hash_fn or hemera.hash
    if hash_fn is None and hasher is None:
        hasher = hemera.Hasher
    check_source_size(handle, limits, path)
    budget = archive_budget(handle, limits, check, path, hasher)
    for piece in split_lines(handle, limits.max_line_bytes):
        raw = check_raw_line(piece, limits, path)
        record = decode_line(raw, piece.line, piece.start, hash_fn=check, path=path)
        budget.check(record)
        yield record


def decode_records(
    data: bytes,
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: HashFn | None = None,
    hasher: HasherFactory | None = None,
    path: str | None = None,
) -> Iterator[TextRecord]:
    """Yield each record of the archive bytes ``data``; see :func:`iter_records`."""
    return iter_records(io.BytesIO(data), limits=limits, hash_fn=hash_fn, hasher=hasher, path=path)


def read_records(
    path: PathLike,
    *,
    limits: Limits = DEFAULT_LIMITS,
    hash_fn: HashFn | None = None,
    hasher: HasherFactory | None = None,
) -> Iterator[TextRecord]:
    """Yield each record of the archive file at ``path`` (buffered, bounded memory)."""
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # closed in the finally below
    except OSError as exc:
        raise SourceError(
            f"{name}: cannot open the text archive: {exc.strerror}", path=name
        ) from exc
    try:
        yield from iter_records(handle, limits=limits, hash_fn=hash_fn, hasher=hasher, path=name)
    finally:
        handle.close()
