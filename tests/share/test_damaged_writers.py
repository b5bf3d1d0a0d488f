"""The writing sharing commands on a damaged store end in named errors, never "internal
error" (issue 28, "Named errors": a damaged head value under ``excise``/``nohistory``, a
content value stored as text under ``apply``).  The damage is the surgical corpus of
``test_damaged_stores`` (``fixtures/damaged-stores/surgical.json``); the rule is the same:
exit 0, 1, 3 or 4, one named message, no traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from migrate.store import DB_NAME
from tests.share.test_damaged_stores import SURGICAL, bases, cli  # noqa: F401  (fixture)


def _namespaces(data: bytes, tmp: Path) -> list[str]:
    path = tmp / "healthy.sqlite3"
    path.write_bytes(data)
    conn = sqlite3.connect(path)
    try:
        return sorted(bytes(k).hex() for (k,) in conn.execute("SELECT key FROM application_heads"))
    finally:
        conn.close()


def _damaged(tmp_path: Path, data: bytes, sql: str) -> Path:
    store = tmp_path / "s"
    store.mkdir(parents=True)
    (store / DB_NAME).write_bytes(data)
    conn = sqlite3.connect(store / DB_NAME, isolation_level=None)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(sql)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return store


@pytest.mark.parametrize("case", SURGICAL, ids=[c["name"] for c in SURGICAL])
def test_writers_on_a_damaged_store_name_the_damage(
    tmp_path: Path, bases: dict[str, bytes], case: dict[str, str]  # noqa: F811
) -> None:
    data = bases[case["base"]]
    namespaces = _namespaces(data, tmp_path)
    # A stream of the healthy store, applied into the damaged one.
    healthy = tmp_path / "h"
    healthy.mkdir()
    (healthy / DB_NAME).write_bytes(data)
    code, stream, err = cli("--store", str(healthy), "tail")
    assert code == 0, err
    events = tmp_path / "events.jsonl"
    events.write_bytes(stream)
    for argv in (
        ("nohistory", *namespaces, "--yes"),
        ("excise", "--namespace", namespaces[0], "--yes"),
        ("apply", str(events)),
    ):
        store = _damaged(tmp_path / argv[0], data, case["sql"])
        code, _, err = cli("--store", str(store), *argv)
        assert "internal error" not in err and "Traceback" not in err, (case["name"], argv[0], err)
        assert code in (0, 1, 3, 4), (case["name"], argv[0], code, err)
