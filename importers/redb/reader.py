"""Open a redb file read-only and pick the commit the real crate would read.

Commit selection follows the crate (``TransactionalMemory::new`` and ``Database::new`` /
``do_repair`` at v1.5.2, v2.6.3, v3.1.3 and v4.2.0), without ever writing:

* A file needs recovery when the god byte says so, or when its length differs from the
  stored layout (the layout is then recalculated from the length).  A file shorter than its
  stored layout is corrupt (the crate panics or refuses).
* On recovery (and on every open of a format-3 file, as redb 4.2 does) the crate picks a
  slot: with two-phase commit (formats 2 and 3) the primary, which must have a valid slot
  checksum; otherwise the primary unless its checksum is bad (then the secondary, which must
  be valid) or the secondary is valid and newer.
* Without two-phase commit the crate then verifies every checksum of the picked commit's
  trees (always in format 3, on recovery in formats 1 and 2) and, if that fails, falls back
  to the other slot, which must verify in turn.
* A clean file of format 1 or 2 is read from its primary slot.  The crate does not check that
  slot's checksum there; we do, and refuse a bad one (being stricter than the crate is
  allowed).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from itertools import chain
from pathlib import Path

from bbg_core.closing import Closing
from bbg_core.errors import RedbCorrupt, RedbUnsupported, SourceError
from bbg_core.files import cannot_read
from importers.redb import allocator_state
from importers.redb import backend as backends
from importers.redb._api import Absent, Backend, Getter
from importers.redb.btree import MEMORY_BUDGET, PageReader, Pair
from importers.redb.header import (
    DB_HEADER_SIZE,
    MAX_PAGE_INDEX,
    MAX_PAGE_SIZE,
    MAX_REGIONS,
    MIN_PAGE_SIZE,
    SUPPORTED_FORMATS,
    BtreeRoot,
    CommitSlot,
    Header,
    RawHeader,
    parse_raw_header,
)
from importers.redb.layout import Layout, page_label, recalculate
from importers.redb.tables import (
    DefinitionError,
    TableInfo,
    orders_bytewise,
    parse_definition,
)

TABLE_TREE = "<table tree>"
SYSTEM_TREE = "<system tree>"
FREED_TREE = "<freed tree>"
FREED_KEY_WIDTH = 16  # (transaction id u64, pagination id u64)
PAGE_LIST = "redb::PageList"  # value type of the system tables listing freed pages
TRACKER_ORDERS = 21  # redb 1.x/2.x region tracker: one bitmap per page order 0..=20


class RedbFile(Closing):
    """An open redb file.  Use :func:`open_redb`; close it (or use ``with``) when done.

    ``backend`` is the name of the implementation reading it ("c" or "python").
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        backend: str | None = None,
        memory_budget: int = MEMORY_BUDGET,
    ) -> None:
        self._impl: Backend = backends.resolve(backend)
        self.backend = self._impl.NAME
        self._reader: PageReader | None = None
        self.path = Path(path)
        self._label = str(self.path)
        self._tables: list[TableInfo] | None = None
        # Point lookups of each table, its descent's arguments bound once (see ``get``).
        self._lookups: dict[str, tuple[Getter, Absent]] = {}
        self._mm: mmap.mmap | None = None
        self._budget = memory_budget
        try:
            fh = open(self.path, "rb")  # closed in close()
        except OSError as exc:
            raise cannot_read(self._label, exc) from exc
        self._fh = fh
        try:
            size = os.fstat(fh.fileno()).st_size
            if size < DB_HEADER_SIZE:
                raise RedbCorrupt(
                    f"{self._label}: corrupt redb file: {size} bytes is shorter than the "
                    f"{DB_HEADER_SIZE}-byte super-header (offset {size})",
                    path=self._label,
                    offset=size,
                )
            try:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise SourceError(f"{self._label}: cannot map: {exc}", path=self._label) from exc
            self._mm = mm
            self.file_size = size
            self.header, self._slot, self._reader = self._open(mm)
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._reader is not None:
            self._reader.closed = True
            self._impl.close(self._reader)
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self._fh.close()

    # -- header and commit selection ---------------------------------------------------------

    def _corrupt(self, what: str, **context: object) -> RedbCorrupt:
        where = ", ".join(f"{k} {v}" for k, v in context.items())
        suffix = f" ({where})" if where else ""
        return RedbCorrupt(
            f"{self._label}: corrupt redb file: {what}{suffix}", path=self._label, **context
        )

    def _check_geometry(self, raw: RawHeader) -> None:
        ps = raw.page_size
        if not raw.magic_ok:
            raise self._corrupt("not a redb file (bad magic number)", offset=0)
        if ps & (ps - 1) or not MIN_PAGE_SIZE <= ps <= MAX_PAGE_SIZE:
            raise self._corrupt(f"invalid page size {ps}", offset=12)
        if not 0 < raw.region_max_data_pages <= MAX_PAGE_INDEX + 1:
            raise self._corrupt(
                f"invalid region data page count {raw.region_max_data_pages}", offset=20
            )
        if raw.region_header_pages > MAX_PAGE_INDEX + 1:
            raise self._corrupt(
                f"invalid region header page count {raw.region_header_pages}", offset=16
            )
        versions = tuple(s.version for s in raw.slots)
        for slot in raw.slots:
            if slot.version > max(SUPPORTED_FORMATS):
                raise RedbUnsupported(
                    f"{self._label}: redb file format {slot.version} (commit slot "
                    f"{slot.index}) is newer than this reader supports (1, 2, 3)",
                    path=self._label,
                    offset=64 + 128 * slot.index,
                )
            if slot.version not in SUPPORTED_FORMATS:
                raise self._corrupt(
                    f"commit slot {slot.index} has file format version {slot.version}",
                    offset=64 + 128 * slot.index,
                )
        if versions[0] != versions[1]:
            # redb 1.5.2, 3.x and 4.x refuse such a file (2.6.3 alone would take 2 and 3).
            raise self._corrupt(
                f"commit slots disagree on the file format version {versions}", offset=64
            )

    def _layout(self, raw: RawHeader) -> tuple[Layout, bool]:
        """The layout to read with, and whether the file needs recovery."""
        stored = Layout(
            raw.page_size,
            raw.region_header_pages,
            raw.region_max_data_pages,
            raw.full_regions,
            raw.trailing_region_pages,
        )
        # Every crate before 4.2 asserts this even when recovery is required (4.2 recomputes
        # the counts from the length then); we keep the stricter rule for all formats.
        if self.file_size < stored.len():
            raise self._corrupt(
                f"file truncated: {self.file_size} bytes, its layout needs {stored.len()}",
                offset=self.file_size,
            )
        if not raw.recovery_required:
            if raw.trailing_region_pages > raw.region_max_data_pages:
                raise self._corrupt("trailing region larger than a full region", offset=28)
            if not 0 < stored.num_regions <= MAX_REGIONS:
                raise self._corrupt(f"invalid region count {stored.num_regions}", offset=24)
            if self.file_size == stored.len():
                return stored, False
            if raw.slots[raw.primary_slot].version < 3:
                # redb 1.x/2.x then recalculate the layout but never run the repair, and fail
                # on the first transaction (an assertion); only format 3 readers recover.
                raise self._corrupt(
                    f"file length {self.file_size} does not match its stored layout "
                    f"({stored.len()} bytes) and recovery is not flagged",
                    offset=24,
                )
        try:
            layout = recalculate(
                self.file_size, raw.page_size, raw.region_header_pages, raw.region_max_data_pages
            )
        except ValueError as exc:
            raise self._corrupt(
                f"{exc} (file length {self.file_size})", offset=self.file_size
            ) from exc
        if layout.num_regions > MAX_REGIONS:
            raise self._corrupt(f"file length needs {layout.num_regions} regions", offset=24)
        return layout, True

    def _open(self, mm: mmap.mmap) -> tuple[Header, CommitSlot, PageReader]:
        raw = parse_raw_header(mm[:DB_HEADER_SIZE])
        self._check_geometry(raw)
        layout, needs_recovery = self._layout(raw)
        st = os.fstat(self._fh.fileno())
        on_disk = getattr(st, "st_blocks", None)
        reader = PageReader(
            mm,
            self._fh.fileno(),
            self.file_size,
            layout,
            self._label,
            on_disk=None if on_disk is None else on_disk * 512,
            budget=self._budget,
        )
        self._reader = reader  # so that close() releases what the backend holds on it
        primary = raw.slots[raw.primary_slot]
        if primary.version < 3:
            self._check_region_tracker(raw, layout, mm, needs_recovery)
        # Format 1 predates the two-phase-commit bit: redb 1.5.2 ignores it.
        two_phase = raw.two_phase_commit and primary.version >= 2
        chosen = self._pick_slot(raw, needs_recovery, two_phase)
        fallback_reason = None
        if not two_phase and (needs_recovery or chosen.version >= 3):
            chosen, fallback_reason = self._verified_commit(
                reader, chosen, raw.slots[chosen.index ^ 1]
            )
        else:
            # The crate reads its system tables (allocator state, savepoints) on open without
            # verifying them, and may panic on damaged ones; verifying them here costs little.
            self._verify_system(reader, chosen)
        header = Header(
            magic_ok=raw.magic_ok,
            god_byte=raw.god_byte,
            primary_slot=raw.primary_slot,
            recovery_required=raw.recovery_required,
            two_phase_commit=raw.two_phase_commit,
            page_size=raw.page_size,
            format_version=chosen.version,
            slot_versions=(raw.slots[0].version, raw.slots[1].version),
            slot_checksums_ok=(raw.slots[0].checksum_ok, raw.slots[1].checksum_ok),
            selected_slot=chosen.index,
            transaction_id=chosen.transaction_id,
            file_size=self.file_size,
            region_header_pages=raw.region_header_pages,
            region_max_data_pages=raw.region_max_data_pages,
            full_regions=layout.full_regions,
            trailing_region_pages=layout.trailing_pages,
            layout_len=layout.len(),
            num_regions=layout.num_regions,
            layout_recalculated=needs_recovery,
            fallback_reason=fallback_reason,
        )
        return header, chosen, reader

    def _check_region_tracker(
        self, raw: RawHeader, layout: Layout, mm: mmap.mmap, needs_recovery: bool
    ) -> None:
        """redb 1.x/2.x use the region headers and the region tracker page on open (loading or
        rebuilding the allocator state) and fail on bad ones; we do not need them, but check
        the parts that decide where pages are."""
        span = layout.page_span(raw.region_tracker)
        label = page_label(raw.region_tracker)
        if span is None or span[1] > self.file_size:
            raise self._corrupt(f"region tracker page {label} is outside the file", offset=32)
        reader = self._open_reader()
        reader.check_span(span[0], span[1], table="<region tracker>", page=raw.region_tracker)
        # Region 0's header (written when the file is created) holds the allocator state
        # whose size fixes the header page count: u8 version 1, 3 pad, u32 length, state.
        region0 = raw.page_size
        version, _, state_len = struct.unpack_from("<B3sI", mm, region0)
        if version != 1 or raw.region_header_pages != -(-(8 + state_len) // raw.page_size):
            raise self._corrupt(
                f"region header pages {raw.region_header_pages} do not match region 0's header "
                f"(version {version}, allocator state {state_len} bytes)",
                offset=16,
            )
        orders, length = struct.unpack_from("<II", mm, span[0])
        if not needs_recovery and (
            orders != TRACKER_ORDERS or not 0 < 8 + orders * length <= span[1] - span[0]
        ):
            raise self._corrupt(
                f"region tracker page {label} is malformed ({orders} orders of {length} bytes)",
                offset=span[0],
            )
        if needs_recovery:
            return  # the crate rebuilds the allocators instead of loading them
        # On a normal open the crate parses the tracker and every region's allocator state.
        try:
            allocator_state.check_region_tracker(mm[span[0] : span[1]], span[0])
            header_len = raw.region_header_pages * raw.page_size
            for region in range(layout.num_regions):
                base = raw.page_size + region * layout.full_region_len
                reader.check_span(base, base + header_len, table=f"<region {region} header>")
                allocator_state.check_region_header(mm[base : base + header_len], base)
        except ValueError as exc:
            raise self._corrupt(f"malformed allocator state: {exc}", offset=span[0]) from exc

    def _pick_slot(self, raw: RawHeader, needs_recovery: bool, two_phase: bool) -> CommitSlot:
        """The commit slot the crate starts from (before any tree verification)."""
        primary = raw.slots[raw.primary_slot]
        secondary = raw.slots[raw.primary_slot ^ 1]
        slot_at = 64 + 128 * primary.index
        # redb 4.2 (the newest reader of format 3) picks the slot this way on every open;
        # redb 1.x/2.x (the only readers of formats 1 and 2) only when recovering.
        if not (needs_recovery or primary.version >= 3):
            if not primary.checksum_ok:
                raise self._corrupt(
                    f"primary commit slot {primary.index} fails its checksum", offset=slot_at
                )
            return primary
        if two_phase:
            if not primary.checksum_ok:
                raise self._corrupt(
                    f"primary commit slot {primary.index} fails its checksum despite "
                    "two-phase commit",
                    offset=slot_at,
                )
            return primary
        if not primary.checksum_ok:
            if not secondary.checksum_ok:
                raise self._corrupt("both commit slots are corrupted", offset=64)
            return secondary
        if secondary.checksum_ok and secondary.transaction_id > primary.transaction_id:
            return secondary
        return primary

    def _verified_commit(
        self, reader: PageReader, chosen: CommitSlot, other: CommitSlot
    ) -> tuple[CommitSlot, str | None]:
        """The crate's repair check: use ``chosen`` if all its trees verify, else ``other``.

        Returns the commit to read and, when it is ``other``, why ``chosen`` was rejected.
        """
        try:
            self._verify_all(reader, chosen)
            return chosen, None
        except RedbCorrupt as first:
            reason = _what(first)
            where = {k: v for k, v in first.context.items() if k != "path"}
            if not other.checksum_ok:
                raise self._corrupt(
                    f"{reason}; the other commit slot fails its checksum", **where
                ) from first
            try:
                self._verify_all(reader, other)
            except RedbCorrupt as second:
                raise self._corrupt(
                    f"both commits are damaged: {reason}; {_what(second)}",
                    **{k: v for k, v in second.context.items() if k != "path"},
                ) from second
            return other, f"commit slot {chosen.index} is damaged: {reason}"

    def _verify_all(self, reader: PageReader, slot: CommitSlot) -> None:
        """Walk every page of the commit's user, system and freed trees (checksums included)."""
        for info in self._definitions(reader, slot, slot.user_root, TABLE_TREE):
            for _ in self._iter(reader, slot, info):
                pass
        self._verify_system(reader, slot)

    def _verify_system(self, reader: PageReader, slot: CommitSlot) -> None:
        """Walk every page of the commit's system tree and (formats 1, 2) freed tree.

        The page lists of freed/unreachable pages must name pages inside the file: the crate
        reads them on open and refuses (or panics on) ones that do not.
        """
        for info in self._definitions(reader, slot, slot.system_root, SYSTEM_TREE):
            lists = info.value_type == PAGE_LIST
            for _, value in self._iter(reader, slot, info):
                if lists:
                    self._check_page_list(reader, value, info.name)
        if slot.freed_root is not None:
            batches = self._impl.tree_batches(
                reader,
                slot.freed_root.page,
                slot.freed_root.checksum,
                FREED_KEY_WIDTH,
                None,
                FREED_TREE,
            )
            for batch in batches:
                for _, value in batch:
                    self._check_page_list(reader, value, FREED_TREE)

    @staticmethod
    def _check_page_list(reader: PageReader, value: bytes, table: str) -> None:
        """A page list: u16 count, then that many u64 page numbers (the buffer may be longer)."""
        if len(value) < 2:
            raise reader.corrupt("page list shorter than its length field", table=table)
        (count,) = struct.unpack_from("<H", value)
        if 2 + 8 * count > len(value):
            raise reader.corrupt(f"page list of {count} pages overruns its value", table=table)
        for raw in struct.unpack_from(f"<{count}Q", value, 2):
            if reader.layout.page_span(raw) is None:
                raise reader.corrupt(
                    "freed page list names a page outside the file", table=table, page=raw
                )

    # -- tables ------------------------------------------------------------------------------

    def _definitions(
        self, reader: PageReader, slot: CommitSlot, root: BtreeRoot | None, tree_name: str
    ) -> Iterator[TableInfo]:
        """The table definitions stored in the table tree (or system tree) at ``root``."""
        if root is None:
            return
        count = 0
        prev: bytes | None = None
        pairs = (
            pair
            for batch in self._impl.tree_batches(
                reader, root.page, root.checksum, None, None, tree_name
            )
            for pair in batch
        )
        for key, value in pairs:
            count += 1
            if prev is not None and key <= prev:
                raise reader.corrupt("table names out of order", table=tree_name)
            prev = key
            try:
                name = key.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise reader.corrupt(f"table name {key!r} is not UTF-8", table=tree_name) from exc
            try:
                yield parse_definition(name, value, slot.version)
            except DefinitionError as exc:
                raise reader.corrupt(
                    f"definition of table {name!r}: {exc}", table=tree_name
                ) from exc
        if root.length is not None and count != root.length:
            raise reader.corrupt(
                f"table tree holds {count} tables, its header says {root.length}",
                table=tree_name,
            )

    def _iter(
        self, reader: PageReader, slot: CommitSlot, info: TableInfo
    ) -> Iterator[tuple[bytes, bytes]]:
        """A table's pairs (see :meth:`_batches`), flattened by ``itertools.chain``: no
        generator frame to resume per pair."""
        return chain.from_iterable(self._batches(reader, slot, info))

    def _batches(
        self, reader: PageReader, slot: CommitSlot, info: TableInfo
    ) -> Iterator[list[Pair]]:
        """A table's pairs in batches, checking at the end that their number matches the
        stored length."""
        count = 0
        if info.kind == "multimap":
            batches = self._impl.multimap_batches(reader, info, slot.version)
            expected = info.stored_length
        elif info.root_page is None or info.root_checksum is None:
            batches = iter(())
            expected = info.root_length
        else:
            batches = self._impl.tree_batches(
                reader,
                info.root_page,
                info.root_checksum,
                info.key_width,
                info.value_width,
                info.name,
            )
            expected = info.root_length
        for batch in batches:
            count += len(batch)
            yield batch
        if expected is not None and count != expected:
            raise reader.corrupt(
                f"table holds {count} entries, its stored length says {expected}",
                table=info.name,
                page=info.root_page,
            )

    def tables(self) -> list[TableInfo]:
        """Every table (normal and multimap), sorted by name in UTF-8 byte order."""
        if self._tables is None:
            found = list(
                self._definitions(self._open_reader(), self._slot, self._slot.user_root, TABLE_TREE)
            )
            if self._slot.version == 1:
                # Format 1 stores no lengths: redb 1.x's len() counts.
                found = [
                    _with_length(t, sum(1 for _ in self._iter(self._open_reader(), self._slot, t)))
                    for t in found
                ]
            found.sort(key=lambda t: t.name.encode("utf-8"))
            self._tables = found
        return list(self._tables)

    def table(self, name: str) -> TableInfo:
        """The table called ``name`` (``KeyError`` if there is none)."""
        for info in self.tables():
            if info.name == name:
                return info
        raise KeyError(name)

    def iter_table(self, name: str, *, after: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) of table ``name`` in stored order (multimap: one per pair).

        With ``after``, only the pairs whose key sorts after it, found by descending the tree
        (a resumable cursor); allowed for normal tables whose key type redb orders bytewise
        (``&[u8]``, ``[u8;N]``, ``&str``, ``String``), else ``ValueError``.
        """
        info = self.table(name)
        if after is None:
            return self._iter(self._open_reader(), self._slot, info)
        info = self._bytewise(info, "seeking")
        return self._after(info, bytes(after))

    def _after(self, info: TableInfo, after: bytes) -> Iterator[Pair]:
        if info.root_page is None or info.root_checksum is None:
            return
        for batch in self._impl.tree_batches(
            self._open_reader(),
            info.root_page,
            info.root_checksum,
            info.key_width,
            info.value_width,
            info.name,
            after,
        ):
            yield from batch

    def iter_batches(self, name: str) -> Iterator[list[Pair]]:
        """Every (key, value) of table ``name``, as :meth:`iter_table` yields them, in lists
        (one C call or one leaf each): the fastest way to consume a whole table."""
        return self._batches(self._open_reader(), self._slot, self.table(name))

    def get(self, name: str, key: bytes) -> bytes | None:
        """The value stored under ``key`` in table ``name``, or None, descending the tree and
        verifying the pages on the way (normal tables with bytewise-ordered keys, else
        ``ValueError``; ``KeyError`` if there is no such table)."""
        return self._lookups_of(name)[0](key if type(key) is bytes else bytes(key))

    def absent(self, name: str, keys: Sequence[bytes]) -> list[int]:
        """The positions of ``keys`` (in order) that :meth:`get` answers None for: the same
        verified lookups, on the C path one call for the whole list."""
        return self._lookups_of(name)[1](keys)

    def _lookups_of(self, name: str) -> tuple[Getter, Absent]:
        """``get`` and ``absent`` of table ``name`` with their arguments bound (the table
        list, the key type and the root are the open commit's: they do not change while it
        is open).  Every lookup descends from the verified root; on the C path the branch
        pages already verified are taken from a bounded cache (``_c.tree_lookups``), the
        leaf is always read and verified."""
        lookups = self._lookups.get(name)
        if lookups is None:
            lookups = self._lookups[name] = self._new_lookups(name)
        return lookups

    def absent_elsewhere(self) -> Callable[[str, Sequence[bytes]], list[int]] | None:
        """Another :meth:`absent`: the same verified lookups through handles of its own (a C
        iterator and branch-page cache per table), for another thread to make while this
        file's own are made; None on the pure-Python path (its page reads take no turns).
        Like :meth:`absent`, it must not be used once the file is closed."""
        if getattr(self._impl, "tree_lookups", None) is None:
            return None
        handles: dict[str, Absent] = {}

        def absent(name: str, keys: Sequence[bytes]) -> list[int]:
            own = handles.get(name)
            if own is None:
                own = handles[name] = self._new_lookups(name)[1]
            return own(keys)

        return absent

    def _new_lookups(self, name: str) -> tuple[Getter, Absent]:
        info = self._bytewise(self.table(name), "a point lookup")
        lookups: tuple[Getter, Absent]
        if info.root_page is None or info.root_checksum is None:
            lookups = (lambda key: None), (lambda keys: list(range(len(keys))))
        else:
            args = (self._open_reader(), info.root_page, info.root_checksum, info.key_width,
                    info.value_width, info.name)  # fmt: skip
            bound = getattr(self._impl, "tree_lookups", None)  # the C backend's: one iterator
            if bound is not None:
                lookups = bound(*args)
            else:
                get: Getter = partial(self._impl.tree_get, *args)
                lookups = get, partial(_absent, get)
        return lookups

    def verify_system(self) -> None:
        """Walk and verify every page of the commit's system tree (and, in formats 1 and 2, its
        freed tree), checking the page lists they hold; ``RedbCorrupt`` on damage.  Together with a
        full iteration of every table this reads every page the commit references."""
        self._verify_system(self._open_reader(), self._slot)

    @property
    def pages_read(self) -> int:
        """How many pages this file's walks have read so far (both backends count them)."""
        return self._open_reader().pages_read

    def _open_reader(self) -> PageReader:
        assert self._reader is not None
        return self._reader

    @staticmethod
    def _bytewise(info: TableInfo, what: str) -> TableInfo:
        if info.kind != "table" or info.key_type_class == 2 or not orders_bytewise(info.key_type):
            raise ValueError(
                f"table {info.name!r}: {what} needs a normal table with bytewise-ordered keys "
                f"(it is a {info.kind} keyed by {info.key_type})"
            )
        return info


def _absent(get: Getter, keys: Sequence[bytes]) -> list[int]:
    """The positions of ``keys`` that ``get`` answers None for (the Python path's ``absent``)."""
    return [i for i, key in enumerate(keys) if get(bytes(key)) is None]


def _what(exc: RedbCorrupt) -> str:
    """The problem part of a corruption message (without the file name prefix)."""
    return exc.message.split(": corrupt redb file: ", 1)[-1]


def _with_length(info: TableInfo, length: int) -> TableInfo:
    return replace(info, length=length)


def open_redb(
    path: str | os.PathLike[str],
    *,
    backend: str | None = None,
    memory_budget: int = MEMORY_BUDGET,
) -> RedbFile:
    """Open a redb file read-only (``RedbCorrupt`` / ``RedbUnsupported`` / ``SourceError``).

    ``backend`` ("c" or "python") overrides the default implementation for this file.
    ``memory_budget``: the most page memory this open may hold; a page beyond it, or one that
    lies in a hole of a sparse file bigger than all the file holds on disk, is RedbCorrupt
    naming the page (memory is bounded by the input, not by a number inside it).
    """
    return RedbFile(path, backend=backend, memory_budget=memory_budget)
