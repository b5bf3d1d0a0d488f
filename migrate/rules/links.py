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
``application_content`` through it; and with it ``missing(table, keys) -> positions`` (of the
keys ``contains`` denies, in order), asked a list of commits at a time.

The rows are read in the source's lists (``row_batches``, :func:`migrate.rules.shape.row_batches`)
and each namespace's rows are checked a list at a time where they are the usual kind
(well-formed, in key order, history without a gap, receipts that agree); every other row is
checked alone, by the rules as written (:class:`~migrate.rules.link_namespace.NamespaceCheck`).
``by_rows=True`` checks every row alone: the findings are the same, in the same order.

Codes (meanings in fixtures/legacy/README.md): ``history-gap``,
``head-mismatch``, ``missing-content``, ``request-head-mismatch``, ``missing-receipt``,
``duplicate-receipt``; rows too malformed to interpret are reported as ``bad-key-length`` /
``bad-value-length`` instead of being skipped silently.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice
from operator import itemgetter, le
from typing import Protocol

from migrate.rules.link_ahead import Ahead, Answer, absent_in, answered
from migrate.rules.link_namespace import (
    Absent,
    LinkError,
    Lookup,
    NamespaceCheck,
    absent_by_rows,
)
from migrate.rules.link_namespace import err as _err
from migrate.rules.shape import row_batches
from migrate.store.codec import CONTENT, HEAD_LEN, HEADS, HISTORY, ID_LEN, REQUESTS
from migrate.store.scratch import ScratchTables

_SHAPE_CODES = frozenset({"bad-key-length", "bad-value-length"})
_END = b"\xff" * (ID_LEN + 1)  # sorts after every namespace
#: The most history commits of one namespace kept in memory (32 bytes each: 16 MiB).
MAX_KEPT_COMMITS = 1 << 19
_first = itemgetter(0)
_second = itemgetter(1)


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
    by_rows: bool = False,
) -> Iterator[LinkError]:
    """Stream the link violations of ``source`` (see the module docstring).

    ``by_rows``: work every row alone (the rules as written) instead of a list of rows at a
    time; the findings are the same, in the same order (the tests compare the two)."""
    get = getattr(source, "get", None)
    found = semantic if semantic is not None else []
    if get is not None:
        errors = _check(source, get, found, getattr(source, "contains", None), by_rows)
    else:
        index = _SpillIndex(source, (CONTENT, HISTORY))
        errors = index.wrap(_check(source, index.get, found, None, by_rows))
    for error in errors:
        if report_malformed or error["code"] not in _SHAPE_CODES:
            yield error


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
            if self._valid(key, value):
                self.current = (key, value)
                return
        self.current = None

    def _valid(self, key: bytes, value: bytes) -> bool:
        """Whether a row has the table's lengths; its report when it has not."""
        if len(key) != self.klen:
            detail = f"{self.table}: key of {len(key)} bytes, expected {self.klen}"
            self.errors.append(_err("bad-key-length", detail))
            return False
        if len(value) != self.vlen:
            self.errors.append(
                _err(
                    "bad-value-length",
                    f"{self.table}: key {key.hex()} value of {len(value)} bytes, "
                    f"expected {self.vlen}",
                )
            )
            return False
        return True

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


class _Lists(_Stream):
    """:class:`_Stream` over the source's lists of rows, the rows of a namespace taken a
    list at a time.  A list whose rows all have the table's lengths, are ``bytes`` and are in
    key order is cut at the namespace's end with one bisect; in any other list each row is
    looked at alone, as :class:`_Stream` does."""

    def __init__(self, batches: Iterable[tuple[list[tuple[bytes, bytes]], Answer]], table: str,
                 klen: int, vlen: int):  # fmt: skip
        self._batches = iter(batches)
        self._rows: list[tuple[bytes, bytes]] = []
        self._answer: Answer = None  # the list's answer read ahead (:mod:`.link_ahead`)
        #: The answer of the list the part :meth:`take_lists` gave last came from.
        self.part_answer: Answer = None
        self._keys: list[bytes] | None = None  # the list's keys when it is clean
        self._pos = -1
        self._top = b"\xff" * (klen - ID_LEN)  # namespace ‖ top: past each of its keys
        super().__init__((), table, klen, vlen)

    def advance(self) -> None:
        self._seek(self._pos + 1)

    def _seek(self, i: int) -> None:
        """Make the first well-formed row at or after position ``i`` current (reporting the
        others), going on to the next lists as needed."""
        while True:
            rows = self._rows
            if self._keys is not None:
                if i < len(rows):
                    self._pos, self.current = i, rows[i]
                    return
            else:
                while i < len(rows):
                    key, value = rows[i]
                    if self._valid(key, value):
                        self._pos, self.current = i, (key, value)
                        return
                    i += 1
            item = next(self._batches, None)
            if item is None:
                self._rows, self._keys, self._pos, self.current = [], None, 0, None
                return
            self._load(item[0])
            self._answer = item[1]
            i = 0

    def _load(self, batch: list[tuple[bytes, bytes]]) -> None:
        self._rows = batch
        n = len(batch)
        keys = list(map(_first, batch))
        clean = (
            list(map(len, keys)).count(self.klen) == n
            and list(map(len, map(_second, batch))).count(self.vlen) == n
            and {*map(type, keys)} <= {bytes}
            and all(map(le, keys, islice(keys, 1, None)))
        )
        self._keys = keys if clean else None

    def take_lists(self, namespace: bytes) -> Iterator[list[tuple[bytes, bytes]]]:
        """The rows of ``namespace`` in lists (consumed as iterated)."""
        while self.current is not None and self.current[0][:ID_LEN] == namespace:
            rows, pos = self._rows, self._pos
            self.part_answer = self._answer
            if self._keys is None:
                part = [self.current]
                self._seek(pos + 1)
            else:  # in key order: the namespace's rows run to the first key past it
                end = bisect_right(self._keys, namespace + self._top, pos)
                part = rows[pos:end]
                self._seek(end)
            yield part


def _check(source: SortedTables, get: Lookup, semantic: list[LinkError],
           contains: Callable[[str, bytes], bool] | None,
           by_rows: bool) -> Iterator[LinkError]:  # fmt: skip
    missing = getattr(source, "missing", None)
    ahead = None  # a source that looks the history's commits up a list ahead (.link_ahead)
    if not by_rows and missing is not None and contains is not None:
        history_ahead = getattr(source, "history_ahead", None)
        ahead = history_ahead() if history_ahead is not None else None
    try:
        yield from _merge(source, get, semantic, contains, by_rows, missing, ahead)
    finally:
        if ahead is not None:
            ahead.close()


def _merge(source: SortedTables, get: Lookup, semantic: list[LinkError],
           contains: Callable[[str, bytes], bool] | None, by_rows: bool,
           missing: Callable[[str, Sequence[bytes]], list[int]] | None,
           ahead: Ahead | None) -> Iterator[LinkError]:  # fmt: skip
    boundary = getattr(source, "boundary", None)
    excised = getattr(source, "excised", None)
    shapes = ((HISTORY, ID_LEN + 8, ID_LEN), (HEADS, ID_LEN, HEAD_LEN),
              (REQUESTS, 2 * ID_LEN, ID_LEN + HEAD_LEN))  # fmt: skip
    streams: list[_Stream] = [
        _Stream(source.rows(t), t, k, v) if by_rows
        else _Lists(ahead if t == HISTORY and ahead is not None
                    else answered(row_batches(source, t)), t, k, v)  # type: ignore[arg-type]
        for t, k, v in shapes
    ]  # fmt: skip
    hist, heads, reqs = streams
    if contains is not None:
        has_content: Callable[[bytes], bool] = partial(contains, CONTENT)
    else:
        has_content = partial(_found, get, CONTENT)
    if missing is not None and contains is not None:
        absent: Absent = partial(missing, CONTENT)
        if ahead is not None:
            assert isinstance(hist, _Lists)
            absent = partial(_answered, hist, absent)
    else:
        absent = absent_by_rows(has_content)
    while True:
        for s in streams:
            yield from s.drain_errors()
        ns = min(s.namespace for s in streams)
        if ns == _END:
            return
        head_rows = list(heads.take(ns))  # at most one: heads are keyed by namespace alone
        head_value = head_rows[0][1] if head_rows else None
        bound = boundary(ns) if boundary is not None else None
        check = NamespaceCheck(ns, get, semantic, bound, excised, has_content, absent,
                               MAX_KEPT_COMMITS)  # fmt: skip
        if by_rows:
            for key, commit in hist.take(ns):
                yield from check.history_row(key, commit)
            yield from check.head_errors(head_value)
            for key, value in reqs.take(ns):
                yield from check.request_row(key, value)
        else:
            assert isinstance(hist, _Lists) and isinstance(reqs, _Lists)
            for rows in hist.take_lists(ns):
                yield from check.history_list(rows)
            yield from check.head_errors(head_value)
            for rows in reqs.take_lists(ns):
                yield from check.request_list(rows)
        yield from check.receipt_errors()


def _answered(hist: _Lists, absent: Absent, commits: Sequence[bytes]) -> list[int]:
    """``absent(commits)`` for commits of the history part just taken: from its list's answer
    read ahead, else asked now."""
    answer = hist.part_answer
    return absent(commits) if answer is None else absent_in(answer, commits)


def _found(get: Lookup, table: str, key: bytes) -> bool:
    return get(table, key) is not None


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
