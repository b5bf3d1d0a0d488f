"""``migrate.store.pages.PageLoader``: the one page cutter of both engines' loaders (the
SQLite build's writer queue and the keyspace builder differ only in where a page goes)."""

from __future__ import annotations

import pytest

from migrate.store.build import Loader
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.keyspace_build import KeyspaceLoader
from migrate.store.pages import PageLoader


class _Recorder(PageLoader):
    def __init__(self, page_rows: int, page_bytes: int, refuse: bool = False) -> None:
        super().__init__(page_rows, page_bytes)
        self.pages: list[tuple[str, list[tuple[bytes, bytes]]]] = []
        self._refuse = refuse

    def _deliver(self, table: str, batch: list[tuple[bytes, bytes]]) -> bool:
        if self._refuse:
            self._error = RuntimeError("refused")
            return False
        self.pages.append((table, batch))
        return True


def _rows(n: int, size: int = 4) -> list[tuple[bytes, bytes]]:
    return [(b"k%03d" % i, b"v" * size) for i in range(n)]


def test_rows_pass_unchanged_and_pages_are_cut_at_the_row_bound() -> None:
    loader = _Recorder(page_rows=3, page_bytes=1 << 20)
    rows = _rows(7)
    assert list(loader.tee(1, rows)) == rows
    assert [len(batch) for _, batch in loader.pages] == [3, 3, 1]
    assert {table for table, _ in loader.pages} == {ARCHIVE_ORDER[1]}
    assert loader.cursor == bytes([1]) + b"k006"
    assert loader.complete


def test_pages_are_cut_before_the_byte_bound_is_passed() -> None:
    loader = _Recorder(page_rows=100, page_bytes=16)  # a row is 4 + 4 bytes: two fit exactly
    list(loader.tee(0, _rows(5)))
    assert [len(batch) for _, batch in loader.pages] == [2, 2, 1]


def test_a_row_larger_than_a_page_is_a_page_of_its_own() -> None:
    loader = _Recorder(page_rows=100, page_bytes=10)
    list(loader.tee(0, _rows(2, size=50)))
    assert [len(batch) for _, batch in loader.pages] == [1, 1]


def test_loading_stops_past_the_limit_while_rows_still_pass() -> None:
    loader = _Recorder(page_rows=2, page_bytes=1 << 20)
    loader.limit(3, 1 << 20)
    rows = _rows(6)
    assert list(loader.tee(0, rows)) == rows
    assert [len(batch) for _, batch in loader.pages] == [2]  # the second page passes 3 rows
    assert not loader.complete
    assert loader.cursor == bytes([0]) + b"k001"


def test_a_limit_reached_exactly_still_loads_the_page_that_reaches_it() -> None:
    loader = _Recorder(page_rows=2, page_bytes=1 << 20)
    loader.limit(4, 1 << 20)
    list(loader.tee(0, _rows(6)))
    assert [len(batch) for _, batch in loader.pages] == [2, 2]
    assert not loader.complete  # the third page went past it


def test_a_refused_page_is_kept_for_check_and_nothing_more_is_delivered() -> None:
    loader = _Recorder(page_rows=2, page_bytes=1 << 20, refuse=True)
    assert len(list(loader.tee(0, _rows(5)))) == 5
    assert loader.pages == [] and loader.cursor == b"" and not loader.complete
    with pytest.raises(RuntimeError, match="refused"):
        loader.check()


def test_the_keyspace_loader_keeps_copies_the_sqlite_loader_the_rows() -> None:
    assert KeyspaceLoader.COPY_ROWS and not Loader.COPY_ROWS
    assert issubclass(KeyspaceLoader, PageLoader) and issubclass(Loader, PageLoader)

    class _Copying(_Recorder):
        COPY_ROWS = True

    key, value = bytearray(b"key"), memoryview(b"value")
    loader = _Copying(page_rows=10, page_bytes=1 << 20)
    list(loader.tee(0, [(key, value)]))  # type: ignore[list-item]
    (_, [(k, v)]), = loader.pages
    assert (type(k), type(v), k, v) == (bytes, bytes, b"key", b"value")


def test_the_keyspace_loader_ends_each_partition_when_its_table_has_passed() -> None:
    """Each table's rows pass once, in order: when a table's last page is handed on, its
    partition is ended at once (one open segment at a time), not at the end of the pass."""

    class Builder:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str]] = []

        def push(self, table: str, rows: list[tuple[bytes, bytes]]) -> None:
            self.calls.append(("push", table))

        def end_partition(self, table: str) -> None:
            self.calls.append(("end", table))

    builder = Builder()
    loader = KeyspaceLoader(builder, 2, 1 << 20)  # type: ignore[arg-type]
    for ordinal in (0, 1):
        rows = [(bytes([ordinal, i]), b"v") for i in range(3)]
        assert list(loader.tee(ordinal, rows)) == rows
    first, second = ARCHIVE_ORDER[0], ARCHIVE_ORDER[1]
    assert builder.calls == [("push", first), ("push", first), ("end", first),
                             ("push", second), ("push", second), ("end", second)]  # fmt: skip


def _split(rows: list[tuple[bytes, bytes]], cuts: list[int]) -> list[list[tuple[bytes, bytes]]]:
    out, start = [], 0
    for cut in cuts + [len(rows)]:
        out.append(rows[start:cut])
        start = cut
    return out


@pytest.mark.parametrize("seed", range(40))
def test_rows_in_lists_load_the_same_pages_as_rows_one_by_one(seed: int) -> None:
    """``tee_batches`` (the redb reader's lists) cuts pages at exactly the rows ``tee``
    cuts them, under both bounds and a limit, and passes the lists on unchanged."""
    import random

    rng = random.Random(seed)
    rows = [(b"k%05d" % i, b"v" * rng.choice([0, 1, 5, 30, 200])) for i in range(rng.randrange(60))]
    page_rows, page_bytes = rng.choice([1, 2, 3, 7, 512]), rng.choice([1, 12, 40, 300, 1 << 20])
    cuts = sorted(rng.sample(range(len(rows) + 1), rng.randrange(min(len(rows) + 1, 12))))
    limit = rng.choice([None, (rng.randrange(80), 1 << 20), (1 << 20, rng.randrange(3000))])
    one, lists = _Recorder(page_rows, page_bytes), _Recorder(page_rows, page_bytes)
    if limit is not None:
        one.limit(*limit)
        lists.limit(*limit)
    assert list(one.tee(2, rows)) == rows
    batches = _split(rows, cuts)
    assert list(lists.tee_batches(2, batches)) == batches
    assert lists.pages == one.pages
    assert (lists.cursor, lists.rows, lists.complete) == (one.cursor, one.rows, one.complete)


def test_rows_in_lists_are_copied_for_the_keyspace_loader_and_end_the_partition() -> None:
    class Builder:
        def __init__(self) -> None:
            self.calls: list[tuple[str, object]] = []

        def push(self, table: str, rows: list[tuple[bytes, bytes]]) -> None:
            self.calls.append(("push", [(type(k), type(v)) for k, v in rows]))

        def end_partition(self, table: str) -> None:
            self.calls.append(("end", table))

    builder = Builder()
    loader = KeyspaceLoader(builder, 2, 1 << 20)  # type: ignore[arg-type]
    rows = [(bytearray(b"a"), memoryview(b"x")), (bytearray(b"b"), memoryview(b"y"))]
    list(loader.tee_batches(0, [rows]))  # type: ignore[list-item]
    assert builder.calls == [("push", [(bytes, bytes)] * 2), ("end", ARCHIVE_ORDER[0])]
