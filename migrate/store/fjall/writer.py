"""Writing Fjall keyspaces: a new one in bulk, new segments into an existing one, and one
transactional batch into the active journal (the last two through a writer session,
:mod:`.session`, which also holds our flush).

Every choice below mirrors what the real crates do, so that fjall reads the result exactly
and keeps working on it (its own flushes and compactions over these segments, its seqno
counter, its journal rotation).

**Bulk build** (:func:`build_keyspace`) follows lsm-tree's own bulk loader
(``src/tree/ingest.rs``, reached through fjall's ``PartitionHandle::ingest``): every row is
a value at seqno 0; segments are cut by the multi-segment writer at 128 MiB of data blocks
(``src/segment/multi_writer.rs``: a new segment starts before the first version of a key
once the data written reaches the target); bloom filters use the partition's bits per key
(10); blocks use its compression (LZ4) and block sizes (4 KiB); the segments are registered
in L0 and then moved to level 6, the last of the default 7 (``MoveDown(0, 6)``), where
fjall's leveled compaction leaves them alone.  Around them, exactly what fjall's
``Keyspace::create_new`` and ``PartitionHandle::create_new`` make (``src/keyspace.rs``,
``src/partition/mod.rs``, lsm-tree ``src/tree/mod.rs`` ``create_new``): ``version``,
``journals/0`` pre-allocated to 32 MiB of zeros (``src/journal/writer.rs``), and per
partition ``config``, ``manifest``, ``levels`` (mode 0600, as lsm-tree's temporary-file
rewrite leaves it) and ``segments/``.  An empty active journal must exist: fjall derives
its next seqno from the segments only when it finds one (``Keyspace::recover``).  The whole
directory is built under a locked temporary sibling (``.<name>.fjall-build-*``) and renamed
into place, so a crash leaves no keyspace at all or the complete one; an abandoned
temporary directory is removed by the next build.

**Publishing** (:func:`publish_segments`) is a flush's protocol (lsm-tree
``Tree::flush_memtable`` / ``register_segments``): segment files first, written and fsynced
under ids above every id listed or present (``segments/<id>``: a segment file that
``levels`` does not list is ignored by this reader and deleted by fjall's recovery, which
is also what a crash of lsm-tree's own writer leaves -- a non-numeric temporary name would
instead make fjall refuse the partition), then the ``levels`` file replaced atomically
(temporary file in the partition folder, fsync, rename, fsync of the folder), with the new
segments inserted into L0 as lsm-tree inserts them (:mod:`.levels`).  All new rows carry
one seqno above every seqno in the keyspace's journals and segments, so they win over
every older version, in fjall's merge and in its point reads (L0 is searched first, newest
segment first).  Segments are cut at the partition's compaction target size (64 MiB), the
size fjall's own compactions write (a flush writes one segment, whatever its size; readers
do not care either way).  Bloom filters use the partition's bits per key, as the bulk build
does (lsm-tree's flush would size them for a 1e-5 false-positive rate; fjall reads both and
rewrites the filter when it compacts the segment).

Two states are refused (:class:`FjallRefused`): the partition still has rows that live
only in a journal -- fjall would read those first in a point read (memtables come before
segments) and would drop a sealed journal's rows for the partition once its segments reach
a higher seqno (``recover_sealed_memtables``); :func:`.session.flush_keyspace` writes them
into segments first, as fjall's flush does -- and a ``levels`` file that changed while the
segments were written.

**A batch** (:func:`append_batch`) is fjall's ``Batch::commit`` with ``PersistMode::SyncAll``
(``src/batch/mod.rs``, ``src/journal/writer.rs``): Start, Items, End with the XXH3-64 of the
items, written at the end of the active journal's last complete batch (over its
pre-allocated zeros, never over a valid byte: a torn tail, which fjall's recovery would cut,
is cut first) and fsynced; the seqno is one above every seqno in journals and segments.
fjall rotates its journal only when a memtable fills; this writer starts a new journal
(the next id, pre-allocated, as ``Writer::rotate`` makes it) when the batch would carry the
active one past its 32 MiB pre-allocation, and refuses to write when the journals already
hold more than fjall's default journaling limit (512 MiB), which fjall would have flushed.
With no journal at all it creates ``journals/1``, the id fjall's recovery would create.

:func:`publish_segments` and :func:`append_batch` are one-shot writer sessions
(:func:`.session.open_writer`; a session also flushes, :mod:`.session`): they take
``bbg.lock`` (exclusive, non-blocking: :class:`Locked`, naming the holding process, when
the owning bbg process holds it) when the keyspace has one, and an exclusive lock on the
keyspace directory itself against another writer of this toolkit.  A plain fjall process
holds no lock this writer could see; it must not run meanwhile (a session notices the
traces it leaves and refuses to write on).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash

from bbg_core.closing import Closing
from bbg_core.errors import FjallRefused, UsageError
from bbg_core.files import disown, owned_tempdir, sweep
from migrate.store.fjall import backend, bloom, journal, layout, levels
from migrate.store.fjall.block import TOMBSTONE, VALUE
from migrate.store.fjall.layout import DEFAULT_CONFIG, Manifest, PartitionConfig
from migrate.store.fjall.reader import Keyspace
from migrate.store.fjall.segment import SegmentWriter, Written

#: lsm-tree's bulk-ingestion segment target (``src/tree/ingest.rs``).
INGEST_TARGET = 128 << 20
#: fjall's default journaling limit (``src/config.rs``).
MAX_JOURNALING = 512 << 20
BUFFER = 1 << 20
LOCK_FILE = "bbg.lock"
_MAX_KEY = 0xFFFF
_MAX_VALUE = 0xFFFFFFFF

Progress = Callable[[int, int], None]  # (rows, bytes) so far


def _fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: str, data: bytes, mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _preallocated_journal(path: str) -> None:
    """A new journal file as fjall creates one: 32 MiB of zeros, fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.ftruncate(fd, journal.PRE_ALLOCATED)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: str, data: bytes, mode: int | None = 0o644) -> None:
    """``path`` written whole or not at all: a temporary file beside it (``.tmp*``, which
    neither fjall nor this reader looks at in a partition folder), fsync, rename, fsync of
    the folder.  A partition's ``manifest`` is written so: it makes the directory a
    partition, and a manifest cut short would make fjall refuse to open the keyspace.
    ``mode`` None keeps the temporary file's 0600."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=folder)
    try:
        if mode is not None:
            os.fchmod(fd, mode & ~_umask())
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(folder)


def _rewrite_atomic(path: str, data: bytes) -> None:
    """lsm-tree's ``rewrite_atomic``: temporary file beside ``path``, fsync, rename, fsync
    of the folder (the temporary file is 0600, so ``levels`` is too)."""
    _write_atomic(path, data, None)


def _batches(rows: Iterable[Any], take: Any) -> Iterator[list[Any]]:
    """The rows in lists of at most 4096 rows or about 4 MiB of values."""
    it = iter(rows)
    while batch := take(it, 4096, 4 << 20):
        yield batch


def _row_error(partition: str, row: Any, code: int) -> Exception:
    """The named error of a refused row (the twins' codes)."""
    if code == 1:
        return UsageError(f"partition {partition!r}: rows are (bytes, bytes) pairs",
                          partition=partition)  # fmt: skip
    key: bytes = row[0]
    if code == 2:
        return FjallRefused(f"partition {partition!r}: a key of {len(key)} bytes (fjall: 1 "
                            "to 65535)", partition=partition, key=key[:64].hex())  # fmt: skip
    if code == 3:
        return FjallRefused(f"partition {partition!r}: a value of {len(row[1])} bytes",
                            partition=partition, key=key.hex())  # fmt: skip
    return FjallRefused(f"partition {partition!r}: rows are not in strictly ascending key "
                        f"order at key {key.hex()}", partition=partition,
                        key=key.hex())  # fmt: skip


@dataclass
class _Segments:
    """lsm-tree's multi-segment writer over a segments folder."""

    folder: str
    next_id: int
    target: int
    config: PartitionConfig
    policy: bloom.Policy | None
    created_at: int | None = None

    def __post_init__(self) -> None:
        self.twin = backend.default()
        self.written: list[Written] = []
        self.rows = self.bytes = 0
        self.last_rows = self.last_bytes = 0
        self._file: Any = None
        self._writer: SegmentWriter | None = None
        self.ended = False

    def _open(self) -> SegmentWriter:
        path = os.path.join(self.folder, str(self.next_id))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        self._file = os.fdopen(fd, "wb", buffering=BUFFER)
        comp = self.config.compression[0]
        self._writer = SegmentWriter(
            self._file, self.next_id, self.twin, data_block_size=self.config.data_block_size,
            index_block_size=self.config.index_block_size, compression=comp,
            bloom_policy=self.policy, created_at=self.created_at, spill_dir=self.folder,
        )  # fmt: skip
        self.next_id += 1
        return self._writer

    def _close(self) -> None:
        assert self._writer is not None
        done = self._writer.finish()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._writer = self._file = None
        if done is None:  # no item: no segment
            os.unlink(os.path.join(self.folder, str(self.next_id - 1)))
            return
        self.written.append(done)

    def write_rows(
        self, partition: str, rows: Iterable[Any], seqno: int, progress: Progress | None
    ) -> None:
        """Write ``rows`` (new, strictly ascending keys) as values at ``seqno``: blocks made
        by the twin, segments rotated where lsm-tree's multi-writer rotates (before a new
        key, once the data blocks reach the target)."""
        self.start_rows(partition, seqno, progress)
        for batch in _batches(rows, self.twin.take):
            self.push(batch)
        self.push(None)

    def start_rows(self, partition: str, seqno: int, progress: Progress | None) -> None:
        """Begin a run of rows pushed with :meth:`push` (the same rows as :meth:`write_rows`
        takes, handed over in lists)."""
        self._run: list[Any] = [partition, seqno, progress, None, []]

    def push(self, batch: list[Any] | None) -> None:
        """The next rows of the run (``None``: the end, the last partial block is written)."""
        partition, seqno, progress, last, pending = self._run
        if self.ended:
            raise FjallRefused(f"partition {partition!r}: rows pushed after its last rows",
                               partition=partition)  # fmt: skip
        hash_fn = xxhash.xxh3_128_digest if self.policy is not None else None
        work = pending + batch if batch is not None else pending
        blocks, consumed, last, error = self.twin.encode_rows(
            work, 0, seqno, self.config.data_block_size, last, batch is None, hash_fn)  # fmt: skip
        done = 0
        while done < len(blocks):
            writer = self._writer
            if writer is None:
                writer = self._open()
            elif writer.data_size >= self.target:
                self._close()
                writer = self._open()
            items = writer.items_written
            done = writer.add_blocks(blocks, done, seqno, self.target)
            self.rows += writer.items_written - items
            self.bytes += writer.run_bytes
        if progress is not None and blocks:
            progress(self.rows, self.bytes)
        if error is not None:
            raise _row_error(partition, work[error[1]], error[0])
        self._run = [partition, seqno, progress, last, work[consumed:]]

    def end(self) -> None:
        """The run's last rows are in: its last block is written and its open segment closed
        (index, filter, fsync) now, not when every partition is finished, so that what an
        open segment holds -- its filter's key hashes, 16 bytes a key, up to the 128 MiB
        ingest target, of which at most ``bloom.SPILL_KEYS`` in memory and the rest in a spill
        file -- is freed before the next table is written."""
        if self.ended:
            return
        self.push(None)
        if self._writer is not None:
            self._close()
        self.ended = True

    def write_items(self, items: Iterable[tuple[bytes, bytes, int, int]]) -> None:
        """One segment of ``items`` (key order, newest version first; a flush writes a
        memtable so, whatever its size): ``last_rows``/``last_bytes`` count them."""
        if self._writer is not None:
            self._close()
        writer = self._open()
        n = size = 0
        for key, value, seqno, vtype in items:
            writer.write(key, value, seqno, vtype)
            n += 1
            size += len(key) + len(value)
        self.last_rows, self.last_bytes = n, size
        self.rows += n
        self.bytes += size
        self._close()

    def finish(self) -> list[Written]:
        if self._writer is not None:
            self._close()
        if self.written:
            _fsync_dir(self.folder)
        return self.written

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.hashes.close()  # its spill file (unnamed: closing frees it)
        if self._file is not None:
            self._file.close()
            self._file = self._writer = None


def _with_end(batches: Iterator[list[Any]]) -> Iterator[list[Any] | None]:
    """The batches, then None (the end: the last partial block is written then)."""
    yield from batches
    yield None


def _bloom_policy(config: PartitionConfig) -> bloom.Policy | None:
    bits = config.bloom_bits_per_key
    return bloom.BitsPerKey(bits) if bits > 0 else None


def _new_partition(folder: str, config: PartitionConfig, ids: list[list[int]]) -> None:
    """The files of a new partition around its segments (already in ``segments/``), its
    ``manifest`` last and atomically: until it exists the directory is no partition (fjall
    removes it, this reader skips it)."""
    _write_file(os.path.join(folder, layout.CONFIG), config.encode())
    _write_file(os.path.join(folder, layout.LEVELS), levels.encode(ids), mode=0o600)
    _fsync_dir(os.path.join(folder, layout.SEGMENTS))
    _fsync_dir(folder)
    manifest = Manifest(0, 0, config.level_count)
    _write_atomic(os.path.join(folder, layout.MANIFEST), manifest.encode())


class Background:
    """``step`` made once: on a thread of its own (:meth:`start`, while the caller goes on)
    or by :meth:`wait` -- which joins that thread and raises what the step met there, in the
    caller's order.  :meth:`join` only waits (before removing what the step writes)."""

    def __init__(self, step: Callable[[], None], name: str) -> None:
        self._step, self._name = step, name
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.done = False

    @property
    def started(self) -> bool:
        return self._thread is not None or self.done

    def _run(self) -> None:
        try:
            self._step()
            self.done = True
        except BaseException as exc:  # raised by wait()
            self._error = exc

    def start(self) -> None:
        if not self.started:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait(self) -> None:
        self.join()
        if self._error is not None:
            raise self._error
        if not self.done:
            self._step()
            self.done = True


class KeyspaceBuilder(Closing):
    """A new keyspace built by pushing rows (the bulk loader of :func:`build_keyspace`, for
    callers whose rows arrive while they are read and checked, table by table).

    ``path`` must not exist; everything is written under a locked temporary sibling
    (``.<name>.fjall-build-*``) until :meth:`commit` renames it into place, so a crash leaves
    no keyspace or the complete one.  Each partition named at the start gets its rows from
    :meth:`push` (strictly ascending keys per partition; partitions may be filled in any
    order, one after another); :meth:`batch` adds journal batches after them (seqnos 1, 2,
    ... above the rows' seqno 0).  :meth:`abort` (or leaving the ``with`` block without
    :meth:`commit`) removes everything.
    """

    def __init__(self, path: str | os.PathLike[str], partitions: Iterable[str], *,
                 config: PartitionConfig = DEFAULT_CONFIG, dir_mode: int | None = None,
                 created_at: int | None = None,
                 progress: Progress | None = None) -> None:  # fmt: skip
        self.target = Path(path)
        if os.path.lexists(self.target) and not _empty_dir(self.target):
            raise FjallRefused(f"{self.target}: already exists; a bulk build makes a new "
                               "keyspace (in an absent or empty directory)",
                               path=str(self.target))  # fmt: skip
        names = list(partitions)
        for name in names:
            if not layout.is_valid_partition_name(name):
                raise UsageError(f"{name!r} is not a Fjall partition name (1-255 of A-Z a-z "
                                 "0-9 _ - . # $)", partition=name)  # fmt: skip
        if config.tree_type != 0 or config.kv_separation is not None:
            raise FjallRefused("this writer makes standard partitions only (no blob trees)")
        self.config, self.dir_mode, self.created_at = config, dir_mode, created_at
        self._progress = progress
        self.parent = self.target.parent if str(self.target.parent) else Path(".")
        prefix = f".{self.target.name}.fjall-build-"
        sweep(self.parent, prefix)
        self._owned = owned_tempdir(self.parent, prefix)
        self.path = self._owned.__enter__()
        self._open = True
        self._writers: dict[str, _Segments] = {}
        self._batches: list[bytes] = []
        self._finishing = Background(self._finish_partitions, "fjall-finish")
        self.report: dict[str, Any] = {"path": str(self.target), "partitions": {}}
        try:
            os.mkdir(self.path / layout.JOURNALS)
            os.mkdir(self.path / layout.PARTITIONS)
            for name in names:
                folder = os.path.join(self.path, layout.PARTITIONS, name, layout.SEGMENTS)
                os.makedirs(folder)
                writer = _Segments(folder, 0, INGEST_TARGET, config, _bloom_policy(config),
                                   created_at)  # fmt: skip
                writer.start_rows(name, 0, self._seen)
                self._writers[name] = writer
        except BaseException:
            self.abort()
            raise

    def _seen(self, _n: int, _b: int) -> None:
        if self._progress is not None:
            self._progress(self.rows, self.key_value_bytes)

    @property
    def rows(self) -> int:
        return sum(w.rows for w in self._writers.values())

    @property
    def key_value_bytes(self) -> int:
        return sum(w.bytes for w in self._writers.values())

    def push(self, partition: str, rows: list[tuple[bytes, bytes]]) -> None:
        """More rows of ``partition`` (keys ascending, above every key pushed before)."""
        if self._finishing.started:
            raise FjallRefused("rows pushed after the build's partitions were finished")
        if rows:
            self._writers[partition].push(rows)

    def end_partition(self, partition: str) -> None:
        """``partition`` has all its rows (see :meth:`_Segments.end`); more are refused."""
        if self._finishing.started:
            raise FjallRefused("rows ended after the build's partitions were finished")
        self._writers[partition].end()

    def batch(self, items: list[BatchItem]) -> int:
        """A journal batch after the rows (a tombstone is ``None``); returns its seqno."""
        encoded = [(p, k, b"" if v is None else v, TOMBSTONE if v is None else VALUE)
                   for p, k, v in items]  # fmt: skip
        for partition, *_ in encoded:
            if partition not in self._writers:
                raise FjallRefused(f"no partition named {partition!r} in this build",
                                   partition=partition)  # fmt: skip
        seqno = len(self._batches) + 1
        self._batches.append(journal.encode_batch(encoded, seqno))
        return seqno

    def finish_rows_in_background(self) -> None:
        """No more rows will be pushed: finish every partition (last blocks, segment files,
        partition files, their fsyncs) on a thread of its own, while the caller goes on
        (e.g. checking what it pushed).  :meth:`commit` waits for it and raises what it
        met; :meth:`abort` waits for it before removing the build."""
        self._finishing.start()

    def _finish_partitions(self) -> None:
        last = min(6, self.config.level_count - 1)
        for name, writer in self._writers.items():
            writer.end()
            written = writer.finish()
            ids: list[list[int]] = [[] for _ in range(self.config.level_count)]
            placed = levels.sort_level([levels.Summary(w.id, w.key_min, w.key_max,
                                                       w.seqno_max) for w in written])
            ids[last] = [s.id for s in placed]
            _new_partition(str(self.path / layout.PARTITIONS / name), self.config, ids)
            self.report["partitions"][name] = {
                "rows": writer.rows, "key_value_bytes": writer.bytes,
                "segments": [w.id for w in written], "level": last if written else None,
                "segment_bytes": sum(w.file_size for w in written),
            }  # fmt: skip

    def commit(self) -> dict[str, Any]:
        """Finish every partition, write the journal, fsync and rename into place."""
        try:
            self._finishing.wait()
            journal0 = str(self.path / layout.JOURNALS / "0")
            data = b"".join(self._batches)
            if len(data) > journal.PRE_ALLOCATED:
                raise FjallRefused("the batches of a bulk build exceed one journal")
            _preallocated_journal(journal0)
            if data:
                fd = os.open(journal0, os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.pwrite(fd, data, 0)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            _write_file(str(self.path / layout.VERSION_FILE), layout.FJL_MAGIC)
            _fsync_dir(self.path / layout.PARTITIONS)
            _fsync_dir(self.path / layout.JOURNALS)
            os.chmod(self.path, 0o777 & ~_umask() if self.dir_mode is None else self.dir_mode)
            self.before_rename(self.path)
            disown(self.path)
            _fsync_dir(self.path)
            os.rename(self.path, self.target)
            self._finish_owned()
            _fsync_dir(self.parent)
        except BaseException:
            self.abort()
            raise
        self.report["rows"] = self.rows
        self.report["key_value_bytes"] = self.key_value_bytes
        if self._progress is not None:
            self._progress(self.rows, self.key_value_bytes)
        return self.report

    def before_rename(self, path: Path) -> None:
        """Called with the finished build just before it is renamed into place (a caller may
        add files of its own there, e.g. bbg's lock file); does nothing here."""

    def _finish_owned(self) -> None:
        if self._open:
            self._open = False
            self._owned.__exit__(None, None, None)

    def abort(self) -> None:
        """Remove the build (idempotent; nothing after :meth:`commit`)."""
        self._finishing.join()  # its files first: nothing is written after rmtree
        for writer in self._writers.values():
            writer.abort()
        if self._open:
            if os.path.lexists(self.path):
                shutil.rmtree(self.path, ignore_errors=True)
            self._finish_owned()

    def close(self) -> None:
        self.abort()


def build_keyspace(
    path: str | os.PathLike[str],
    partitions: Mapping[str, Iterable[tuple[bytes, bytes]]],
    *,
    config: PartitionConfig = DEFAULT_CONFIG,
    progress: Progress | None = None,
    dir_mode: int | None = None,
    created_at: int | None = None,
) -> dict[str, Any]:
    """Create a new keyspace at ``path`` holding ``partitions`` (name -> rows in strictly
    ascending key order), atomically; returns what was written per partition."""
    with KeyspaceBuilder(path, partitions, config=config, dir_mode=dir_mode,
                         created_at=created_at, progress=progress) as builder:  # fmt: skip
        twin = backend.default()
        for name, rows in partitions.items():
            for batch in _batches(rows, twin.take):
                builder.push(name, batch)
        return builder.commit()


def _empty_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink() and not os.listdir(path)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _max_seqno(ks: Keyspace) -> int | None:
    """The highest seqno anywhere in the keyspace (journals, every partition's segments)."""
    found = [j.seqno_max for j in ks.journals if j.seqno_max is not None]
    for name in ks.partitions():
        for _, seg in ks.view(name).segments():
            found.append(seg.meta.seqno_max)
    return max(found) if found else None


BatchItem = tuple[str, bytes, bytes | None]


