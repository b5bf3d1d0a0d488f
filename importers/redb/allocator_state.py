"""Structural checks of the allocator state that redb 1.x/2.x load on every open.

Those versions keep a buddy allocator per region in the region's header pages and a region
tracker page; on a normal open (no recovery) they parse both, and a malformed one makes the
crate panic.  We never use the allocator, but a reader that must be at least as strict as the
crate refuses the same files, so these functions walk the same serialized layout and raise
``ValueError`` (with the offset) wherever the crate's parser would go out of bounds or fail
an assertion.

Layouts (all integers u32 little endian unless noted):

* region header: version u8 (= 1), 3 pad, state length, buddy allocator state;
* buddy allocator: max_order u8, 3 pad, page count, then 2 x (max_order + 1) end offsets
  (free bitmaps, then allocated bitmaps), then the bitmaps; each slice [previous end, end);
* free bitmap (a bitmap tree): height, height end offsets, then grouped bitmaps;
* grouped bitmap: bit length, then whole u64 words;
* region tracker page: order count, per-order length, then that many bitmap trees.
"""

from __future__ import annotations

import struct

_U32 = struct.Struct("<I")
REGION_FORMAT_VERSION = 1


def _u32(data: bytes, at: int, base: int, what: str) -> int:
    if at + 4 > len(data):
        raise ValueError(f"{what} at offset {base + at} runs past its data")
    value: int = _U32.unpack_from(data, at)[0]
    return value


def _slice(data: bytes, start: int, end: int, base: int, what: str) -> bytes:
    if start > end or end > len(data):
        raise ValueError(
            f"{what}: slice [{start}, {end}) outside {len(data)} bytes (offset {base + start})"
        )
    return data[start:end]


def check_grouped_bitmap(data: bytes, base: int) -> int:
    """A u32 bit length followed by whole u64 words; returns the bit length."""
    if len(data) < 4 or (len(data) - 4) % 8:
        raise ValueError(f"bitmap of {len(data)} bytes is not u32 + u64 words (offset {base})")
    bits = _u32(data, 0, base, "bitmap length")
    if bits > (len(data) - 4) // 8 * 64:
        raise ValueError(f"bitmap of {bits} bits in {len(data) - 4} bytes (offset {base})")
    return bits


def check_bitmap_tree(data: bytes, base: int) -> None:
    """A height, that many end offsets, then one grouped bitmap per level."""
    height = _u32(data, 0, base, "bitmap tree height")
    start = 4 + height * 4
    meta = 4
    for _ in range(height):
        end = _u32(data, meta, base, "bitmap tree end offset")
        check_grouped_bitmap(_slice(data, start, end, base, "bitmap tree level"), base + start)
        start = end
        meta += 4


def check_buddy_allocator(data: bytes, base: int) -> None:
    """The serialized buddy allocator of one region."""
    if len(data) < 8:
        raise ValueError(f"allocator state of {len(data)} bytes (offset {base})")
    orders = data[0] + 1
    start = 8 + orders * 2 * 4
    meta = 8
    allocated: list[int] = []
    for i in range(2 * orders):
        end = _u32(data, meta, base, "allocator end offset")
        part = _slice(data, start, end, base, "allocator bitmap")
        if i < orders:
            check_bitmap_tree(part, base + start)
        else:
            allocated.append(check_grouped_bitmap(part, base + start))
        start = end
        meta += 4
    # Order k tracks pages of 2^k: each order's bitmap is half the previous one.  A shifted
    # end offset makes a bitmap's length come from the wrong bytes, which the crate only
    # notices later, with a panic, when it touches a bit past that length.
    for order in range(1, len(allocated)):
        prev = allocated[order - 1]
        if allocated[order] not in (prev // 2, (prev + 1) // 2):
            raise ValueError(
                f"allocator order {order} tracks {allocated[order]} pages, order "
                f"{order - 1} tracks {prev} (offset {base})"
            )


def check_region_header(data: bytes, base: int) -> None:
    """A region's header pages: version, state length, buddy allocator state."""
    if not data or data[0] != REGION_FORMAT_VERSION:
        raise ValueError(f"region header version {data[:1].hex() or 'missing'} (offset {base})")
    length = _u32(data, 4, base, "allocator state length")
    check_buddy_allocator(_slice(data, 8, 8 + length, base, "allocator state"), base + 8)


def check_region_tracker(page: bytes, base: int) -> None:
    """The region tracker page: order count, per-order length, one bitmap tree per order."""
    orders = _u32(page, 0, base, "tracker order count")
    length = _u32(page, 4, base, "tracker bitmap length")
    start = 8
    for _ in range(orders):
        check_bitmap_tree(_slice(page, start, start + length, base, "tracker bitmap"), base + start)
        start += length
