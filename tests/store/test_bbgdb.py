"""bbg's database-layer rules (``migrate.store.bbgdb``), pinned to cyberia-to/bbg.

Source: cyberia-to/bbg ``rs/src/storage/database/mod.rs`` at
bbf24f14a14799c155edd7fa11a5a73a5111bb52 (``change_id``, ``Database::transaction``,
``migration_guard``, ``validate_open``) and ``rs/src/storage/application/migration.rs`` at the
same commit (the conversion's last transaction puts ``bbg_import_v1["status"] = "complete"``).
The expected bytes below are written out by hand from ``change_id``'s loop, then hashed with
hemera in one call, so the streaming code under test is not its own oracle.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from hashing import hemera
from migrate.store import bbgdb


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def test_change_id_of_the_conversions_last_transaction() -> None:
    # hash.update(b"bbg/database-batch/v1\0"); then per change: len(name) LE, name,
    # len(key) LE, key, u8::from(value.is_some()), len(value) LE, value.
    by_hand = (
        b"bbg/database-batch/v1\x00"
        + _u64(13) + b"bbg_import_v1" + _u64(6) + b"status" + b"\x01" + _u64(8) + b"complete"
    )  # fmt: skip
    assert bbgdb.change_id({("bbg_import_v1", b"status"): b"complete"}) == hemera.hash(by_hand)


def test_change_id_sorts_by_table_name_then_key_and_encodes_removals() -> None:
    changes: bbgdb.Changes = {
        ("bbg_import_v1", b"r" + b"\x01" * 40): None,
        ("application_heads", b"\x02" * 32): b"h" * 40,
        ("bbg_import_v1", b"q"): b"",
        ("application_content", b"\x00" * 32): b"\x01payload",
    }
    by_hand = b"bbg/database-batch/v1\x00"
    for name, key, value in [
        (b"application_content", b"\x00" * 32, b"\x01payload"),
        (b"application_heads", b"\x02" * 32, b"h" * 40),
        (b"bbg_import_v1", b"q", b""),
        (b"bbg_import_v1", b"r" + b"\x01" * 40, None),
    ]:
        by_hand += _u64(len(name)) + name + _u64(len(key)) + key
        by_hand += b"\x00" if value is None else b"\x01" + _u64(len(value)) + value
    assert bbgdb.change_id(changes) == hemera.hash(by_hand)


def test_markers_join_the_batch_as_bbg_adds_them() -> None:
    plain = {("bbg_import_v1", b"status"): b"complete"}
    out = bbgdb.with_markers(plain)
    ident = bbgdb.change_id(plain)
    assert out == {**plain, ("bbg_storage_v1", b"last_transaction"): ident}
    shard = {("particles", b"k"): b"v"}
    out = bbgdb.with_markers(shard)
    ident = bbgdb.change_id(shard)
    assert out[("bbg_storage_v1", b"last_commit")] == ident
    assert out[("bbg_storage_v1", b"last_transaction")] == ident
    assert bbgdb.with_markers({}) == {}


def test_partitions_are_the_33_bbg_opens() -> None:
    assert len(bbgdb.PARTITIONS) == len(set(bbgdb.PARTITIONS)) == 33
    assert bbgdb.unknown_partitions(["application_heads", "bbg-migrate", "x"]) == [
        "bbg-migrate", "x",
    ]  # fmt: skip


def test_guard_path_is_one_per_physical_destination(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    want = tmp_path.resolve() / "real.bbg-importing"
    assert bbgdb.guard_path(tmp_path / "real") == want
    assert bbgdb.guard_path(str(tmp_path / "real") + "/") == want
    assert bbgdb.guard_path(tmp_path / "alias") == want
    assert bbgdb.guard_path(tmp_path / "real" / ".." / "real") == want
    assert bbgdb.guard_path(tmp_path / "new") == tmp_path.resolve() / "new.bbg-importing"


@pytest.mark.parametrize(
    ("rows", "problems"),
    [
        ({}, []),
        ({("bbg_import_v1", b"status"): b"complete"}, []),
        ({("bbg_import_v1", b"status"): b"neuron-v1"}, []),
        ({("bbg_import_v1", b"status"): b"auth-v1"}, []),
        ({("bbg_import_v1", b"status"): b"copying"}, ["status"]),
        ({("bbg_import_v1", b"status"): b"export-v1"}, ["status"]),
        ({("bbg_storage_v1", b"last_transaction"): b"\x00" * 31}, ["last_transaction"]),
        ({("bbg_storage_v1", b"last_commit"): b"\x00" * 33}, ["last_commit"]),
        ({("bbg_storage_v1", b"last_transaction"): b"\x00" * 32}, []),
    ],
)
def test_open_checks(tmp_path: Path, rows: dict[tuple[str, bytes], bytes],
                     problems: list[str]) -> None:  # fmt: skip
    found = bbgdb.open_problems(tmp_path / "bbg", lambda t, k: rows.get((t, k)))
    assert len(found) == len(problems)
    for text, word in zip(found, problems, strict=True):
        assert word in text


def test_open_checks_see_the_guard(tmp_path: Path) -> None:
    (tmp_path / "bbg.bbg-importing").write_bytes(b"")
    (found,) = bbgdb.open_problems(tmp_path / "bbg", lambda t, k: None)
    assert "incomplete application migration" in found
