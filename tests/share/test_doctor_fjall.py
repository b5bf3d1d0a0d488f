"""``doctor`` on the Fjall engine (the real BBG database): read-only, bbg's open checks, every
checksum, and a store the cyber code wrote (no records of ours beside it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate import api
from migrate.store import bbgdb
from migrate.store.fjall import open_keyspace
from tests.conftest import ROOT
from tests.fjall.conftest import extract
from tests.share.conftest import run_cli

pytestmark = pytest.mark.engine("fjall")

CELL_SMALL = ROOT / "fixtures" / "legacy" / "cell-small.redb.gz"


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime (what a read-only command keeps)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def _migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gzip

    base = tmp_path_factory.mktemp("doctor-fjall")
    source = base / "cell.redb"
    source.write_bytes(gzip.decompress(CELL_SMALL.read_bytes()))
    dest = base / "bbg"
    env = {**os.environ, "BBG_MIGRATE_ENGINE": "fjall"}
    done = subprocess.run([sys.executable, "-m", "migrate", "run", str(source), "--store",
                           str(dest)], capture_output=True, env=env, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dest


@pytest.fixture
def store(_migrated: Path, tmp_path: Path) -> Path:
    """A copy of a store ``run`` made from cell-small (tests may damage it)."""
    shutil.copytree(_migrated, tmp_path / "bbg")
    shutil.copytree(Path(f"{_migrated}.bbg-migrate"), tmp_path / "bbg.bbg-migrate")
    return tmp_path / "bbg"


def test_a_migrated_store_is_healthy_and_nothing_changes(store: Path) -> None:
    before = _tree(store.parent)
    done = run_cli("--store", str(store), "doctor", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["engine"] == "fjall" and report["healthy"], report["problems"]
    assert report["keyspace"]["ok"] and report["keyspace"]["records"] == "present"
    assert report["keyspace"]["bbg_open"] == [] and report["keyspace"]["unknown_partitions"] == []
    assert report["keyspace"]["checked"]["partitions"] == len(bbgdb.PARTITIONS)
    assert report["generation"]["status"] == "complete"
    inspected = api.inspect(store)
    assert report["tables"]["archive_digest_sha256"] == inspected["archive_digest_sha256"]
    with open_keyspace(store) as ks:
        last = ks.get(bbgdb.METADATA, bbgdb.LAST_TRANSACTION)
    assert last is not None and report["bbg_last_transaction"] == last.hex()
    assert _tree(store.parent) == before


def test_the_real_crates_database_without_our_records(tmp_path: Path) -> None:
    """bbg-small was written by the real fjall 2.11.2 crate through bbg: no records beside it."""
    real = extract("bbg-small", tmp_path)
    before = _tree(tmp_path)
    done = run_cli("--store", str(real), "doctor", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["healthy"] and report["keyspace"]["records"] == "absent"
    assert report["sqlite"] is None and report["warnings"] == []
    assert "written by the cyber code" in report["keyspace"]["notes"][0]
    assert report["tables"]["valid"] and report["namespaces"] == 3
    assert _tree(tmp_path) == before  # no records directory made, no lock file touched


def test_a_damaged_segment_is_a_named_problem(store: Path) -> None:
    segments = sorted((store / "partitions" / "application_content" / "segments").iterdir())
    victim = segments[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 3] ^= 0x40
    victim.write_bytes(bytes(data))
    done = run_cli("--store", str(store), "doctor", "--json")
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert not report["healthy"] and not report["keyspace"]["ok"]
    assert report["problems"][0]["code"] == "keyspace-damage"
    assert "Traceback" not in done.stderr.decode()


def test_what_bbg_would_refuse_to_open_is_a_problem(store: Path) -> None:
    guard = bbgdb.guard_path(store)
    guard.write_text("{}")
    done = run_cli("--store", str(store), "doctor", "--json")
    assert done.returncode == 3
    report = json.loads(done.stdout)
    assert [p["code"] for p in report["problems"]] == ["bbg-refuses-open"]
    assert "incomplete application migration" in report["problems"][0]["detail"]
    human = run_cli("--store", str(store), "doctor")
    assert b"bbg opens it: no" in human.stderr


@pytest.mark.parametrize(("sql", "code"), [
    ("DROP TABLE bbg_import_v1_receipts", "missing-table"),
    ("DROP TABLE bbg_import_v1_journal", "missing-table"),
    ("UPDATE bbg_storage_v1 SET hash_suite = 'md5'", "unknown-hash-suite"),
])  # fmt: skip
def test_records_other_commands_refuse_are_problems(store: Path, sql: str, code: str) -> None:
    """Issue 28 item 4: the records beside the keyspace are checked as a SQLite store's are."""
    import sqlite3

    from migrate.share import doctor

    db = sqlite3.connect(Path(f"{store}.bbg-migrate") / "bbg.sqlite3", isolation_level=None)
    db.execute(sql)
    db.close()
    report = doctor(store)
    assert report["healthy"] is False
    assert code in {p["code"] for p in report["problems"]}
