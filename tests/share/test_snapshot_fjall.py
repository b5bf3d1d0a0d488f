"""``snapshot`` / ``restore`` on the Fjall engine (the real BBG database), across engines.

A snapshot of a Fjall store (snapshot/1 format 3, docs/snapshot1.md) restores into a new
Fjall store (bulk segments, bbg's layout) that dumps identically -- every partition, bbg's
markers and our records -- and whose own snapshot is the same bytes; and into a SQLite store
(``--engine sqlite``) with the same five tables and status marker, healthy.  bbg-small (a
store the real crates wrote, no records of ours) goes both ways too.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from migrate import api
from migrate.store import bbgdb
from migrate.store.engine import FJALL, SQLITE, records_dir
from tests.fjall.conftest import real_dump
from tests.share.conftest import run_cli
from tests.share.fjall_stores import retained
from tests.support import stores

pytestmark = pytest.mark.engine(FJALL)

CLOCK = "1700000000000000"


def _snapshot(store: Path, *engine: str) -> bytes:
    env = os.environ.get("BBG_MIGRATE_CLOCK")
    os.environ["BBG_MIGRATE_CLOCK"] = CLOCK
    try:
        done = run_cli(*engine, "--store", str(store), "snapshot")
    finally:
        if env is None:
            del os.environ["BBG_MIGRATE_CLOCK"]
        else:
            os.environ["BBG_MIGRATE_CLOCK"] = env
    assert done.returncode == 0, done.stderr
    return done.stdout


def _restore(snap: bytes, dest: Path, *engine: str) -> dict[str, object]:
    done = run_cli(*engine, "--store", str(dest), "restore", "-", "--json", stdin=snap)
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def test_a_fjall_snapshot_restores_into_fjall_identically(
    fjall_source: Path, tmp_path: Path
) -> None:
    source = fjall_source
    before = stores.dump(source), stores.store_files(source)  # (dump opens the records)
    snap = _snapshot(source)
    assert (stores.dump(source), stores.store_files(source)) == before  # read-only
    header = json.loads(snap.splitlines()[0])
    has_records = records_dir(source).exists()
    assert (header["format"], header["engine"]) == (3, FJALL)
    assert header["records"] == ("present" if has_records else "absent")
    dest = tmp_path / "restored"
    doc = _restore(snap, dest)
    assert doc["engine"] == FJALL and doc["source_records"] == header["records"]
    assert stores.engine_of(dest) == FJALL
    assert retained(dest) == retained(source)  # every partition, and our records
    assert records_dir(dest).exists() == has_records
    dumped = list(api.fjall_dump(dest))
    assert dumped == list(api.fjall_dump(source))
    if source.name == "bbg-small":
        real = real_dump("bbg-small")
        assert real is not None and dumped == real.decode().splitlines()  # the real crate's
    assert stat.S_IMODE(os.stat(dest).st_mode) == bbgdb.DIR_MODE
    assert stat.S_IMODE(os.stat(dest / bbgdb.LOCK_NAME).st_mode) == bbgdb.LOCK_MODE
    assert _snapshot(dest) == snap  # snapshot -> restore -> snapshot: the same bytes
    expected = {"restored", *(["restored.bbg-migrate"] if has_records else [])}
    assert {n for n in os.listdir(tmp_path) if "restored" in n} == expected  # no temporaries
    health = run_cli("--store", str(dest), "doctor", "--json")
    assert health.returncode == 0, health.stdout


def test_a_fjall_snapshot_restores_into_sqlite(fjall_source: Path, tmp_path: Path) -> None:
    source = fjall_source
    snap = _snapshot(source)
    dest = tmp_path / "restored"
    doc = _restore(snap, dest, "--engine", SQLITE)
    assert stores.engine_of(dest) == SQLITE and doc["engine"] == SQLITE
    assert stores.live_digest(dest) == stores.live_digest(source)
    assert stores.status(dest) == stores.status(source) == "complete"
    assert doc["not_kept"] == ["bbg_storage_v1[last_transaction]"]
    health = run_cli("--store", str(dest), "doctor", "--json")
    assert health.returncode == 0, health.stdout
    again = _snapshot(dest)  # a SQLite store's snapshot (format 2) of the same five tables
    assert json.loads(again.splitlines()[-1])["archive_digest_sha256"] == \
        json.loads(snap.splitlines()[-1])["archive_digest_sha256"]  # fmt: skip


def test_a_sqlite_snapshot_is_not_restored_into_fjall(tmp_path: Path, fjall_migrated: Path) -> None:
    sqlite_store = tmp_path / "sq"
    _restore(_snapshot(fjall_migrated), sqlite_store, "--engine", SQLITE)
    snap = _snapshot(sqlite_store)
    assert json.loads(snap.splitlines()[0])["format"] == 2
    dest = tmp_path / "new"
    done = run_cli("--engine", FJALL, "--store", str(dest), "restore", "-", stdin=snap)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "--engine sqlite" in err and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["sq"]


def _lines(snap: bytes) -> list[bytes]:
    return snap.splitlines(keepends=True)


def test_a_changed_partition_line_is_refused_and_nothing_published(
    fjall_migrated: Path, tmp_path: Path
) -> None:
    lines = _lines(_snapshot(fjall_migrated))
    at = next(i for i, line in enumerate(lines) if b'"partition"' in line)
    lines[at] = lines[at].replace(b'"value":"', b'"value":"00', 1)
    dest = tmp_path / "new"
    done = run_cli("--store", str(dest), "restore", "-", stdin=b"".join(lines))
    assert done.returncode == 3, done.stderr
    assert f"line {at + 1}".encode() in done.stderr
    assert os.listdir(tmp_path) == []


def test_keys_out_of_order_are_refused(fjall_migrated: Path, tmp_path: Path) -> None:
    """A snapshot re-sealed line by line with two rows swapped: every line is valid, the
    order the segments need is not."""
    from migrate.share.snapshot import sealed

    lines = _lines(_snapshot(fjall_migrated))
    lines[2], lines[3] = lines[3], lines[2]
    body = lines[:-1]
    import hashlib

    footer = json.loads(lines[-1])
    footer.pop("h")
    footer["sha256"] = hashlib.sha256(b"".join([body[0], *body[2:]])).hexdigest()
    stream = b"".join([*body, sealed(footer)])
    done = run_cli("--store", str(tmp_path / "new"), "restore", "-", stdin=stream)
    assert done.returncode == 3, done.stderr
    assert b"out of order" in done.stderr and b"line 4" in done.stderr
    assert os.listdir(tmp_path) == []


def test_bbg_keys_sqlite_cannot_hold_go_into_fjall_and_refuse_sqlite(tmp_path: Path) -> None:
    """A fence (neuron's 64-byte value) becomes a SQLite fence record; a row of another of
    bbg's partitions has no place in SQLite: that restore is refused naming it, and the
    restore into Fjall keeps both byte for byte."""
    from tests.fjall.conftest import extract

    store = extract("bbg-small", tmp_path / "src")
    namespace = bytes(range(32))
    fence = b"neuron-fence\x00" + namespace
    stores.put_raw(store, bbgdb.MIGRATION, fence, b"\x01" * 64, markers=True)
    snap = _snapshot(store)
    fenced = tmp_path / "fenced"
    _restore(snap, fenced, "--engine", SQLITE)
    with stores.records(fenced) as conn:
        rows = conn.execute("SELECT namespace FROM bbg_import_v1_fences").fetchall()
    assert rows == [(namespace,)]
    stores.put_raw(store, "particles", b"k", b"v")
    snap = _snapshot(store)
    refused = run_cli("--engine", SQLITE, "--store", str(tmp_path / "sq"), "restore", "-",
                      stdin=snap)  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert b"partition particles" in refused.stderr and b"Fjall" in refused.stderr
    assert not (tmp_path / "sq").exists()
    kept = tmp_path / "kept"
    _restore(snap, kept)
    assert stores.live_get(kept, "particles", b"k") == b"v"
    assert stores.live_get(kept, bbgdb.MIGRATION, fence) == b"\x01" * 64
    assert list(api.fjall_dump(kept)) == list(api.fjall_dump(store))
