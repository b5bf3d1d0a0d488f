"""The links check with the history's content lookups read ahead on a thread
(:mod:`migrate.rules.link_ahead`): the same findings in the same order as asking each list
when it is reached, a failed lookup failing where it failed before, a failed read at the list
it failed on, and the thread stopped before the source closes."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from bbg_core.errors import SourceError
from migrate.rules.kept_keys import KeptKeys
from migrate.rules.link_ahead import Ahead
from migrate.rules.links import iter_link_errors
from migrate.store.codec import CONTENT, HISTORY
from tests.conftest import FIXTURES
from tests.store.test_digest_links import _chain, _drop
from tests.test_kept_keys import PassLoader

CELLS = sorted((FIXTURES / "legacy").glob("cell-*.redb.gz"))


@pytest.fixture
def c_reader() -> Iterator[None]:
    """The C reader, whatever default an earlier test on this worker left (tests/redb's
    session-wide backend parameter): lookups a list at a time are the C path's."""
    from importers.redb import backend

    if backend.c_impl is None:
        pytest.skip("the pure-Python reader has no list lookups (nothing is read ahead)")
    previous = backend.set_default("c")
    yield
    backend.set_default(previous)


def _tee_findings(path: Path, ahead: bool) -> tuple[list[dict[str, str]], int]:
    """The links findings of the fresh pass's view of ``path`` (room for 3 kept content ids,
    so the rest are the source's lookups), read ahead or not; and how many threads read
    ahead."""
    from migrate.pipeline.fresh import _Tee
    from migrate.rules.sources import RedbSource

    with RedbSource(path) as src:
        tee = _Tee(src, PassLoader(), None)  # type: ignore[arg-type]
        tee._content_ids = KeptKeys(32, 3)
        for _ in tee.row_batches(CONTENT):  # the pass: the content ids kept as they load
            pass
        if not ahead:
            tee.history_ahead = lambda: None  # type: ignore[method-assign]
        try:
            findings = list(iter_link_errors(tee, report_malformed=False))
            return findings, len(tee._ahead)
        finally:
            tee.close()


@pytest.mark.parametrize("cell", CELLS, ids=[p.name.removesuffix(".redb.gz") for p in CELLS])
def test_read_ahead_finds_what_asking_each_list_finds(
    tmp_path: Path, cell: Path, c_reader: None
) -> None:
    path = tmp_path / "cell.redb"
    path.write_bytes(gzip.decompress(cell.read_bytes()))
    try:
        expected, none = _tee_findings(path, ahead=False)
    except SourceError as exc:  # a file the reader refuses is refused the same way
        with pytest.raises(type(exc), match="."):
            _tee_findings(path, ahead=True)
        return
    got, threads = _tee_findings(path, ahead=True)
    assert got == expected
    assert none == 0 and threads == 1
    if cell.name == "cell-invalid-missing-content.redb.gz":
        assert [e["code"] for e in got] == ["missing-content"]


class _Rows:
    """Five sorted tables, a list of ``size`` rows at a time, with ``get``, ``contains``,
    ``missing`` (failing for any list that holds the commit of history entry ``fail_at``,
    as a damaged leaf fails every lookup that reads it) and a ``history_ahead``."""

    def __init__(self, tables: dict[str, list[tuple[bytes, bytes]]], size: int,
                 fail_at: int | None, ahead: bool) -> None:  # fmt: skip
        self.tables = {t: sorted(rows) for t, rows in tables.items()}
        self.content = dict(self.tables.get(CONTENT, []))
        self.size, self.ahead = size, ahead
        history = self.tables.get(HISTORY, [])
        self.bad = None if fail_at is None else history[fail_at][1]
        self.calls = 0
        self.threads: list[str] = []
        self.started: list[Ahead] = []

    def rows(self, table: str) -> list[tuple[bytes, bytes]]:
        return self.tables.get(table, [])

    def row_batches(self, table: str) -> Iterator[list[tuple[bytes, bytes]]]:
        rows = self.rows(table)
        for i in range(0, len(rows), self.size):
            yield rows[i : i + self.size]

    def get(self, table: str, key: bytes) -> bytes | None:
        return dict(self.rows(table)).get(key)

    def contains(self, table: str, key: bytes) -> bool:
        return self.get(table, key) is not None

    def missing(self, table: str, keys: Sequence[bytes]) -> list[int]:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        if self.bad is not None and self.bad in keys:
            raise SourceError(f"lookup of {self.bad.hex()} failed", path="x")
        return [i for i, k in enumerate(keys) if k not in self.content]

    def history_ahead(self) -> Ahead | None:
        if not self.ahead:
            return None
        ahead = Ahead(self.row_batches(HISTORY), [lambda keys: self.missing(CONTENT, keys)] * 2)
        self.started.append(ahead)
        return ahead


def _gapped(n: int = 40) -> dict[str, list[tuple[bytes, bytes]]]:
    """One namespace's chain of ``n`` with three commits' content gone."""
    ns, rows = _chain(n)
    history = dict(rows[HISTORY])
    for index in (3, 17, 31):
        rows[CONTENT] = _drop(rows[CONTENT], history[sorted(history)[index]])
    return rows


def _run(rows: _Rows) -> tuple[list[dict[str, str]], BaseException | None]:
    found: list[dict[str, str]] = []
    try:
        for error in iter_link_errors(rows):
            found.append(error)
    except SourceError as exc:
        return found, exc
    return found, None


def test_the_answers_come_from_the_thread_and_match() -> None:
    tables = _gapped()
    asked, ahead = _Rows(tables, 7, None, False), _Rows(tables, 7, None, True)
    assert _run(ahead) == _run(asked)
    assert [e["code"] for e in _run(asked)[0]] == ["missing-content"] * 3
    assert {t.rsplit("_", 1)[0] for t in ahead.threads} == {"links-lookups"}
    assert set(asked.threads) == {"MainThread"}
    assert not any(a._thread.is_alive() for a in ahead.started)


@pytest.mark.parametrize("fail_at", [0, 9, 20, 39])
def test_a_failed_lookup_fails_where_it_failed_before(fail_at: int) -> None:
    """The thread's lookups of a list fail: that list comes without an answer, the check
    asks itself when it reaches it and fails there, after the same findings."""
    tables = _gapped()
    asked, ahead = _Rows(tables, 7, fail_at, False), _Rows(tables, 7, fail_at, True)
    found, exc = _run(asked)
    got, exc_ahead = _run(ahead)
    assert exc is not None and exc_ahead is not None and str(exc_ahead) == str(exc)
    assert got == found
    assert "MainThread" in ahead.threads  # the failed list was asked again by the check
    assert not any(a._thread.is_alive() for a in ahead.started)


def test_a_failed_read_reaches_the_check_at_its_list() -> None:
    def batches() -> Iterator[list[tuple[bytes, bytes]]]:
        yield [(b"k1", b"v1")]
        yield [(b"k2", b"v2")]
        raise SourceError("page 9 unreadable", path="x")

    ahead = Ahead(batches(), [lambda keys: []])
    seen = []
    with pytest.raises(SourceError, match="page 9"):
        for batch, answer in ahead:
            seen.append((batch, answer))
    assert seen == [([(b"k1", b"v1")], set()), ([(b"k2", b"v2")], set())]
    ahead.close()


def test_closing_stops_the_thread_with_lists_still_unread() -> None:
    read: list[int] = []

    def batches() -> Iterator[list[tuple[bytes, bytes]]]:
        for i in range(1000):
            read.append(i)
            yield [(b"k", b"\x00" * 32)]

    ahead = Ahead(batches(), [lambda keys: [0]])
    first = next(iter(ahead))
    assert first == ([(b"k", b"\x00" * 32)], {b"\x00" * 32})
    ahead.close()
    assert not ahead._thread.is_alive()
    assert len(read) < 10  # at most the lists waiting ahead, and the one being read


def test_lookups_elsewhere_answer_as_the_files_own_from_another_thread(
    tmp_path: Path, c_reader: None
) -> None:
    """A second set of lookup handles (``absent_elsewhere``) gives ``absent``'s answers,
    also while both are used at once from two threads."""
    import hashlib

    from migrate.rules.sources import RedbSource

    path = tmp_path / "cell.redb"
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    with RedbSource(path) as src:
        own, elsewhere = src.absent, src.absent_elsewhere()
        assert own is not None and elsewhere is not None
        present = [k for k, _ in src.rows(CONTENT)]
        keys = present + [hashlib.sha256(k).digest() for k in present]
        expected = own(CONTENT, keys)
        assert expected == list(range(len(present), len(keys)))
        answers: list[list[int]] = []

        def ask(absent: object) -> None:
            for _ in range(30):
                answers.append(absent(CONTENT, keys))  # type: ignore[operator]

        threads = [threading.Thread(target=ask, args=(a,)) for a in (own, elsewhere)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [expected] * 60


def test_the_pure_reader_offers_no_lookups_elsewhere(tmp_path: Path) -> None:
    from importers.redb import backend
    from migrate.rules.sources import RedbSource

    path = tmp_path / "cell.redb"
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    previous = backend.set_default("python")
    try:
        with RedbSource(path) as src:
            assert src.absent_elsewhere() is None
    finally:
        backend.set_default(previous)
