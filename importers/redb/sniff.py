"""What a redb file starts with: the magic and the super-header's fixed offsets.

Kept apart from the reader so that ``detect`` can recognise a redb file, and say what its
header claims, without importing the reader or its C extension (start-up time).
"""

from __future__ import annotations

from typing import Any

MAGIC = b"redb\x1a\x0a\xa9\x0d\x0a"
GOD_BYTE_OFFSET = 9
PAGE_SIZE_OFFSET = 12
SLOT_OFFSETS = (64, 192)

PRIMARY_BIT = 1
RECOVERY_REQUIRED = 2
TWO_PHASE_COMMIT = 4


def looks_like_redb(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) starts with redb's magic."""
    return head.startswith(MAGIC)


def header_claims(head: bytes) -> dict[str, Any]:
    """What the god byte and the primary commit slot of ``head`` say, unverified (a value
    the bytes do not reach is None): primary slot, the recovery and two-phase-commit bits,
    format version, page size."""
    god = head[GOD_BYTE_OFFSET] if len(head) > GOD_BYTE_OFFSET else 0
    primary = god & PRIMARY_BIT
    slot = SLOT_OFFSETS[primary]
    return {
        "primary_slot": primary,
        "recovery_required": bool(god & RECOVERY_REQUIRED),
        "two_phase_commit": bool(god & TWO_PHASE_COMMIT),
        "format_version": head[slot] if len(head) > slot else None,
        "page_size": (
            int.from_bytes(head[PAGE_SIZE_OFFSET : PAGE_SIZE_OFFSET + 4], "little")
            if len(head) >= PAGE_SIZE_OFFSET + 4
            else None
        ),
    }
