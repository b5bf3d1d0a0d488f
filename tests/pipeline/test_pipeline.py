"""The staged migration of cell.redb fixtures into a BBG store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import schemas
from migrate.pipeline import identity
from migrate.probe.inspect import inspect_bbg
from tests.fs import fs_state, untouched_but_scratch
from tests.pipeline.helpers import cell_fixtures, cli, expected, tree_state, unpack

VALID = [p for p in cell_fixtures() if expected(p)["valid"]]
INVALID = [p for p in cell_fixtures() if not expected(p)["valid"]]


@pytest.mark.parametrize("gz", VALID, ids=lambda p: p.name)
def test_valid_fixture_migrates_with_equal_digest(gz: Path, tmp_path: Path) -> None:
    src = unpack(gz, tmp_path / "src")
    before = tree_state(src)
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--json")
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    schemas.validate(receipt, "receipt")
    want = expected(gz)
    assert receipt["digests"]["source_archive_sha256"] == want["archive_digest_sha256"]
    report = inspect_bbg(tmp_path / "bbg")
    assert report["valid"], report["errors"]
    assert report["archive_digest_sha256"] == want["archive_digest_sha256"]
    assert report["namespaces"] == want["namespaces"]
    assert tree_state(src) == before  # the source is never written


@pytest.mark.slow
@pytest.mark.parametrize("gz", INVALID, ids=lambda p: p.name)
def test_invalid_fixture_stops_with_first_code_and_writes_nothing(gz: Path, tmp_path: Path) -> None:
    src = unpack(gz, tmp_path / "src")
    store = tmp_path / "bbg"
    # An existing destination with other content must stay byte for byte as it was.
    demo = unpack(LOCAL_SMALL, tmp_path / "other")
    assert cli("run", str(demo), "--store", str(store)).returncode == 0
    before = tree_state(src, store)
    res = cli("run", str(src), "--store", str(store), "--json")
    assert res.returncode == 3, res.stderr
    first = expected(gz)["expected_errors"][0]["code"]
    assert f": {first}:" in res.stderr or first in res.stderr
    assert tree_state(src, store) == before


LOCAL_SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")


def test_exact_rerun_prints_byte_identical_receipt(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path)
    args = ("run", str(src), "--store", str(tmp_path / "bbg"), "--json")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    state = tree_state(tmp_path / "bbg" / "bbg.sqlite3")
    second = cli(*args)
    assert second.returncode == 0
    assert second.stdout == first.stdout
    assert tree_state(tmp_path / "bbg" / "bbg.sqlite3") == state  # changed nothing


def test_same_nonce_with_other_inputs_is_a_conflict(tmp_path: Path) -> None:
    a = unpack(LOCAL_SMALL, tmp_path / "a")
    b = unpack(next(p for p in cell_fixtures() if p.name == "cell-empty.redb.gz"), tmp_path / "b")
    store = str(tmp_path / "bbg")
    assert cli("run", str(a), "--store", store, "--nonce", "abcd").returncode == 0
    res = cli("run", str(b), "--store", store, "--nonce", "abcd")
    assert res.returncode == 4
    assert "nonce abcd was already used" in res.stderr


def test_plan_writes_nothing_anywhere(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    # The child's temp dir is its own, so "nothing in temp" is checkable on a busy machine.
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    for existing in (False, True):
        if existing:
            assert cli("run", str(src), "--store", str(store), "--nonce", "01").returncode == 0
        # Every entry (names, types, sizes, mtimes, bytes) of source, store, cwd and TMPDIR.
        before = fs_state(tmp_path)
        res = cli(
            "plan",
            str(src),
            "--store",
            str(store),
            "--json",
            cwd=tmp_path,
            env={"TMPDIR": str(tmp)},
        )
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        schemas.validate(doc, "plan")
        assert doc["rows"] == 220 and len(doc["namespaces"]) == 3  # cell-small.expected.json
        assert doc["destination"]["exists"] is existing
        untouched_but_scratch(before, fs_state(tmp_path), tmp)


@pytest.mark.slow
def test_step_by_step_equals_run(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path / "src")
    store = str(tmp_path / "steps")
    assert cli("seal", str(src), "--store", store, "--json").returncode == 0
    res = cli("validate", str(src), "--store", store)
    assert res.returncode == 5 and "not fully staged" in res.stderr  # not-ready
    calls = 0
    while True:
        calls += 1
        res = cli(
            "stage", str(src), "--store", store, "--pages", "1", "--page-rows", "64", "--json"
        )
        staged = json.loads(res.stdout)["status"] == "staged"
        assert res.returncode == (0 if staged else 5), res.stderr  # 5: pages left
        if staged:
            break
    assert calls == 4  # 220 rows in pages of 64 rows, one page per call
    assert cli("validate", str(src), "--store", store, "--json").returncode == 0
    stepped = cli("activate", str(src), "--store", store, "--json")
    assert stepped.returncode == 0, stepped.stderr
    direct = cli("run", str(src), "--store", str(tmp_path / "direct"), "--json")
    assert json.loads(stepped.stdout) == json.loads(direct.stdout)


@pytest.mark.slow
def test_mapping_publishes_manifest_fences_and_promotes(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path / "src")
    namespaces = sorted(expected(LOCAL_SMALL)["namespaces"])
    maps = [f"{ns}={i:02x}" * 1 for i, ns in enumerate(namespaces)]
    args = ["run", str(src), "--store", str(tmp_path / "bbg"), "--subject", "ab" * 32, "--json"]
    for m in maps:
        args += ["--map", m]
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    assert receipt["generation"] == "neuron-v1"
    assert receipt["fences"] == namespaces
    assert [m["origin"] for m in receipt["mappings"]] == namespaces
    want_progs = [
        identity.prog_id(bytes.fromhex("ab" * 32), bytes([i])).hex() for i in range(3)
    ]
    assert [m["prog"] for m in receipt["mappings"]] == want_progs
    assert receipt["head"]["index"] == 1  # birth, then the manifest
    report = inspect_bbg(tmp_path / "bbg")
    assert report["valid"], report["errors"]
    assert receipt["head"]["namespace"] in report["namespaces"]
    # An original-generation reader now refuses the store.
    from bbg_core.errors import StoreRefused
    from migrate.store import open_store

    with pytest.raises(StoreRefused):
        open_store(tmp_path / "bbg", reader_generation="original")
    # A write to a fenced origin is refused.
    from bbg_core.errors import Fenced
    from migrate.store.codec import Head

    with open_store(tmp_path / "bbg") as store:
        ns = bytes.fromhex(namespaces[1])
        head = store.head(ns)
        assert head is not None
        with pytest.raises(Fenced):
            store.commit(ns, b"\x07" * 32, head, Head(head.index + 1, ns), {}, {}, b"\x00" * 32)
    # An incomplete mapping is refused before anything is written.
    res = cli(
        "run", str(src), "--store", str(tmp_path / "b2"), "--subject", "ab" * 32, "--map", maps[0]
    )
    assert res.returncode == 3 and "mapping-incomplete" not in res.stdout
    assert not (tmp_path / "b2").exists()


def test_bounds_are_errors(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path)
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--max-rows", "10")
    assert res.returncode == 3 and "--max-rows" in res.stderr
    assert not (tmp_path / "bbg").exists()


def test_locked_source_is_refused(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'rb'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(src)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        res = cli("run", str(src), "--store", str(tmp_path / "bbg"))
        assert res.returncode == 11, res.stderr
        assert "holds the source's lock" in res.stderr
        det = json.loads(cli("detect", str(src), "--json").stdout)
        assert det["redb"]["locked"] is True
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_retire_source_keeps_bytes_and_blocks_old_binary(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path)
    original = src.read_bytes()
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--retire-source", "-y", "--json")
    assert res.returncode == 0, res.stderr
    assert src.is_dir()
    assert (src / "source").read_bytes() == original
    record = json.loads((src / "retirement.json").read_text())
    schemas.validate(record, "retirement")
    assert record["receipt"] == json.loads(res.stdout)
    again = cli(
        "run", str(src), "--store", str(tmp_path / "bbg"), "--retire-source", "--yes", "--json"
    )
    assert again.returncode == 0 and again.stdout == res.stdout


def test_default_store_guard(tmp_path: Path) -> None:
    unpack(LOCAL_SMALL, tmp_path)
    res = cli("run", "cell.redb", cwd=tmp_path)
    assert res.returncode == 1
    assert "refusing to create an empty default store" in res.stderr
    assert not (tmp_path / "bbg").exists()


def test_two_concurrent_runs_exactly_one_activates(tmp_path: Path) -> None:
    src = unpack(LOCAL_SMALL, tmp_path)
    store = str(tmp_path / "bbg")
    cmd = [sys.executable, "-m", "migrate", "run", str(src), "--store", store, "--json",
           "--page-rows", "16"]  # fmt: skip
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = [p.returncode for p in procs]
    # Same inputs = same import: one process activates; the other either finds the receipt or
    # was refused while the source was locked by the first (exit 11).
    assert sorted(codes) in ([0, 0], [0, 11]), outs
    receipts = {o[0] for o, c in zip(outs, codes, strict=True) if c == 0}
    assert len(receipts) == 1
    from migrate.store import open_store

    with open_store(store, maintenance=True) as s:
        row = s.one("SELECT count(*) FROM bbg_import_v1_journal WHERE stage = 'activated'")
    assert row == (1,)
