"""New segments for an existing BBG database, written aside while the checking pass reads the
source, and published into the keyspace in one step (``run`` into a store that holds history).

* **Written aside.**  Each of the five tables' rows go, as the pass reads them, into segment
  files in a locked temporary sibling of the store (``.<store>.bbg-segments-*``, one folder per
  partition, :func:`bbg_core.files.owned_tempdir`): lsm-tree's writer with the partition's own
  config, ids from the partition's first free id, every item at the keyspace's next seqno --
  what :meth:`~migrate.store.fjall.session.KeyspaceWriter.publish` writes.  Nothing in the
  store changes: an invalid source, a conflict or a crash leaves it as it was (a killed run's
  folder is swept by the next one).  The writer session (``bbg.lock`` and this toolkit's lock
  on the keyspace) is held from before the first segment to the publication, so no other
  writer moves the keyspace meanwhile.
* **Checked against what the store holds.**  The same pass compares each table's rows with
  the store's live rows of that partition (:class:`_Existing`: a scan merged alongside, which
  seeks past the store's rows between new keys, or bloom-checked point reads where the store
  is dense in a batch's range -- so a small import into a big store does not read the store
  whole): a key the store holds
  with the same bytes is not new (the receipt's ``new_rows`` are the staged path's
  :func:`~migrate.store.imports.plan_activation` counts), one with other bytes is a conflict
  (:attr:`AsideSegments.conflict`; the caller leaves it to the staged path, which refuses it).
* **Published** (:meth:`AsideSegments.publish`, under the import's guard, which the caller
  takes first): the ids are claimed; rows of the five partitions that live only in journals
  are flushed first (as :meth:`~migrate.store.keyspace_store.FjallStore.publish_bulk` does);
  then per partition the files are renamed in and its ``levels`` swapped
  (:meth:`~migrate.store.fjall.session.KeyspaceWriter.adopt`).  A crash between two
  partitions leaves some published, under the guard (bbg refuses the store); the rerun of the
  same import publishes every table again (the same bytes at a newer seqno).
"""

from __future__ import annotations

import os
import shutil
from bisect import bisect_left
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

from bbg_core.closing import Closing
from bbg_core.files import owned_tempdir, sweep
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.connection import CommitHook
from migrate.store.fjall.reader import Keyspace
from migrate.store.fjall.session import KeyspaceWriter
from migrate.store.fjall.writer import Background, _bloom_policy, _Segments

_KEY = itemgetter(0)


class _Existing:
    """The store's live rows of one partition, compared with the new rows as they pass.

    The store can hold far more rows than an import brings, so its rows are not walked one
    by one, nor all read.  Each batch of new rows is either

    * **looked up**, when the store holds more than :data:`DENSE` rows per new row in the
      batch's key range (:meth:`~migrate.store.fjall.reader.Keyspace.rows_between`, from the
      block indexes: keys spread over the store's whole range, as content ids are): each new
      key is a point read (:meth:`~migrate.store.fjall.reader.Keyspace.get`), which asks each
      segment's bloom filter before it reads a block -- a key the store lacks costs a hash
      and a few bit tests per segment, not the decoding of the rows around it;
    * or **merged**: the store is scanned in runs (lists the block decoder returns)
      alongside the new rows, and each new key is looked for in the current run by
      bisection, so the cost is the new rows plus the decoding of the store's rows in their
      range; when :data:`SKIP_RUNS` runs in a row held no new key, the scan starts again at
      the next new key (a namespace the store does not hold costs a seek, not the reading of
      its neighbours).

    Each gives the same answer: a key the store holds with the same bytes is not new, one it
    holds with other bytes is a conflict (the first such key in key order is kept).
    """

    SKIP_RUNS = 2
    #: Store rows per new row above which point reads cost less than decoding the rows
    #: (measured on content ids into a store of 200,000 rows: a point read of an absent key
    #: some 4.6 us, a merge 1 us per store row decoded; a held key's point read decodes its
    #: block, which the next key's often shares).
    DENSE = 8

    def __init__(self, snapshot: Keyspace | None, table: str) -> None:
        self._snapshot, self._table = snapshot, table
        self._runs: Iterator[list[tuple[bytes, bytes]]] | None = None
        self._run: list[tuple[bytes, bytes]] = []
        self._pos = 0
        self._ended = False
        self.new = 0
        self.conflict: bytes | None = None
        #: Store rows decoded by scans, new rows seen, new rows looked up and scans started
        #: (for tests).
        self.read, self.seen, self.looked_up, self.scans = 0, 0, 0, 0

    def _scan_from(self, key: bytes) -> None:
        assert self._snapshot is not None
        self.scans += 1
        self._runs = self._snapshot.scan_runs(self._table, start=key)
        self._run, self._pos = [], 0

    def merge(self, batch: list[tuple[bytes, bytes]]) -> None:
        """Count the rows of ``batch`` (ascending keys, above the previous batch's) the store
        does not hold; note the first key it holds with other bytes."""
        self.seen += len(batch)
        if self._snapshot is None or self._ended:  # nothing (more) in the store
            self.new += len(batch)
        elif self._sparse(batch):
            self._runs, self._run = None, []  # a later merge scans again from its batch
            self.looked_up += len(batch)
            self._look_up(batch)
        else:
            self._merge(batch)

    def _sparse(self, batch: list[tuple[bytes, bytes]]) -> bool:
        """Whether the store holds over :data:`DENSE` rows per new row in ``batch``'s range
        (not when the current run already reaches past it: those rows are decoded)."""
        assert self._snapshot is not None
        low, high = batch[0][0], batch[-1][0]
        if self._run and high <= self._run[-1][0]:
            return False
        held = self._snapshot.rows_between(self._table, low, high)
        return held > self.DENSE * len(batch)

    def _found(self, key: bytes, value: bytes, held: bytes) -> None:
        if value != held and self.conflict is None:
            self.conflict = key

    def _look_up(self, batch: list[tuple[bytes, bytes]]) -> None:
        assert self._snapshot is not None
        get, table, found = self._snapshot.get, self._table, 0
        for key, value in batch:
            held = get(table, key)
            if held is not None:
                found += 1
                self._found(key, value, held)
        self.new += len(batch) - found

    def _merge(self, batch: list[tuple[bytes, bytes]]) -> None:
        if self._runs is None:
            self._scan_from(batch[0][0])
        run, pos, found = self._run, self._pos, 0
        for key, value in batch:
            if self._ended:
                break
            skipped = 0
            while self._runs is not None and (not run or run[-1][0] < key):
                if run:  # a whole run below the key: none of the new keys
                    skipped += 1
                    if skipped > self.SKIP_RUNS:
                        self._scan_from(key)
                        skipped, run = 0, []
                        continue
                got = next(self._runs, None)
                if got is None:  # the store holds no key from here on
                    self._runs, self._ended = None, True
                    break
                run, pos = got, 0
                self.read += len(run)
            if self._ended:
                break
            pos = bisect_left(run, key, pos, key=_KEY)
            if pos < len(run) and run[pos][0] == key:
                found += 1
                self._found(key, value, run[pos][1])
        self._run, self._pos = run, pos
        self.new += len(batch) - found


class AsideSegments(Closing):
    """The five tables' new segments for the keyspace of ``session`` (module docstring)."""

    def __init__(self, directory: Path, session: KeyspaceWriter, snapshot: Keyspace) -> None:
        self.directory = directory
        self.session = session
        self.seqno = session.next_seqno
        parent = directory.parent if str(directory.parent) else Path(".")
        prefix = f".{directory.name}.bbg-segments-"
        sweep(parent, prefix)
        self._owned = owned_tempdir(parent, prefix)
        self.path = self._owned.__enter__()
        self._open = True
        self._writers: dict[str, _Segments] = {}
        self._existing: dict[str, _Existing] = {}
        self._finishing = Background(self._finish, "aside-finish")
        try:
            parts = set(snapshot.partitions())
            for table in ARCHIVE_ORDER:
                config = snapshot.view(table).config
                folder = self.path / table
                os.mkdir(folder)
                writer = _Segments(str(folder), session.first_free_id(table),
                                   config.compaction_target_size, config, _bloom_policy(config))
                writer.start_rows(table, self.seqno, None)
                self._writers[table] = writer
                self._existing[table] = _Existing(snapshot if table in parts else None, table)
        except BaseException:
            self.discard()
            raise

    # -- the pass --------------------------------------------------------------------------

    def push(self, table: str, rows: list[tuple[bytes, bytes]]) -> None:
        """More rows of ``table`` (ascending keys, above every key pushed before)."""
        if rows:
            self._existing[table].merge(rows)
            self._writers[table].push(rows)

    def end_partition(self, table: str) -> None:
        """``table`` has all its rows: its open segment is closed now (frees its filter)."""
        self._writers[table].end()

    def finish_rows_in_background(self) -> None:
        """No more rows: the last blocks and the fsyncs on a thread of their own while the
        caller checks the links; :meth:`publish` waits for it."""
        self._finishing.start()

    def _finish(self) -> None:
        for writer in self._writers.values():
            writer.end()
            writer.finish()

    def wait(self) -> None:
        """Every segment written and fsynced (raises what finishing them met)."""
        self._finishing.wait()

    @property
    def new_rows(self) -> dict[str, int]:
        """Per table, the rows the store does not hold yet."""
        return {table: e.new for table, e in self._existing.items()}

    @property
    def conflict(self) -> tuple[str, bytes] | None:
        """The first ``(table, key)`` the store holds with other bytes, or None."""
        for table, e in self._existing.items():
            if e.conflict is not None:
                return table, e.conflict
        return None

    # -- publication -------------------------------------------------------------------------

    def publish(self, hook: CommitHook | None = None) -> dict[str, Any]:
        """Into the keyspace (module docstring); ``hook`` (fault injection, as
        ``Connection.commit_hook``) is called with ``"after"`` after each level swap."""
        self.wait()
        session = self.session
        written = {t: w.written for t, w in self._writers.items()}
        for table, segs in written.items():
            session.claim(table, [w.id for w in segs])
        if any(session.state()["partitions"].get(t, {}).get("journal_items") for t in written):
            session.flush()
        report: dict[str, Any] = {"seqno": self.seqno, "partitions": {}}
        for table, segs in written.items():
            ids = session.adopt(table, str(self.path / table), segs, self.seqno)
            report["partitions"][table] = ids
            if hook is not None and ids:
                hook("after")
        self.discard()
        return report

    def discard(self) -> None:
        """Remove what is not published (idempotent)."""
        self._finishing.join()  # its files first: nothing is written after rmtree
        for writer in self._writers.values():
            writer.abort()
        if self._open:
            self._open = False
            try:
                shutil.rmtree(self.path, ignore_errors=True)
            finally:
                self._owned.__exit__(None, None, None)

    def close(self) -> None:
        self.discard()


__all__ = ["AsideSegments"]
