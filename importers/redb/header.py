"""The redb super-header: magic, god byte, region geometry and the two commit slots.

Facts taken from the redb sources (``src/tree_store/page_store/header.rs`` at v1.5.2, v2.6.3,
v3.1.3 and v4.2.0).  All integers are little endian.

Header (first 64 bytes)::

    0   magic (9)            redb 1A 0A A9 0D 0A
    9   god byte             bit0 primary slot, bit1 recovery required, bit2 two-phase commit
    12  page size (u32)
    16  region header pages (u32)
    20  region max data pages (u32)
    24  number of full regions (u32)
    28  data pages in the trailing partial region (u32)
    32  region tracker page (u64, formats 1 and 2 only)

Commit slot (128 bytes, slot 0 at 64, slot 1 at 192)::

    0   file format version
    1   user root non-null, 2 system root non-null, 3 freed root non-null
    format 1:   8 user root page, 16 user checksum (16), 32 system page, 40 system checksum,
                56 freed page, 64 freed checksum, 80 transaction id
    format 2/3: 8 user root (page 8, checksum 16, length 8), 40 system root, 72 freed root,
                104 transaction id
    112 slot checksum: XXH3-128 of bytes 0..112

This module only parses; choosing the commit to read is in :mod:`importers.redb.reader`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import xxhash

from importers.redb.sniff import (
    GOD_BYTE_OFFSET,
    MAGIC,
    PRIMARY_BIT,
    RECOVERY_REQUIRED,
    SLOT_OFFSETS,
    TWO_PHASE_COMMIT,
)

SLOT_SIZE = 128
SLOT_CHECKSUM_OFFSET = 112
DB_HEADER_SIZE = 320

SUPPORTED_FORMATS = (1, 2, 3)
MIN_PAGE_SIZE = 512
MAX_PAGE_SIZE = 1 << 24
MAX_PAGE_INDEX = 0x000F_FFFF
MAX_REGIONS = 0x0010_0000


def xxh3_128(data: bytes | memoryview) -> int:
    """redb's checksum: XXH3-128 with seed 0, read as a little-endian u128."""
    return xxhash.xxh3_128_intdigest(data)


@dataclass(frozen=True)
class BtreeRoot:
    """A tree root as stored: page number (raw u64), its checksum, and (format >= 2) length."""

    page: int
    checksum: int
    length: int | None


@dataclass(frozen=True)
class CommitSlot:
    """One of the two commit slots."""

    index: int
    version: int
    user_root: BtreeRoot | None
    system_root: BtreeRoot | None
    freed_root: BtreeRoot | None
    transaction_id: int
    checksum_ok: bool


@dataclass(frozen=True)
class RawHeader:
    """The header fields exactly as stored (nothing validated beyond their sizes)."""

    magic_ok: bool
    god_byte: int
    page_size: int
    region_header_pages: int
    region_max_data_pages: int
    full_regions: int
    trailing_region_pages: int
    region_tracker: int
    slots: tuple[CommitSlot, CommitSlot]

    @property
    def primary_slot(self) -> int:
        return self.god_byte & PRIMARY_BIT

    @property
    def recovery_required(self) -> bool:
        return bool(self.god_byte & RECOVERY_REQUIRED)

    @property
    def two_phase_commit(self) -> bool:
        return bool(self.god_byte & TWO_PHASE_COMMIT)


def _root_v1(slot: bytes, nn: int, page_at: int) -> BtreeRoot | None:
    if not slot[nn]:
        return None
    (page,) = struct.unpack_from("<Q", slot, page_at)
    checksum = int.from_bytes(slot[page_at + 8 : page_at + 24], "little")
    return BtreeRoot(page, checksum, None)


def parse_btree_header(data: bytes, at: int = 0) -> BtreeRoot:
    """A serialized ``BtreeHeader`` (format >= 2): page u64, checksum u128, length u64."""
    (page,) = struct.unpack_from("<Q", data, at)
    checksum = int.from_bytes(data[at + 8 : at + 24], "little")
    (length,) = struct.unpack_from("<Q", data, at + 24)
    return BtreeRoot(page, checksum, length)


def parse_slot(index: int, slot: bytes) -> CommitSlot:
    """Parse one 128-byte commit slot (the layout depends on its version byte)."""
    version = slot[0]
    stored = int.from_bytes(slot[SLOT_CHECKSUM_OFFSET:SLOT_SIZE], "little")
    checksum_ok = stored == xxh3_128(slot[:SLOT_CHECKSUM_OFFSET])
    if version == 1:
        user = _root_v1(slot, 1, 8)
        system = _root_v1(slot, 2, 32)
        freed = _root_v1(slot, 3, 56)
        (txn,) = struct.unpack_from("<Q", slot, 80)
    else:
        user = parse_btree_header(slot, 8) if slot[1] else None
        system = parse_btree_header(slot, 40) if slot[2] else None
        # Format 3 no longer has a freed tree; the bytes are unused there.
        freed = parse_btree_header(slot, 72) if slot[3] and version == 2 else None
        (txn,) = struct.unpack_from("<Q", slot, 104)
    return CommitSlot(index, version, user, system, freed, txn, checksum_ok)


def parse_raw_header(data: bytes) -> RawHeader:
    """Parse the first :data:`DB_HEADER_SIZE` bytes of a file."""
    assert len(data) >= DB_HEADER_SIZE
    page_size, hdr_pages, max_pages, full, trailing, tracker = struct.unpack_from("<5IQ", data, 12)
    slots = (
        parse_slot(0, data[SLOT_OFFSETS[0] : SLOT_OFFSETS[0] + SLOT_SIZE]),
        parse_slot(1, data[SLOT_OFFSETS[1] : SLOT_OFFSETS[1] + SLOT_SIZE]),
    )
    return RawHeader(
        magic_ok=data[: len(MAGIC)] == MAGIC,
        god_byte=data[GOD_BYTE_OFFSET],
        page_size=page_size,
        region_header_pages=hdr_pages,
        region_max_data_pages=max_pages,
        full_regions=full,
        trailing_region_pages=trailing,
        region_tracker=tracker,
        slots=slots,
    )


@dataclass(frozen=True)
class Header:
    """What the reader found in the super-header, and which commit it reads.

    ``primary_slot``, ``recovery_required`` and ``two_phase_commit`` are the god byte's bits as
    stored.  ``selected_slot`` is the commit slot actually read (it differs from
    ``primary_slot`` only when the file needed recovery and the crate would fall back to the
    other slot).  ``format_version`` and ``transaction_id`` are those of the selected slot.
    """

    magic_ok: bool
    god_byte: int
    primary_slot: int
    recovery_required: bool
    two_phase_commit: bool
    page_size: int
    format_version: int
    slot_versions: tuple[int, int]
    slot_checksums_ok: tuple[bool, bool]
    selected_slot: int
    transaction_id: int
    file_size: int
    region_header_pages: int
    region_max_data_pages: int
    full_regions: int
    trailing_region_pages: int
    layout_len: int
    num_regions: int
    layout_recalculated: bool
    fallback_reason: str | None = None

    @property
    def used_fallback_slot(self) -> bool:
        return self.selected_slot != self.primary_slot
