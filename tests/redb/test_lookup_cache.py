"""The C path's point lookups keep the branch pages they verified (redb.c, "the lookup
cache") and give the same answers and the same errors as the pure path, which reads every
page: a page is taken from the cache only under the checksum it was verified against, and
every leaf is read and verified on every lookup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bbg_core.errors import RedbCorrupt
from importers.redb import open_redb
from importers.redb.tables import orders_bytewise
from tests.redb import synth
from tests.redb.cases import Case, local_case

COMPARES_BACKENDS = True  # generated once, under the "c" parameter (tests/redb/conftest.py)
BACKENDS = ("python", "c")


def _bytes_table(f: synth.File, root: tuple[int, int], length: int) -> bytes:
    """A file whose one table ``t`` (``&[u8] -> &[u8]``) has its root at ``root``."""
    definition = synth.definition((root[0], root[1], length), length, None, None,
                                  "&[u8]", "&[u8]")  # fmt: skip
    tt = f.add(synth.leaf([(b"t", definition)], None, None))
    return f.build((tt[0], tt[1], 1))


def _outcome(path: Path, impl: str, keys: list[bytes]) -> list[object]:
    """What get() gives for each key in turn on one open file (an error does not end it)."""
    got: list[object] = []
    with open_redb(path, backend=impl) as db:
        for key in keys:
            try:
                got.append(db.get("t", key))
            except RedbCorrupt as exc:
                got.append((exc.message, sorted(exc.context.items())))
    return got


def test_lookups_read_each_branch_once_and_agree(redb_file: Callable[[Case], Path]) -> None:
    path = redb_file(local_case("4.2.0", "btree_multilevel"))
    read: dict[str, int] = {}
    cached: dict[str, int] = {}
    answers: dict[str, list[bytes | None]] = {}
    for impl in BACKENDS:
        with open_redb(path, backend=impl) as db:
            before = db.pages_read
            got: list[bytes | None] = []
            for info in db.tables():
                if info.kind != "table" or not orders_bytewise(info.key_type):
                    continue
                keys = [key for key, _ in db.iter_table(info.name)]
                before = db.pages_read  # the scan is not counted
                for key in keys[::-1] + [key + b"\x00" for key in keys]:
                    got.append(db.get(info.name, key))
                read[impl] = read.get(impl, 0) + db.pages_read - before
                before = db.pages_read
            answers[impl] = got
            cached[impl] = db._open_reader().pages_cached
    assert answers["c"] == answers["python"] and len(answers["c"]) > 1000
    # The same pages visited: each one either read or taken from the cache on the C path.
    assert cached["python"] == 0
    assert read["c"] + cached["c"] == read["python"]
    assert cached["c"] > 0 and read["c"] < read["python"]


def _shared(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """A root whose two children name the same branch page, the second under a wrong
    checksum: a lookup through the first must not let one through the second pass."""
    f = synth.File()
    a = f.add(synth.leaf([(b"a", b"1"), (b"b", b"2")], None, None))
    b = f.add(synth.leaf([(b"c", b"3"), (b"d", b"4")], None, None))
    mid = f.add(synth.branch([a, b], [b"b"], None))
    root = f.add(synth.branch([mid, (mid[0], mid[1] ^ (1 << 100))], [b"d"], None))
    path = tmp_path / "shared.redb"
    path.write_bytes(_bytes_table(f, root, 4))
    return path, [b"a", b"e", b"c", b"z", b"b"]


def test_a_cached_page_is_not_taken_under_another_checksum(tmp_path: Path) -> None:
    path, keys = _shared(tmp_path)
    c = _outcome(path, "c", keys)
    assert c == _outcome(path, "python", keys)
    assert c[0] == b"1" and c[2] == b"3" and c[4] == b"2"
    for bad in (c[1], c[3]):
        assert isinstance(bad, tuple) and "checksum mismatch" in bad[0]


def test_every_lookup_reads_and_verifies_its_leaf(tmp_path: Path) -> None:
    f = synth.File()
    a = f.add(synth.leaf([(b"a", b"1"), (b"b", b"2")], None, None))
    b = f.add(synth.leaf([(b"c", b"3"), (b"d", b"4")], None, None))
    root = f.add(synth.branch([a, b], [b"b"], None))
    data = _bytes_table(f, root, 4)
    for impl in BACKENDS:
        path = tmp_path / f"{impl}.redb"
        path.write_bytes(data)
        with open_redb(path, backend=impl) as db:
            assert db.get("t", b"a") == b"1" and db.get("t", b"c") == b"3"
            # Leaf a (page 0, right after the header page) damaged under the open file.
            with open(path, "r+b") as out:
                out.seek(synth.PAGE + 20)
                out.write(b"9")
            with pytest.raises(RedbCorrupt, match="checksum mismatch") as info:
                db.get("t", b"a")
            assert info.value.context["page"].endswith("/0")
            assert db.get("t", b"d") == b"4"
            # A list of lookups stops at the first that fails, with get()'s error.
            with pytest.raises(RedbCorrupt, match="checksum mismatch") as listed:
                db.absent("t", [b"d", b"e", b"a", b"c"])
            assert listed.value.context == info.value.context
            assert db.absent("t", [b"d", b"e", b"c", b"cc"]) == [1, 3]


def test_a_list_of_lookups_fails_where_get_fails(tmp_path: Path) -> None:
    path, keys = _shared(tmp_path)
    for impl in BACKENDS:
        with open_redb(path, backend=impl) as db:
            assert db.absent("t", [b"a", b"b", b"0"]) == [2]
            with pytest.raises(RedbCorrupt) as info:
                db.absent("t", [b"a", b"c", b"e"])  # "e" descends through the bad child
            assert _outcome(path, impl, [b"e"])[0] == (
                info.value.message, sorted(info.value.context.items()))  # fmt: skip
