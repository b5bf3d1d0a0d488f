"""The links check a list of rows at a time says exactly what it says a row at a time.

:func:`migrate.rules.links.iter_link_errors` works the rows of a namespace in lists
(``by_rows=False``, the default) and hands anything unusual to the row-at-a-time rules
(``by_rows=True``).  Here both run on generated stores -- valid ones and ones with malformed
rows, gaps, heads that disagree, missing content, receipts that disagree, are missing, are
repeated, retention boundaries and excised ids, rows out of key order, lists cut anywhere --
and must give the same findings (code and text), in the same order, and the same semantic
findings.  The seeds are fixed integers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest

from migrate.rules import links
from migrate.rules.kept_keys import KeptKeys
from migrate.rules.links import iter_link_errors
from migrate.store.codec import CONTENT, HEADS, HISTORY, REQUESTS, Head, history_key

Rows = list[tuple[bytes, bytes]]


def _id(rng: random.Random) -> bytes:
    return rng.randbytes(32)


def _generate(rng: random.Random) -> tuple[dict[str, Rows], dict[bytes, tuple[int, Head]],
                                           set[bytes]]:  # fmt: skip
    """Five tables (content values are not looked at), boundaries and excised ids."""
    tables: dict[str, Rows] = {CONTENT: [], HISTORY: [], HEADS: [], REQUESTS: []}
    bounds: dict[bytes, tuple[int, Head]] = {}
    excised: set[bytes] = set()
    odd = rng.random() < 0.6  # most stores have something wrong; the rest are valid
    for _ in range(rng.choice((1, 2, 3, 5, 8))):
        ns = _id(rng)
        n = rng.choice((0, 1, 2, 5, 17, 40, 130))
        first = 0
        if odd and n and rng.random() < 0.2:  # a retention boundary: history from ``first``
            first = rng.randrange(0, n)
            bounds[ns] = (first, Head(first - 1, _id(rng)) if first else Head(0, ns))
        commits = [ns if i == 0 and rng.random() < 0.9 else _id(rng) for i in range(n)]
        kept = [i for i in range(first, n) if not (odd and rng.random() < 0.05)]  # gaps
        if odd and bounds.get(ns) and rng.random() < 0.3:
            kept = sorted({*kept, *range(0, first)})  # rows left below the boundary
        for i in kept:
            tables[HISTORY].append((history_key(ns, i), commits[i]))
            if odd and rng.random() < 0.05:
                if rng.random() < 0.5:
                    excised.add(commits[i])
            else:
                tables[CONTENT].append((commits[i], b"\x01c"))
        if kept and not (odd and rng.random() < 0.1):
            top = kept[-1] if not (odd and rng.random() < 0.15) else rng.choice(kept)
            commit = commits[top] if not (odd and rng.random() < 0.1) else _id(rng)
            tables[HEADS].append((ns, Head(top, commit).encode()))
        elif odd and rng.random() < 0.2:
            tables[HEADS].append((ns, Head(rng.randrange(0, 3), _id(rng)).encode()))
        for i in range(n):
            copies = 1
            if odd:
                copies = rng.choices((0, 1, 2, 3), (3, 90, 5, 2))[0]
                if rng.random() < 0.003:
                    copies = 300  # saturates the count
            for _ in range(copies):
                index, commit = i, commits[i]
                if odd and rng.random() < 0.03:
                    commit = _id(rng)
                if odd and rng.random() < 0.03:
                    index = rng.choice((i + 1, n + 4, 2**64 - 1, max(i - 1, 0)))
                value = _id(rng) + Head(index, commit).encode()
                tables[REQUESTS].append((ns + _id(rng), value))
    if odd and rng.random() < 0.3:  # a receipt of a namespace with no history
        tables[REQUESTS].append((_id(rng) + _id(rng), _id(rng) + Head(0, _id(rng)).encode()))
    if odd:
        _malform(rng, tables)
    for rows in tables.values():
        rows.sort()
    if odd and rng.random() < 0.15:  # rows out of key order
        rows = tables[rng.choice((HISTORY, REQUESTS, HEADS))]
        if len(rows) > 2:
            i, j = rng.randrange(len(rows)), rng.randrange(len(rows))
            rows[i], rows[j] = rows[j], rows[i]
    return tables, bounds, excised


def _malform(rng: random.Random, tables: dict[str, Rows]) -> None:
    """Rows of the wrong lengths, and rows replaced by ones of the wrong lengths."""
    for table in (HISTORY, HEADS, REQUESTS):
        rows = tables[table]
        for _ in range(rng.choice((0, 0, 1, 2, 4))):
            if rows and rng.random() < 0.5:
                key, value = rows.pop(rng.randrange(len(rows)))
            else:
                key, value = _id(rng) + _id(rng), _id(rng) + _id(rng)
            if rng.random() < 0.5:
                key = key[: rng.choice((0, 5, 31, 33, 39, 41, 63))] or key + b"!"
            else:
                value = value[: rng.choice((0, 8, 31, 33, 39, 71))] + rng.choice((b"", b"??"))
            rows.append((key, value))


class _Source:
    """The generated tables as a source: plain lists of rows, or also the reader's lists
    cut at random places, point lookups and kept content ids as the run's view has them."""

    def __init__(self, tables: dict[str, Rows], bounds: dict[bytes, tuple[int, Head]],
                 excised: set[bytes], rng: random.Random) -> None:  # fmt: skip
        self.tables = tables
        self._cuts = rng.choice((None, 1, 3, 16, 512))
        self._rng = random.Random(rng.random())
        self._index = {t: dict(rows) for t, rows in tables.items()}
        self.kept = KeptKeys(max_keys=rng.choice((0, 64, 10**6)))
        self.kept.add(sorted(tables[CONTENT]))
        self._bounds, self._excised = bounds, excised
        self.asked: list[bytes] = []
        self._bytearrays = rng.random() < 0.1

    def rows(self, table: str) -> Rows:
        rows = self.tables.get(table, [])
        if self._bytearrays:  # not bytes: never taken a list at a time
            return [(bytearray(k), v) for k, v in rows]
        return rows

    def batches(self, table: str) -> Iterator[Rows]:
        rows, rng, cut = self.rows(table), random.Random(self._rng.random()), self._cuts
        assert cut is not None
        start = 0
        while start < len(rows):
            end = start + rng.randint(1, cut)
            yield list(rows[start:end])
            start = end

    def get(self, table: str, key: bytes) -> bytes | None:
        if table == CONTENT:
            self.asked.append(bytes(key))
        return self._index.get(table, {}).get(bytes(key))

    def contains(self, table: str, key: bytes) -> bool:
        if table == CONTENT and key in self.kept:
            return True
        return self.get(table, key) is not None

    def missing(self, table: str, keys: Sequence[bytes]) -> list[int]:
        return [i for i in self.kept.missing(keys) if self.get(table, keys[i]) is None]

    def boundary(self, namespace: bytes) -> tuple[int, Head] | None:
        return self._bounds.get(bytes(namespace))

    def excised(self, content_id: bytes) -> bool:
        return bytes(content_id) in self._excised


class _Plain:
    """Rows only (the check indexes them itself)."""

    def __init__(self, tables: dict[str, Rows]) -> None:
        self.tables = tables

    def rows(self, table: str) -> Rows:
        return self.tables.get(table, [])


def _variant(source: _Source, kind: str) -> object:
    """The source with only some of its methods: ``kind`` names which."""
    if kind == "plain":
        return _Plain(source.tables)
    names = {"get": ("get",), "contains": ("get", "contains"),
             "missing": ("get", "contains", "missing"),
             "retention": ("get", "contains", "missing", "boundary", "excised")}[kind]  # fmt: skip
    methods = {name: getattr(source, name) for name in names}
    if source._cuts is not None:
        methods["row_batches"] = source.batches
    methods["rows"] = source.rows
    return type("Variant", (), {n: staticmethod(m) for n, m in methods.items()})()


def _both(source: object, report_malformed: bool) -> tuple[list, list, list, list]:  # type: ignore[type-arg]
    s_lists: list[dict[str, str]] = []
    s_rows: list[dict[str, str]] = []
    lists = list(iter_link_errors(source, report_malformed=report_malformed,  # type: ignore[arg-type]
                                  semantic=s_lists))  # fmt: skip
    rows = list(iter_link_errors(source, report_malformed=report_malformed,  # type: ignore[arg-type]
                                 semantic=s_rows, by_rows=True))  # fmt: skip
    return lists, rows, s_lists, s_rows


@pytest.mark.parametrize("seed", range(40))
def test_lists_and_rows_agree_on_generated_stores(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    for _ in range(12):
        tables, bounds, excised = _generate(rng)
        source = _Source(tables, bounds, excised, rng)
        if rng.random() < 0.3:
            monkeypatch.setattr(links, "MAX_KEPT_COMMITS", rng.choice((0, 1, 7)))
        else:
            monkeypatch.undo()
        kind = rng.choice(("plain", "get", "contains", "missing", "retention", "retention"))
        variant = _variant(source, kind)
        report = rng.random() < 0.7
        source.asked.clear()
        lists, rows, s_lists, s_rows = _both(variant, report)
        assert lists == rows
        assert s_lists == s_rows


def test_the_generated_stores_have_every_finding() -> None:
    """The generator makes every kind of finding (so that the comparison above sees them)."""
    rng = random.Random(7)
    codes: set[str] = set()
    semantic: set[str] = set()
    for _ in range(200):
        tables, bounds, excised = _generate(rng)
        source = _Source(tables, bounds, excised, rng)
        found: list[dict[str, str]] = []
        codes.update(e["code"] for e in iter_link_errors(_variant(source, "retention"),  # type: ignore[arg-type]
                                                          semantic=found))  # fmt: skip
        semantic.update(e["code"] for e in found)
    assert codes == {"history-gap", "head-mismatch", "missing-content", "request-head-mismatch",
                     "missing-receipt", "duplicate-receipt", "bad-key-length",
                     "bad-value-length"}  # fmt: skip
    assert semantic == {"birth-mismatch"}


def test_content_is_asked_in_the_same_order() -> None:
    """Lists or rows, the check asks the source for the same content ids, in history order
    (a source counting its lookups sees no difference)."""
    rng = random.Random(11)
    for _ in range(60):
        tables, bounds, excised = _generate(rng)
        source = _Source(tables, bounds, excised, rng)
        variant = _variant(source, "contains")
        source.asked.clear()
        list(iter_link_errors(variant))  # type: ignore[arg-type]
        by_lists = list(source.asked)
        source.asked.clear()
        list(iter_link_errors(variant, by_rows=True))  # type: ignore[arg-type]
        assert by_lists == source.asked
