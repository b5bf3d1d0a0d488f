"""What a decoded old cyb Signal log frame looks like, and the decoder's limits.

The wire format: ``0x1F ‖ sigil ‖ 'b' ‖ LEB128 payload length ‖ payload``.
All payload integers are little-endian.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

MARKER: Final = 0x1F
RENDERER: Final = 0x62  # b"b"
SIGNAL: Final = "!"
INTENT: Final = "^"
SIGILS: Final = (SIGNAL, INTENT)
INTENT_LEN: Final = 136
MAX_LEB128_BYTES: Final = 10

SuffixKind = Literal["none", "box_moves", "box_moves+delta_pi"]
SUFFIX_KINDS: Final[tuple[SuffixKind, ...]] = ("none", "box_moves", "box_moves+delta_pi")

MiB: Final = 1 << 20

ERROR_CODES: Final = (
    "bad-marker",
    "unknown-sigil",
    "bad-renderer",
    "overlong-leb128",
    "truncated-frame",
    "truncated-payload",
    "partial-suffix",
    "trailing-bytes",
    "bad-intent-length",
    "bad-flag",
    "limit-exceeded",
)
"""Every ``code`` a :class:`bbg_core.errors.SignalLogError` from this package can carry."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds the decoder enforces; exceeding one raises ``limit-exceeded``, never a pass."""

    max_log_bytes: int = 64 * MiB
    max_events: int = 65_536
    max_payload_bytes: int = 16 * MiB
    max_links: int = 16_384
    max_section_entries: int = 65_536


DEFAULT_LIMITS: Final = Limits()


@dataclass(frozen=True, slots=True)
class Link:
    """One cyberlink of a signal (145 bytes on the wire)."""

    neuron: bytes
    from_: bytes
    to: bytes
    token: bytes
    amount: int
    valence: int
    height: int


@dataclass(frozen=True, slots=True)
class BoxMove:
    """One box_moves entry: ``flag`` is 0 or 1, and ``commitment``/``value`` are present
    exactly when it is 1 (any other flag byte is ``bad-flag``)."""

    nullifier: bytes
    flag: int
    commitment: bytes | None = None
    value: int | None = None


@dataclass(frozen=True, slots=True)
class DeltaPi:
    """One delta_pi entry."""

    particle: bytes
    amount: int


@dataclass(frozen=True, slots=True)
class Signal:
    """A decoded ``!`` payload.  ``box_moves``/``delta_pi`` are None when absent (≠ empty)."""

    neuron: bytes
    step: int
    prev: bytes
    height: int
    links: tuple[Link, ...]
    box_moves: tuple[BoxMove, ...] | None = None
    delta_pi: tuple[DeltaPi, ...] | None = None

    @property
    def suffix(self) -> SuffixKind:
        """Which optional trailer the payload carried."""
        if self.box_moves is None:
            return "none"
        if self.delta_pi is None:
            return "box_moves"
        return "box_moves+delta_pi"


@dataclass(frozen=True, slots=True)
class Intent:
    """A decoded ``^`` payload (exactly 136 bytes)."""

    neuron: bytes
    h0: int
    scope_hash: bytes
    signature: bytes


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: its absolute span ``[start, end)``, payload span, raw bytes and body."""

    index: int
    start: int
    end: int
    sigil: str
    payload_start: int
    payload_len: int
    raw: bytes
    body: Signal | Intent

    @property
    def payload_end(self) -> int:
        """Absolute offset one past the payload (equals ``end``)."""
        return self.payload_start + self.payload_len

    @property
    def payload(self) -> bytes:
        """The payload bytes (a slice of ``raw``)."""
        return self.raw[self.payload_start - self.start :]
