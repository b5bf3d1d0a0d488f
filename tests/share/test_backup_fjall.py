"""``backup DEST`` of a live store on the Fjall engine (the real BBG database).

The copy is a new keyspace written from one point-in-time snapshot (not a file copy of a
directory that keeps changing), verified by reading it back, published by rename, never over
anything; while another process keeps appending batches through our journal writer, the
backup equals the store at one seqno: a prefix of the writer's batches, each whole.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bbg_core.files import OWNER_MARK
from migrate.store import bbgdb
from migrate.store.engine import FJALL, records_dir
from tests.conftest import ROOT
from tests.fjall.conftest import extract
from tests.share.conftest import run_cli
from tests.share.fjall_stores import retained
from tests.support import stores

pytestmark = pytest.mark.engine(FJALL)


def _backup(store: Path, dest: Path) -> dict[str, object]:
    done = run_cli("--store", str(store), "backup", str(dest), "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def test_the_backup_is_an_equal_healthy_store(fjall_source: Path, tmp_path: Path) -> None:
    source = fjall_source
    before = stores.dump(source), stores.store_files(source)
    dest = tmp_path / "copy"
    doc = _backup(source, dest)
    assert (stores.dump(source), stores.store_files(source)) == before  # nothing written
    assert doc["engine"] == FJALL and doc["dest"] == str(dest)
    assert doc["records"] == ("present" if records_dir(source).exists() else "absent")
    assert stores.engine_of(dest) == FJALL
    assert retained(dest) == retained(source)
    assert doc["archive_digest_sha256"] == stores.live_digest(source)
    last = stores.live_get(source, bbgdb.METADATA, bbgdb.LAST_TRANSACTION)
    assert last is not None and doc["bbg_last_transaction"] == last.hex()
    assert stat.S_IMODE(os.stat(dest).st_mode) == bbgdb.DIR_MODE
    assert stat.S_IMODE(os.stat(dest / bbgdb.LOCK_NAME).st_mode) == bbgdb.LOCK_MODE
    assert not (dest / OWNER_MARK).exists() and not (records_dir(dest) / OWNER_MARK).exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".copy.")]
    health = run_cli("--store", str(dest), "doctor", "--json")
    assert health.returncode == 0, health.stdout


@pytest.mark.parametrize("taken", ["dest", "records", "empty-dir"])
def test_the_backup_never_overwrites(tmp_path: Path, taken: str) -> None:
    store = extract("bbg-small", tmp_path / "src")
    dest = tmp_path / "copy"
    if taken == "records":
        records_dir(dest).mkdir()
        (records_dir(dest) / "mine").write_text("kept")
    else:
        dest.mkdir()
        if taken == "dest":
            (dest / "mine").write_text("kept")
    done = run_cli("--store", str(store), "backup", str(dest))
    assert done.returncode == 2, done.stderr
    assert b"never overwrites" in done.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["src", "copy" if taken != "records" else "copy.bbg-migrate"])  # fmt: skip


def test_what_a_killed_backup_left_is_removed_only_when_marked(tmp_path: Path) -> None:
    store = extract("bbg-small", tmp_path / "src")
    ours = tmp_path / ".copy.backup-dead"
    ours.mkdir()
    (ours / OWNER_MARK).write_text("x")
    theirs = tmp_path / ".copy.backup-mine"
    theirs.mkdir()
    (theirs / "keep").write_text("x")
    _backup(store, tmp_path / "copy")
    assert not ours.exists() and (theirs / "keep").exists()


WRITER = textwrap.dedent("""
    import sys
    from migrate import api
    store, count = sys.argv[1], int(sys.argv[2])
    for i in range(count):
        key = i.to_bytes(8, "big")
        api.fjall_append(store, [("neurons", key, b"n" * 64), ("particles", key, b"p" * 64)])
        print(i, flush=True)
""")


def test_backup_while_a_writer_appends_is_the_store_at_one_seqno(
    fjall_migrated: Path, tmp_path: Path
) -> None:
    store = tmp_path / "bbg"
    shutil.copytree(fjall_migrated, store)
    shutil.copytree(records_dir(fjall_migrated), records_dir(store))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), "100000"], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert writer.stdout is not None
        for _ in range(20):
            writer.stdout.readline()  # it has appended batches already
        copies = []
        for n in range(3):
            at_start = len(stores.live_rows(store, "particles"))
            dest = tmp_path / f"copy{n}"
            _backup(store, dest)
            at_end = len(stores.live_rows(store, "particles"))
            copies.append((dest, at_start, at_end))
        assert writer.poll() is None, "the writer must still be running"
    finally:
        writer.kill()
        writer.communicate(timeout=30)
    final = stores.dump(store)
    for dest, at_start, at_end in copies:
        got = stores.dump(dest)
        seen = len(got["fjall:particles"])
        assert at_start <= seen <= at_end
        # one seqno: a prefix of the batches, each batch whole, everything else as it is
        keys = [i.to_bytes(8, "big") for i in range(seen)]
        assert [k for k, _ in got["fjall:particles"]] == keys
        assert [k for k, _ in got["fjall:neurons"]] == keys
        for table, rows in got.items():
            if table not in ("fjall:particles", "fjall:neurons", "bbg_import_v1_cursors"):
                assert rows == final[table], table
    assert copies[-1][2] > copies[0][1], "the writer appended during the backups"
