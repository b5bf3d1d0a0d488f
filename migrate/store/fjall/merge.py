"""Merging the sources of a partition (journal entries, segments) into its rows.

lsm-tree's reads see, for each key, the version with the highest seqno (its merge orders
entries by key, then seqno descending: ``src/key.rs`` ``Ord for InternalKey``,
``src/merge.rs``, ``src/mvcc_stream.rs``); a tombstone or weak tombstone as that version
hides the key.  Two entries of one key with the same seqno only occur when a sealed
journal is replayed over the segment its data was flushed into (same bytes); the journal
entry is taken first, then lower levels before deeper ones.

A *source* is an iterator of runs (lists) of entries ``(key, value, seqno, type, ...)``
already in merge order.  Sources are merged run by run: the source with the smallest head
gives every entry whose key is below the next source's head in one step, so merging a
partition whose sources do not interleave costs one comparison per run, not per entry.
Memory: one run (a block's items) per source.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

Entry = tuple[Any, ...]  # (key, value, seqno, type, ...)
Source = Iterator[list[Entry]]


def _runs(source: Source) -> Iterator[list[Entry]]:
    for run in source:
        if run:
            yield run


def merged(sources: list[Source]) -> Iterator[list[Entry]]:
    """The entries of all ``sources`` in merge order (key ascending, seqno descending,
    earlier source first on ties), in runs."""
    live = [_runs(s) for s in sources]
    if len(live) == 1:
        yield from live[0]
        return
    heap: list[tuple[bytes, int, int, int, list[Entry]]] = []
    for rank, src in enumerate(live):
        run = next(src, None)
        if run is not None:
            heap.append((run[0][0], -run[0][2], rank, 0, run))
    heapq.heapify(heap)
    while heap:
        _key, _neg, rank, pos, run = heapq.heappop(heap)
        if not heap:
            yield run[pos:] if pos else run
            yield from live[rank]
            return
        bound_key, bound_neg, bound_rank = heap[0][0], heap[0][1], heap[0][2]
        if run[-1][0] < bound_key:
            end = len(run)
        else:
            end = bisect_left(run, bound_key, pos, key=lambda e: e[0])
            # entries of the bound key itself that still come first
            while end < len(run) and run[end][0] == bound_key and (
                -run[end][2], rank) < (bound_neg, bound_rank):  # fmt: skip
                end += 1
            if end == pos:
                end = pos + 1  # the head itself is the smallest entry
        yield run[pos:end] if pos or end < len(run) else run
        if end < len(run):
            heapq.heappush(heap, (run[end][0], -run[end][2], rank, end, run))
        else:
            nxt = next(live[rank], None)
            if nxt is not None:
                heapq.heappush(heap, (nxt[0][0], -nxt[0][2], rank, 0, nxt))


def newest(runs: Iterator[list[Entry]]) -> Iterator[list[Entry]]:
    """The first (newest) entry of each key, tombstones included, in runs."""
    last: bytes | None = None
    for run in runs:
        out = []
        for entry in run:
            if entry[0] != last:
                last = entry[0]
                out.append(entry)
        if out:
            yield out


def live_rows(
    runs: Iterator[list[Entry]],
    live: Callable[[list[Any], bytes | None], tuple[list[tuple[bytes, bytes]], bytes | None]],
) -> Iterator[list[tuple[bytes, bytes]]]:
    """The live ``(key, value)`` rows of merged runs (``live``: the twin's filter)."""
    last: bytes | None = None
    for run in runs:
        rows, last = live(run, last)
        if rows:
            yield rows


def clip(
    runs: Iterator[list[Entry]], start: bytes | None, after: bytes | None, stop: bytes | None
) -> Iterator[list[Entry]]:
    """Only entries with ``start <= key``, ``key > after`` and ``key < stop`` (each bound
    optional); stops reading once a key reaches ``stop``."""
    for run in runs:
        lo = 0
        if start is not None and run[0][0] < start:
            lo = bisect_left(run, start, key=lambda e: e[0])
        if after is not None and lo < len(run) and run[lo][0] <= after:
            lo = bisect_left(run, after, lo, key=lambda e: e[0])
            while lo < len(run) and run[lo][0] == after:
                lo += 1
        hi = len(run)
        done = False
        if stop is not None and run[-1][0] >= stop:
            hi = bisect_left(run, stop, lo, key=lambda e: e[0])
            done = True
        if lo < hi:
            yield run[lo:hi] if lo or hi < len(run) else run
        if done:
            return


def prefix_end(prefix: bytes) -> bytes | None:
    """The first key after every key starting with ``prefix`` (None: no such key)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))
