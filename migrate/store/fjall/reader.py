"""Opening a keyspace read-only: one consistent snapshot, read the way fjall recovers it.

What fjall does when it opens a keyspace (fjall 2.11.2 ``src/keyspace.rs``
``Keyspace::recover``, ``src/recovery.rs``; lsm-tree 2.10.4 ``src/tree/mod.rs``), and what
this reader does instead of changing anything:

* partitions: every directory under ``partitions/`` with a ``manifest`` and without
  ``.deleted``; each one's live segments are those its ``levels`` file lists (fjall deletes
  the others, this reader ignores them and ``check`` notes them);
* sealed journals, oldest first: their batches are replayed into memtables, but for each
  partition fjall drops what one sealed journal holds for it when the partition's segments
  already reach that journal's highest seqno for it (``recover_sealed_memtables``);
* the active journal (highest id): replayed whole;
* reads merge memtables and segments by seqno (:mod:`.merge`).

Live owner: another process (bbg) may own the keyspace while it is read -- holding
``bbg.lock``, which this reader never touches -- and flush or compact while the snapshot is
taken.  The snapshot is: every journal descriptor, the journals' contents, every
partition's ``levels`` and every listed segment's descriptor, all opened up front; then
the journal listing and every ``levels`` file are read again.  If anything changed in
between (a flush, a compaction, a journal rotation), everything is closed and taken again
(up to :data:`ATTEMPTS` times).  A snapshot that passes sees each file as it was when the
listing was confirmed: segments never change once written, a deleted one stays readable
through its open descriptor, and the journals were read no further than their data
reached.  The seqnos visible are thus bounded by what the snapshot's journals and segments
hold; a write that lands after it is not seen.

Reads: a key's version with the highest seqno wins, wherever it sits (journal or segment),
as in lsm-tree's merged iteration; its point read looks in memtables first and returns the
first hit, which is the same version in every keyspace fjall writes (a journal entry is
always newer than the segments of its partition -- ``check`` verifies that -- and this
package's writer keeps it so).  Every block checksum and every journal batch checksum is
verified whenever it is read.  A point read asks a segment's bloom filter first, as
lsm-tree's does (``Segment::get``): a key the filter lacks is not in the segment, and none
of its blocks is read.  The filter carries no checksum, so a damaged one can hide a key
from point reads (as it does from lsm-tree's); scans never consult it, and ``check``
verifies that every key of a segment is in its filter.

Memory: a scan holds one read-ahead chunk of each source (256 KiB of blocks, or the one
block that is larger) and what decoding it made, per source of the merge (the journals'
entries, one chain per disjoint level, one per segment of an overlapping L0); a
single-chain partition is filtered to live rows as it is decoded.  The journals' entries are
kept for the snapshot's life (keys and short values; see :mod:`.journal`); segments keep
only their trailer, metadata and top-level index, and the bloom filter of each segment a
point read asked, loaded once: about 10 bits a key in the last level (its bits-per-key
policy), 24 in segments written with a 1e-5 false-positive rate, at most
:data:`FILTER_BUDGET` bytes for the snapshot -- past it a segment is read without its filter.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from bbg_core.closing import Closing
from bbg_core.errors import FjallCorrupt, FjallError, FjallUnsupported, SourceError
from migrate.store.fjall import backend, bloom, journal, layout, levels, merge
from migrate.store.fjall._api import Twin
from migrate.store.fjall.block import TOMBSTONE, VALUE
from migrate.store.fjall.layout import Manifest, PartitionConfig, corrupt
from migrate.store.fjall.segment import Segment

ATTEMPTS = 20
#: Bytes of bloom filters a snapshot keeps for point reads (some 13 million keys at 10 bits
#: a key); a segment whose filter would go past it is read without one.  Issue 29's memory
#: line (150 MB) holds a run of a 10 GB source (122.9 MB into an existing store) plus this.
FILTER_BUDGET = 16 << 20
#: Journal entries per run handed to the merge (their long values are read per run).
JOURNAL_RUN = 512


class Entry(NamedTuple):
    """The newest version of a key: its value (b"" for a tombstone), seqno, tombstone."""

    key: bytes
    value: bytes
    seqno: int
    tombstone: bool


class _Changed(Exception):
    """The keyspace changed while the snapshot was taken: take it again."""


@dataclass
class PartitionView:
    name: str
    path: str
    config: PartitionConfig
    manifest: Manifest
    level_ids: list[list[int]]
    levels_raw: bytes
    #: per level, the segments in lsm-tree's in-memory order
    levels: list[list[Segment]] = field(default_factory=list)
    #: journal entries, merge-sorted: (key, value|None, seqno, type, order, offset, len, fd)
    journal: list[tuple[Any, ...]] = field(default_factory=list)
    segment_files: list[str] = field(default_factory=list)

    @property
    def persisted_seqno(self) -> int | None:
        seqnos = [s.meta.seqno_max for level in self.levels for s in level]
        return max(seqnos) if seqnos else None

    def segments(self) -> Iterator[tuple[int, Segment]]:
        for n, level in enumerate(self.levels):
            for seg in level:
                yield n, seg

    @cached_property
    def _by_level(self) -> list[tuple[list[bytes], list[Segment]] | list[Segment]]:
        """Per level that has segments: its segments sorted by first key with those keys,
        when their key ranges are disjoint (one segment of the level can hold a key); else
        the level as it is."""
        out: list[tuple[list[bytes], list[Segment]] | list[Segment]] = []
        for level in self.levels:
            summary = [levels.Summary(s.id, s.meta.key_min, s.meta.key_max, 0) for s in level]
            if len(level) == 1 or (level and levels.is_disjoint(summary)):
                chain = sorted(level, key=lambda s: s.meta.key_min)
                out.append(([s.meta.key_min for s in chain], chain))
            elif level:
                out.append(level)
        return out

    def holding(self, key: bytes) -> list[Segment]:
        """The segments whose key range holds ``key`` (all levels)."""
        out: list[Segment] = []
        for level in self._by_level:
            if isinstance(level, tuple):
                firsts, chain = level
                i = bisect_right(firsts, key) - 1
                if i >= 0 and key <= chain[i].meta.key_max:
                    out.append(chain[i])
            else:
                out.extend(s for s in level if s.meta.key_min <= key <= s.meta.key_max)
        return out


def _open_fd(path: str) -> int | None:
    """A read-only descriptor of the regular file ``path``; None if it vanished."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            corrupt(path, 0, "file", "a symbolic link where fjall keeps a file")
        raise FjallError(f"{path}: cannot be read: {exc.strerror}", path=path) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        corrupt(path, 0, "file", "not a regular file")
    return fd


def _read_small(path: str, limit: int = 1 << 20) -> bytes | None:
    """The whole of a small file (None if it vanished); longer than ``limit`` is damage."""
    fd = _open_fd(path)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            corrupt(path, limit, "file", f"{size} bytes, far more than fjall writes there")
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def _listdir(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        corrupt(path, 0, "directory", "not a directory")
    except OSError as exc:
        raise FjallError(f"{path}: cannot be listed: {exc.strerror}", path=path) from exc


class Keyspace(Closing):
    """A read-only snapshot of a Fjall keyspace (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], twin: Twin) -> None:
        self.path = os.fspath(path)
        self.twin = twin
        self.journals: list[journal.JournalInfo] = []
        self._journal_fds: list[int] = []
        self._journal_paths: dict[int, str] = {}
        self._parts: dict[str, PartitionView] = {}
        self.ignored: list[dict[str, str]] = []
        self.attempts = 0
        self._closed = False
        #: Per segment a point read asked: its bloom filter, or None (none, or over budget).
        self._filters: dict[Segment, bloom.Filter | None] = {}
        self._filter_bytes = 0

    # -- the snapshot ----------------------------------------------------------------------

    def _take(self) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            self.attempts = attempt
            try:
                self._snapshot()
                return
            except _Changed:
                self._release()
                time.sleep(min(0.002 * attempt, 0.05))
            except BaseException:
                self._release()
                raise
        raise FjallError(
            f"{self.path}: the keyspace kept changing while it was opened ({ATTEMPTS} "
            "attempts); its owner is flushing or compacting: try again",
            path=self.path,
        )

    def _journal_listing(self) -> list[tuple[int, str]]:
        folder = os.path.join(self.path, layout.JOURNALS)
        names = _listdir(folder)
        if names is None:
            corrupt(folder, 0, "journals folder", "missing")
        found = []
        for name in names:
            jid = journal.journal_id(name)
            if jid is None:
                continue
            if jid < 0:
                corrupt(os.path.join(folder, name), 0, "journal", "not a journal id")
            found.append((jid, name))
        return sorted(found)

    def _partition_listing(self) -> dict[str, bytes | None]:
        """Partition name -> its levels bytes, for every live partition (what is in the
        partitions folder and is no partition is noted in ``ignored``)."""
        folder = os.path.join(self.path, layout.PARTITIONS)
        names = _listdir(folder)
        if names is None:
            corrupt(folder, 0, "partitions folder", "missing")
        out: dict[str, bytes | None] = {}
        ignored = []
        for name in names:
            ppath = os.path.join(folder, name)
            if not os.path.isdir(ppath) or os.path.islink(ppath):
                ignored.append({"name": name, "reason": "not a directory (fjall skips it)"})
            elif os.path.lexists(os.path.join(ppath, layout.DELETED)):
                ignored.append({"name": name, "reason": "dropped (.deleted): fjall removes it"})
            elif not os.path.lexists(os.path.join(ppath, layout.MANIFEST)):
                ignored.append({"name": name, "reason": "unfinished (no manifest): fjall "
                                "removes it"})  # fmt: skip
            else:
                out[name] = _read_small(os.path.join(ppath, layout.LEVELS))
        self.ignored = ignored
        return out

    def _snapshot(self) -> None:
        # 1. journals: descriptors first (a flush may delete a sealed one from now on)
        listing = self._journal_listing()
        folder = os.path.join(self.path, layout.JOURNALS)
        opened: list[tuple[int, str, int]] = []
        for jid, name in listing:
            fd = _open_fd(os.path.join(folder, name))
            if fd is None:
                raise _Changed
            self._journal_fds.append(fd)
            self._journal_paths[fd] = os.path.join(folder, name)
            opened.append((jid, name, fd))
        # 2. partitions, their levels and segment descriptors
        pfolder = os.path.join(self.path, layout.PARTITIONS)
        listed = self._partition_listing()
        for name, raw in listed.items():
            self._parts[name] = self._partition(name, os.path.join(pfolder, name), raw)
        # 3. the journals' contents
        per_journal: list[tuple[journal.JournalInfo, list[tuple[Any, ...]]]] = []
        order = 0
        for n, (jid, name, fd) in enumerate(opened):
            role = "active" if n == len(opened) - 1 else "sealed"
            info = journal.JournalInfo(jid, name, role, 0)
            got: list[tuple[Any, ...]] = []

            def sink(seqno: int, items: list[Any], got: list[Any] = got, fd: int = fd) -> None:
                nonlocal order
                for pname, key, vtype, value, voff, vlen in items:
                    order += 1
                    got.append((pname, key, value, seqno, vtype, order, voff, vlen, fd))

            journal.scan(fd, info, os.path.join(folder, name), self.twin, sink)
            per_journal.append((info, got))
        # 4. confirm nothing moved
        if self._journal_listing() != listing or self._partition_listing() != listed:
            raise _Changed
        self.journals = [info for info, _ in per_journal]
        self._replay(per_journal)

    def _partition(self, name: str, ppath: str, raw_levels: bytes | None) -> PartitionView:
        if os.path.lexists(os.path.join(ppath, layout.BLOBS)):
            raise FjallUnsupported(
                f"{ppath}: partition {name!r} separates keys and values (blob files); this "
                "reader handles standard partitions only", path=ppath, partition=name)  # fmt: skip
        config_path = os.path.join(ppath, layout.CONFIG)
        raw_config = _read_small(config_path)
        raw_manifest = _read_small(os.path.join(ppath, layout.MANIFEST))
        if raw_config is None:
            corrupt(config_path, 0, "partition config", "missing")
        if raw_manifest is None:
            raise _Changed  # dropped meanwhile
        config = layout.decode_config(raw_config, config_path)
        manifest = layout.decode_manifest(raw_manifest, os.path.join(ppath, layout.MANIFEST))
        if config.tree_type == 1 or manifest.tree_type == 1 or config.kv_separation:
            raise FjallUnsupported(
                f"{ppath}: partition {name!r} separates keys and values (a blob tree); this "
                "reader handles standard partitions only", path=ppath, partition=name)  # fmt: skip
        levels_path = os.path.join(ppath, layout.LEVELS)
        if raw_levels is None:
            corrupt(levels_path, 0, "levels file", "missing")
        ids = levels.decode(raw_levels, levels_path)
        if len(ids) != manifest.level_count:
            corrupt(levels_path, 4, "levels file",
                    f"{len(ids)} levels where the manifest says {manifest.level_count}")
        view = PartitionView(name, ppath, config, manifest, ids, raw_levels)
        seg_folder = os.path.join(ppath, layout.SEGMENTS)
        view.segment_files = _listdir(seg_folder) or []
        for level_ids in ids:
            opened: list[Segment] = []
            view.levels.append(opened)
            for sid in level_ids:
                spath = os.path.join(seg_folder, str(sid))
                fd = _open_fd(spath)
                if fd is None:
                    if _read_small(levels_path) != raw_levels:
                        raise _Changed
                    corrupt(spath, 0, "segment", "listed in levels but missing")
                opened.append(Segment(fd, spath, sid, self.twin))
        for n, level in enumerate(view.levels):
            by_id = {s.id: s for s in level}
            summaries = levels.recovered([
                levels.Summary(s.id, s.meta.key_min, s.meta.key_max, s.meta.seqno_max)
                for s in level])  # fmt: skip
            view.levels[n] = [by_id[s.id] for s in summaries]
        return view

    def _replay(self, per_journal: list[tuple[journal.JournalInfo, list[Any]]]) -> None:
        """Distribute journal items to their partitions by fjall's recovery rules."""
        buckets: dict[str, list[tuple[Any, ...]]] = {name: [] for name in self._parts}
        for info, got in per_journal:
            skip: set[str] = set()
            if info.role == "sealed":
                for pname, lsn in info.lsn.items():
                    view = self._parts.get(pname)
                    persisted = None if view is None else view.persisted_seqno
                    if persisted is not None and persisted >= lsn:
                        skip.add(pname)
            for pname, key, value, seqno, vtype, order, voff, vlen, fd in got:
                bucket = buckets.get(pname)
                if bucket is not None and pname not in skip:
                    bucket.append((key, value, seqno, vtype, order, voff, vlen, fd))
        for name, bucket in buckets.items():
            bucket.sort(key=lambda e: (e[0], -e[2], -e[4]))
            self._parts[name].journal = bucket

    def _release(self) -> None:
        for view in self._parts.values():
            for _, seg in view.segments():
                seg.close()
        for fd in self._journal_fds:
            os.close(fd)
        self._journal_fds = []
        self._journal_paths = {}
        self._parts = {}
        self.journals = []
        self._filters, self._filter_bytes = {}, 0

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release()

    # -- reading ---------------------------------------------------------------------------

    def partitions(self) -> list[str]:
        """The partitions' names, sorted (bytewise)."""
        return sorted(self._parts, key=lambda n: n.encode("utf-8"))

    def active_journal_fd(self) -> int | None:
        """The descriptor of the active journal (None when there is no journal)."""
        return self._journal_fds[-1] if self._journal_fds else None

    def view(self, partition: str) -> PartitionView:
        try:
            return self._parts[partition]
        except KeyError:
            raise FjallError(f"{self.path}: no partition named {partition!r}",
                             path=self.path, partition=partition) from None  # fmt: skip

    def _journal_source(
        self, view: PartitionView, start: bytes | None
    ) -> Iterator[list[tuple[Any, ...]]]:
        entries = view.journal
        pos = 0 if start is None else bisect_left(entries, start, key=lambda e: e[0])
        while pos < len(entries):
            chunk = entries[pos : pos + JOURNAL_RUN]
            pos += len(chunk)
            yield [self._journal_entry(e) for e in chunk]

    def _journal_entry(self, entry: tuple[Any, ...]) -> tuple[bytes, bytes, int, int]:
        """A journal entry as a merge entry, its long value read again by offset."""
        key, value, seqno, vtype, _order, voff, vlen, fd = entry
        if value is None:
            value = b""
            if vtype == VALUE:
                value = os.pread(fd, vlen, voff)
                if len(value) != vlen:
                    path = self._journal_paths.get(fd, self.path)
                    corrupt(path, voff, "journal", "a value is no longer where it was read")
        return key, value, seqno, vtype

    def memtables(
        self, partition: str
    ) -> Iterator[tuple[journal.JournalInfo, Iterator[tuple[bytes, bytes, int, int]]]]:
        """The memtables fjall rebuilds for ``partition`` from its journals: per journal
        whose entries it replays (oldest first; a sealed journal the partition's segments
        already reach is skipped), that journal's items as ``(key, value, seqno, type)`` in
        key order, newest version first, one item per key and seqno (the later item of a
        batch: the memtable replaces an equal key).  Long values are read as the items are."""
        view = self.view(partition)
        groups: dict[int, list[tuple[Any, ...]]] = {}
        for entry in view.journal:
            groups.setdefault(entry[7], []).append(entry)
        for n, fd in enumerate(self._journal_fds):
            entries = groups.get(fd)
            if entries:
                yield self.journals[n], self._memtable_items(entries)

    def _memtable_items(
        self, entries: list[tuple[Any, ...]]
    ) -> Iterator[tuple[bytes, bytes, int, int]]:
        last: tuple[bytes, int] | None = None
        for entry in entries:  # sorted by key, newest seqno first, later item first
            if last is not None and last == (entry[0], entry[2]):
                continue
            last = (entry[0], entry[2])
            yield self._journal_entry(entry)

    def _sources(
        self, view: PartitionView, start: bytes | None, min_seqno: int = 0
    ) -> list[merge.Source]:
        """Journal first, then each level: a disjoint level as one chain in key order,
        any other segment by segment in lsm-tree's order (newest first).  ``min_seqno``:
        leave out the segments whose highest seqno is below it (see :meth:`entries`)."""
        sources: list[merge.Source] = []
        if view.journal:
            sources.append(self._journal_source(view, start))
        for full in view.levels:
            level = [s for s in full if s.meta.seqno_max >= min_seqno]
            summary = [levels.Summary(s.id, s.meta.key_min, s.meta.key_max, 0) for s in level]
            if len(level) > 1 and not levels.is_disjoint(summary):
                sources.extend(self._segment_source([s], start) for s in level)
            elif level:
                sources.append(self._segment_source(sorted(level, key=lambda s: s.meta.key_min),
                                                    start))  # fmt: skip
        return sources

    @staticmethod
    def _segment_source(chain: list[Segment], start: bytes | None) -> merge.Source:
        for seg in chain:
            if start is not None and seg.meta.key_max < start:
                continue
            for run, _ in seg.runs(0 if start is None else seg.seek(start), 0):
                yield run

    @staticmethod
    def _live_chain(chain: list[Segment], start: bytes | None) -> merge.Source:
        """The live rows of one chain of segments that is a partition's only source."""
        last: bytes | None = None
        for seg in chain:
            if start is not None and seg.meta.key_max < start:
                continue
            for run, seen in seg.runs(0 if start is None else seg.seek(start), 1, last):
                last = seen
                yield run

    def _only_chain(self, view: PartitionView) -> list[Segment] | None:
        """The segments of a partition whose only source is one disjoint chain, in order."""
        if view.journal:
            return None
        filled = [level for level in view.levels if level]
        if len(filled) != 1:
            return None
        level = filled[0]
        summary = [levels.Summary(s.id, s.meta.key_min, s.meta.key_max, 0) for s in level]
        if len(level) > 1 and not levels.is_disjoint(summary):
            return None
        return sorted(level, key=lambda s: s.meta.key_min)

    def _runs(
        self, partition: str, prefix: bytes, after: bytes | None, min_seqno: int = 0,
        low: bytes = b"",
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Entries of keys starting with ``prefix``, at least ``low`` (``prefix`` when
        empty) and above ``after``."""
        view = self.view(partition)
        low = low or prefix
        start = self._start(low, after)
        stop = merge.prefix_end(prefix) if prefix else None
        runs = merge.merged(self._sources(view, start, min_seqno))
        return merge.clip(runs, low or None, after, stop)

    def scan_runs(
        self, partition: str, *, prefix: bytes = b"", after: bytes | None = None,
        start: bytes = b"",
    ) -> Iterator[list[tuple[bytes, bytes]]]:
        """The live rows of ``partition`` in key order, in runs (lists)."""
        low = max(prefix, start)  # the inclusive lower bound: the prefix, or start past it
        chain = self._only_chain(self.view(partition))
        if chain is None:
            runs = self._runs(partition, prefix, after, low=low)
            return merge.live_rows(runs, self.twin.live)
        stop = merge.prefix_end(prefix) if prefix else None
        seek = self._start(low, after)
        return merge.clip(self._live_chain(chain, seek), low or None, after, stop)

    @staticmethod
    def _start(prefix: bytes, after: bytes | None) -> bytes | None:
        start = prefix or None
        if after is not None and (start is None or after >= start):
            start = after
        return start

    def scan(
        self, partition: str, *, prefix: bytes = b"", after: bytes | None = None,
        start: bytes = b"",
    ) -> Iterator[tuple[bytes, bytes]]:
        """The live ``(key, value)`` rows of ``partition`` in key order: keys starting with
        ``prefix``, at least ``start`` and, when ``after`` is given, strictly greater than
        it."""
        for run in self.scan_runs(partition, prefix=prefix, after=after, start=start):
            yield from run

    def entries(
        self, partition: str, *, prefix: bytes = b"", after: bytes | None = None,
        min_seqno: int = 0,
    ) -> Iterator[Entry]:
        """The newest version of every key (tombstones included) in key order; with
        ``min_seqno``, only the keys whose newest version has a seqno at least that.

        The segments whose highest seqno is below ``min_seqno`` are not read: a key whose
        newest version reaches ``min_seqno`` has it in a source that is read (that version's
        seqno is at most its source's highest), and every version read of a key whose newest
        version is below ``min_seqno`` is below it too -- so the answer is exact."""
        for run in merge.newest(self._runs(partition, prefix, after, min_seqno)):
            for key, value, seqno, vtype, *_ in run:
                if seqno >= min_seqno:
                    yield Entry(key, value, seqno, vtype >= TOMBSTONE)

    def get(self, partition: str, key: bytes) -> bytes | None:
        """The live value of ``key`` in ``partition``, or None."""
        best: tuple[int, bytes, int] | None = None  # (seqno, value, type)
        view, filters = self.view(partition), self._filters
        entries = view.journal
        pos = bisect_left(entries, key, key=lambda e: e[0])
        if pos < len(entries) and entries[pos][0] == key:
            _k, value, seqno, vtype = self._journal_entry(entries[pos])
            best = (seqno, value, vtype)
        for seg in view.holding(key):
            filt = filters[seg] if seg in filters else self._load_filter(seg)
            if filt is not None and not filt.contains(key):  # not in this segment
                continue
            at = seg.seek(key)
            if at >= seg.offsets.index:
                continue
            # The first block that may hold the key holds its newest version.
            items = seg.block_items(at)
            i = bisect_left(items, key, key=lambda e: e[0])
            if i < len(items):
                k, value, seqno, vtype = items[i]
                if k == key and (best is None or seqno > best[0]):
                    best = (seqno, value, vtype)
        if best is None or best[2] != VALUE:
            return None
        return best[1]

    def rows_between(self, partition: str, low: bytes, high: bytes) -> int:
        """About how many items a scan of ``partition`` from ``low`` to ``high`` decodes,
        from the journal and the block indexes alone (no data block is read): the journal's
        entries in that range and, per segment, its data blocks from the one that may hold
        ``low`` up to (not counting) the one that may hold ``high``, at the segment's mean
        items per byte of data."""
        view = self.view(partition)
        entries = view.journal
        total = (bisect_right(entries, high, key=lambda e: e[0])
                 - bisect_left(entries, low, key=lambda e: e[0]))  # fmt: skip
        for _, seg in view.segments():
            if seg.meta.key_max < low or high < seg.meta.key_min:
                continue
            span = seg.seek(high) - seg.seek(low)
            total += span * seg.meta.item_count // seg.offsets.index
        return total

    def _load_filter(self, seg: Segment) -> bloom.Filter | None:
        """The bloom filter of ``seg``, read once (None: it has none, or the snapshot's
        filters would pass :data:`FILTER_BUDGET`)."""
        size, filt = seg.filter_size, None
        if size and self._filter_bytes + size <= FILTER_BUDGET:
            filt = seg.bloom_filter()
            self._filter_bytes += size
        self._filters[seg] = filt
        return filt


def open_keyspace(path: str | os.PathLike[str], *, backend_name: str | None = None) -> Keyspace:
    """Open the Fjall keyspace at ``path`` read-only (a context manager; see the module)."""
    root = Path(path)
    try:
        st = os.stat(root)
    except OSError as exc:
        raise SourceError(f"{root}: cannot read: {exc.strerror}", path=str(root)) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise SourceError(f"{root}: not a directory (a Fjall keyspace is one)", path=str(root))
    vpath = str(root / layout.VERSION_FILE)
    raw = _read_small(vpath, limit=64)
    if raw is None:
        raise FjallError(f"{root}: not a Fjall keyspace (no version file)", path=str(root))
    layout.check_version(raw, vpath)
    ks = Keyspace(root, backend.resolve(backend_name))
    ks._take()
    return ks


__all__ = ["Entry", "FjallCorrupt", "Keyspace", "PartitionView", "open_keyspace"]

