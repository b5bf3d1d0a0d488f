"""The one read-only handle: writes are refused by construction,
and a path with URI metacharacters opens the file it names, creating nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bbg_core.errors import StoreError
from migrate.store import DB_NAME, open_store
from migrate.store.connection import Connection, readonly_uri
from tests.fs import fs_state


@pytest.mark.parametrize("name", ["x?y", "a#b", "p%41q", "sp ace", "q?mode=rw&z"])
def test_uri_metacharacters_name_the_file(tmp_path: Path, name: str) -> None:
    store = tmp_path / name
    with open_store(store, create=True):
        pass
    before = fs_state(tmp_path)
    conn = Connection(store / DB_NAME, readonly=True)
    try:
        assert conn.one("PRAGMA application_id") == (0x42424731,)
    finally:
        conn.close()
    assert fs_state(tmp_path) == before


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM application_heads",
        "INSERT INTO bbg_storage_v1 (id) VALUES (2)",
        "CREATE TABLE t (x)",
        "PRAGMA user_version = 7",
        "PRAGMA journal_mode = DELETE",
        "ATTACH DATABASE 'other.db' AS o",
    ],
)
def test_every_write_is_refused_and_changes_nothing(tmp_path: Path, sql: str) -> None:
    store = tmp_path / "s"
    with open_store(store, create=True):
        pass
    before = fs_state(tmp_path)
    conn = Connection(store / DB_NAME, readonly=True)
    try:
        with pytest.raises(StoreError):
            conn.execute(sql)
    finally:
        conn.close()
    assert fs_state(tmp_path) == before


def test_uri_is_quoted() -> None:
    uri, _ = readonly_uri(Path("/tmp/a?b#c%d"))
    assert uri.startswith("file:/tmp/a%3Fb%23c%25d?mode=ro")
