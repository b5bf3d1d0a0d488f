"""A writer session on a Fjall keyspace (:func:`open_writer`), and our own flush.

**The session** (:class:`KeyspaceWriter`) is what a write handle of the store engine holds
for its whole life, as bbg holds its keyspace: this toolkit's lock on the keyspace
directory and ``bbg.lock`` (both exclusive ``flock``, taken once, without waiting;
:class:`Locked` names the holding process), the keyspace opened once (every journal,
every segment's metadata), and from then on only what the writes need: per partition its
config, its levels (ids, key ranges, seqnos, in lsm-tree's in-memory order) and the ids in
use; the journals' names and sizes; the active journal's tail (the end of its last
complete batch) and the next seqno.  No written row is kept.  :meth:`~KeyspaceWriter.append`
writes exactly what :func:`.writer.append_batch` writes (fjall's batch bytes, one fsync,
the same rotation rules), :meth:`~KeyspaceWriter.publish` what
:func:`.writer.publish_segments` writes; those two functions are one-shot sessions.

Before every write the session confirms that the keyspace is still as it left it -- the
journals folder lists the same journals, the active journal is the same file with the same
size and only zeros after its tail, the partitions folder lists the same names, every
``levels`` file is the same file -- and refuses with :class:`FjallChanged` (for good: the
session writes nothing more) when it is not: only another writer (fjall itself opened
without ``bbg.lock``, which cuts the active journal back to its data, flushes and
compacts) changes these.

**Our flush** (:meth:`KeyspaceWriter.flush`, :func:`flush_keyspace`) does what fjall does
when it opens a keyspace whose rows live in journals and flushes them, so that segments
can be published into any partition afterwards.  What it writes, from the sources:

* *Which rows, in which segments.*  fjall rebuilds one memtable per partition per sealed
  journal it replays (``recovery.rs`` ``recover_sealed_memtables``: the journal's items go
  into the partition's memtable, which is then rotated into a sealed memtable -- or
  dropped when the partition's segments already reach the journal's highest seqno for
  it), then one active memtable per partition from the active journal
  (``keyspace.rs`` ``recover``); a flush writes each memtable into one segment
  (``flush/worker.rs``: one task per sealed memtable; the active memtable is rotated first,
  ``partition/mod.rs`` ``rotate_memtable``), whatever its size.  A memtable keeps one item
  per key and seqno (lsm-tree ``memtable/mod.rs``: a skip map ordered by key, then seqno
  descending; an equal key replaces the item, so the later item of a batch wins), values,
  tombstones and weak tombstones alike.  lsm-tree's ``Tree::flush_memtable`` writes the
  memtable through a ``CompactionStream`` with the keyspace's GC watermark
  (``snapshot_tracker.rs`` ``get_seqno_safe_to_gc``), which is 0 in a process that has not
  closed 50 snapshots -- as in every process that opens a keyspace to flush its journals --
  and a watermark of 0 drops nothing (``compaction/stream.rs``: only versions below the
  watermark are dropped).  So every version of every key of the memtable is written, newest
  first: exactly the reader's journal entries of that journal (:meth:`.Keyspace.memtables`).
* *How.*  lsm-tree's segment writer with the partition's data and index block sizes and
  compression, and a bloom filter sized for a false-positive rate of 1e-5 (none when the
  partition's bits per key are negative); the segment id is the memtable's id, taken from
  the tree's counter, which recovery sets one above the highest listed segment id
  (``tree/mod.rs`` ``recover``; here: above every id listed or present).  The new
  segments are inserted into L0, all of a partition's at once, in one atomic swap of its
  ``levels`` file (``register_segments``; :mod:`.levels`).
* *The journals.*  fjall seals the active journal before it flushes (``rotate_memtable``
  calls ``JournalManager::rotate_journal``: a new journal, the next id, pre-allocated and
  fsynced, its folder fsynced -- ``journal/writer.rs`` ``rotate``), and after a flush its
  journal manager deletes sealed journals, oldest first, as long as every partition named
  in one has persisted up to that journal's highest seqno for it (``journal/manager.rs``
  ``maintenance``; partitions that no longer exist do not count).

**The order**, which is fjall's own (rotate, write, register, delete), and why a
``kill -9`` at any point leaves a directory that reads exactly as before -- for this reader
and for fjall:

1. *Seal the active journal* (only when it holds items of a live partition): a new empty
   journal with the next id, pre-allocated, fsynced, folder fsynced.  The old one is now
   sealed, and a sealed journal's items are replayed for a partition unless its segments
   reach the journal's highest seqno for it.  The items of the active journal are above
   every segment of their partition (``check`` verifies it; fjall's counter guarantees it),
   so each partition's highest seqno in it is too: every item is still replayed.  (When a
   partition breaks that rule, the flush refuses: sealing would hide its items.)  A crash
   while the new file is made leaves an empty (or short zero-filled) active journal, which
   both readers read as empty; the seqno counter then comes from the partitions' highest
   seqnos, as fjall derives it whenever an active journal exists.
2. *Write the segments* of a partition, each fsynced, folder fsynced, under ids no
   ``levels`` file lists: until they are listed, this reader ignores them and fjall's
   recovery deletes them.
3. *Swap the partition's ``levels``* (temporary file, fsync, rename, folder fsync): from now
   on its segments reach every sealed journal's highest seqno for it, so fjall and this
   reader skip its journal items, which the segments hold with the same seqnos -- before
   the swap the journals are read, after it the segments, never both (so no point read
   can find an older version in a memtable first).  Each partition is swapped on its own;
   a crash between two partitions leaves some read from segments, the others from
   journals, each complete.
4. *Delete the sealed journals* whose items are all persisted, oldest first (then the
   folder is fsynced).  A journal left behind by a crash is skipped for every partition.
   A keyspace with segments and no journal at all gets an empty active journal
   (``journals/1``, the one fjall would create): fjall derives its seqno counter from the
   segments only when it finds an active journal (``Keyspace::recover``), and would
   otherwise count from 0, below every segment.

Running the flush again after a crash finishes the job: the sealed journals' items not yet
persisted are exactly what the reader still replays (nothing is written twice).

Memory: a session holds no row, only the picture above (per segment its id, key range and
highest seqno).  A flush holds what a read snapshot holds for the journals (every item's
key and short value, see :mod:`.journal`; fjall holds all of it in its memtables) and the
block being written.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbg_core.closing import Closing
from bbg_core.errors import FjallChanged, FjallError, FjallRefused, Locked, UsageError
from bbg_core.files import lock_holder
from migrate.store.fjall import bloom, journal, layout, levels
from migrate.store.fjall.block import TOMBSTONE, VALUE
from migrate.store.fjall.layout import DEFAULT_CONFIG, PartitionConfig
from migrate.store.fjall.reader import Keyspace, open_keyspace
from migrate.store.fjall.writer import (
    _MAX_KEY,
    _MAX_VALUE,
    LOCK_FILE,
    MAX_JOURNALING,
    BatchItem,
    Progress,
    _bloom_policy,
    _fsync_dir,
    _max_seqno,
    _new_partition,
    _rewrite_atomic,
    _Segments,
)

#: lsm-tree's flush sizes a segment's bloom filter for this false-positive rate.
FLUSH_FP_RATE = 0.00001


# -- locks ---------------------------------------------------------------------------------


def _holder(fd: int) -> tuple[str, int | None]:
    """Who holds a ``flock`` on the file open as ``fd`` (:func:`bbg_core.files.lock_holder`)."""
    return lock_holder(fd)


def _open_locked(
    path: Path,
    flags: int,
    fds: list[int],
    cannot: str,
    busy: Callable[[str], str],
    *,
    root: Path | None = None,
) -> int:
    """Open ``path`` (appended to ``fds``) and take an exclusive non-blocking ``flock`` on
    it: FjallError when it cannot be opened, Locked naming the holder (``busy(who)``, said of
    ``root``, default ``path``) when another process holds the lock."""
    where = root if root is not None else path
    try:
        fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise FjallError(f"{path}: {cannot}: {exc.strerror}", path=str(path)) from exc
    fds.append(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        who, pid = _holder(fd)
        raise Locked(f"{where}: {busy(who)}", path=str(where), holder_pid=pid) from None
    return fd


def _take_locks(root: Path, create_lock: bool) -> list[int]:
    """This toolkit's writer lock on the keyspace directory, then ``bbg.lock`` (created,
    mode 0600, when ``create_lock`` and absent; else taken only when it exists)."""
    fds: list[int] = []
    try:
        _open_locked(
            root,
            os.O_RDONLY | os.O_DIRECTORY,
            fds,
            "cannot open the keyspace",
            lambda who: f"another bbg-migrate writer is writing this keyspace ({who})",
        )
        if not os.path.lexists(root / layout.VERSION_FILE):
            raise FjallError(f"{root}: not a Fjall keyspace (no version file)", path=str(root))
        lock = root / LOCK_FILE
        if create_lock or os.path.lexists(lock):
            _open_locked(lock, os.O_RDWR | (os.O_CREAT if create_lock else 0), fds,
                         "cannot open", lambda who: f"the keyspace is open in its owner (bbg "
                         f"holds {LOCK_FILE}: {who}); stop it first", root=root)  # fmt: skip
    except BaseException:
        for fd in reversed(fds):
            os.close(fd)
        raise
    return fds


# -- the session's picture of the keyspace ------------------------------------------------


Stamp = tuple[int, int, int]


def _stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@dataclass
class _Part:
    """What the session knows of one partition."""

    config: PartitionConfig
    #: per level, the segments in lsm-tree's in-memory order (as the reader recovers them)
    levels: list[list[levels.Summary]]
    raw: bytes  # the levels file
    stamp: Stamp | None
    #: the highest segment id listed in levels or present in segments/ (None: none)
    top_id: int | None
    journal_items: int  # entries that live only in journals (fjall replays them)

    @property
    def persisted(self) -> int | None:
        seqnos = [s.seqno_max for level in self.levels for s in level]
        return max(seqnos) if seqnos else None


@dataclass
class _Active:
    """The active journal, open for writing."""

    id: int
    name: str
    fd: int
    ino: int
    tail: int  # the end of its last complete batch
    size: int
    dirty: bool  # bytes that are not zeros follow the tail (a torn batch): cut first


@dataclass
class _Sealed:
    id: int
    name: str
    bytes: int
    #: its highest seqno per partition; None until a snapshot has read it (a journal this
    #: session sealed when it filled up), and never deleted before
    lsn: dict[str, int] | None = None


def _summary(seg: Any) -> levels.Summary:
    """A segment as the levels rules see it (id, key range, highest seqno)."""
    return levels.Summary(seg.id, seg.meta.key_min, seg.meta.key_max, seg.meta.seqno_max)


class KeyspaceWriter(Closing):
    """A writer session (see the module docstring); made by :func:`open_writer`."""

    def __init__(self, root: Path, fds: list[int]) -> None:
        self.root = root
        self._lock_fds = fds
        self._parts: dict[str, _Part] = {}
        self._sealed: list[_Sealed] = []
        self._active: _Active | None = None
        self._pnames: list[str] = []
        self._next_seqno = 0
        self._broken: FjallChanged | None = None
        self._closed = False
        self._adopted = -1  # the seqno of the segments adopted by this session (-1: none)

    # -- opening ---------------------------------------------------------------------------

    def _load(self, ks: Keyspace) -> None:
        for name in ks.partitions():
            view = ks.view(name)
            present = [int(n) for n in view.segment_files if n.isascii() and n.isdigit()]
            listed = [sid for level in view.level_ids for sid in level]
            self._parts[name] = _Part(
                config=view.config,
                levels=[[_summary(s) for s in level] for level in view.levels],
                raw=view.levels_raw,
                stamp=_stamp(os.path.join(view.path, layout.LEVELS)),
                top_id=max([*present, *listed], default=None),
                journal_items=len(view.journal),
            )  # fmt: skip
        self._pnames = _listing(self.root / layout.PARTITIONS)
        top = _max_seqno(ks)
        self._next_seqno = 0 if top is None else top + 1
        folder = self.root / layout.JOURNALS
        for info in ks.journals[:-1]:
            self._sealed.append(_Sealed(info.id, info.name, info.bytes, dict(info.lsn)))
        if ks.journals:
            info = ks.journals[-1]
            fd = os.open(folder / info.name, os.O_RDWR | os.O_CLOEXEC)
            st = os.fstat(fd)
            self._active = _Active(info.id, info.name, fd, st.st_ino, info.data_bytes,
                                   st.st_size, info.after_data != "zeros")  # fmt: skip
        self._verify()  # nothing moved between the snapshot and now

    # -- the guard -------------------------------------------------------------------------

    def _journal_names(self) -> list[str]:
        names = [s.name for s in self._sealed]
        if self._active is not None:
            names.append(self._active.name)
        return names

    def _changed(self, path: str, what: str) -> FjallChanged:
        self._broken = FjallChanged(
            f"{path}: {what} since this writer session opened the keyspace: another writer "
            "(fjall opened without bbg.lock?) is using it; this session writes nothing more",
            path=path, what=what,
        )  # fmt: skip
        return self._broken

    def _verify(self) -> None:
        """Refuse (for good) when the keyspace is not as this session left it."""
        if self._broken is not None:
            raise self._broken
        folder = self.root / layout.JOURNALS
        found = [name for jid, name in sorted(
            (journal.journal_id(n), n) for n in _listing(folder)
            if journal.journal_id(n) is not None)]  # fmt: skip
        if found != self._journal_names():
            raise self._changed(str(folder), f"the journals are {found}, not "
                                f"{self._journal_names()}")  # fmt: skip
        a = self._active
        if a is not None:
            path = str(folder / a.name)
            stamp = _stamp(path)
            if stamp is None or stamp[0] != a.ino:
                raise self._changed(path, "the active journal was replaced")
            if stamp[1] != a.size:
                raise self._changed(path, f"the active journal is {stamp[1]} bytes, not "
                                    f"{a.size}")  # fmt: skip
            if not a.dirty and os.pread(a.fd, 64, a.tail).strip(b"\0"):
                raise self._changed(
                    path,
                    f"the active journal holds data after offset "
                    f"{a.tail}, where this session's last batch ended",
                )
        pfolder = self.root / layout.PARTITIONS
        names = _listing(pfolder)
        if names != self._pnames:
            raise self._changed(str(pfolder), "the partitions folder changed")
        for name, part in self._parts.items():
            path = str(pfolder / name / layout.LEVELS)
            if _stamp(path) != part.stamp:
                raise self._changed(path, "the levels file changed")

    def _ready(self) -> None:
        if self._closed:
            raise UsageError(f"{self.root}: this writer session is closed")
        self._verify()

    # -- what a caller may look at ---------------------------------------------------------

    @property
    def next_seqno(self) -> int:
        """The seqno the next batch or publication takes."""
        return self._next_seqno

    @property
    def active_journal(self) -> tuple[str, int] | None:
        """The active journal's name and the end of its last complete batch."""
        a = self._active
        return None if a is None else (a.name, a.tail)

    def partitions(self) -> list[str]:
        """The partitions' names, sorted (bytewise)."""
        return sorted(self._parts, key=lambda n: n.encode("utf-8"))

    def state(self) -> dict[str, Any]:
        """What the session tracks, as a fresh open would compute it (for tests and
        reports): next seqno, journals, per partition its level ids, highest id in use,
        persisted seqno and journal-only items."""
        a = self._active
        return {
            "next_seqno": self._next_seqno,
            "sealed": [(s.name, s.bytes) for s in self._sealed],
            "active": None if a is None else {"name": a.name, "tail": a.tail, "size": a.size},
            "partitions": {name: {"levels": [[s.id for s in lv] for lv in p.levels],
                                  "top_id": p.top_id, "persisted": p.persisted,
                                  "journal_items": p.journal_items}
                           for name, p in sorted(self._parts.items())},
        }  # fmt: skip

    def reader(self, *, backend_name: str | None = None) -> Keyspace:
        """A fresh read snapshot holding everything written so far (close it)."""
        if self._closed:
            raise UsageError(f"{self.root}: this writer session is closed")
        return open_keyspace(self.root, backend_name=backend_name)

    # -- journals --------------------------------------------------------------------------

    def _new_journal(self, jid: int) -> _Active:
        """A new journal as fjall's ``Writer::create_new`` makes it (pre-allocated zeros,
        fsynced, its folder fsynced), open for writing."""
        folder = self.root / layout.JOURNALS
        path = folder / str(jid)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise self._changed(str(path), "a journal this session was about to create "
                                "appeared") from None  # fmt: skip
        try:
            os.ftruncate(fd, journal.PRE_ALLOCATED)
            os.fsync(fd)
            _fsync_dir(folder)
        except BaseException:
            os.close(fd)
            raise
        return _Active(jid, str(jid), fd, os.fstat(fd).st_ino, 0, journal.PRE_ALLOCATED, False)

    def _rotate(self, lsn: dict[str, int] | None) -> None:
        """Seal the active journal (whose items' highest seqnos per partition are ``lsn``,
        when known) and make the next one active."""
        old = self._active
        assert old is not None
        self._active = self._new_journal(old.id + 1)
        os.close(old.fd)
        self._sealed.append(_Sealed(old.id, old.name, old.size, lsn))

    def append(self, items: list[BatchItem]) -> int:
        """Append one batch (``(partition, key, value)``, ``None`` for a tombstone) to the
        active journal, fsynced; returns its seqno (see :func:`.writer.append_batch`)."""
        encoded = _encode_items(items)
        self._ready()
        for partition, key, _value, _t in encoded:
            if partition not in self._parts:
                raise FjallRefused(f"{self.root}: no partition named {partition!r} (fjall "
                                   "ignores journal items of unknown partitions)",
                                   path=str(self.root), partition=partition,
                                   key=key.hex())  # fmt: skip
        folder = self.root / layout.JOURNALS
        sealed_bytes = sum(s.bytes for s in self._sealed)
        if sealed_bytes > MAX_JOURNALING:
            raise FjallRefused(f"{folder}: the sealed journals hold {sealed_bytes} bytes, more "
                               "than fjall's journaling limit; flush them first (flush(), or "
                               "let fjall flush them)", path=str(folder))  # fmt: skip
        seqno = self._next_seqno
        data = journal.encode_batch(encoded, seqno)
        a = self._active
        if a is None:  # the id fjall's recovery would create
            self._active = a = self._new_journal(1)
        elif a.tail and a.tail + len(data) > journal.PRE_ALLOCATED:
            self._rotate(None)
            a = self._active
            assert a is not None
        if a.dirty:  # cut the torn tail, as fjall's recovery would
            os.ftruncate(a.fd, a.tail)
            os.fsync(a.fd)
            a.size, a.dirty = a.tail, False
        view = memoryview(data)
        pos = a.tail
        try:
            while view:
                n = os.pwrite(a.fd, view, pos)
                view, pos = view[n:], pos + n
            os.fsync(a.fd)
        except BaseException:
            a.dirty = True  # a torn batch may follow the tail now
            a.size = os.fstat(a.fd).st_size
            raise
        a.tail += len(data)
        a.size = max(a.size, a.tail)
        for partition, *_ in encoded:
            self._parts[partition].journal_items += 1
        self._next_seqno = seqno + 1
        return seqno

    # -- partitions ------------------------------------------------------------------------

    def _clear_dead(self, name: str, folder: str) -> None:
        """Remove what is left of a dropped (``.deleted``) or unfinished (no ``manifest``)
        partition of this name, as fjall's recovery does (``recover_partitions``: the
        manifest first, then the whole directory), so that it can be created again."""
        if not os.path.lexists(folder):
            return
        if os.path.islink(folder) or not os.path.isdir(folder):
            raise FjallRefused(f"{folder}: not a directory where partition {name!r} would go",
                               path=folder, partition=name)  # fmt: skip
        manifest = os.path.join(folder, layout.MANIFEST)
        if os.path.lexists(manifest):
            os.unlink(manifest)
        shutil.rmtree(folder)
        _fsync_dir(os.path.dirname(folder))
        self._pnames = _listing(self.root / layout.PARTITIONS)

    def _register_new(self, name: str, config: PartitionConfig, ids: list[list[int]],
                      summaries: list[levels.Summary]) -> None:  # fmt: skip
        folder = os.path.join(self.root, layout.PARTITIONS, name)
        path = os.path.join(folder, layout.LEVELS)
        lv: list[list[levels.Summary]] = [[] for _ in range(config.level_count)]
        by_id = {s.id: s for s in summaries}
        for n, level in enumerate(ids):
            lv[n] = levels.recovered([by_id[sid] for sid in level])
        with open(path, "rb") as fh:
            raw = fh.read()
        self._parts[name] = _Part(config, lv, raw, _stamp(path),
                                  max(by_id, default=None), 0)  # fmt: skip
        self._pnames = _listing(self.root / layout.PARTITIONS)

    def create_partitions(
        self, names: Iterable[str], *, config: PartitionConfig = DEFAULT_CONFIG
    ) -> list[str]:
        """Create the partitions of ``names`` that do not exist yet, as fjall's
        ``open_partition`` creates one (``config``, empty ``levels``, ``segments/``, the
        ``manifest`` last and atomically: until it exists the directory is no partition;
        every file and folder fsynced; what a dropped or unfinished partition of the name
        left is removed first, as fjall's recovery removes it); returns the names created."""
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            if not layout.is_valid_partition_name(name):
                raise UsageError(f"{name!r} is not a Fjall partition name", partition=name)
        if config.tree_type != 0 or config.kv_separation is not None:
            raise FjallRefused("this writer makes standard partitions only (no blob trees)")
        self._ready()
        created = []
        pfolder = os.path.join(self.root, layout.PARTITIONS)
        for name in wanted:
            if name in self._parts:
                continue
            folder = os.path.join(pfolder, name)
            self._clear_dead(name, folder)
            os.makedirs(os.path.join(folder, layout.SEGMENTS))
            _new_partition(folder, config, [[] for _ in range(config.level_count)])
            _fsync_dir(pfolder)
            self._register_new(name, config, [[] for _ in range(config.level_count)], [])
            created.append(name)
        return created

    def _swap_levels(self, name: str, part: _Part, new: list[levels.Summary]) -> list[int]:
        """Insert ``new`` into L0 and replace the partition's ``levels`` atomically; the
        session's picture follows (as a fresh open would recover it)."""
        folder = os.path.join(self.root, layout.PARTITIONS, name)
        path = os.path.join(folder, layout.LEVELS)
        level0 = levels.recovered(part.levels[0])
        for s in new:
            level0 = levels.insert(level0, s)
        order = [level0] + [levels.sort_level(levels.recovered(lv)) for lv in part.levels[1:]]
        with open(path, "rb") as fh:
            if fh.read() != part.raw:
                raise self._changed(path, "the levels file changed while segments were "
                                    "written (nothing was published; the new segment files "
                                    "are unlisted: fjall deletes them)")  # fmt: skip
        raw = levels.encode([[s.id for s in lv] for lv in order])
        _rewrite_atomic(path, raw)
        part.levels = [levels.recovered(lv) for lv in order]
        part.raw, part.stamp = raw, _stamp(path)
        ids = [s.id for s in new]
        part.top_id = max([*([] if part.top_id is None else [part.top_id]), *ids], default=None)
        return ids

    def publish(
        self,
        partition: str,
        rows: Iterable[tuple[bytes, bytes]],
        *,
        config: PartitionConfig = DEFAULT_CONFIG,
        progress: Progress | None = None,
        created_at: int | None = None,
    ) -> dict[str, Any]:
        """Add ``rows`` (strictly ascending keys) to ``partition`` as new L0 segments at the
        next seqno (see :func:`.writer.publish_segments`; a partition that does not exist is
        created with ``config``, its ``manifest`` last)."""
        if not layout.is_valid_partition_name(partition):
            raise UsageError(f"{partition!r} is not a Fjall partition name",
                             partition=partition)  # fmt: skip
        self._ready()
        root = self.root
        folder = os.path.join(root, layout.PARTITIONS, partition)
        part = self._parts.get(partition)
        exists = part is not None
        if part is not None:
            if part.journal_items:
                raise FjallRefused(
                    f"{root}: partition {partition!r} has {part.journal_items} entries that "
                    "live only in its journals (not flushed); flush them first (flush(), "
                    "flush_keyspace, or fjall itself) or write them with append",
                    path=str(root), partition=partition,
                )  # fmt: skip
            config = part.config
            first_id = 0 if part.top_id is None else part.top_id + 1
        else:
            if config.tree_type != 0 or config.kv_separation is not None:
                raise FjallRefused("this writer makes standard partitions only (no blob trees)")
            self._clear_dead(partition, folder)
            first_id = 0
        seqno = self._next_seqno
        seg_folder = os.path.join(folder, layout.SEGMENTS)
        if not exists:
            os.makedirs(seg_folder)
        writer = _Segments(seg_folder, first_id, config.compaction_target_size, config,
                           _bloom_policy(config), created_at)  # fmt: skip
        try:
            writer.write_rows(partition, rows, seqno, progress)
            written = writer.finish()
        except BaseException:
            writer.abort()
            for sid in range(first_id, writer.next_id):
                Path(seg_folder, str(sid)).unlink(missing_ok=True)
            raise
        new = [levels.Summary(w.id, w.key_min, w.key_max, w.seqno_max) for w in written]
        if part is None:  # levels, then the manifest: from now on it is a partition
            level0: list[levels.Summary] = []
            for s in new:
                level0 = levels.insert(level0, s)
            ids = [[s.id for s in level0]] + [[] for _ in range(config.level_count - 1)]
            _new_partition(folder, config, ids)
            _fsync_dir(os.path.dirname(folder))
            self._register_new(partition, config, ids, new)
        elif written:
            self._swap_levels(partition, part, new)
        if written:
            self._next_seqno = seqno + 1
        if progress is not None:
            progress(writer.rows, writer.bytes)
        return {
            "path": str(root), "partition": partition, "created": not exists, "seqno": seqno,
            "segments": [w.id for w in written], "rows": writer.rows,
            "key_value_bytes": writer.bytes,
            "segment_bytes": sum(w.file_size for w in written),
        }  # fmt: skip

    # -- segments written aside ------------------------------------------------------------

    def first_free_id(self, partition: str) -> int:
        """The first segment id of ``partition`` no ``levels`` file lists and no file uses:
        where segments written aside for :meth:`adopt` start (FjallRefused: no such
        partition)."""
        part = self._parts.get(partition)
        if part is None:
            raise FjallRefused(f"{self.root}: no partition named {partition!r}",
                               path=str(self.root), partition=partition)  # fmt: skip
        return 0 if part.top_id is None else part.top_id + 1

    def claim(self, partition: str, ids: list[int]) -> None:
        """Reserve ``ids`` (segments written aside, not yet adopted) in ``partition``: a flush
        meanwhile writes above them.  FjallRefused when one is in use already."""
        self._ready()
        part = self._parts[partition]
        folder = os.path.join(self.root, layout.PARTITIONS, partition, layout.SEGMENTS)
        for sid in ids:
            if (part.top_id is not None and sid <= part.top_id) or os.path.lexists(
                    os.path.join(folder, str(sid))):  # fmt: skip
                raise FjallRefused(f"{folder}: segment id {sid} is in use; the segments "
                                   "written aside cannot be adopted", path=folder,
                                   partition=partition)  # fmt: skip
        if ids:
            part.top_id = max(ids)

    def adopt(self, partition: str, folder: str, written: list[Any], seqno: int) -> list[int]:
        """Publish segments written aside (``folder/<id>``, every item at ``seqno``, ids
        claimed with :meth:`claim`): each file is renamed into the partition's ``segments/``
        (then fsynced there), then they go into L0 at once with one atomic swap of its
        ``levels`` file -- :meth:`publish`'s protocol, the files written beforehand.  Until
        the swap they are unlisted (this reader ignores them, fjall's recovery deletes them:
        lsm-tree 2.10.4 ``src/tree/mod.rs`` ``recover_levels``).  ``seqno`` must be above
        every seqno in the keyspace but those of segments adopted at the same ``seqno`` in
        this session (several partitions published as one step)."""
        self._ready()
        part = self._parts[partition]
        if part.journal_items:
            raise FjallRefused(f"{self.root}: partition {partition!r} has entries that live "
                               "only in its journals; flush them first", path=str(self.root),
                               partition=partition)  # fmt: skip
        if seqno < self._next_seqno and seqno != self._adopted:
            raise FjallRefused(f"{self.root}: segments written at seqno {seqno} are not above "
                               f"the keyspace's (next seqno {self._next_seqno})",
                               path=str(self.root), partition=partition)  # fmt: skip
        if not written:
            return []
        target = os.path.join(self.root, layout.PARTITIONS, partition, layout.SEGMENTS)
        for w in written:
            dest = os.path.join(target, str(w.id))
            if os.path.lexists(dest):
                raise FjallRefused(f"{dest}: exists; the segment written aside cannot be "
                                   "adopted", path=dest, partition=partition)  # fmt: skip
            os.rename(os.path.join(folder, str(w.id)), dest)
        _fsync_dir(target)
        new = [levels.Summary(w.id, w.key_min, w.key_max, w.seqno_max) for w in written]
        ids = self._swap_levels(partition, part, new)
        self._adopted = seqno
        self._next_seqno = max(self._next_seqno, seqno + 1)
        return ids

    # -- the flush -------------------------------------------------------------------------

    def flush(
        self, *, progress: Progress | None = None, created_at: int | None = None
    ) -> dict[str, Any]:
        """Write every partition's journal-only items into new L0 segments as fjall's flush
        does, then seal the journals and delete those whose items are all persisted (see
        the module docstring for what, how and in which order); returns what it did."""
        self._ready()
        report: dict[str, Any] = {"path": str(self.root), "partitions": {}, "rotated": None,
                                  "deleted_journals": [], "items": 0}  # fmt: skip
        rows = nbytes = 0
        with open_keyspace(self.root) as ks:
            self._agrees(ks)
            for sealed, info in zip(self._sealed, ks.journals, strict=False):
                sealed.lsn = dict(info.lsn)
            active = ks.journals[-1] if ks.journals else None
            active_fd = ks.active_journal_fd()
            todo = [name for name in ks.partitions() if ks.view(name).journal]
            in_active = {name for name in todo
                         if any(e[7] == active_fd for e in ks.view(name).journal)}  # fmt: skip
            if in_active:
                assert active is not None
                for name in sorted(in_active):
                    persisted = self._parts[name].persisted
                    lsn = active.lsn.get(name)
                    if persisted is not None and lsn is not None and lsn <= persisted:
                        raise FjallRefused(
                            f"{self.root}: partition {name!r} has items in the active journal "
                            f"(up to seqno {lsn}) that are not above its segments' {persisted}; "
                            "sealing the journal would hide them from fjall (see check)",
                            path=str(self.root), partition=name)  # fmt: skip
                # 1. seal the active journal
                self._rotate(dict(active.lsn))
                report["rotated"] = active.name
            for name in todo:
                # 2. the segments, one per memtable; 3. the levels swap
                part = self._parts[name]
                config = part.config
                policy = bloom.FpRate(FLUSH_FP_RATE) if config.bloom_bits_per_key >= 0 else None
                seg_folder = os.path.join(self.root, layout.PARTITIONS, name, layout.SEGMENTS)
                first = (0 if part.top_id is None else part.top_id) + 1
                writer = _Segments(seg_folder, first, 0, config, policy, created_at)
                sources: list[str] = []
                try:
                    for info, items in ks.memtables(name):
                        writer.write_items(items)
                        sources.append(info.name)
                        rows, nbytes = rows + writer.last_rows, nbytes + writer.last_bytes
                        if progress is not None:
                            progress(rows, nbytes)
                    written = writer.finish()
                except BaseException:
                    writer.abort()
                    for sid in range(first, writer.next_id):
                        Path(seg_folder, str(sid)).unlink(missing_ok=True)
                    raise
                new = [levels.Summary(w.id, w.key_min, w.key_max, w.seqno_max)
                       for w in written]  # fmt: skip
                ids = self._swap_levels(name, part, new)
                part.journal_items = 0
                report["partitions"][name] = {
                    "segments": ids, "journals": sources,
                    "items": sum(w.items for w in written),
                    "segment_bytes": sum(w.file_size for w in written),
                }  # fmt: skip
                report["items"] += sum(w.items for w in written)
        # 4. delete the sealed journals whose items are all persisted, oldest first
        report["deleted_journals"] = self._maintenance()
        if self._active is None and any(p.persisted is not None for p in self._parts.values()):
            # fjall starts its seqno counter from the partitions only when it finds an
            # active journal (else at 0, below these segments): make the one it would make
            self._active = self._new_journal(1)
            report["created_journal"] = self._active.name
        for part in self._parts.values():
            part.journal_items = 0
        report["journals"] = self._journal_names()
        return report

    def _agrees(self, ks: Keyspace) -> None:
        """The flush's snapshot shows what the session knows (it holds the locks)."""
        if [j.name for j in ks.journals] != self._journal_names() or sorted(
            ks.partitions()
        ) != sorted(self._parts):
            raise self._changed(str(self.root), "the keyspace changed")
        for name in ks.partitions():
            if ks.view(name).levels_raw != self._parts[name].raw:
                path = os.path.join(self.root, layout.PARTITIONS, name, layout.LEVELS)
                raise self._changed(path, "the levels file changed")

    def _maintenance(self) -> list[str]:
        """fjall's journal maintenance: delete sealed journals oldest first while every
        live partition named in one has persisted up to its highest seqno there."""
        deleted = []
        folder = self.root / layout.JOURNALS
        while self._sealed:
            first = self._sealed[0]
            if first.lsn is None:
                break
            for name, lsn in first.lsn.items():
                part = self._parts.get(name)
                if part is None:
                    continue  # no such partition (fjall keeps no watermark for it)
                persisted = part.persisted
                if persisted is None or persisted < lsn:
                    break
            else:
                os.unlink(folder / first.name)
                self._sealed.pop(0)
                deleted.append(first.name)
                continue
            break
        if deleted:
            _fsync_dir(folder)
        return deleted

    # -- the end ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._active is not None:
            os.close(self._active.fd)
        for fd in reversed(self._lock_fds):
            os.close(fd)
        self._lock_fds = []


def _listing(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return []


def _encode_items(items: list[BatchItem]) -> list[tuple[str, bytes, bytes, int]]:
    if not items:
        raise UsageError("an empty batch: fjall writes nothing for it")
    encoded: list[tuple[str, bytes, bytes, int]] = []
    for partition, key, value in items:
        if not 0 < len(key) <= _MAX_KEY:
            raise FjallRefused(f"partition {partition!r}: a key of {len(key)} bytes (fjall: 1 "
                               "to 65535)", partition=partition)  # fmt: skip
        if value is not None and len(value) > _MAX_VALUE:
            raise FjallRefused(f"partition {partition!r}: a value of {len(value)} bytes",
                               partition=partition, key=key.hex())  # fmt: skip
        encoded.append((partition, key, b"" if value is None else value,
                        TOMBSTONE if value is None else VALUE))  # fmt: skip
    if len(encoded) > 0xFFFFFFFF:
        raise FjallRefused("a batch of more than 2^32 - 1 items")
    return encoded


def open_writer(path: str | os.PathLike[str], *, create_lock: bool = False) -> KeyspaceWriter:
    """A writer session on the keyspace at ``path`` (a context manager): locks taken, the
    keyspace opened once.  ``create_lock`` creates ``bbg.lock`` (mode 0600) when absent, as
    bbg does; otherwise it is locked only when it exists."""
    root = Path(path)
    fds = _take_locks(root, create_lock)
    session = KeyspaceWriter(root, fds)
    try:
        with open_keyspace(root) as ks:
            session._load(ks)
    except BaseException:
        session.close()
        raise
    return session


def flush_keyspace(
    path: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    created_at: int | None = None,
) -> dict[str, Any]:
    """Flush the keyspace at ``path`` (a one-shot session; see :meth:`KeyspaceWriter.flush`)."""
    with open_writer(path) as session:
        return session.flush(progress=progress, created_at=created_at)


def publish_segments(
    path: str | os.PathLike[str],
    partition: str,
    rows: Iterable[tuple[bytes, bytes]],
    *,
    config: PartitionConfig = DEFAULT_CONFIG,
    progress: Progress | None = None,
    created_at: int | None = None,
) -> dict[str, Any]:
    """Add the ``rows`` (strictly ascending keys) of ``partition`` to the existing keyspace
    at ``path`` as new segments in L0 (a partition that does not exist is created with
    ``config``, its ``manifest`` written last); returns the seqno, the segment ids, rows and
    bytes.  A one-shot writer session (:meth:`.session.KeyspaceWriter.publish`)."""
    if not layout.is_valid_partition_name(partition):
        raise UsageError(f"{partition!r} is not a Fjall partition name", partition=partition)
    with open_writer(path) as session:
        return session.publish(partition, rows, config=config, progress=progress,
                               created_at=created_at)  # fmt: skip


def append_batch(path: str | os.PathLike[str], items: list[BatchItem]) -> int:
    """Append one batch (``(partition, key, value)``, ``None`` for a tombstone) to the
    active journal, fsynced; returns its seqno.  A one-shot writer session
    (:meth:`.session.KeyspaceWriter.append`)."""
    if not items:
        raise UsageError("an empty batch: fjall writes nothing for it")
    with open_writer(path) as session:
        return session.append(items)


__all__ = [
    "FLUSH_FP_RATE", "KeyspaceWriter", "append_batch", "flush_keyspace", "open_writer",
    "publish_segments",
]  # fmt: skip
