"""The staged migration of cell.redb fixtures into a BBG store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import schemas
from hashing import hemera
from migrate.probe.inspect import inspect_bbg
from tests.fs import fs_state, untouched_but_scratch
from tests.pipeline.helpers import cell_fixtures, cli, expected, tree_state, unpack
from tests.support.cell_records import write_store
from tests.support.stores import dump, status
from tests.support.subject import SUBJECT, activate_subject

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


def _mapped(
    src: Path, store: Path, verb: str = "run", names: list[str] | None = None
) -> list[str]:
    namespaces = names or sorted(expected(LOCAL_SMALL)["namespaces"])
    args = [verb, str(src), "--store", str(store), "--subject", SUBJECT, "--json"]
    for i, ns in enumerate(namespaces):
        args += ["--map", f"{ns}={i:064x}"]
    return args


def test_mapping_refuses_a_subject_that_is_not_activated(tmp_path: Path) -> None:
    """neuron's import inspects the subject first and refuses a namespace with no head
    (cyberia-to/neuron@53dbf8d1 engine/src/neuron.rs ``inspect``:
    ``self.graph.head(neuron)?.ok_or(Error::Missing)?``, called first by
    neuron@fd24e768 engine/src/migration.rs ``prepare_import``): ``plan`` and ``run`` refuse
    the same way (exit 3), and nothing is written -- no store is created."""
    src = unpack(LOCAL_SMALL, tmp_path / "src")
    for verb in ("plan", "run", "seal"):
        res = cli(*_mapped(src, tmp_path / "new", verb))
        assert res.returncode == 3, (verb, res.stderr)
        assert f"subject {SUBJECT} not activated" in res.stderr
        assert "subject-not-activated" in res.stderr or "Missing" in res.stderr
        assert not (tmp_path / "new").exists()
    # A store that holds other namespaces but not the subject: refused, unchanged.
    other = tmp_path / "other"
    plain = cli("run", str(unpack(LOCAL_SMALL, tmp_path / "o")), "--store", str(other))
    assert plain.returncode == 0, plain.stderr
    before = dump(other)
    for verb in ("plan", "run"):
        res = cli(*_mapped(src, other, verb))
        assert res.returncode == 3 and f"subject {SUBJECT} not activated" in res.stderr
        assert dump(other) == before


def test_mapping_refuses_a_subject_head_that_is_no_neuron_record(tmp_path: Path) -> None:
    """neuron@53dbf8d1 engine/src/neuron.rs ``inspect``: the head at index 0 is read with
    ``r.record(head.commit, "neuron/activation/1", 3)?`` (a Blob fails ``Reader::pair``:
    InvalidData, neuron@dbebea3f model/src/data.rs) and ``r.reference(f[0])? != neuron`` is a
    Conflict: a head that is a plain Blob, or the activation of another neuron, is refused."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    blob = tmp_path / "blob"
    activate_subject(blob, blob=True)
    other = tmp_path / "other"
    activate_subject(other, "cd" * 32)  # another neuron's activation, moved under SUBJECT
    from tests.support.stores import live_get, put_raw

    moved = live_get(other, "application_heads", bytes.fromhex("cd" * 32))
    assert moved is not None
    put_raw(other, "application_heads", bytes.fromhex(SUBJECT), moved)
    for store, reason in ((blob, "Data(InvalidData)"), (other, "Conflict")):
        before = dump(store)
        for verb in ("plan", "run"):
            res = cli(*_mapped(src, store, verb, names))
            assert res.returncode == 3, res.stderr
            assert "is not an activated neuron here" in res.stderr and reason in res.stderr
            assert dump(store) == before


@pytest.mark.slow
def test_mapping_ends_prepared_validated_inert(tmp_path: Path) -> None:
    """With the subject activated, a mapped run converts the origins beside it, staged in
    bbg's transfer form pinned to the subject (status neuron-v1, as bbg's prepare_target;
    tests/pipeline/test_mapped_transfer.py checks the keys), and claims nothing: no commit in
    the subject's namespace, no neuron fence, no import manifest (neuron's import writes
    those under the subject's own authority: neuron@fd24e768 engine/src/migration.rs
    ``prepare_import`` signs them); the receipt and ``plan`` name the binding and the neuron
    command that completes the import."""
    src = tmp_path / "cell.redb"
    namespaces = write_store(src, origins=3, commits=2)  # neuron's cell records
    store = tmp_path / "bbg"
    subject_head = activate_subject(store)
    plan = cli(*_mapped(src, store, "plan", namespaces))
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    schemas.validate(planned, "plan")
    assert planned["fences"] == [] and planned["generation_after"] == "neuron-v1"
    human = cli(*[a for a in _mapped(src, store, "plan", namespaces) if a != "--json"])
    assert "prepared, validated, inert; complete with `neuron --store" in " ".join(
        human.stderr.split()
    )
    res = cli(*_mapped(src, store, names=namespaces))
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    schemas.validate(receipt, "receipt")
    assert receipt["generation"] == "neuron-v1"
    assert receipt["fences"] == [] and receipt["manifest"] is None and receipt["head"] is None
    assert receipt["mappings"] == []
    prepared = receipt["neuron_import"]
    assert prepared == planned["neuron_import"]
    assert prepared["state"] == "prepared, validated, inert"
    assert prepared["binding"]["subject"] == SUBJECT
    assert prepared["binding"]["head"] == {"index": 0, "commit": subject_head.commit.hex()}
    # neuron's inspect reads the root the activation names (tests.support.subject).
    assert prepared["binding"]["network"] == hemera.hash(b"stand-in network").hex()
    assert (prepared["binding"]["epoch"], len(prepared["binding"]["root"])) == (0, 64)
    assert [o["origin"] for o in prepared["origins"]] == namespaces
    assert {o["checkpoint"] for o in prepared["origins"]} == {
        "unknown (decided by neuron at import)"
    }
    pairs = " ".join(f"{ns}={i:064x}" for i, ns in enumerate(namespaces))
    assert prepared["complete_with"] == (
        f"neuron --store {store} --key-file KEYFILE import {SUBJECT} {pairs} --nonce N"
    )
    report = inspect_bbg(store)
    assert report["valid"], report["errors"]
    # inspect names the prepared import and how to complete it.
    assert report["neuron_imports"] == [{"import_id": receipt["import_id"], **prepared}]
    shown = cli("inspect", str(store))
    assert "prepared, validated, inert; complete with `neuron --store" in shown.stderr
    schemas.validate(json.loads(cli("inspect", str(store), "--json").stdout), "bbg-inspect")
    # The subject's namespace is as it was; the origins are pinned by the transfer (no
    # neuron fence: that is neuron's import's).
    assert report["namespaces"][SUBJECT]["head_index"] == 0
    assert status(store) == "neuron-v1"
    from fences.namespaces import fence_of
    from migrate.store import open_store

    with open_store(store) as handle:
        assert handle.head(bytes.fromhex(SUBJECT)) == subject_head
        manifest = prepared["transfer"]["manifest"]
        for ns in namespaces:
            found = fence_of(handle, bytes.fromhex(ns))
            assert found is not None and found["import_id"] == receipt["import_id"]
            assert "subject" not in found  # not a neuron-fence
            assert found.get("manifest", manifest) == manifest  # (Fjall: the 's' key)
    # An exact rerun returns the same receipt.
    again = cli(*_mapped(src, store, names=namespaces))
    assert again.returncode == 0 and json.loads(again.stdout) == receipt
    # An incomplete mapping is refused before anything is written.
    res = cli(
        "run", str(src), "--store", str(tmp_path / "b2"), "--subject", SUBJECT, "--map",
        f"{namespaces[0]}={'00' * 32}",
    )  # fmt: skip
    assert res.returncode == 3 and "mapping-incomplete" in res.stderr
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
