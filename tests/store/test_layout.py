"""Store layout: file identity, pragmas, creation only on request, the default-store guard.

The SQLite file checked here is the records database (:func:`tests.support.stores.records_db`):
on the SQLite engine the whole store, on the Fjall engine the toolkit's records beside the
real BBG database, whose own layout (bbg's) is checked by the ``fjall`` tests."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused
from hashing import hemera
from migrate.store import DB_NAME, bbgdb, open_store, resolve_store_dir
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.engine import records_dir
from migrate.store.fjall import open_keyspace
from migrate.store.layout import APPLICATION_ID, SCHEMA_VERSION
from tests.support.stores import engine_of, live_rows, records_db, records_write


def test_create_then_open(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        info = st.info()
    assert engine_of(store_dir) is not None
    assert records_db(store_dir).is_file()
    with open_store(store_dir) as st:
        assert st.info()["store_id"] == info["store_id"]
        assert st.info()["hash_suite"] == hemera.SUITE
        assert st.generation == "original"


def test_file_pragmas_and_tables(store_dir: Path) -> None:
    open_store(store_dir, create=True).close()
    db = sqlite3.connect(records_db(store_dir))
    try:
        assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        sql = dict(
            db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
        )
    finally:
        db.close()
    assert set(ARCHIVE_ORDER) <= names
    assert {"bbg_storage_v1", "bbg_import_v1"} <= names
    for table in ARCHIVE_ORDER:
        assert "WITHOUT ROWID" in sql[table]


@pytest.mark.engine("fjall")
def test_fjall_store_is_laid_out_as_bbg_lays_it_out(store_dir: Path) -> None:
    """The real BBG database: directory 0700, bbg.lock 0600 held by the write handle for its
    life, bbg's 33 partitions and nothing else in the keyspace; the records beside it."""
    with open_store(store_dir, create=True):
        fd = os.open(store_dir / bbgdb.LOCK_NAME, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert stat.S_IMODE(os.stat(store_dir).st_mode) == bbgdb.DIR_MODE == 0o700
    assert stat.S_IMODE(os.stat(store_dir / bbgdb.LOCK_NAME).st_mode) == bbgdb.LOCK_MODE == 0o600
    with open_keyspace(store_dir) as ks:
        assert sorted(ks.partitions()) == sorted(bbgdb.PARTITIONS)
    assert not (store_dir / DB_NAME).exists()
    assert records_db(store_dir) == records_dir(store_dir) / DB_NAME
    assert records_db(store_dir).is_file()
    for table in ARCHIVE_ORDER:
        assert live_rows(store_dir, table) == []


def test_synchronous_full_on_handle(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        row = st._conn.one("PRAGMA synchronous")
    assert row == (2,)  # 2 = FULL


def test_open_never_creates(tmp_path: Path) -> None:
    with pytest.raises(StoreRefused, match="no BBG store here"):
        open_store(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()


def test_create_is_idempotent(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        sid = st.info()["store_id"]
    with open_store(store_dir, create=True) as st:
        assert st.info()["store_id"] == sid


def test_foreign_sqlite_refused_and_untouched(tmp_path: Path) -> None:
    d = tmp_path / "foreign"
    d.mkdir()
    db = sqlite3.connect(d / DB_NAME)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    before = (d / DB_NAME).read_bytes()
    for create in (False, True):
        with pytest.raises(StoreRefused, match=f"{DB_NAME}.*not a BBG store") as info:
            open_store(d, create=create)
        assert info.value.context["path"].endswith(DB_NAME)
    assert (d / DB_NAME).read_bytes() == before


def test_other_application_refused(tmp_path: Path) -> None:
    d = tmp_path / "other"
    d.mkdir()
    db = sqlite3.connect(d / DB_NAME)
    db.execute("PRAGMA application_id = 7")
    db.commit()
    db.close()
    with pytest.raises(StoreRefused, match="another application"):
        open_store(d)


def test_newer_schema_refused(store_dir: Path) -> None:
    open_store(store_dir, create=True).close()
    db = sqlite3.connect(records_db(store_dir))
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    with pytest.raises(StoreRefused, match="schema version 99"):
        open_store(store_dir)


def test_not_a_database_refused(tmp_path: Path) -> None:
    d = tmp_path / "junk"
    d.mkdir()
    (d / DB_NAME).write_bytes(b"redb\x1a\x0a\xa9\x0d\x0a" + bytes(600))
    with pytest.raises(StoreRefused, match=DB_NAME):
        open_store(d)


def test_path_is_a_file_refused(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreRefused, match="not a store directory"):
        open_store(f, create=True)


class TestDefaultStoreGuard:
    def test_refuses_to_create_empty_default_beside_cell_redb(self, tmp_path: Path) -> None:
        (tmp_path / "cell.redb").write_bytes(b"x")
        with pytest.raises(StoreRefused) as info:
            open_store(None, create=True, cwd=tmp_path)
        assert "bbg-migrate run cell.redb --store bbg" in info.value.message
        assert "--store" in info.value.message
        assert not (tmp_path / "bbg").exists()

    def test_refuses_plain_open_too(self, tmp_path: Path) -> None:
        (tmp_path / "cell.redb").write_bytes(b"x")
        with pytest.raises(StoreRefused, match="cell.redb"):
            open_store(None, cwd=tmp_path)

    def test_named_store_is_allowed(self, tmp_path: Path) -> None:
        (tmp_path / "cell.redb").write_bytes(b"x")
        open_store(tmp_path / "bbg", create=True, cwd=tmp_path).close()
        # once it exists, the default store opens despite cell.redb
        open_store(None, cwd=tmp_path).close()

    def test_no_legacy_file_creates_default(self, tmp_path: Path) -> None:
        with open_store(None, create=True, cwd=tmp_path) as st:
            assert st.directory == tmp_path / "bbg"

    def test_guard_function_directly(self, tmp_path: Path) -> None:
        assert resolve_store_dir("x", create=True, cwd=tmp_path) == Path("x")
        assert resolve_store_dir(None, create=True, cwd=tmp_path) == tmp_path / "bbg"
        (tmp_path / "cell.redb").touch()
        with pytest.raises(StoreRefused):
            resolve_store_dir(None, create=False, cwd=tmp_path)


@pytest.mark.engine("sqlite")  # SQLite's multi-handle concurrency: a second handle opens
def test_busy_store_is_locked_not_a_crash(store_dir: Path) -> None:
    from bbg_core.errors import Locked
    from tests.store.helpers import birth

    with open_store(store_dir, create=True) as holder, holder.transaction() as tx:
        tx.put("application_content", b"h" * 32, b"\x01held")
        with open_store(store_dir, busy_timeout=0.05) as other:
            with pytest.raises(Locked, match="locked by another process") as info:
                birth("x").apply(other)
            assert info.value.exit_code == 11
            assert not other.poisoned  # BEGIN failed: nothing is unknown


@pytest.mark.engine("fjall")
def test_fjall_busy_store_is_locked_not_a_crash(store_dir: Path) -> None:
    """One write handle at a time on the real database (it holds bbg.lock): a second one is
    refused with Locked (exit 11) after the busy timeout, naming the holder; the holder goes
    on unharmed."""
    from bbg_core.errors import Locked
    from tests.store.helpers import birth

    with open_store(store_dir, create=True) as holder, holder.transaction() as tx:
        tx.put("application_content", b"h" * 32, b"\x01held")
        with pytest.raises(Locked) as info:
            open_store(store_dir, busy_timeout=0.05)
        assert info.value.exit_code == 11
        assert f"pid {os.getpid()}" in info.value.message
    with open_store(store_dir, busy_timeout=0.05) as st:
        birth("x").apply(st)
        assert st.live_get("application_content", b"h" * 32) == b"\x01held"
        assert not st.poisoned


def test_snapshot_is_consistent_while_others_commit(store_dir: Path) -> None:
    from tests.store.helpers import birth, follow

    with open_store(store_dir, create=True) as st:
        a = birth("a")
        a.apply(st)
        with st.snapshot() as snap:
            follow(a, a.namespace, 1).apply(st)
            assert snap.get("application_heads", a.namespace) == a.new_head.encode()
            assert len(list(snap.rows("application_history"))) == 1
        with st.snapshot() as snap:
            assert len(list(snap.rows("application_history"))) == 2


def _set_suite(store_dir: Path, suite: str) -> None:
    with records_write(store_dir) as db:
        db.execute("UPDATE bbg_storage_v1 SET hash_suite = ? WHERE id = 1", (suite,))


def test_hash_suite_is_written_under_the_real_name_and_both_names_are_read(
    store_dir: Path,
) -> None:
    # The real stack pins crate cyber-hemera 0.3.1 (cyberia-to/cybergraph Cargo.lock at
    # 0213210; bbg rs/Cargo.toml asks for 0.3): that is the name a new store records.
    assert hemera.SUITE == "cyber-hemera-0.3.1"
    open_store(store_dir, create=True).close()
    with open_store(store_dir) as st:
        assert st.info()["hash_suite"] == "cyber-hemera-0.3.1"
    # A store an earlier build wrote carries the old label: still read.
    _set_suite(store_dir, "cyber-hemera-0.2.0+e63b85a")
    with open_store(store_dir) as st:
        assert st.info()["hash_suite"] == "cyber-hemera-0.2.0+e63b85a"
    # Any other suite: refused by name, before anything else happens.
    _set_suite(store_dir, "blake3")
    with pytest.raises(StoreRefused, match="hash suite 'blake3'") as info:
        open_store(store_dir)
    assert info.value.context["hash_suite"] == "blake3"
