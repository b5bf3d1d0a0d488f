"""``tail`` on a Fjall store (the real BBG database): event/1 from the keyspace's batches.

A Fjall keyspace numbers its write batches (seqnos 0, 1, 2 ...) and every row keeps the seqno
of the batch that wrote it, through flushes and compactions: lsm-tree 2.10.4 rewrites each
item it keeps as it is (``src/compaction/worker.rs``: the merged items go to the segment
writer unchanged; ``src/compaction/stream.rs`` ``CompactionStream`` only drops *older
versions* of a key below the GC watermark, and tombstones written into the last level;
fjall-rs/lsm-tree tag 2.10.4, commit e8b0a5294438185fb01eee66ef2f7a3d1201c72c).  So the newest
version of a key is never renumbered; only overwritten or removed keys lose their past.

**Transactions.**  One batch is one transaction: ``tx`` = seqno + 1 (event/1's ``tx`` starts
at 1; a store this toolkit built in bulk holds its rows at seqno 0, i.e. tx 1, its creation),
``at`` = 0 (Fjall keeps no time per batch; 0 says "unknown", it is no time).  ``--since TX``
emits the batches with seqno >= TX.  Within one batch the events follow event/1's order:

1. commit events, one per ``application_history`` row of the batch, in key order (namespace,
   then index): its receipt (``application_requests``, same namespace, same head), its content
   row and the history entry below it (the retracted head) are read wherever they are;
2. rows events: the batch's ``application_content`` rows that are not the commit of one of
   its history entries, then its ``application_unique_claims`` rows (event/1's grouping);
3. fence events (``bbg_import_v1["neuron-fence\\0" ‖ namespace]``, key order), then a
   generation event if the batch wrote ``bbg_import_v1["status"]``.

The stream is derived from the newest version of each row, so it is the same before and after
a flush or a compaction.  What stays stable for good: every write-once row (history, receipts,
content, claims, fences -- bbg never rewrites them).  What does not: ``status`` is rewritten by
later batches, and its generation event moves to the newest one; a removed row (bbg's own
deletions) leaves the batch that wrote it.  Import receipts are the toolkit's records, not
keyspace rows: no import events on Fjall.

**Memory.**  A census pass counts rows and bytes per seqno (one entry per batch).  Batches are
then read in windows of consecutive seqnos holding at most :data:`WINDOW_ROWS` rows and
:data:`WINDOW_BYTES` of values, one scan per window (segments wholly below the window are
not read).  A batch larger than a window on its own (a bulk build, a bulk publication) is
streamed in key order, holding the ids of its commits (32 bytes each) and the receipts of one
namespace at a time.  Commit ids are random, so the content rows of :data:`CHUNK` history
entries at a time are read together in key order (at most :data:`WINDOW_BYTES` of values
kept): reading them in history order would decode an index block per lookup.  Time: one
scan per window, plus for a streamed batch about one pass over its content partition's
blocks per chunk.  Measured (C twin, one core, one bulk batch + 2,000 one-row batches,
100-byte contents): 300,000 commits in 25-29 s, at most 99 MiB resident; ``--since`` past
the bulk batch 0.1 s.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from bbg_core.errors import ValidationFailed
from fences import generations
from migrate.share.common import damaged_reads
from migrate.share.events import (
    Event,
    commit_event,
    grouped_rows_events,
    meta_event,
)
from migrate.store import bbgdb
from migrate.store.codec import (
    CLAIMS,
    CONTENT,
    HISTORY,
    REQUESTS,
    Head,
    history_key,
    split_history_key,
    split_request_value,
)
from migrate.store.keyspace import FENCE_PREFIX, FENCE_VALUE_LEN, FjallView, decode_status
from migrate.store.readonly import open_readonly

WINDOW_ROWS = 65536
WINDOW_BYTES = 64 * 1024 * 1024
#: History entries whose content rows are read together, in key order.
CHUNK = 32768
#: The partitions events are read from.
PARTS = (HISTORY, REQUESTS, CONTENT, CLAIMS, bbgdb.MIGRATION)

Rows = Callable[[str, bytes], Iterator[tuple[bytes, bytes]]]


def census(view: FjallView, min_seqno: int = 0) -> dict[int, list[int]]:
    """seqno -> [rows, value bytes] of the event partitions' live rows, seqno >= min_seqno."""
    out: dict[int, list[int]] = {}
    for table in PARTS:
        for _key, value, seqno in view.versions(table, min_seqno=min_seqno):
            slot = out.setdefault(seqno, [0, 0])
            slot[0] += 1
            slot[1] += len(value)
    return out


def windows(counts: dict[int, list[int]]) -> Iterator[tuple[list[int], bool]]:
    """The seqnos in ascending order, cut into windows; ``True``: one batch streamed alone."""
    window: list[int] = []
    rows = size = 0
    for seqno in sorted(counts):
        n, b = counts[seqno]
        if n > WINDOW_ROWS or b > WINDOW_BYTES:
            if window:
                yield window, False
                window, rows, size = [], 0, 0
            yield [seqno], True
            continue
        if window and (rows + n > WINDOW_ROWS or size + b > WINDOW_BYTES):
            yield window, False
            window, rows, size = [], 0, 0
        window.append(seqno)
        rows, size = rows + n, size + b
    if window:
        yield window, False


def _buffered(view: FjallView, seqnos: list[int]) -> dict[int, dict[str, list[Any]]]:
    wanted = set(seqnos)
    out: dict[int, dict[str, list[Any]]] = {s: {t: [] for t in PARTS} for s in seqnos}
    for table in PARTS:
        for key, value, seqno in view.versions(table, min_seqno=seqnos[0]):
            if seqno in wanted:
                out[seqno][table].append((key, value))
    return out


def _from_lists(tables: dict[str, list[Any]]) -> Rows:
    def rows(table: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        items = tables[table]
        pos = bisect_left(items, prefix, key=lambda r: r[0]) if prefix else 0
        while pos < len(items) and items[pos][0].startswith(prefix):
            yield items[pos]
            pos += 1

    return rows


def _streamed(view: FjallView, seqno: int) -> Rows:
    def rows(table: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        for key, value, s in view.versions(table, prefix=prefix, min_seqno=seqno):
            if s == seqno:
                yield key, value

    return rows


def _broken(view: FjallView, detail: str) -> ValidationFailed:
    return ValidationFailed(
        f"{view.path}: cannot derive events: {detail}; run doctor",
        path=str(view.path), errors=[{"code": "request-head-mismatch", "detail": detail}],
    )  # fmt: skip


def _receipts(view: FjallView, rows: Rows, ns: bytes) -> dict[int, tuple[bytes, bytes, Head]]:
    """index -> (request, fingerprint, head) of ``ns``'s receipts in this batch."""
    out = {}
    for key, value in rows(REQUESTS, ns):
        fp, head = split_request_value(value)
        out[head.index] = (key[32:], fp, head)
    return out


def _entries(view: FjallView, rows: Rows) -> Iterator[tuple[bytes, Head, Head | None, bytes,
                                                           bytes]]:  # fmt: skip
    """``(namespace, head, previous head, request, fingerprint)`` of the batch's history rows."""
    ns_now: bytes | None = None
    receipts: dict[int, tuple[bytes, bytes, Head]] = {}
    everywhere = False
    prev: Head | None = None
    for key, value in rows(HISTORY, b""):
        ns, index = split_history_key(key)
        head = Head(index, value)
        if ns != ns_now:
            ns_now, everywhere, prev = ns, False, None
            receipts = _receipts(view, rows, ns)
        found = receipts.get(index)
        if found is None and not everywhere:  # its receipt came in another batch
            everywhere = True
            receipts = _receipts(view, lambda t, p: view.live_rows(t, prefix=p), ns)
            found = receipts.get(index)
        if found is None:
            raise _broken(view, f"namespace {ns.hex()} index {index}: no receipt")
        request, fp, rhead = found
        if rhead != head:
            raise _broken(view, f"namespace {ns.hex()} index {index}: receipt head "
                          f"{rhead.describe()} is not history {head.describe()}")  # fmt: skip
        if prev is None or prev.index != index - 1:
            below = view.live_get(HISTORY, history_key(ns, index - 1)) if index else None
            prev = None if below is None else Head(index - 1, below)
        yield ns, head, prev, request, fp
        prev = head


def _contents(view: FjallView, cids: list[bytes]) -> dict[bytes, bytes]:
    """The content rows of ``cids`` read in key order (commit ids are random: read one by
    one in history order, every lookup would decode another index block), until their values
    reach :data:`WINDOW_BYTES`; the rest are read when their event is made."""
    out: dict[bytes, bytes] = {}
    size = 0
    for cid in sorted(set(cids)):
        value = view.live_get(CONTENT, cid)
        if value is None:
            break
        out[cid] = value
        size += len(value)
        if size >= WINDOW_BYTES:
            break
    return out


def _commit_events(view: FjallView, rows: Rows, commits: set[bytes]) -> Iterator[Event]:
    entries = _entries(view, rows)
    while chunk := list(islice(entries, CHUNK)):
        found = _contents(view, [e[1].commit for e in chunk])
        for ns, head, prev, request, fp in chunk:
            content = found.pop(head.commit, None)
            if content is None:
                content = view.live_get(CONTENT, head.commit)
            if content is None:
                raise _broken(view, f"commit {head.commit.hex()} has no content")
            commits.add(head.commit)
            yield commit_event(ns, head, prev, request, fp, content)


def _meta_events(view: FjallView, rows: Rows) -> Iterator[Event]:
    for key, value in rows(bbgdb.MIGRATION, FENCE_PREFIX):
        ns = key[len(FENCE_PREFIX):]
        record = view.fence_record(ns) or {}
        bbg_value = value.hex() if len(value) == FENCE_VALUE_LEN else ""  # subject ‖ manifest
        yield meta_event({"kind": "fence", "namespace": ns.hex(),
                          "import_id": record.get("import_id") or record.get("manifest") or "",
                          "reason": record.get("reason") or "", "value": bbg_value})  # fmt: skip
    for key, value in rows(bbgdb.MIGRATION, bbgdb.STATUS):
        if key == bbgdb.STATUS:
            marker = decode_status(value) or ""
            yield meta_event({"kind": "generation", "status": marker,
                              "generation": generations.generation_of(marker) or marker})


def batch_events(view: FjallView, rows: Rows) -> Iterator[Event]:
    """The events of one batch whose rows ``rows(table, prefix)`` gives, in key order."""
    commits: set[bytes] = set()
    yield from _commit_events(view, rows, commits)
    yield from grouped_rows_events(
        CONTENT, ((k, v) for k, v in rows(CONTENT, b"") if k not in commits))
    yield from grouped_rows_events(CLAIMS, rows(CLAIMS, b""))
    yield from _meta_events(view, rows)


def iter_batches(view: FjallView, since: int = 0) -> Iterator[tuple[int, Iterator[Event]]]:
    """``(tx, its events)`` of every batch with tx > ``since`` (seqno >= since), in order."""
    for seqnos, alone in windows(census(view, since)):
        if alone:
            yield seqnos[0] + 1, batch_events(view, _streamed(view, seqnos[0]))
            continue
        buffered = _buffered(view, seqnos)
        for seqno in seqnos:
            yield seqno + 1, batch_events(view, _from_lists(buffered.pop(seqno)))


def view_events(view: FjallView, since: int = 0, skip: int = 0) -> Iterator[Event]:
    """The events of the batches after tx ``since`` (``skip``: leave out the first ``skip``
    events of tx ``since + 1``), each stamped with its ``tx`` and ``at`` 0."""
    generations.require_readable(view)
    for tx, events in iter_batches(view, since):
        if tx != since + 1:
            skip = 0
        for event in events:
            if skip:
                skip -= 1
                continue
            yield {**event, "tx": tx, "at": 0}
        skip = 0


def tail(store_dir: Path, since: int = 0, skip: int = 0) -> Iterator[Event]:
    """The events of the Fjall store in ``store_dir`` from one snapshot of its keyspace."""
    with open_readonly(store_dir) as view, damaged_reads(Path(store_dir)):
        assert isinstance(view, FjallView)
        yield from view_events(view, since, skip)


def follow(
    store_dir: Path, since: int = 0, *, skip: int = 0, poll: float = 0.5,
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[Event]:
    """The events after tx ``since``, then those of every batch written later: each poll
    takes a new snapshot of the keyspace (no lock; the owner may write, rotate its journal,
    flush or compact meanwhile) and emits the batches above the last one emitted.  A batch
    is complete in a snapshot or absent (fjall's journal batches are atomic and written in
    seqno order; a flush or compaction keeps every seqno), so none is missed or repeated."""
    last, first = since, True
    while True:
        with open_readonly(store_dir) as view, damaged_reads(Path(store_dir)):
            assert isinstance(view, FjallView)
            if first:
                generations.require_readable(view)
            for tx, events in iter_batches(view, last):
                for event in events:
                    if skip and tx == since + 1:
                        skip -= 1
                        continue
                    yield {**event, "tx": tx, "at": 0}
                skip, last = 0, tx
        first = False
        if stop():
            return
        time.sleep(poll)
