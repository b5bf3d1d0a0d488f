"""The transaction ledger: one row per write transaction, the upgrade of a
version-1 store, and followers that neither skip nor repeat across kills."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused
from migrate.share import doctor, tail
from migrate.share.follow import resume_point
from migrate.store import DB_NAME, ledger, open_store
from migrate.store.store import upgrade_store
from tests.conftest import ROOT
from tests.procs import cli_env
from tests.share.conftest import run_cli
from tests.share.helpers import check_event_lines, digest, tail_bytes
from tests.share.stores import birth, follow, graph_writes

V1 = ROOT / "tests" / "store" / "data" / "v1"


def _ledger(store: Path) -> list[tuple[int, int, str]]:
    db = sqlite3.connect(f"file:{store / DB_NAME}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in db.execute("SELECT tx, at, kind FROM bbg_ledger_v1 ORDER BY tx")]
    finally:
        db.close()


def test_every_write_transaction_appends_one_ledger_row(graph: Path) -> None:
    rows = _ledger(graph)
    with open_store(graph) as st:
        last = st.info()["last_transaction"]
    # tx 1..last, each once, times strictly increasing; the creation is row 1
    assert [r[0] for r in rows] == list(range(1, last + 1))
    assert all(a[1] < b[1] for a, b in zip(rows, rows[1:], strict=False))
    assert rows[0][2] == "create"
    kinds = [r[2] for r in rows]
    assert kinds.count("commit") == len(graph_writes())
    assert kinds[-1] == "fence"  # fence + promotion in one transaction: the fence ranks higher
    # a transaction that writes nothing appends nothing; a refused one appends nothing
    with open_store(graph) as st:
        with st.transaction():
            pass
        w = graph_writes()[0]
        w.apply(st)  # an exact retry: resolves, writes nothing
    assert _ledger(graph) == rows


def test_the_ledger_records_heads_before_and_after(graph: Path) -> None:
    w = graph_writes()[1]
    with open_store(graph) as st:
        entries = list(ledger.entries(st._conn))  # the handle's reader
        moved = [(e.tx, list(ledger.heads_of(st._conn, e.tx))) for e in entries]
    mine = [m for _, heads in moved for m in heads if m[0] == w.namespace and m[3] == w.request]
    assert mine == [(w.namespace, w.expected, w.new_head, w.request)]


def test_time_is_injectable_and_monotonic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BBG_MIGRATE_CLOCK", "1767225600000000")
    with open_store(tmp_path / "s", create=True) as st:
        for w in graph_writes(1, 2):
            w.apply(st)
    assert [r[1] for r in _ledger(tmp_path / "s")] == [1767225600000000 + i * 1_000_000
                                                      for i in range(4)]  # fmt: skip


def _v1(tmp_path: Path, name: str) -> Path:
    store = tmp_path / name
    store.mkdir()
    (store / DB_NAME).write_bytes(gzip.decompress((V1 / f"{name}.sqlite3.gz").read_bytes()))
    return store


def test_upgrade_says_what_it_upgraded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The human report names the store, the versions, the ledger transaction and what it
    took in; a second run says there was nothing to do (not a generic key/value line)."""
    store = _v1(tmp_path, "cell")
    monkeypatch.setenv("BBG_MIGRATE_CLOCK", "1767225600000000")
    done = run_cli("--store", str(store), "upgrade")
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(store / DB_NAME)
    tx = db.execute("SELECT last_transaction FROM bbg_storage_v1").fetchone()[0]
    heads = db.execute(f"SELECT count(*) FROM {ledger.HEADS} WHERE tx = ?", (tx,)).fetchone()[0]
    rows = db.execute(f"SELECT count(*) FROM {ledger.ROWS} WHERE tx = ?", (tx,)).fetchone()[0]
    db.close()
    text = " ".join(done.stderr.decode().split())
    assert text.startswith(
        f"upgraded {store}: store schema version 1 -> 2. Added the transaction ledger; the "
        f"history so far became ledger transaction {tx:,} (2026-01-01 00:00:00 UTC): "
        f"{heads:,} head{'s' * (heads != 1)}, {rows:,} rows and "
    ), text
    assert heads > 0 and rows > 0
    again = run_cli("--store", str(store), "upgrade")
    assert again.returncode == 0
    assert " ".join(again.stderr.decode().split()) == (
        f"nothing to do: {store} is already at store schema version 2 (it has the transaction "
        "ledger); nothing written"
    )
    report = json.loads(run_cli("--store", str(store), "upgrade", "--json").stdout)
    assert report["upgraded"] is False and "recorded" not in report


@pytest.mark.parametrize("name", ["graph", "cell"])
def test_upgrade_a_version_1_store(tmp_path: Path, name: str) -> None:
    store = _v1(tmp_path, name)
    before = digest(store)  # reading a version-1 store works
    assert doctor(store)["healthy"]
    # a writer refuses it, naming the upgrade; the ledger readers too
    with pytest.raises(StoreRefused, match="upgrade") as info:
        open_store(store)
    assert f"bbg-migrate --store {store} upgrade" in info.value.message
    with pytest.raises(StoreRefused, match="upgrade"):
        list(tail(store))
    done = run_cli("--store", str(store), "apply", "-", stdin=b"")
    assert done.returncode == 1 and b"upgrade" in done.stderr
    # plan is the gate of run: the same refusal, the same exit code
    from migrate.demo import unpack_demo

    source = unpack_demo(tmp_path)
    planned = run_cli("plan", str(source), "--store", str(store))
    ran = run_cli("run", str(source), "--store", str(store))
    assert planned.returncode == ran.returncode == 1
    assert b"upgrade" in planned.stderr and b"upgrade" in ran.stderr
    done = run_cli("--store", str(store), "upgrade", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["upgraded"] and (report["from"], report["to"]) == (1, 2)
    db = sqlite3.connect(store / DB_NAME)
    assert db.execute("PRAGMA user_version").fetchone() == (2,)  # older builds refuse it now
    last = db.execute("SELECT last_transaction FROM bbg_storage_v1").fetchone()[0]
    db.close()
    assert report["tx"] == last
    assert digest(store) == before and doctor(store)["healthy"]
    # the whole prior history is the upgrade's one transaction; fences etc. travel with it
    docs = check_event_lines(tail_bytes(store))
    assert {d["tx"] for d in docs} == {last}
    assert any(d["kind"] == "generation" for d in docs)
    # again: nothing changes
    again = upgrade_store(store)
    assert not again["upgraded"] and again["tx"] is None
    with open_store(store) as st:  # and it is writable now
        w = birth("after-upgrade")
        w.apply(st)
    assert json.loads(tail_bytes(store, last).splitlines()[0])["tx"] == last + 1


def _writer(store: Path, name: str, count: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.share._child", "writer", str(store), str(count), "0",
         name],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env(), cwd=ROOT,
    )  # fmt: skip


def _follower(store: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", "--store", str(store), "tail", "--follow",
         "--output", str(out), "--poll", "0.02"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env(), cwd=ROOT,
    )  # fmt: skip


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


@pytest.mark.slow
def test_a_killed_follower_resumes_without_skipping_or_repeating(
    graph: Path, tmp_path: Path
) -> None:
    """Writers in other processes keep committing while the follower is SIGKILLed and
    restarted at random moments: the file it appends to ends up exactly the ledger's stream."""
    out = tmp_path / "events.ndjson"
    rng = random.Random(14)
    writers = [_writer(graph, f"w{i}", 40) for i in range(2)]
    kills = 0
    try:
        while any(w.poll() is None for w in writers) or kills < 4:
            f = _follower(graph, out)
            time.sleep(rng.uniform(0.3, 1.2))  # past start-up, then anywhere in its work
            f.send_signal(signal.SIGKILL)
            f.wait()
            kills += 1
        for w in writers:
            assert w.wait(timeout=120) == 0
        want = tail_bytes(graph)
        f = _follower(graph, out)
        deadline = time.monotonic() + 60
        while _size(out) < len(want) and time.monotonic() < deadline:
            time.sleep(0.05)
        f.send_signal(signal.SIGKILL)
        f.wait()
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
            w.wait()
    got = out.read_bytes()
    assert kills >= 4
    assert got == want  # every event once, in ledger order, across all restarts
    assert len(check_event_lines(got)) > 80


def test_resume_point_cuts_a_torn_line_and_counts_the_last_transaction(tmp_path: Path) -> None:
    out = tmp_path / "e.ndjson"
    assert resume_point(out) is None
    out.write_bytes(b'{"tx":3}\n{"tx":4}\n{"tx":4}\n{"tx":5')
    assert resume_point(out) == (3, 2)
    assert out.read_bytes() == b'{"tx":3}\n{"tx":4}\n{"tx":4}\n'
    out.write_bytes(b"{torn")
    assert resume_point(out) is None and out.read_bytes() == b""


def test_follow_output_needs_follow(graph: Path, tmp_path: Path) -> None:
    done = run_cli("--store", str(graph), "tail", "--output", str(tmp_path / "x"))
    assert done.returncode == 2 and b"--follow" in done.stderr


def test_apply_of_events_from_several_source_transactions(graph: Path, tmp_path: Path) -> None:
    """Each source transaction becomes one local ledger transaction, stamped imported_at."""
    data = tail_bytes(graph)
    src = [json.loads(x) for x in data.splitlines()]
    done = run_cli("--store", str(tmp_path / "copy"), "apply", "-", "--json", stdin=data)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    rows = _ledger(tmp_path / "copy")
    assert [r[2] for r in rows] == ["create"] + ["apply"] * len({d["tx"] for d in src})
    assert summary["basis_tx"] == rows[-1][0]
    # replaying changes nothing and appends nothing
    again = run_cli("--store", str(tmp_path / "copy"), "apply", "-", "--json", stdin=data)
    assert json.loads(again.stdout)["applied"] == 0 and _ledger(tmp_path / "copy") == rows
    _ = follow, os, shutil  # (helpers kept for the writers above)
