"""``run`` into a new or empty destination builds the store aside and publishes it by rename
(:mod:`migrate.pipeline.fresh`, :mod:`migrate.store.build`); the result is the staged path's.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from migrate.store.build import Build, remove_abandoned
from migrate.store.engine import default_engine
from tests.pipeline.helpers import (
    EMPTY_DIGEST,
    cell_fixtures,
    cli,
    expected,
    live_digest,
    tree_state,
    unpack,
)
from tests.support.stores import bookkeeping

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")
INVALID = next(p for p in cell_fixtures() if p.name == "cell-invalid-history-gap.redb.gz")
ALL_INVALID = [p for p in cell_fixtures() if not expected(p)["valid"]]


def _siblings(parent: Path) -> list[str]:
    """Builds beside the destination: a SQLite store's (``.NAME.bbg-build-*``) or a Fjall
    store's (its records' ``.NAME.bbg-migrate.bbg-build-*``, its keyspace's
    ``.NAME.fjall-build-*``)."""
    return sorted(n for n in os.listdir(parent) if ".bbg-build-" in n or ".fjall-build-" in n)


# The SQLite build's own file (checkpointed, no -wal) and tail (a share command, SQLite only).
@pytest.mark.engine("sqlite")
@pytest.mark.slow
def test_built_store_equals_the_staged_one(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    fresh, staged = tmp_path / "fresh", tmp_path / "staged"
    one = cli("run", str(src), "--store", str(fresh), "--json", "--page-rows", "16")
    assert one.returncode == 0, one.stderr
    # ``seal`` first makes the store, so this run takes the staged path.
    assert cli("seal", str(src), "--store", str(staged)).returncode == 0
    two = cli("run", str(src), "--store", str(staged), "--json", "--page-rows", "16")
    assert two.returncode == 0, two.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert sorted(os.listdir(fresh)) == ["bbg.sqlite3"]  # checkpointed: no -wal, no -shm
    assert live_digest(fresh) == live_digest(staged) == expected(SMALL)["archive_digest_sha256"]
    assert bookkeeping(fresh) == bookkeeping(staged)
    # The ledger tells the same story: tail's events differ only in ledger numbers and times.
    tails = []
    for store in (fresh, staged):
        res = cli("tail", "--store", str(store), "--since", "0")
        assert res.returncode == 0, res.stderr
        events = [json.loads(line) for line in res.stdout.splitlines()]
        tails.append([{k: v for k, v in e.items() if k not in ("tx", "at")} for e in events])
    assert tails[0] == tails[1] and tails[0]
    assert _siblings(tmp_path) == []


def test_into_an_empty_directory(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    store.mkdir()
    res = cli("run", str(src), "--store", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert live_digest(store) == expected(SMALL)["archive_digest_sha256"]
    again = cli("run", str(src), "--store", str(store), "--json")
    assert again.stdout == res.stdout
    assert _siblings(tmp_path) == []


@pytest.mark.parametrize("exists", [False, True], ids=["absent", "empty-dir"])
def test_invalid_source_leaves_no_store_and_no_build(tmp_path: Path, exists: bool) -> None:
    src = unpack(INVALID, tmp_path / "src")
    store = tmp_path / "bbg"
    if exists:
        store.mkdir()
    before = tree_state(src, tmp_path)
    res = cli("run", str(src), "--store", str(store), "--json")
    assert res.returncode == 3, res.stderr
    assert expected(INVALID)["expected_errors"][0]["code"] in res.stderr
    assert tree_state(src, tmp_path) == before
    assert store.exists() is exists


def test_a_killed_build_is_removed_by_the_next_run(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    args = ("run", str(src), "--store", str(store), "--json", "--page-rows", "8")
    # Killed while loading pages into the build: SQLite commits each page into its build
    # file; Fjall pushes them into the keyspace build after the records' first commits.
    at, builds = {"sqlite": (6, 1), "fjall": (4, 2)}[default_engine()]
    killed = cli(*args, kill_at_commit=at)
    assert killed.returncode < 0
    assert len(_siblings(tmp_path)) == builds and live_digest(store) in (None, EMPTY_DIGEST)
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    assert _siblings(tmp_path) == []
    assert live_digest(store) == expected(SMALL)["archive_digest_sha256"]


def test_publish_refuses_a_destination_that_filled_meanwhile(tmp_path: Path) -> None:
    target = tmp_path / "bbg"
    build = Build(target)
    try:
        target.mkdir()
        (target / "someone-elses").write_bytes(b"x")
        assert build.publish() is False
        assert os.listdir(target) == ["someone-elses"]
    finally:
        build.discard()
    assert _siblings(tmp_path) == []


def test_abandoned_builds_of_live_processes_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "bbg"
    mine = tmp_path / f".bbg.bbg-build-{os.getpid()}-x"
    dead = tmp_path / ".bbg.bbg-build-999999999-x"
    mine.mkdir()
    dead.mkdir()
    (dead / "bbg.sqlite3").write_bytes(b"")
    remove_abandoned(target)
    assert mine.exists() and not dead.exists()


@pytest.mark.parametrize("gz", ALL_INVALID, ids=lambda p: p.name)
def test_every_invalid_fixture_into_a_new_store_is_refused_with_its_code(
    gz: Path, tmp_path: Path
) -> None:
    """The built-aside path refuses as the staged path does (exit 3, the first code), whatever
    the table set (a multimap table among the five is never loaded), and leaves nothing."""
    src = unpack(gz, tmp_path / "src")
    store = tmp_path / "bbg"
    res = cli("run", str(src), "--store", str(store), "--json")
    assert res.returncode == 3, res.stderr
    assert expected(gz)["expected_errors"][0]["code"] in res.stderr
    assert not store.exists() and _siblings(tmp_path) == []


def _hash_after_rows(monkeypatch: pytest.MonkeyPatch,
                     on_rows: Callable[[], None] = lambda: None) -> list[bool]:  # fmt: skip
    """Hold the seal's background hash until the pass reads its first table (``on_rows``
    then runs); the list says, for each seal hash, whether the pass got there first."""
    from fences import seal as seal_mod
    from migrate.pipeline import fresh

    reading = threading.Event()
    waited: list[bool] = []
    real_sha, real_rows = seal_mod.file_sha256, fresh._Tee.row_batches

    def sha(p: Path, progress: object = None, *, size: int | None = None) -> str:
        if threading.current_thread().name == "seal-hash":
            waited.append(reading.wait(120))
        return real_sha(p, progress, size=size)  # type: ignore[arg-type]

    def rows(self: Any, table: str) -> Any:
        if not reading.is_set():
            on_rows()
            reading.set()
        return real_rows(self, table)

    monkeypatch.setattr(seal_mod, "file_sha256", sha)
    monkeypatch.setattr(fresh._Tee, "row_batches", rows)
    return waited


def test_the_seal_hash_runs_beside_a_new_stores_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a new store the pass reads the rows while the seal's SHA-256 is still being
    hashed (nothing needs the fingerprint before the rows are read); the receipt is the one a
    run that sealed first gives."""
    from migrate import api

    src = unpack(SMALL, tmp_path / "src")
    waited = _hash_after_rows(monkeypatch)
    out = api.run(api.make_job(src, tmp_path / "bbg"))
    assert waited == [True]
    monkeypatch.undo()
    staged = tmp_path / "staged"
    assert cli("seal", str(src), "--store", str(staged)).returncode == 0
    two = cli("run", str(src), "--store", str(staged), "--json")
    assert two.returncode == 0, two.stderr
    assert out.receipt == json.loads(two.stdout)
    assert live_digest(tmp_path / "bbg") == expected(SMALL)["archive_digest_sha256"]
    assert not (tmp_path / "bbg.bbg-importing").exists()


@pytest.mark.engine("fjall")
@pytest.mark.parametrize("theirs", [b"", b'{"tool": "bbg-migrate", "import_id": "other", '
                                        b'"op": "convert"}'], ids=["bbg", "another-import"])
def test_a_guard_taken_while_building_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theirs: bytes
) -> None:
    """The guard of a new BBG database is taken just before publication: one that another
    converter (bbg's, empty) or another import took meanwhile refuses the run, which
    publishes nothing and leaves that guard as it was."""
    from bbg_core.errors import StoreRefused
    from migrate import api

    src = unpack(SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    guard = tmp_path / "bbg.bbg-importing"
    _hash_after_rows(monkeypatch, lambda: guard.write_bytes(theirs))
    with pytest.raises(StoreRefused, match="owns this destination"):
        api.run(api.make_job(src, store))
    assert guard.read_bytes() == theirs
    assert not store.exists() and _siblings(tmp_path) == []
