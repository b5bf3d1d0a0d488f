"""Where a store may be created, and how a file is recognised as one.

* 18.6: a destination that is not empty and not a BBG store is refused (``--store /`` or a
  project folder named by mistake); an option-looking ``--store`` value is a usage error.
* 18.10: a foreign SQLite file is identified by its header bytes before SQLite opens it, so
  a hot rollback journal beside it is never rolled back by a refusal.
* 18.12: the store file is built under a temporary name and renamed into place once its
  schema is committed, so a crash never leaves a ``bbg.sqlite3`` without a schema; a Fjall
  store (the real BBG database) is built as a temporary sibling and renamed into place, so a
  crash leaves no store or an empty complete one.
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
from migrate.store import DB_NAME, bbgdb, open_store
from migrate.store.creation import TEMP_PREFIX, check_destination
from migrate.store.engine import records_dir
from migrate.store.fjall import open_keyspace
from tests.conftest import FIXTURES, ROOT
from tests.pipeline.helpers import cli, expected, unpack
from tests.support.stores import EMPTY_DIGEST, engine_of, live_digest, status


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
    assert engine_of(empty) is not None
    open_store(empty).close()  # a store now: it opens without create


def test_a_store_is_created_with_its_missing_parents(tmp_path: Path) -> None:
    store = tmp_path / "a" / "b" / "bbg"
    open_store(store, create=True).close()
    assert engine_of(store) is not None
    run_into = tmp_path / "c" / "d" / "bbg"
    small = FIXTURES / "legacy" / "cell-small.redb.gz"
    done = cli("run", str(unpack(small, tmp_path / "src")), "--store", str(run_into))
    assert done.returncode == 0, done.stderr
    assert live_digest(run_into) == expected(small)["archive_digest_sha256"]


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


@pytest.mark.parametrize("engine", ["sqlite", "fjall"])
def test_a_dash_directory_named_explicitly_is_fine(tmp_path: Path, engine: str) -> None:
    done = cli("--engine", engine, "apply", "-", "--store", "./--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert engine_of(tmp_path / "--json") == engine


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
@pytest.mark.engine("sqlite")  # SQLite's store file, its schema and its -journal leftovers
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


@pytest.mark.engine("sqlite")  # SQLite's temporary store file and journal inside the directory
def test_abandoned_creation_leftovers_are_removed_under_the_lock(tmp_path: Path) -> None:
    store = tmp_path / "bbg"
    store.mkdir()
    (store / f"{TEMP_PREFIX}deadbeef").write_bytes(b"SQLite format 3\x00" + bytes(84))
    (store / f"{TEMP_PREFIX}deadbeef-journal").write_bytes(b"x")
    open_store(store, create=True).close()
    assert sorted(os.listdir(store)) == [DB_NAME]


def _create_killed_at(store: Path, point: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tests.store._child", "create", str(store), str(point)],
        capture_output=True, text=True, cwd=ROOT, env=env, check=False,
    )  # fmt: skip


def _fjall_kill_total(tmp_path: Path) -> int:
    """How many file-system changes creating a Fjall store makes."""
    done = _create_killed_at(tmp_path / "count" / "bbg", 0)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def _fjall_kill_points(tmp_path: Path) -> list[int]:
    """A sample of the file-system changes of a Fjall store's creation: the first one, one
    while the partitions are written, and the last ten (the keyspace's rename out of its
    build directory, ``bbg.lock``, the rename into place, the records); the keyspace
    writer's own kill -9 suite (tests/fjall/test_crash.py) kills each step of a build."""
    total = _fjall_kill_total(tmp_path)
    return sorted({1, total // 2, *range(total - 9, total + 1)})


def _siblings(store: Path) -> list[str]:
    """The temporary siblings a creation of ``store`` makes (``.NAME.bbg-new-RANDOM``, marked
    as this tool's own; the keyspace is built inside it)."""
    return sorted(n for n in os.listdir(store.parent) if f".{store.name}.bbg-new-" in n)


@pytest.mark.engine("fjall")
def test_fjall_a_crash_while_creating_leaves_no_store_or_an_empty_one(tmp_path: Path) -> None:
    with open_store(tmp_path / "fresh", create=True) as st:
        fresh = st.info()["last_transaction"]
    points = _fjall_kill_points(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = {}
    for point in points:  # killed all at once, checked one by one
        (tmp_path / f"s{point}").mkdir()
        children[point] = subprocess.Popen(
            [sys.executable, "-m", "tests.store._child", "create",
             str(tmp_path / f"s{point}" / "bbg"), str(point)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
    for point in points:
        store = tmp_path / f"s{point}" / "bbg"
        _, stderr = children[point].communicate(timeout=120)
        assert children[point].returncode == -9, (point, stderr)
        if engine_of(store) is not None:  # only ever a complete keyspace under the real name
            with open_keyspace(store) as ks:
                assert set(ks.partitions()) == set(bbgdb.PARTITIONS), point
            assert (store / bbgdb.LOCK_NAME).is_file(), point
            assert live_digest(store) == EMPTY_DIGEST and status(store) is None, point
        else:
            assert not store.exists() or not os.listdir(store), point
        assert not os.path.lexists(records_dir(store)) or engine_of(store) is not None, point
        with open_store(store, create=True) as st:  # the next creation or open finishes
            assert st.info()["last_transaction"] == fresh, point
        assert engine_of(store) == "fjall" and live_digest(store) == EMPTY_DIGEST
        assert (records_dir(store) / DB_NAME).is_file(), point


@pytest.mark.engine("fjall")
def test_fjall_abandoned_creation_leftovers_are_removed(tmp_path: Path) -> None:
    """As SQLite's creation removes what a killed creation left (18.12), the next creation
    of a Fjall store removes the temporary siblings a killed one left beside it."""
    store = tmp_path / "bbg"
    killed = _create_killed_at(store, _fjall_kill_total(tmp_path) - 15)  # building the keyspace
    assert killed.returncode == -9, killed.stderr
    assert _siblings(store), "the kill left no temporary sibling: choose another point"
    open_store(store, create=True).close()
    assert _siblings(store) == []


@pytest.mark.engine("fjall")
def test_fjall_creation_never_removes_a_sibling_it_does_not_own(tmp_path: Path) -> None:
    """Only a temporary this tool marked, and whose owner is gone, is removed: a folder that
    merely matches the name (no mark) and one a live creation holds both stay untouched."""
    from bbg_core.files import OWNER_MARK, owned_tempdir

    store = tmp_path / "bbg"
    foreign = tmp_path / ".bbg.bbg-new-1234-abcdef"  # the user's, or an earlier version's
    foreign.mkdir()
    (foreign / "data").write_bytes(b"keep me")
    with owned_tempdir(tmp_path, ".bbg.bbg-new-") as live:  # a creation still running
        open_store(store, create=True).close()
        assert (live / OWNER_MARK).is_file()
    assert (foreign / "data").read_bytes() == b"keep me"
    assert engine_of(store) == "fjall"
    assert _siblings(store) == sorted([foreign.name, live.name])  # (a random name may sort first)
