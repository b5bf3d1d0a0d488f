"""Operator trust (issue 28 items 3 and 4): a store whose ledger does not cover its tables,
or that other commands refuse, is never called healthy, and ``tail`` never exports it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from migrate.share import doctor
from migrate.store import DB_NAME
from tests.share.conftest import run_cli


def _raw(store: Path, sql: str) -> None:
    # Damage is made with plain SQLite on purpose: the store API refuses to make it.
    db = sqlite3.connect(store / DB_NAME, isolation_level=None)
    try:
        db.execute(sql)
    finally:
        db.close()


def _codes(store: Path) -> set[str]:
    report = doctor(store)
    assert report["healthy"] is (not report["problems"])
    return {p["code"] for p in report["problems"]}


@pytest.mark.parametrize("sql", [
    "DELETE FROM bbg_ledger_v1_rows",
    "DELETE FROM bbg_ledger_v1_rows WHERE tbl = 1",
    "DELETE FROM bbg_ledger_v1_rows WHERE tbl = 0 AND key = (SELECT min(key) FROM "
    "bbg_ledger_v1_rows WHERE tbl = 0)",
])  # fmt: skip
def test_ledger_rows_removed_is_unhealthy_and_tail_refuses(any_store: Path, sql: str) -> None:
    assert run_cli("--store", str(any_store), "tail").returncode == 0
    _raw(any_store, sql)
    assert "ledger-mismatch" in _codes(any_store)
    done = run_cli("--store", str(any_store), "tail")
    assert done.returncode == 3, done.stderr
    assert b"does not cover the tables" in done.stderr and done.stdout == b""


def test_nohistory_store_is_still_covered(graph: Path) -> None:
    """Content whose history entry nohistory dropped is named by its receipt: covered."""
    ns = sqlite3.connect(graph / DB_NAME).execute(
        "SELECT hex(key) FROM application_heads ORDER BY key LIMIT 1").fetchone()[0].lower()
    from migrate.share.retention import nohistory

    assert nohistory(graph, [ns])["dropped"] > 0
    assert _codes(graph) == set()
    assert run_cli("--store", str(graph), "tail").returncode == 0


@pytest.mark.parametrize(("sql", "code"), [
    ("DROP TABLE bbg_import_v1_receipts", "missing-table"),
    ("DROP TABLE bbg_import_v1_journal", "missing-table"),
    ("DROP TABLE bbg_ledger_v1", "missing-table"),
    ("DROP TABLE bbg_retention_v1_excised", "missing-table"),
    ("UPDATE bbg_storage_v1 SET hash_suite = 'md5'", "unknown-hash-suite"),
    ("UPDATE bbg_ledger_v1 SET detail = '{}' WHERE tx = 2", "bad-ledger-row"),
    ("UPDATE bbg_ledger_v1 SET kind = 'zzz' WHERE tx = 2", "bad-ledger-row"),
    ("UPDATE bbg_ledger_v1 SET detail = '{\"events\": [{\"kind\": \"x\"}]}' WHERE tx = 2",
     "bad-ledger-row"),
    ("INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) VALUES (2, 1, zeroblob(32))",
     "bad-ledger-row"),
    ("INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) VALUES (2, 0, zeroblob(32))",
     "bad-ledger-row"),
])  # fmt: skip
def test_doctor_checks_what_commands_refuse(graph: Path, sql: str, code: str) -> None:
    _raw(graph, sql)
    assert code in _codes(graph)
    done = run_cli("--store", str(graph), "doctor", "--json")
    assert done.returncode == 3
    assert code in {p["code"] for p in json.loads(done.stdout)["problems"]}


@pytest.mark.parametrize("sql", [
    "UPDATE bbg_ledger_v1 SET detail = '{}' WHERE tx = 2",
    "INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) VALUES (2, 1, zeroblob(32))",
])  # fmt: skip
def test_tail_refuses_bogus_ledger_rows(graph: Path, sql: str) -> None:
    _raw(graph, sql)
    done = run_cli("--store", str(graph), "tail")
    assert done.returncode == 3 and done.stdout == b"", done.stderr
    assert b"ledger rows cannot be read back" in done.stderr
