"""``iter_table(name, after=key)``: resuming a scan by descending the tree, not re-reading it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from importers.redb import open_redb
from importers.redb.tables import orders_bytewise
from tests.redb.cases import Case, local_case

SEEKABLE = [
    ("4.2.0", "btree_multilevel"),  # &str keys, a three-level tree
    ("2.6.3", "cell"),
    ("2.6.3", "types"),
    ("1.5.2", "types"),
    ("3.1.3", "large_values"),
    ("2.6.3", "page_size_1024"),
]


def _probes(keys: list[bytes]) -> list[bytes]:
    probes = [b"", b"\x00", b"\xff" * 80]
    step = max(1, len(keys) // 25)
    for key in keys[::step] + keys[-2:]:
        probes += [
            key,
            key + b"\x00",
            key[:-1],
            key[:-1] + bytes([min(255, key[-1] + 1)]) if key else b"\x01",
        ]
    return probes


@pytest.mark.parametrize(("version", "name"), SEEKABLE)
def test_seek_equals_filtered_scan(
    version: str, name: str, redb_file: Callable[[Case], Path]
) -> None:
    checked = 0
    with open_redb(redb_file(local_case(version, name))) as db:
        for info in db.tables():
            if info.kind != "table" or not orders_bytewise(info.key_type):
                continue
            pairs = list(db.iter_table(info.name))
            keys = [k for k, _ in pairs]
            assert keys == sorted(keys) and len(set(keys)) == len(keys)
            for probe in _probes(keys):
                got = list(db.iter_table(info.name, after=probe))
                assert got == [p for p in pairs if p[0] > probe], (info.name, probe)
                checked += 1
    assert checked > 0


def test_seek_refuses_other_key_orders(redb_file: Callable[[Case], Path]) -> None:
    with open_redb(redb_file(local_case("2.6.3", "types"))) as db:
        with pytest.raises(ValueError, match="bytewise"):
            db.iter_table("u64_u64", after=b"\x00")
        with pytest.raises(ValueError, match="multimap"):
            db.iter_table("mm_str_u64", after=b"k")


def test_seek_reads_one_path_not_the_table(redb_file: Callable[[Case], Path]) -> None:
    with open_redb(redb_file(local_case("4.2.0", "btree_multilevel"))) as db:
        pairs = list(db.iter_table("long_str_keys"))
        before = db.pages_read
        list(db.iter_table("long_str_keys"))
        full = db.pages_read - before
        before = db.pages_read
        assert list(db.iter_table("long_str_keys", after=pairs[-2][0])) == pairs[-1:]
        seek = db.pages_read - before
    assert full > 20
    assert seek <= 4  # root, inner branch, leaf (+ a following leaf at most)
