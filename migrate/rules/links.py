"""The links between a cell store's tables, checked over any "five sorted tables" source,
streaming.

These are exactly bbg's conversion rules (cyberia-to/bbg
``rs/src/storage/application/validation.rs`` ``validate_links``, ``archive.rs``
``inspect``): contiguous history from index 0, heads that point at the last history entry,
the content of every history commit, request heads that agree with history and are not past
the head, one receipt per history entry.  The **birth rule** (history[ns‖0] = ns) is not one
of them: it belongs to neuron's semantic import of a mapped origin (``engine/src/legacy.rs``);
pass a ``semantic`` list to collect it too, as ``{code, namespace, detail}``.

A source gives ``rows(table)`` — a fresh iterable of ``(key, value)`` in key (memcmp) order
for each application table name — and, ideally, ``get(table, key)`` point lookups.  A source
without ``get`` (e.g. a plain dict of sorted lists) is indexed once into a temporary on-disk
SQLite file, so memory stays bounded either way.  The store adapters are in
:mod:`migrate.store.tables`; a legacy ``cell.redb`` reader can provide the same two methods.

History, heads and requests are all keyed by namespace first, so one merge pass over the
three streams sees each namespace's rows together; state is per namespace only (one 9-byte
slot per history entry of the namespace being checked, and its 32-byte commit for the first
``MAX_KEPT_COMMITS`` entries, so that a request's head is compared without a lookup).

Retention (a store's ``nohistory`` and ``excise``): a source may also offer
``boundary(namespace) -> (first retained index, head just below it) | None`` and
``excised(content_id) -> bool``.  A namespace with a boundary has contiguous history from its
first retained index (its head may be the head just below it, with no entries); its receipts
of dropped entries are kept, unchecked (the history they point into is gone by design).  An
excised content id missing from ``application_content`` is not ``missing-content``.

A source with ``get`` may also offer ``contains(table, key) -> bool`` (the answer of
``get(table, key) is not None``, cheaper): the history commits are looked up in
``application_content`` through it.

Codes (meanings in fixtures/legacy/README.md): ``history-gap``,
``head-mismatch``, ``missing-content``, ``request-head-mismatch``, ``missing-receipt``,
``duplicate-receipt``; rows too malformed to interpret are reported as ``bad-key-length`` /
``bad-value-length`` instead of being skipped silently.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Protocol

from migrate.store.codec import (
    CONTENT,
    HEAD_LEN,
    HEADS,
    HISTORY,
    ID_LEN,
    REQUESTS,
    Head,
    history_key,
)
from migrate.store.scratch import ScratchTables

LinkError = dict[str, str]
_SHAPE_CODES = frozenset({"bad-key-length", "bad-value-length"})
Lookup = Callable[[str, bytes], bytes | None]
_END = b"\xff" * (ID_LEN + 1)  # sorts after every namespace
#: The most history commits of one namespace kept in memory (32 bytes each: 16 MiB).
MAX_KEPT_COMMITS = 1 << 19
_BE = struct.Struct(">Q")  # a history key's index (codec.history_key)
_LE = struct.Struct("<Q")  # a head's index (codec.Head)


class SortedTables(Protocol):
    """Five application tables as sorted row streams."""

    def rows(self, table: str) -> Iterable[tuple[bytes, bytes]]: ...


def validate_links(
    source: SortedTables,
    *,
    report_malformed: bool = True,
    semantic: list[LinkError] | None = None,
) -> list[LinkError]:
    """Every link violation in ``source`` as ``{code, detail}``, in namespace order.

    ``report_malformed=False``: rows of the wrong length are left out of the link checks
    without a report, for callers that run a row-shape check (which reports them) as well.
    ``semantic``: a list that receives the semantic-import findings (``birth-mismatch``).
    """
    return list(
        iter_link_errors(source, report_malformed=report_malformed, semantic=semantic)
    )


def iter_link_errors(
    source: SortedTables,
    *,
    report_malformed: bool = True,
    semantic: list[LinkError] | None = None,
) -> Iterator[LinkError]:
    """Stream the link violations of ``source`` (see the module docstring)."""
    get = getattr(source, "get", None)
    found = semantic if semantic is not None else []
    if get is not None:
        errors = _check(source, get, found, getattr(source, "contains", None))
    else:
        index = _SpillIndex(source, (CONTENT, HISTORY))
        errors = index.wrap(_check(source, index.get, found, None))
    for error in errors:
        if report_malformed or error["code"] not in _SHAPE_CODES:
            yield error


def _err(code: str, detail: str) -> LinkError:
    return {"code": code, "detail": detail}


class _Stream:
    """A peekable stream of (namespace, rest-of-row) from one table, malformed rows reported."""

    def __init__(self, rows: Iterable[tuple[bytes, bytes]], table: str, klen: int, vlen: int):
        self._it = iter(rows)
        self.table, self.klen, self.vlen = table, klen, vlen
        self.errors: list[LinkError] = []
        self.current: tuple[bytes, bytes] | None = None
        self.advance()

    def advance(self) -> None:
        for key, value in self._it:
            if len(key) != self.klen:
                self.errors.append(
                    _err(
                        "bad-key-length",
                        f"{self.table}: key of {len(key)} bytes, expected {self.klen}",
                    )
                )
            elif len(value) != self.vlen:
                self.errors.append(
                    _err(
                        "bad-value-length",
                        f"{self.table}: key {key.hex()} value of {len(value)} bytes, "
                        f"expected {self.vlen}",
                    )
                )
            else:
                self.current = (key, value)
                return
        self.current = None

    @property
    def namespace(self) -> bytes:
        return _END if self.current is None else self.current[0][:ID_LEN]

    def take(self, namespace: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The rows of ``namespace`` (consumed as iterated)."""
        while self.current is not None and self.current[0][:ID_LEN] == namespace:
            row = self.current
            self.advance()
            yield row

    def drain_errors(self) -> Iterator[LinkError]:
        yield from self.errors
        self.errors.clear()


def _check(source: SortedTables, get: Lookup, semantic: list[LinkError],
           contains: Callable[[str, bytes], bool] | None) -> Iterator[LinkError]:  # fmt: skip
    boundary = getattr(source, "boundary", None)
    excised = getattr(source, "excised", None)
    hist = _Stream(source.rows(HISTORY), HISTORY, ID_LEN + 8, ID_LEN)
    heads = _Stream(source.rows(HEADS), HEADS, ID_LEN, HEAD_LEN)
    reqs = _Stream(source.rows(REQUESTS), REQUESTS, 2 * ID_LEN, ID_LEN + HEAD_LEN)
    streams = (hist, heads, reqs)
    if contains is not None:
        has_content: Callable[[bytes], bool] = partial(contains, CONTENT)
    else:
        has_content = partial(_found, get, CONTENT)
    while True:
        for s in streams:
            yield from s.drain_errors()
        ns = min(s.namespace for s in streams)
        if ns == _END:
            return
        head_rows = list(heads.take(ns))  # at most one: heads are keyed by namespace alone
        head_value = head_rows[0][1] if head_rows else None
        bound = boundary(ns) if boundary is not None else None
        yield from _namespace(ns, hist.take(ns), head_value, reqs.take(ns), get, semantic,
                              bound, excised, has_content)  # fmt: skip


def _found(get: Lookup, table: str, key: bytes) -> bool:
    return get(table, key) is not None


def _namespace(
    ns: bytes,
    hist_rows: Iterator[tuple[bytes, bytes]],
    head_value: bytes | None,
    req_rows: Iterator[tuple[bytes, bytes]],
    get: Lookup,
    semantic: list[LinkError],
    bound: tuple[int, Head] | None,
    excised: Callable[[bytes], bool] | None,
    has_content: Callable[[bytes], bool],
) -> Iterator[LinkError]:
    nsx = ns.hex()
    present = array("Q")  # history indices of this namespace, ascending
    # Their commits, in the same order, while the namespace is small enough to keep them
    # (a request's head is then compared without a lookup); past the bound, looked up.
    commits: bytearray | None = bytearray()
    expect = 0 if bound is None else bound[0]
    last: Head | None = None if bound is None else bound[1]
    index = -1
    commit = b""
    for key, commit in hist_rows:
        index = _BE.unpack_from(key, ID_LEN)[0]  # the key's length was checked by the stream
        if index != expect:
            yield _err(
                "history-gap",
                f"namespace {nsx}: history index {expect} missing (next present {index})",
            )
        if index == 0 and commit != ns:
            # neuron's semantic import only (engine/src/legacy.rs): not a conversion error.
            semantic.append(
                {
                    "code": "birth-mismatch",
                    "namespace": nsx,
                    "detail": f"namespace {nsx}: index-0 commit {commit.hex()} != namespace",
                }
            )
        if not has_content(commit) and not (excised is not None and excised(commit)):
            yield _err(
                "missing-content",
                f"namespace {nsx} index {index}: commit {commit.hex()} not in application_content",
            )
        present.append(index)
        if commits is not None:
            commits += commit
            if len(present) > MAX_KEPT_COMMITS:
                commits = None
        expect = index + 1
    if index >= 0:
        last = Head(index, commit)

    head = None if head_value is None else Head.decode(head_value)
    if head is None and last is not None:
        yield _err("head-mismatch", f"namespace {nsx}: history without head")
    elif head is None and bound is not None:
        yield _err("head-mismatch", f"namespace {nsx}: a retained boundary but no head")
    elif head is not None and head != last:
        # bbg: the head must equal history[ns‖head.index] and no entry may lie past it.
        top = "no history" if last is None else f"the last history index is {last.index}"
        yield _err(
            "head-mismatch",
            f"namespace {nsx}: head {head.describe()} disagrees with history ({top})",
        )

    counts = bytearray(len(present))  # receipts per history entry, saturating at 255
    for key, value in req_rows:
        # fingerprint ‖ head (index u64 LE ‖ commit): the length was checked by the stream.
        rindex = _LE.unpack_from(value, ID_LEN)[0]
        if bound is not None and rindex < bound[0]:
            continue  # a receipt of a dropped entry: kept resolvable, its history is gone
        rcommit = bytes(value[ID_LEN + 8 :])
        pos = bisect.bisect_left(present, rindex)
        found = pos < len(present) and present[pos] == rindex
        actual: bytes | bytearray | None
        if not found:
            actual = None
        elif commits is not None:
            actual = commits[ID_LEN * pos : ID_LEN * (pos + 1)]
        else:
            actual = get(HISTORY, history_key(ns, rindex))
        if actual == rcommit and head is not None and rindex <= head.index:
            if found and counts[pos] < 255:
                counts[pos] += 1
            continue
        request = key[ID_LEN:].hex()
        rhead = Head(rindex, rcommit)
        # bbg also requires the namespace to have a head (the request's head is compared
        # with it); without one, the receipt cannot agree with the namespace's history.
        if actual != rcommit or head is None:
            shown = "absent" if actual is None else bytes(actual).hex()
            yield _err(
                "request-head-mismatch",
                f"request {request}: head {rhead.describe()} disagrees with "
                f"history[ns‖{rhead.index}] = {shown}",
            )
        elif head is not None and rhead.index > head.index:
            yield _err(
                "request-head-mismatch",
                f"request {request}: head {rhead.describe()} is past the namespace head "
                f"{head.describe()}",
            )
        if found and counts[pos] < 255:
            counts[pos] += 1
    for pos, n in enumerate(counts):
        if n == 0:
            yield _err(
                "missing-receipt", f"namespace {nsx} index {present[pos]}: no request receipt"
            )
        elif n > 1:
            more = "+" if n == 255 else ""
            yield _err(
                "duplicate-receipt",
                f"namespace {nsx} index {present[pos]}: {n}{more} receipts",
            )


class _SpillIndex:
    """Point lookups for a source without ``get``: its tables copied to a temporary file
    (:class:`migrate.store.scratch.ScratchTables`), built when the check starts."""

    def __init__(self, source: SortedTables, tables: tuple[str, ...]) -> None:
        self._source, self._tables = source, tables
        self._index: ScratchTables | None = None

    def wrap(self, inner: Iterator[LinkError]) -> Iterator[LinkError]:
        """Run ``inner`` with the index built, and remove the index when it ends."""
        with ScratchTables(((t, self._source.rows(t)) for t in self._tables),
                           prefix="bbg-links-") as self._index:  # fmt: skip
            yield from inner

    def get(self, table: str, key: bytes) -> bytes | None:
        assert self._index is not None
        return self._index.get(table, key)
