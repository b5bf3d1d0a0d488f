"""Damaged stores end in named errors; doctor reports whatever SQLite can still read (18.9).

The corpus is described in ``fixtures/damaged-stores/README.md``: random damage generated
from a seed (a fast sample by default, several hundred under ``-m slow``) and surgical damage
from ``fixtures/damaged-stores/surgical.json``.  Every command runs in-process through
``migrate.cli.main`` (the one place exceptions become exit codes), so a case costs
milliseconds, not an interpreter start.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import schemas
from migrate.store import DB_NAME
from migrate.store.layout import APPLICATION_ID
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "damaged-stores"
SURGICAL: list[dict[str, str]] = json.loads((CORPUS / "surgical.json").read_text())
PAGE = 4096


def cli(*argv: str) -> tuple[int, bytes, str]:
    """``bbg-migrate ARGV`` in this process: (exit code, stdout bytes, stderr text)."""
    from migrate.cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code
    out.flush()
    return int(code or 0), out.buffer.getvalue(), err.getvalue()  # type: ignore[attr-defined]


def damage(data: bytes, seed: int) -> tuple[str, bytes]:
    """Seed ``seed``'s damage to ``data``: (what was done, the damaged bytes)."""
    rng = random.Random(seed)
    out = bytearray(data)
    kind = rng.choice(["flip", "zero", "truncate"])
    if kind == "flip":
        at = rng.randrange(len(out))
        bit = rng.randrange(8)
        out[at] ^= 1 << bit
        return f"seed {seed}: bit {bit} of byte {at} flipped", bytes(out)
    if kind == "zero":
        n = rng.choice([16, 512, PAGE])
        page = rng.randrange(len(out) // PAGE)
        at = page * PAGE + rng.randrange(PAGE - n + 1)
        out[at : at + n] = bytes(n)
        return f"seed {seed}: {n} bytes zeroed at {at}", bytes(out)
    at = rng.randrange(len(out))
    return f"seed {seed}: truncated to {at} bytes", bytes(out[:at])


def sqlite_readable(store: Path) -> bool:
    """True when the header says BBG store and SQLite can read the schema table."""
    head = (store / DB_NAME).read_bytes()[:100]
    if len(head) < 100 or int.from_bytes(head[68:72], "big") != APPLICATION_ID:
        return False
    try:
        conn = sqlite3.connect(f"file:{store / DB_NAME}?mode=ro&immutable=1", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return True


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small legacy source for ``run`` into a damaged store."""
    path = tmp_path_factory.mktemp("src") / "cell.redb"
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-empty.redb.gz").read_bytes()))
    return path


@pytest.fixture(scope="module")
def bases(_built: dict[str, Path]) -> dict[str, bytes]:
    out = {}
    for name, store in _built.items():
        assert not (store / f"{DB_NAME}-wal").exists()  # everything is in the main file
        out[name] = (store / DB_NAME).read_bytes()
    return out


def check_store(store: Path, source: Path, what: str) -> None:
    """Every reader and ``run`` on ``store`` ends in a named error (or works)."""
    readable = sqlite_readable(store)
    code, out, err = cli("--store", str(store), "doctor", "--json")
    assert "internal error" not in err, (what, err)
    if readable:
        assert code in (0, 3), (what, code, err)
        report = json.loads(out)
        schemas.validate(report, "doctor")
        assert report["healthy"] == (code == 0)
    else:
        assert code in (1, 3), (what, code, err)
    for argv in (
        ("inspect", str(store), "--json"),
        ("--store", str(store), "tail"),
        ("--store", str(store), "snapshot"),
        ("run", str(source), "--store", str(store)),
    ):
        code, _, err = cli(*argv)
        assert "internal error" not in err, (what, argv[:2], err)
        assert code in (0, 1, 3, 4), (what, argv[:2], code, err)


def _one(tmp_path: Path, bases: dict[str, bytes], source: Path, seed: int) -> None:
    base = sorted(bases)[seed % len(bases)]
    what, data = damage(bases[base], seed)
    store = tmp_path / f"m{seed}"
    store.mkdir()
    (store / DB_NAME).write_bytes(data)
    check_store(store, source, f"{base} {what}")


@pytest.mark.slow
def test_random_damage_fast_sample(tmp_path: Path, bases: dict[str, bytes], source: Path) -> None:
    for seed in range(40):
        _one(tmp_path, bases, source, seed)


@pytest.mark.slow
def test_random_damage_wide(tmp_path: Path, bases: dict[str, bytes], source: Path) -> None:
    for seed in range(40, 640):
        _one(tmp_path, bases, source, seed)


@pytest.mark.parametrize("case", SURGICAL, ids=[c["name"] for c in SURGICAL])
def test_surgical_damage(
    tmp_path: Path, bases: dict[str, bytes], source: Path, case: dict[str, str]
) -> None:
    store = tmp_path / "s"
    store.mkdir()
    (store / DB_NAME).write_bytes(bases[case["base"]])
    conn = sqlite3.connect(store / DB_NAME, isolation_level=None)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(case["sql"])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    check_store(store, source, case["name"])
    code, out, _ = cli("--store", str(store), "doctor", "--json")
    assert code == 3 and not json.loads(out)["healthy"], case["name"]  # the damage is named
