"""Allocator state redb 1.x/2.x parse on open: damage there is a named error, as in the crate."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bbg_core.errors import RedbCorrupt
from importers.redb import open_redb
from tests.conftest import FIXTURES

BASE = FIXTURES / "redb" / "2.6.3" / "page_size_1024.redb.gz"
PAGE = 1024  # region 0's header starts one page in: version, pad, length, allocator state


def _mutant(tmp_path: Path, at: int, xor: int) -> Path:
    data = bytearray(gzip.decompress(BASE.read_bytes()))
    data[at] ^= xor
    path = tmp_path / "mutant.redb"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("at", "xor", "why"),
    [
        (PAGE, 0x02, "version 3"),
        (PAGE + 8 + 8 + 2, 0x40, "slice"),  # first free-bitmap end offset out of range
        (PAGE + 8 + 88, 0x50, "allocator order"),  # an end offset shifted by 80 bytes
    ],
)
def test_damaged_allocator_state_is_corrupt(tmp_path: Path, at: int, xor: int, why: str) -> None:
    path = _mutant(tmp_path, at, xor)
    with pytest.raises(RedbCorrupt, match="allocator state|region header") as info:
        with open_redb(path):
            pass
    assert why in str(info.value)
    assert str(path) in str(info.value)


def test_undamaged_file_opens(tmp_path: Path) -> None:
    path = tmp_path / "ok.redb"
    path.write_bytes(gzip.decompress(BASE.read_bytes()))
    with open_redb(path) as db:
        assert [t.name for t in db.tables()] == ["mm", "str_bytes", "u64_u64"]
