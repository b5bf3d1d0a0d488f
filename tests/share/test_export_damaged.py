"""``tail`` and ``snapshot`` refuse a store that breaks the cheap invariants.

Each damage below is one ``doctor`` calls unhealthy, and one the exporters used to stream
without a word: the last history entry and receipt of a namespace gone (the head still counts
them), staged rows of no import in progress, and a damaged page of a table the export does not
read (SQLite's quick_check fails).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from migrate.store import DB_NAME
from tests.share.conftest import run_cli


def _sql(store: Path, *statements: str) -> None:
    conn = sqlite3.connect(store / DB_NAME, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def drop_last_entry(store: Path) -> None:
    _sql(
        store,
        "DELETE FROM application_history WHERE key = (SELECT max(key) FROM application_history)",
        "DELETE FROM application_requests WHERE key = "
        "(SELECT max(key) FROM application_requests)",
    )


def stray_staged_rows(store: Path) -> None:
    _sql(
        store,
        "INSERT INTO bbg_import_v1_staged (import_id, tbl, key, value) "
        "VALUES ('ghost', 0, x'00', x'01')",
    )


def damaged_journal_page(store: Path) -> None:
    conn = sqlite3.connect(store / DB_NAME)
    try:
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'bbg_import_v1_journal'"
        ).fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    with open(store / DB_NAME, "r+b") as fh:
        fh.seek((root - 1) * size + 8)  # keep the page header, garble its cells
        fh.write(b"\xff" * (size - 8))


@pytest.mark.parametrize(
    ("damage", "code"), [(drop_last_entry, 3), (stray_staged_rows, 3), (damaged_journal_page, 1)],
    ids=["dropped-last-entry", "stray-staged-rows", "damaged-page"],
)  # fmt: skip
def test_exports_refuse_what_doctor_calls_unhealthy(
    cell_store: Path, damage: Callable[[Path], None], code: int
) -> None:
    """A broken invariant is a validation failure (exit 3); a page SQLite cannot read is a
    store error (exit 1); either way the export names it and writes nothing."""
    damage(cell_store)
    doctor = run_cli("--store", str(cell_store), "doctor")
    assert doctor.returncode == 3, doctor.stderr
    for command in ("tail", "snapshot"):
        done = run_cli("--store", str(cell_store), command)
        assert done.returncode == code, (command, done.stderr)
        assert b"damaged" in done.stderr and b"doctor" in done.stderr
        assert done.stdout == b"", command  # refused before the first line


def test_a_sound_store_still_exports(cell_store: Path) -> None:
    for command in ("tail", "snapshot"):
        done = run_cli("--store", str(cell_store), command)
        assert done.returncode == 0 and done.stdout, done.stderr
