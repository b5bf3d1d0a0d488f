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
