"""Hand-built files with valid checksums but shapes the crate never writes: the reader must
refuse them with a named error, promptly (no exponential walk, no endless loop)."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from bbg_core.errors import RedbCorrupt
from importers.redb import open_redb
from importers.redb.dump import dump_lines
from tests.redb import synth
from tests.redb.synth import File, branch, leaf, single_table, u64


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "x.redb"
    path.write_bytes(data)
    return path


def _dump(path: Path) -> list[str]:
    with open_redb(path) as db:
        return list(dump_lines(db))


def test_synthetic_file_reads(tmp_path: Path) -> None:
    f = File()
    a = f.add(leaf([(u64(1), u64(10)), (u64(2), u64(20))], 8, 8))
    b = f.add(leaf([(u64(3), u64(30))], 8, 8))
    root = f.add(branch([a, b], [u64(2)], 8))
    path = _write(tmp_path, single_table(f, "t", (root[0], root[1], 3), 3))
    lines = _dump(path)
    assert lines[0] == '{"table":"t","kind":"table","key_type":"u64","value_type":"u64","len":3}'
    assert len(lines) == 4
    assert lines[3] == '{"table":"t","key":"0300000000000000","value":"1e00000000000000"}'


def test_shared_subtrees_are_stopped_by_the_page_budget(tmp_path: Path) -> None:
    # 40 levels, each branch's two children are the same sub-tree: 2**40 leaf visits if
    # walked naively.  The walk may visit at most as many pages as the file holds.
    f = File()
    node = f.add(leaf([(u64(1), u64(1))], 8, 8))
    for _ in range(40):
        node = f.add(branch([node, node], [u64(1)], 8))
    path = _write(tmp_path, single_table(f, "t", (node[0], node[1], 1), 1))
    started = time.monotonic()
    with pytest.raises(RedbCorrupt, match="more pages than the file holds") as info:
        _dump(path)
    assert time.monotonic() - started < 10
    assert info.value.context["table"] == "t"


def test_chains_deeper_than_any_real_tree_are_refused(tmp_path: Path) -> None:
    f = File()
    node = f.add(leaf([(u64(1), u64(1))], 8, 8))
    for i in range(80):
        other = f.add(leaf([(u64(1000 + i), u64(1))], 8, 8))
        node = f.add(branch([node, other], [u64(1)], 8))
    path = _write(tmp_path, single_table(f, "t", (node[0], node[1], 81), 81))
    with pytest.raises(RedbCorrupt, match="deeper than 64 levels"):
        _dump(path)


def test_child_outside_the_file_names_page(tmp_path: Path) -> None:
    f = File()
    a = f.add(leaf([(u64(1), u64(1))], 8, 8))
    root = f.add(branch([a, (5000, a[1])], [u64(1)], 8))
    path = _write(tmp_path, single_table(f, "t", (root[0], root[1], 2), 2))
    with pytest.raises(RedbCorrupt) as info:
        _dump(path)
    assert info.value.context["page"] == "r0.5000/0"
    assert info.value.context["table"] == "t"


def test_child_checksum_mismatch(tmp_path: Path) -> None:
    f = File()
    a = f.add(leaf([(u64(1), u64(1))], 8, 8))
    b = f.add(leaf([(u64(2), u64(2))], 8, 8))
    root = f.add(branch([a, (b[0], b[1] ^ 1)], [u64(1)], 8))
    path = _write(tmp_path, single_table(f, "t", (root[0], root[1], 2), 2))
    with pytest.raises(RedbCorrupt, match="checksum mismatch") as info:
        _dump(path)
    assert info.value.context["page"] == "r0.1/0"
    assert info.value.context["offset"] == synth.PAGE * 2


def test_out_of_order_offsets_with_valid_checksum(tmp_path: Path) -> None:
    body = bytearray(leaf([(b"ab", b"x"), (b"c", b"y")], None, None))
    struct.pack_into("<I", body, 4, 200)  # first key end beyond the second
    f2 = File()
    page = f2.add(bytes(body))
    tt = f2.add(
        leaf(
            [(b"t", synth.definition((page[0], page[1], 2), 2, None, None, "&[u8]", "&[u8]"))],
            None,
            None,
        )
    )
    path = _write(tmp_path, f2.build((tt[0], tt[1], 1)))
    with pytest.raises(RedbCorrupt, match="not in order|beyond the page"):
        _dump(path)


def test_length_mismatch(tmp_path: Path) -> None:
    f = File()
    a = f.add(leaf([(u64(1), u64(1))], 8, 8))
    path = _write(tmp_path, single_table(f, "t", (a[0], a[1], 5), 5))
    with pytest.raises(RedbCorrupt, match="holds 1 entries, its stored length says 5"):
        _dump(path)


def test_empty_leaf_and_unknown_page_type(tmp_path: Path) -> None:
    f = File()
    a = f.add(leaf([], 8, 8))
    path = _write(tmp_path, single_table(f, "t", (a[0], a[1], 0), 0))
    with pytest.raises(RedbCorrupt, match="leaf page with no entries"):
        _dump(path)
    f = File()
    a = f.add(b"\x09" + bytes(15))
    path = _write(tmp_path, single_table(f, "t", (a[0], a[1], 0), 0))
    with pytest.raises(RedbCorrupt, match="unknown page type 9"):
        _dump(path)


def test_bad_definition_is_named(tmp_path: Path) -> None:
    f = File()
    tt = f.add(leaf([(b"t", b"\x03\x00")], None, None))
    path = _write(tmp_path, f.build((tt[0], tt[1], 1)))
    with pytest.raises(RedbCorrupt, match="definition of table 't'") as info:
        _dump(path)
    assert info.value.context["table"] == "<table tree>"
