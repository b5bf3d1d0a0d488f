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

    ``max_line_bytes`` counts the raw line including its LF.
    """

    max_line_bytes: int = 16 * MiB
    max_lines: int = 1_000_000


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
    ``text`` is the decoded string, in which those bytes read as TAB/CR.
    """

    line: int
    start: int
    end: int
    raw: bytes
    particle: str
    text: str
    created: int | None

    @property
    def particle_bytes(self) -> bytes:
        """The particle (hemera of the text's UTF-8) as 32 bytes."""
        return bytes.fromhex(self.particle)
