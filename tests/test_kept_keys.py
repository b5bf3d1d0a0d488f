"""The content ids kept by the checking pass (:mod:`migrate.rules.kept_keys`) and the links
check's ``contains`` (the same answers as ``get(...) is not None``, from the kept ids)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from migrate.rules.kept_keys import BLOCK_KEYS, KeptKeys
from migrate.rules.links import validate_links
from migrate.store.codec import CONTENT
from tests.store.test_digest_links import _chain, _drop, hk

ROOT = Path(__file__).resolve().parent.parent


def key(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(8, "big", signed=True)).digest()


def test_kept_keys_answer_only_for_keys_added() -> None:
    keys = sorted(key(i) for i in range(3 * BLOCK_KEYS + 5))  # full blocks and a partial one
    kept = KeptKeys()
    for start in range(0, len(keys), 50):
        kept.add([(k, b"v") for k in keys[start : start + 50]])
    assert len(kept) == len(keys)
    assert all(k in kept for k in keys)
    assert not any(key(-i) in kept for i in range(1, 200))  # absent ids
    assert b"\x00" * 32 not in kept and b"\xff" * 32 not in kept  # before and past all
    assert keys[0][:31] not in kept  # another width
    # A match across two neighbouring keys is no key.
    assert keys[1][16:] + keys[2][:16] not in kept
    # More keys after a lookup: the partial block packed then goes on.
    later = [b"\xff" * 31 + bytes([i]) for i in range(3)]
    kept.add([(k, b"") for k in later])
    assert all(k in kept for k in later + keys)


def test_kept_keys_are_bounded_and_ignore_other_widths() -> None:
    keys = sorted(key(i) for i in range(100))
    kept = KeptKeys(max_keys=70)
    rows = [(k, b"") for k in keys] + [(b"short", b""), (b"x" * 64, b"")]
    assert kept.add(rows) is rows
    assert len(kept) == 70
    assert all(k in kept for k in keys[:70])
    assert not any(k in kept for k in keys[70:])  # past the bound: the source is asked


def test_kept_keys_in_any_order_give_no_false_answer() -> None:
    keys = [key(i) for i in range(500)]  # not sorted: a lookup may miss, never invent
    kept = KeptKeys()
    kept.add([(k, b"") for k in keys])
    assert not any(key(-i) in kept for i in range(1, 500))


@pytest.mark.parametrize("ordered", [True, False])
def test_kept_keys_missing_is_not_in_for_each_key(ordered: bool) -> None:
    """``missing(keys)``: the positions of the keys ``in`` denies, for kept keys, absent
    ones, matches across two neighbouring keys, other widths and types, before and past
    every key, with the keys added sorted or not."""
    keys = [key(i) for i in range(5 * BLOCK_KEYS + 9)]
    kept = KeptKeys(max_keys=4 * BLOCK_KEYS)
    kept.add([(k, b"") for k in (sorted(keys) if ordered else keys)])
    across = [keys[i][16:] + keys[i + 1][:16] for i in range(0, 300, 7)]
    edges = [b"\x00" * 32, b"\xff" * 32, min(keys)[:31] + b"\x00"]
    asked = keys[::3] + [key(-i) for i in range(1, 90)] + across + edges
    asked.sort(key=lambda k: hashlib.sha256(k).digest())  # no order the blocks have
    expected = [i for i, k in enumerate(asked) if k not in kept]
    assert kept.missing(asked) == expected
    assert 0 < len(expected) < len(asked)
    odd = [keys[0], keys[0][:31], bytearray(keys[1]), key(-1)]
    assert kept.missing(odd) == [i for i, k in enumerate(odd) if k not in kept]
    assert not ordered or kept.missing(odd) == [1, 2, 3]
    assert KeptKeys().missing(keys[:3]) == [0, 1, 2]  # nothing kept


class _Source:
    """Five tables with ``get``, and a ``contains`` that answers from what it is told."""

    def __init__(self, tables: dict[str, list[tuple[bytes, bytes]]], kept: KeptKeys) -> None:
        self.tables = {t: sorted(rows) for t, rows in tables.items()}
        self.kept = kept
        self.gets: list[bytes] = []

    def rows(self, table: str) -> list[tuple[bytes, bytes]]:
        return self.tables.get(table, [])

    def get(self, table: str, key: bytes) -> bytes | None:
        self.gets.append(key)
        return dict(self.tables.get(table, [])).get(key)

    def contains(self, table: str, key: bytes) -> bool:
        if table == CONTENT and key in self.kept:
            return True
        return self.get(table, key) is not None


@pytest.mark.parametrize("keep", [True, False])
def test_links_ask_contains_and_find_missing_content_either_way(keep: bool) -> None:
    ns, rows = _chain(5)
    commit = dict(rows["application_history"])[hk(ns, 2)]
    rows["application_content"] = _drop(rows["application_content"], commit)
    kept = KeptKeys()
    if keep:
        kept.add(sorted(rows["application_content"]))
    source = _Source(rows, kept)
    codes = [e["code"] for e in validate_links(source)]
    assert codes == ["missing-content"]
    # Only what is not kept reached ``get``: the missing commit (or every commit).
    assert source.gets == ([commit] if keep else [c for _, c in rows["application_history"]])


@pytest.mark.parametrize("room", [None, 3])
def test_fresh_tee_answers_contains_as_the_source_does(tmp_path: Path, room: int | None) -> None:
    """The checking pass's view keeps the content ids it loads; ``contains`` then agrees
    with the source's own lookups for present and absent ids.  With room for 3 ids, the
    rest are the source's lookups (``missing``: one call to its ``absent`` per list)."""
    from importers.redb import backend

    if backend.c_impl is None:
        pytest.skip("the pure-Python reader offers no get (the links check spills)")
    src_path = tmp_path / "cell.redb"
    fixture = ROOT / "fixtures" / "legacy" / "cell-small.redb.gz"
    src_path.write_bytes(gzip.decompress(fixture.read_bytes()))
    # The C reader, whatever default an earlier test on this worker left (tests/redb's
    # session-wide backend parameter).
    previous = backend.set_default("c")
    try:
        _tee_answers(src_path, room)
    finally:
        backend.set_default(previous)


class PassLoader:
    """A loader that loads nothing: the fresh pass's view (``_Tee``) over a source alone."""

    complete = True

    def tee_batches(self, ordinal: int, batches):  # type: ignore[no-untyped-def]
        return batches

    def finish(self) -> None:
        pass


def _tee_answers(src_path: Path, room: int | None) -> None:
    from migrate.pipeline.fresh import _Tee
    from migrate.rules.sources import RedbSource

    with RedbSource(src_path) as src:
        assert src.get is not None
        tee = _Tee(src, PassLoader(), None)  # type: ignore[arg-type]
        if room is not None:
            tee._content_ids = KeptKeys(32, room)
        content = list(tee.rows(CONTENT))
        assert content == list(src.rows(CONTENT))
        history = [v for _, v in src.rows("application_history")]
        asked = [k for k, _ in content] + history + [key(-1), b"\x00" * 32]
        for k in asked:
            assert tee.contains(CONTENT, k) == (src.get(CONTENT, k) is not None)
        # A list at a time (the links check's way): the positions ``contains`` denies.
        expected = [i for i, k in enumerate(asked) if src.get(CONTENT, k) is None]
        lists: list[int] = []
        absent = src.absent
        assert absent is not None
        tee._absent = lambda table, keys: lists.append(len(keys)) or absent(table, keys)
        assert tee.missing(CONTENT, asked) == expected != []
        kept = {k for k, _ in content[:room]}
        unkept = sum(k not in kept for k in asked)
        assert lists == [unkept] and unkept >= len(expected) + (room is not None) * 40


def test_kept_keys_copy_keys_that_are_not_bytes() -> None:
    """A key handed over as a view of a buffer the reader reuses is kept as a copy."""
    first, second = sorted([key(1), key(2)])
    buf = bytearray(first + second)
    kept = KeptKeys()
    kept.add([(memoryview(buf)[:32], b""), (bytearray(buf[32:]), b"")])
    buf[:] = bytes(64)  # the reader's buffer, reused
    assert first in kept and second in kept and bytes(32) not in kept


def test_a_table_that_fits_is_kept_whole_a_bigger_one_to_the_bound() -> None:
    """``bound_for``: every key of a table whose header count is at most ALL_KEYS_UP_TO in a
    source of at most ALL_KEYS_SOURCE_BYTES, MAX_KEYS of a bigger or unknown one or in a
    bigger source; a count that lies keeps fewer, never more."""
    from migrate.rules.kept_keys import ALL_KEYS_SOURCE_BYTES, ALL_KEYS_UP_TO, MAX_KEYS, bound_for

    small = 1 << 20
    assert MAX_KEYS < ALL_KEYS_UP_TO
    assert bound_for(None, small) == bound_for(-1, small) == MAX_KEYS
    assert bound_for(0, small) == bound_for(10, small) == bound_for(MAX_KEYS, small) == MAX_KEYS
    assert bound_for(MAX_KEYS + 1, small) == MAX_KEYS + 1
    assert bound_for(ALL_KEYS_UP_TO, ALL_KEYS_SOURCE_BYTES) == ALL_KEYS_UP_TO
    assert bound_for(ALL_KEYS_UP_TO + 1, small) == bound_for(10**9, small) == MAX_KEYS
    assert bound_for(ALL_KEYS_UP_TO, ALL_KEYS_SOURCE_BYTES + 1) == MAX_KEYS
    # A table that says 200,000 keeps 200,000 and no more, whatever it really holds.
    kept = KeptKeys(32, bound_for(200_000, small))
    ids = sorted(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(200_001))
    kept.add([(k, b"") for k in ids])
    assert len(kept) == 200_000 and ids[-2] in kept and ids[-1] not in kept


def test_fresh_tee_keeps_the_content_table_its_header_counts(tmp_path: Path) -> None:
    """The checking pass sizes its kept ids from the source's content table count."""
    from migrate.pipeline.fresh import _Tee
    from migrate.rules.kept_keys import MAX_KEYS, bound_for
    from migrate.rules.sources import RedbSource

    src_path = tmp_path / "cell.redb"
    fixture = ROOT / "fixtures" / "legacy" / "cell-small.redb.gz"
    src_path.write_bytes(gzip.decompress(fixture.read_bytes()))
    with RedbSource(src_path) as src:
        count = src.length(CONTENT)
        assert count == sum(1 for _ in src.rows(CONTENT)) and src.length("nope") is None
        tee = _Tee(src, None, None)  # type: ignore[arg-type]
        assert tee._content_ids._room == bound_for(count, src_path.stat().st_size) == max(
            count or 0, MAX_KEYS
        )
