"""Region geometry and page numbers: where a page of any order lives in the file.

Facts from redb ``src/tree_store/page_store/{layout.rs,base.rs}``:

* The file starts with the super-header, padded to one page.  Regions follow back to back;
  every region but the last is full.  A region is ``region header pages`` pages of header
  (unused since format 3, but the space is still there when the count is non-zero) and then
  its data pages.
* A page number is a u64: bits 0..20 page index inside the region (only the low
  ``20 - order`` bits are read, the rest is reserved and ignored), bits 20..40 region,
  bits 59..64 the page order.  A page of order ``k`` is ``page_size << k`` bytes, and its index
  counts in units of that size.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PAGE_ORDER = 20


def decode_page_number(raw: int) -> tuple[int, int, int]:
    """``(region, index, order)`` of a stored page number, masked as redb masks it."""
    order = raw >> 59
    index = raw & (0x000F_FFFF >> order) if order <= MAX_PAGE_ORDER else raw & 0x000F_FFFF
    region = (raw >> 20) & 0x000F_FFFF
    return region, index, order


def page_label(raw: int) -> str:
    """redb's own notation for a page number: ``r<region>.<index>/<order>``."""
    region, index, order = decode_page_number(raw)
    return f"r{region}.{index}/{order}"


@dataclass(frozen=True)
class Layout:
    """The region layout of a file (stored in the header, or recalculated from its length)."""

    page_size: int
    header_pages: int
    max_data_pages: int
    full_regions: int
    trailing_pages: int

    @property
    def full_region_len(self) -> int:
        return (self.header_pages + self.max_data_pages) * self.page_size

    @property
    def num_regions(self) -> int:
        return self.full_regions + (1 if self.trailing_pages else 0)

    @property
    def data_pages(self) -> int:
        """Order-0 data pages in the whole file (an upper bound on pages a walk may visit)."""
        return self.full_regions * self.max_data_pages + self.trailing_pages

    def region_data_pages(self, region: int) -> int:
        return self.trailing_pages if region == self.full_regions else self.max_data_pages

    def len(self) -> int:
        """File length this layout describes."""
        total = self.page_size + self.full_regions * self.full_region_len
        if self.trailing_pages:
            total += (self.header_pages + self.trailing_pages) * self.page_size
        return total

    def page_span(self, raw: int) -> tuple[int, int] | None:
        """``(start, end)`` file offsets of page ``raw``, or None if it is outside every region."""
        region, index, order = decode_page_number(raw)
        if order > MAX_PAGE_ORDER or region >= self.num_regions:
            return None
        size = self.page_size << order
        # The page must lie inside its region's data section.
        if (index + 1) * size > self.region_data_pages(region) * self.page_size:
            return None
        start = (
            self.page_size
            + region * self.full_region_len
            + self.header_pages * self.page_size
            + index * size
        )
        return start, start + size


def recalculate(file_len: int, page_size: int, header_pages: int, max_data_pages: int) -> Layout:
    """The layout redb derives from the file length when recovery is required.

    Raises ``ValueError`` when no layout has exactly this length (redb 4.2 refuses such files;
    redb only ever resizes a file to a length that maps onto a region layout).
    """
    full_len = (header_pages + max_data_pages) * page_size
    remaining = file_len - page_size
    if remaining < 0 or full_len <= 0:
        raise ValueError("file shorter than one page")
    full = remaining // full_len
    remaining -= full * full_len
    trailing = 0
    if remaining >= (header_pages + 1) * page_size:
        trailing = (remaining - header_pages * page_size) // page_size
        if trailing >= max_data_pages:
            raise ValueError("trailing region larger than a full region")
    layout = Layout(page_size, header_pages, max_data_pages, full, trailing)
    if layout.num_regions == 0 or layout.len() != file_len:
        raise ValueError("file length does not correspond to a region layout")
    return layout
