"""Helpers of the transfer tests: source stores from fixtures, raw marker edits, dumps."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from migrate.store import open_store
from tests.pipeline.helpers import cell_fixtures, cli, unpack

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")


def migrated_store(tmp: Path, name: str = "source") -> Path:
    """A store converted by `run` from the fixture cell-small.redb (status 'complete')."""
    src = unpack(SMALL, tmp / f"{name}-redb")
    store = tmp / name
    res = cli("run", str(src), "--store", str(store))
    assert res.returncode == 0, res.stderr
    return store


def copy_store(store: Path, dest: Path) -> Path:
    """A byte copy of a closed store directory (same store id)."""
    shutil.copytree(store, dest)
    return dest


def dump(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a store (its whole logical content)."""
    conn = sqlite3.connect(f"file:{store / 'bbg.sqlite3'}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: sorted(conn.execute(f"SELECT * FROM {n}").fetchall()) for n in names}
    finally:
        conn.close()


def status(store: Path) -> str | None:
    conn = sqlite3.connect(f"file:{store / 'bbg.sqlite3'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT status FROM bbg_import_v1").fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def raw(store: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Change a store behind the tool's back (tampering, for tests only)."""
    conn = sqlite3.connect(store / "bbg.sqlite3")
    with conn:
        conn.execute(sql, params)
    conn.close()


def last_transaction(store: Path) -> int:
    with open_store(store, maintenance=True) as st:
        return int(st.info()["last_transaction"])
