"""What a decoded bbg CLI frame log looks like, its error codes and the decoder's limits.

bbg's CLI (cyberia-to/bbg ``cli/src/frame.rs``, ``cli/src/main.rs``) keeps its store as
``<dir>/log``: tape frames ``0x1F ‖ sigil ‖ 'b' ‖ LEB128 payload length ‖ payload``, appended
without fsync.  Payloads, integers little-endian:

* ``!`` signal -- neuron[32] ‖ height u64 ‖ link count u32 ‖ links (from[32] ‖ to[32] ‖
  token[32] ‖ amount u64 ‖ valence i8 = 105 bytes each) ‖ box-move count u32 ‖ box moves
  (nullifier[32] ‖ flag u8 ‖ if 1: commitment[32] ‖ value u64);
* ``^`` intent -- neuron[32] ‖ h0 u64 ‖ scope_hash[32] ‖ signature[64] (136 bytes);
* ``.`` finalize -- an empty payload (a block boundary).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from importers.signal_log.model import BoxMove, Intent

SIGNAL: Final = "!"
INTENT: Final = "^"
FINALIZE: Final = "."
SIGILS: Final = (SIGNAL, INTENT, FINALIZE)
LINK_BYTES: Final = 105
SIGNAL_HEAD_BYTES: Final = 44  # neuron, height, link count
MiB: Final = 1 << 20

ERROR_CODES: Final = (
    "bad-marker",
    "unknown-sigil",
    "bad-renderer",
    "overlong-leb128",
    "truncated-frame",
    "truncated-payload",
    "trailing-bytes",
    "bad-intent-length",
    "bad-finalize-length",
    "bad-flag",
    "limit-exceeded",
)
"""Every ``code`` a :class:`bbg_core.errors.FrameLogError` can carry.

The framing codes mean what they mean for the old cyb Signal log
(:mod:`importers.signal_log.framing`); this dialect has no optional sections, so a cut anywhere
in a payload is ``truncated-payload`` (never ``partial-suffix``), and its own code is
``bad-finalize-length`` (a ``.`` frame whose payload is not empty; offset = its first payload
byte).
"""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds the decoder enforces; exceeding one raises ``limit-exceeded``, never a pass.

    bbg's CLI sets none (it replays whatever it finds).  These are ours: a frame must fit one
    Blob (16 MiB, as foculus' legacy frames), and a log is at most 1 GiB and 1,000,000 events
    (one commit each).  Link and box-move counts are bounded by the payload they must fit,
    as bbg's own reader bounds them.
    """

    max_log_bytes: int = 1024 * MiB
    max_events: int = 1_000_000
    max_payload_bytes: int = 16 * MiB


DEFAULT_LIMITS: Final = Limits()


@dataclass(frozen=True, slots=True)
class CliLink:
    """One cyberlink of a bbg signal (105 bytes on the wire; no neuron, no height)."""

    from_: bytes
    to: bytes
    token: bytes
    amount: int
    valence: int


@dataclass(frozen=True, slots=True)
class CliSignal:
    """A decoded ``!`` payload of bbg's state-application signal."""

    neuron: bytes
    height: int
    links: tuple[CliLink, ...]
    box_moves: tuple[BoxMove, ...]


@dataclass(frozen=True, slots=True)
class Finalize:
    """A ``.`` frame: the end of a block (no payload)."""


@dataclass(frozen=True, slots=True)
class CliFrame:
    """One frame: its absolute span ``[start, end)``, payload span, raw bytes and body."""

    index: int
    start: int
    end: int
    sigil: str
    payload_start: int
    payload_len: int
    raw: bytes
    body: CliSignal | Intent | Finalize

    @property
    def payload(self) -> bytes:
        """The payload bytes (a slice of ``raw``)."""
        return self.raw[self.payload_start - self.start :]
