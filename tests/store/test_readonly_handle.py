"""The one read-only handle: writes are refused by construction,
and a path with URI metacharacters opens the file it names, creating nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bbg_core.errors import StoreError
from migrate.store import DB_NAME, open_store
from migrate.store.connection import Connection, readonly_uri
from migrate.store.readonly import open_readonly
from tests.fs import fs_state
from tests.store.helpers import birth

NAMES = ["x?y", "a#b", "p%41q", "sp ace", "q?mode=rw&z"]
WRITES = [
    "DELETE FROM application_heads",
    "INSERT INTO bbg_storage_v1 (id) VALUES (2)",
    "CREATE TABLE t (x)",
    "PRAGMA user_version = 7",
    "PRAGMA journal_mode = DELETE",
    "ATTACH DATABASE 'other.db' AS o",
]


@pytest.mark.engine("sqlite")  # SQLite's read-only URI of the store file
@pytest.mark.parametrize("name", NAMES)
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


@pytest.mark.engine("sqlite")  # a read-only SQLite connection to the store file
@pytest.mark.parametrize("sql", WRITES)
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


@pytest.mark.engine("fjall")
@pytest.mark.parametrize("name", NAMES)
def test_fjall_view_names_its_files_and_writes_nothing(tmp_path: Path, name: str) -> None:
    """The read-only handle of a Fjall store (keyspace snapshot + the records beside it,
    whose path carries the store's name) reads what it names and creates nothing, and every
    write through it is refused."""
    store = tmp_path / name
    w = birth("v")
    with open_store(store, create=True) as st:
        w.apply(st)
    before = fs_state(tmp_path)
    with open_readonly(store) as view:
        assert view.one("PRAGMA application_id") == (0x42424731,)
        assert view.live_get("application_heads", w.namespace) == w.new_head.encode()
        assert [k for k, _ in view.live_rows("application_heads")] == [w.namespace]
        for sql in WRITES:
            with pytest.raises(StoreError):
                view.one(sql)
    assert fs_state(tmp_path) == before
