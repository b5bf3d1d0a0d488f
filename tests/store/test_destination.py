"""Where a store may be created, and how a file is recognised as one.

* 18.6: a destination that is not empty and not a BBG store is refused (``--store /`` or a
  project folder named by mistake); an option-looking ``--store`` value is a usage error.
* 18.10: a foreign SQLite file is identified by its header bytes before SQLite opens it, so
  a hot rollback journal beside it is never rolled back by a refusal.
* 18.12: the store file is built under a temporary name and renamed into place once its
  schema is committed, so a crash never leaves a ``bbg.sqlite3`` without a schema.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused
from migrate.store import DB_NAME, open_store
from migrate.store.creation import TEMP_PREFIX, check_destination
from tests.pipeline.helpers import cli


def _files(d: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())
    }


# -- 18.6 -------------------------------------------------------------------------------------
def test_the_root_directory_is_not_a_destination() -> None:
    with pytest.raises(StoreRefused, match="not a BBG store and not empty"):
        check_destination(Path("/"))


def test_a_non_empty_non_store_directory_is_refused_and_untouched(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine\n")
    before = _files(project)
    with pytest.raises(StoreRefused, match="not a BBG store and not empty"):
        open_store(project, create=True)
    done = cli("apply", "-", "--store", str(project))
    assert done.returncode == 1, done.stderr
    assert "not a BBG store and not empty" in done.stderr
    assert _files(project) == before


def test_an_empty_directory_may_become_a_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    open_store(empty, create=True).close()
    assert (empty / DB_NAME).is_file()


@pytest.mark.parametrize(
    "args",
    [
        ("apply", "-", "--store", "--json"),
        ("--store", "--json", "doctor"),
        ("run", "cell.redb", "--store", "--json"),
        ("doctor", "--store", "-q"),
    ],
)
def test_an_option_looking_store_is_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "looks like an option" in done.stderr and "./" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_dash_directory_named_explicitly_is_fine(tmp_path: Path) -> None:
    done = cli("apply", "-", "--store", "./--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "--json" / DB_NAME).is_file()


# -- 18.10 ------------------------------------------------------------------------------------
_HOT = """
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA cache_size = 1")  # spill: the main file is changed mid-transaction
c.execute("CREATE TABLE t (x)")
c.execute("BEGIN")
for _ in range(300):
    c.execute("INSERT INTO t VALUES (randomblob(1000))")
c.execute("COMMIT")
c.execute("BEGIN")
c.execute("UPDATE t SET x = randomblob(1000)")
os._exit(0)  # dies mid-transaction: a hot rollback journal stays beside the file
"""


@pytest.fixture
def hot(tmp_path: Path) -> Path:
    d = tmp_path / "foreign"
    d.mkdir()
    subprocess.run([sys.executable, "-c", _HOT, str(d / DB_NAME)], check=True)
    assert (d / f"{DB_NAME}-journal").stat().st_size > 0
    return d


@pytest.mark.parametrize(
    "command",
    [("apply", "-"), ("doctor",), ("tail",), ("snapshot",), ("inspect", "{store}")],
)
def test_a_hot_journal_is_refused_unchanged(hot: Path, command: tuple[str, ...]) -> None:
    before = _files(hot)
    args = [a.replace("{store}", str(hot)) for a in command]
    done = cli(*args, "--store", str(hot)) if "{store}" not in command else cli(*args)
    assert done.returncode == 1, done.stderr  # a store error, before anything is read
    assert "internal error" not in done.stderr
    assert _files(hot) == before


def test_open_store_refuses_a_hot_journal_without_opening(hot: Path) -> None:
    before = _files(hot)
    for create in (False, True):
        with pytest.raises(StoreRefused, match="rollback journal"):
            open_store(hot, create=create)
    assert _files(hot) == before


# -- 18.12 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("point", [1, 2])
def test_a_crash_while_creating_leaves_no_schemaless_store(tmp_path: Path, point: int) -> None:
    store = tmp_path / "bbg"
    killed = cli("apply", "-", "--store", str(store), kill_at_commit=point)
    assert killed.returncode == -9, killed.stderr
    db = store / DB_NAME
    if db.exists():  # only ever a complete store under the real name
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            assert conn.execute("SELECT count(*) FROM bbg_storage_v1").fetchone() == (1,)
        finally:
            conn.close()
    doctor = cli("--store", str(store), "doctor")
    assert doctor.returncode == 1 and "no BBG store here" in doctor.stderr, doctor.stderr
    again = cli("apply", "-", "--store", str(store))
    assert again.returncode == 0, again.stderr
    assert db.is_file()
    assert not [n for n in os.listdir(store) if n.startswith(TEMP_PREFIX)]  # leftovers cleaned


def test_abandoned_creation_leftovers_are_removed_under_the_lock(tmp_path: Path) -> None:
    store = tmp_path / "bbg"
    store.mkdir()
    (store / f"{TEMP_PREFIX}deadbeef").write_bytes(b"SQLite format 3\x00" + bytes(84))
    (store / f"{TEMP_PREFIX}deadbeef-journal").write_bytes(b"x")
    open_store(store, create=True).close()
    assert sorted(os.listdir(store)) == [DB_NAME]
