"""The test-support redb writer (tests/support/redb_writer.py): what it writes reads back
exactly, through both of our backends and, when the reference programs are there, through
the real crate (redb 4.2.0 and 2.6.3 ``dump``)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from importers.redb import open_redb
from importers.redb.dump import dump_lines
from tests.support.redb_writer import RedbWriter
from tests.support.tools import reference_program


def _tables(seed: int) -> dict[str, list[tuple[bytes, bytes]]]:
    """Tables that need several leaf levels, higher-order pages, an empty table."""
    rng = random.Random(seed)
    out: dict[str, list[tuple[bytes, bytes]]] = {}
    for name, n, kmax, vmax in [
        ("many", 6000, 40, 600),  # three levels of pages
        ("huge values", 12, 8, 150_000),  # pages of order 1..6
        ("long keys", 300, 2000, 50),  # few keys per branch page
        ("empty", 0, 0, 0),
        ("één", 1, 4, 4),  # a non-ASCII name
    ]:
        rows: dict[bytes, bytes] = {}
        while len(rows) < n:
            rows[rng.randbytes(rng.randint(0, kmax))] = rng.randbytes(rng.randint(0, vmax))
        out[name] = sorted(rows.items())
    return out


def _write(path: Path, tables: dict[str, list[tuple[bytes, bytes]]]) -> None:
    with RedbWriter(path) as writer:
        for name, rows in tables.items():
            assert writer.add_table(name, rows) == len(rows)


def _expected_dump(tables: dict[str, list[tuple[bytes, bytes]]]) -> list[str]:
    lines = []
    for name in sorted(tables, key=lambda n: n.encode()):
        rows = tables[name]
        head = {"table": name, "kind": "table", "key_type": "&[u8]", "value_type": "&[u8]",
                "len": len(rows)}  # fmt: skip
        lines.append(json.dumps(head, separators=(",", ":"), ensure_ascii=False))
        prefix = '{"table":' + json.dumps(name, ensure_ascii=False) + ',"key":"'
        lines += [prefix + k.hex() + '","value":"' + v.hex() + '"}' for k, v in rows]
    return lines


def test_round_trip_through_our_reader(tmp_path: Path) -> None:
    """(Run once per reader backend by tests/redb/conftest.py.)"""
    tables = _tables(1)
    path = tmp_path / "w.redb"
    _write(path, tables)
    with open_redb(path) as db:
        assert db.header.format_version == 3 and not db.header.recovery_required
        assert list(dump_lines(db)) == _expected_dump(tables)
        # Point lookups descend the same pages.
        for name, rows in tables.items():
            for key, value in rows[:: max(1, len(rows) // 25)]:
                assert db.get(name, key) == value


def test_empty_file_has_no_tables(tmp_path: Path) -> None:
    path = tmp_path / "e.redb"
    RedbWriter(path).close()
    with open_redb(path) as db:
        assert db.tables() == []


def test_keys_must_increase(tmp_path: Path) -> None:
    with RedbWriter(tmp_path / "bad.redb") as writer:
        with pytest.raises(ValueError, match="strictly increasing"):
            writer.add_table("t", [(b"b", b""), (b"a", b"")])
        with pytest.raises(ValueError, match="strictly increasing"):
            writer.add_table("u", [(b"a", b""), (b"a", b"")])


@pytest.mark.parametrize("tool", ["redb-oracle-v4", "redb-oracle-v2"])
def test_the_real_crate_reads_it_identically(tmp_path: Path, tool: str) -> None:
    program = reference_program(tool)
    if program is None:
        pytest.skip(f"reference program {tool} not available (a development tool)")
    tables = _tables(2)
    path = tmp_path / "w.redb"
    _write(path, tables)
    res = subprocess.run([str(program), "dump", str(path)], capture_output=True, text=True,
                         check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == _expected_dump(tables)


@pytest.mark.parametrize("header_pages", [0, 1, 130])
def test_several_regions_read_back(tmp_path: Path, header_pages: int) -> None:
    """Regions of 16 pages (as the real crate's ``multi_region`` fixture has, with the 0 header
    pages of redb 3.x/4.x and the 1 of 2.x): the pages fill region after region, an order-5
    page (128 KiB) does not fit in one and is refused, pages of order 1..4 skip to the next
    region, and every row reads back through both of our backends."""
    tables = _tables(3)
    del tables["huge values"]  # pages of order 5 and 6: larger than a region of 16 pages
    rng = random.Random(4)
    tables["big"] = sorted({rng.randbytes(8): rng.randbytes(rng.randint(5_000, 60_000))
                            for _ in range(40)}.items())  # fmt: skip
    path = tmp_path / "r.redb"
    with RedbWriter(path, region_pages=16, header_pages=header_pages) as writer:
        for name, rows in tables.items():
            assert writer.add_table(name, rows) == len(rows)
    with open_redb(path) as db:
        h = db.header
        assert (h.region_header_pages, h.region_max_data_pages) == (header_pages, 16)
        assert h.num_regions > 10 and not h.layout_recalculated
        tail = header_pages + h.trailing_region_pages if h.trailing_region_pages else 0
        assert h.file_size == h.layout_len == 4096 * (1 + h.full_regions * (header_pages + 16)
                                                      + tail)  # fmt: skip
        assert list(dump_lines(db)) == _expected_dump(tables)
        for name, rows in tables.items():
            for key, value in rows[:: max(1, len(rows) // 25)]:
                assert db.get(name, key) == value
    with RedbWriter(tmp_path / "too-big.redb", region_pages=16) as writer:
        with pytest.raises(ValueError, match="order 5 does not fit in a region"):
            writer.add_table("t", [(b"k", bytes(100_000))])
    with pytest.raises(ValueError, match="power of two"):
        RedbWriter(tmp_path / "odd.redb", region_pages=24)


def test_one_region_layout_unchanged(tmp_path: Path) -> None:
    """The default geometry (130 header pages, regions of 2^20 pages) as before: a file below
    4 GiB of data is one trailing region, and its length follows from its data pages."""
    path = tmp_path / "one.redb"
    _write(path, _tables(5))
    with open_redb(path) as db:
        h = db.header
        assert (h.region_header_pages, h.region_max_data_pages, h.full_regions) == (130, 1 << 20, 0)
        assert h.file_size == 4096 * (1 + 130 + h.trailing_region_pages)
