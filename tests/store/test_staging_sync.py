"""Staging pages commit without an fsync each (the per-page fsync was a third of
staging into an existing store): inside ``store.staging_sync()`` a WAL store runs at
``synchronous = NORMAL`` -- commits stay atomic, a SIGKILL loses none of them (the crash
suites run unchanged) -- and leaving the block fsyncs the log once and restores FULL, also
when the block raises."""

from __future__ import annotations

from pathlib import Path

import pytest

from bbg_core.files import fsync_file
from migrate.store import connection, open_store

FULL, NORMAL = 2, 1


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the store fsyncs (recorded instead)."""
    seen: list[Path] = []
    monkeypatch.setattr(connection, "fsync_file", lambda path, **_: seen.append(path))
    return seen


def test_normal_inside_full_after_and_the_log_fsynced_once(
    tmp_path: Path, synced: list[Path]
) -> None:
    with open_store(tmp_path / "bbg", create=True) as st:
        assert st.one("PRAGMA synchronous") == (FULL,)
        with st.staging_sync():
            assert st.one("PRAGMA synchronous") == (NORMAL,)
            with st.transaction() as tx:
                tx.execute("CREATE TABLE t (x)")
            assert synced == []  # not per commit
        assert st.one("PRAGMA synchronous") == (FULL,)
        assert synced == [Path(f"{st.db_path}-wal")]


def test_a_failing_block_restores_full_and_raises(tmp_path: Path, synced: list[Path]) -> None:
    with open_store(tmp_path / "bbg", create=True) as st:
        with pytest.raises(KeyError), st.staging_sync():
            raise KeyError("boom")
        assert st.one("PRAGMA synchronous") == (FULL,)
        assert synced == []


def test_the_real_fsync_of_the_log(tmp_path: Path) -> None:
    with open_store(tmp_path / "bbg", create=True) as st:
        with st.staging_sync(), st.transaction() as tx:
            tx.execute("CREATE TABLE t (x)")
        assert st.one("SELECT count(*) FROM sqlite_master WHERE name = 't'") == (1,)
    fsync_file(tmp_path / "absent-wal", missing_ok=True)  # no log: nothing to sync
