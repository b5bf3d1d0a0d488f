"""What a decoded old TextArchive line looks like, and the reader's limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MiB: Final = 1 << 20
FIELDS: Final = frozenset({"particle", "text", "created"})
REQUIRED: Final = ("particle", "text")

ERROR_CODES: Final = (
    "unterminated-line",
    "blank-line",
    "invalid-utf8",
    "invalid-json",
    "unknown-field",
    "duplicate-field",
    "missing-field",
    "bad-particle",
    "bad-text",
    "bad-created",
    "particle-mismatch",
    "limit-exceeded",
)
"""Every ``code`` a :class:`bbg_core.errors.TextArchiveError` from this package can carry."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds the reader enforces; exceeding one raises ``limit-exceeded``, never a pass.

    The defaults are cybergraph's (``src/text_archive.rs``, ``src/text_archive/legacy.rs``,
    ``src/content.rs``):

    * ``max_line_bytes`` -- a raw line, its LF included (``MAX_TEXT_BYTES``, 8 MiB; the
      decoded text is always shorter than its line);
    * ``max_lines`` -- observations in one fresh namespace (``MAX_OBSERVATIONS``);
    * ``max_transaction_bytes`` -- one line's atomic commit: text, raw line and observation
      record, each plus its codec byte (``MAX_CONTENT_BYTES``, 16 MiB);
    * ``max_projection_bytes`` -- the bytes of all distinct texts (``MAX_PROJECTION_BYTES``);
    * ``max_source_bytes`` -- the whole archive (``MAX_SOURCE_BYTES``, 256 MiB).
    """

    max_line_bytes: int = 8 * MiB
    max_lines: int = 1_000_000
    max_transaction_bytes: int = 16 * MiB
    max_projection_bytes: int = 64 * MiB
    max_source_bytes: int = 256 * MiB


DEFAULT_LIMITS: Final = Limits()


@dataclass(frozen=True, slots=True)
class RawLine:
    """One LF-delimited piece of the file: 1-based ``line``, byte span ``[start, end)``.

    ``raw`` is None when the line is longer than the limit (it is not kept in memory).
    """

    line: int
    start: int
    end: int
    terminated: bool
    raw: bytes | None


@dataclass(frozen=True, slots=True)
class TextRecord:
    """One valid line: where it is (``line``, ``[start, end)``), its exact bytes and fields.

    ``raw`` is the line as written, LF included, raw TAB/CR bytes kept (provenance);
    ``text`` is the decoded string, in which those bytes read as TAB/CR.  ``particle`` is the
    text's id in lowercase hex, whatever case the line spelled it in.
    """

    line: int
    start: int
    end: int
    raw: bytes
    particle: str
    text: str
    created: int | None
    text_size: int  # bytes of ``text`` as UTF-8

    @property
    def particle_bytes(self) -> bytes:
        """The particle (hemera of the text's UTF-8) as 32 bytes."""
        return bytes.fromhex(self.particle)
