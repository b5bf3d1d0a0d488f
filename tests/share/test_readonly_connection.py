"""The store additions the share commands rest on: read-only opens and the online backup."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bbg_core.errors import StoreError
from migrate.store import DB_NAME, open_store
from migrate.store.connection import Connection
from tests.share.stores import birth


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_readonly_refuses_writes_and_creates_nothing(graph: Path) -> None:
    assert _files(graph) == [DB_NAME]
    conn = Connection(graph / DB_NAME, readonly=True)
    try:
        assert conn.one("SELECT count(*) FROM application_heads") == (3,)
        with pytest.raises(StoreError, match="readonly"):
            conn.execute("DELETE FROM application_heads")
    finally:
        conn.close()
    assert _files(graph) == [DB_NAME]  # immutable open: no -wal/-shm


def test_readonly_sees_a_live_writers_wal(graph: Path) -> None:
    with open_store(graph) as st:
        birth("late").apply(st)  # committed into the WAL, not yet checkpointed
        conn = Connection(graph / DB_NAME, readonly=True)
        try:
            row = conn.one("SELECT count(*) FROM application_heads")
        finally:
            conn.close()
    assert row == (4,)


def test_live_reader_sees_commits_made_after_it_opened(graph: Path) -> None:
    conn = Connection(graph / DB_NAME, readonly=True, live=True)
    try:
        with open_store(graph) as st:
            birth("after").apply(st)
        assert conn.one("SELECT count(*) FROM application_heads") == (4,)
    finally:
        conn.close()


def test_backup_into_copies_a_consistent_database(graph: Path, tmp_path: Path) -> None:
    conn = Connection(graph / DB_NAME, readonly=True)
    try:
        conn.backup_into(tmp_path / "copy.sqlite3")
    finally:
        conn.close()
    db = sqlite3.connect(tmp_path / "copy.sqlite3")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM application_history").fetchone() == (15,)
    finally:
        db.close()
