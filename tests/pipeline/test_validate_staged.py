"""Validation of a cell.redb import staged into an existing store: one pass over
the staging area, comparing its counts and archive digest with the source's -- the shape and
link rules were checked on the source's rows by preflight, so rows equal to them need no
second check.  Any change to the staged rows (a flipped byte, a row gone, a row added) is
still refused, nothing is published, and an untampered import validates and activates."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.pipeline.helpers import cli
from tests.support.cell_store import generate
from tests.support.stores import live_digest, records_write

Tamper = Callable[[sqlite3.Connection], None]


def _flip_a_value(db: sqlite3.Connection) -> None:
    key, value = db.execute(
        "SELECT key, value FROM bbg_import_v1_staged WHERE tbl = 0 ORDER BY key LIMIT 1"
    ).fetchone()
    flipped = value[:-1] + bytes([value[-1] ^ 1])
    db.execute("UPDATE bbg_import_v1_staged SET value = ? WHERE tbl = 0 AND key = ?",
               (flipped, key))  # fmt: skip


def _drop_a_row(db: sqlite3.Connection) -> None:
    key, = db.execute(
        "SELECT key FROM bbg_import_v1_staged WHERE tbl = 3 ORDER BY key DESC LIMIT 1"
    ).fetchone()
    db.execute("DELETE FROM bbg_import_v1_staged WHERE tbl = 3 AND key = ?", (key,))


def _add_a_row(db: sqlite3.Connection) -> None:
    import_id, = db.execute("SELECT import_id FROM bbg_import_v1_staged LIMIT 1").fetchone()
    db.execute("INSERT INTO bbg_import_v1_staged (import_id, tbl, key, value) VALUES (?, 4, ?, ?)",
               (import_id, b"\x07" * 32, b"\x08" * 32))  # fmt: skip


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("sources")
    first, second = where / "first.redb", where / "second.redb"
    generate(first, writes=40, namespaces=3, seed=101)
    generate(second, writes=60, namespaces=4, seed=202)
    return first, second


def _staged_into_existing(sources: tuple[Path, Path], tmp_path: Path) -> tuple[Path, str]:
    first, second = sources
    store = tmp_path / "bbg"
    assert cli("run", str(first), "--store", str(store)).returncode == 0
    res = cli("stage", str(second), "--store", str(store))
    assert res.returncode == 0, res.stderr
    live = live_digest(store)
    assert live is not None
    return store, live


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tamper", "code"),
    [(_flip_a_value, "digest-mismatch"), (_drop_a_row, "count-mismatch"),
     (_add_a_row, "count-mismatch")],
    ids=["flipped-byte", "row-gone", "row-added"],
)  # fmt: skip
def test_changed_staging_is_refused_and_nothing_is_published(
    sources: tuple[Path, Path], tmp_path: Path, tamper: Tamper, code: str
) -> None:
    store, live = _staged_into_existing(sources, tmp_path)
    with records_write(store) as db:  # the inert staging area is in the records (both engines)
        tamper(db)
    for verb in ("validate", "run"):
        res = cli(verb, str(sources[1]), "--store", str(store))
        assert res.returncode == 3, (verb, res.stderr)
        assert f"did not validate: {code}" in res.stderr, res.stderr
        assert live_digest(store) == live  # nothing of the import is visible


@pytest.mark.slow
def test_untouched_staging_validates_with_the_source_digest_and_activates(
    sources: tuple[Path, Path], tmp_path: Path
) -> None:
    store, _ = _staged_into_existing(sources, tmp_path)
    res = cli("validate", str(sources[1]), "--store", str(store), "--json")
    assert res.returncode == 0, res.stderr
    done = json.loads(res.stdout)
    res = cli("inspect", str(sources[1]), "--json")
    assert res.returncode == 0, res.stderr
    source = json.loads(res.stdout)
    assert done["archive_digest_sha256"] == source["archive_digest_sha256"]
    assert done["rows"] == {name: t["rows"] for name, t in source["tables"].items()}
    res = cli("run", str(sources[1]), "--store", str(store), "--json")
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    assert receipt["digests"]["staged_archive_sha256"] == source["archive_digest_sha256"]
    again = cli("run", str(sources[1]), "--store", str(store), "--json")
    assert again.returncode == 0 and json.loads(again.stdout) == receipt  # an exact rerun
