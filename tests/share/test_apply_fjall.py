"""``apply`` into a store on the Fjall engine (the real BBG database): the round trip
``tail`` -> ``apply`` into a new Fjall store gives the same live rows and a healthy store; a
second apply of the same stream is a no-op; a refused stream changes nothing (the keyspace
byte for byte) and creates nothing; a store whose owner holds ``bbg.lock`` is Locked (exit
11); the batch bound (``limit-exceeded``) and the fence rule (migrate/share/apply_fjall.py)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from bbg_core.errors import Conflict, Locked, StoreRefused, ValidationFailed
from fences import generations, namespaces
from migrate import api
from migrate.share.apply import apply_stream
from migrate.store import bbgdb, open_store
from migrate.store.engine import ENGINE_ENV, FJALL, SQLITE, records_dir
from migrate.store.keyspace import fence_key
from tests.share.conftest import run_cli
from tests.share.stores import birth, graph_writes
from tests.share.test_stream_hostile import _blob_line, _flip_blob
from tests.share.test_tail_fjall import tail_bytes
from tests.support import stores

pytestmark = pytest.mark.engine(FJALL)


def fjall_graph(directory: Path, *, fence: bool = False) -> Path:
    """GraphPort commits one batch each, then a promotion (and a fence, ``fence``)."""
    with open_store(directory, create=True) as store:
        for w in graph_writes():
            w.apply(store)
        with store.transaction() as tx:
            if fence:
                namespaces.fence(tx, birth("g-2").namespace, import_id="moved", reason="test",
                                 subject=b"\x01" * 32, manifest=b"\x02" * 32)  # fmt: skip
            generations.promote(tx, "neuron-v1")
    return directory


def keyspace_bytes(store: Path) -> dict[str, bytes]:
    """Every file of the keyspace directory, by relative path, with its bytes."""
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file()}  # fmt: skip


def unchanged(store: Path) -> tuple[dict[str, bytes], dict[str, list[tuple[object, ...]]]]:
    return keyspace_bytes(store), stores.dump(store)


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    return fjall_graph(tmp_path / "g")


def test_tail_then_apply_into_a_new_fjall_store_is_the_same_store(graph: Path,
                                                                 tmp_path: Path) -> None:
    data = tail_bytes(graph)
    dest = tmp_path / "copy"
    report = api.apply(dest, io.BytesIO(data))
    assert report["applied"] == report["events"] > 0 and report["replayed"] == 0
    assert stores.engine_of(dest) == FJALL and records_dir(dest).is_dir()
    assert stores.live_digest(dest) == stores.live_digest(graph)
    assert stores.status(dest) == "neuron-v1"
    assert tail_bytes(dest) != b""  # the copy is itself a source (its own tx numbering)
    res = run_cli("--store", str(dest), "doctor", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["healthy"] is True
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".copy.")]  # aside: gone


def test_a_sqlite_and_a_migrated_store_apply_into_new_fjall_stores(
    cell_store: Path, fjall_migrated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cell-small migrated on SQLite (the conftest's) and on Fjall (by ``run``)."""
    for source in (cell_store, fjall_migrated):
        dest = tmp_path / f"from-{stores.engine_of(source)}"
        monkeypatch.setenv(ENGINE_ENV, FJALL)
        res = run_cli("--store", str(dest), "apply", "-", "--json", stdin=tail_bytes(source))
        assert res.returncode == 0, res.stderr
        assert stores.engine_of(dest) == FJALL
        assert stores.live_digest(dest) == stores.live_digest(source)
        assert api.doctor(dest)["healthy"] is True


def test_applying_the_same_stream_twice_is_a_no_op(graph: Path, tmp_path: Path) -> None:
    data = tail_bytes(graph)
    dest = tmp_path / "copy"
    api.apply(dest, io.BytesIO(data))
    before = unchanged(dest)
    again = api.apply(dest, io.BytesIO(data))
    assert again["replayed"] == again["events"] > 0 and again["applied"] == 0
    assert not any(again["deltas"].values())
    assert unchanged(dest) == before


def test_a_stream_applies_onto_an_existing_fjall_store(graph: Path, tmp_path: Path) -> None:
    """A prefix applied first, then the whole stream: the rest lands, the prefix replays."""
    lines = tail_bytes(graph).splitlines(keepends=True)
    dest = tmp_path / "copy"
    api.apply(dest, io.BytesIO(b"".join(lines[:10])))
    report = api.apply(dest, io.BytesIO(b"".join(lines)))
    assert report["replayed"] == 10 and report["applied"] == len(lines) - 10
    assert stores.live_digest(dest) == stores.live_digest(graph)


def test_a_bad_stream_changes_nothing_and_creates_nothing(
    fjall_migrated: Path, graph: Path, tmp_path: Path
) -> None:
    """A Blob whose bytes do not match its id (the content check runs on Fjall too)."""
    lines = tail_bytes(fjall_migrated).splitlines(keepends=True)
    n = _blob_line(lines)
    lines[n] = _flip_blob(lines[n])
    bad = b"".join(lines)
    new = tmp_path / "new"
    with pytest.raises(ValidationFailed) as info:
        api.apply(new, io.BytesIO(bad))
    assert info.value.context["errors"][0]["code"] == "content-id-mismatch"
    assert info.value.context["line"] == n + 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g", "g.bbg-migrate"]  # no new one
    before = unchanged(graph)
    res = run_cli("--store", str(graph), "apply", "-", "--json", stdin=bad)
    assert res.returncode == 3, res.stderr
    assert json.loads(res.stdout)["code"] == "validation-failed"
    assert unchanged(graph) == before


def test_a_fjall_fence_event_carries_subject_and_manifest_into_a_new_fjall_store(
    tmp_path: Path,
) -> None:
    """A Fjall store's fence travels as bbg's value (subject ‖ manifest): the copy holds the
    same ``bbg_import_v1`` fence row byte for byte, and is fenced (writes refused)."""
    source = fjall_graph(tmp_path / "src", fence=True)
    data = tail_bytes(source)
    fences = [json.loads(x) for x in data.splitlines() if b'"kind":"fence"' in x]
    assert [f["asserted"][0]["subject"] for f in fences] == ["01" * 32]
    assert [f["asserted"][0]["manifest"] for f in fences] == ["02" * 32]
    dest = tmp_path / "copy"
    report = api.apply(dest, io.BytesIO(data))
    assert report["deltas"]["fences"] == 1
    key = fence_key(birth("g-2").namespace)
    assert stores.live_get(dest, bbgdb.MIGRATION, key) == b"\x01" * 32 + b"\x02" * 32
    assert stores.live_get(dest, bbgdb.MIGRATION, key) == stores.live_get(
        source, bbgdb.MIGRATION, key)
    assert stores.live_digest(dest) == stores.live_digest(source)
    res = run_cli("--store", str(dest), "doctor", "--json")
    assert json.loads(res.stdout)["healthy"] is True, res.stdout


def test_a_fence_event_without_subject_and_manifest_is_refused_unless_fenced_already(
    tmp_path: Path,
) -> None:
    """A stream tailed from a SQLite store carries no subject ‖ manifest, which bbg keeps as
    a fence's value: refused by name into a Fjall store, a no-op where fenced already."""
    source = fjall_graph(tmp_path / "src", fence=True)
    lines = []
    for raw in tail_bytes(source).splitlines(keepends=True):
        if b'"kind":"fence"' in raw:
            doc = json.loads(raw)
            del doc["asserted"][0]["subject"], doc["asserted"][0]["manifest"]
            raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        lines.append(raw)
    data = b"".join(lines)
    dest = tmp_path / "copy"
    with pytest.raises(StoreRefused) as info:
        api.apply(dest, io.BytesIO(data))
    assert "subject and manifest" in info.value.message and info.value.context["line"] > 0
    assert not dest.exists() and not records_dir(dest).exists()
    shutil.copytree(source, dest)  # already fenced: the fence event is a no-op
    shutil.copytree(records_dir(source), records_dir(dest))
    report = api.apply(dest, io.BytesIO(data))
    assert report["replayed"] == report["events"]


def test_a_fence_event_with_other_values_than_the_stores_fence_is_a_conflict(
    tmp_path: Path,
) -> None:
    source = fjall_graph(tmp_path / "src", fence=True)
    data = tail_bytes(source).replace(("02" * 32).encode(), ("03" * 32).encode())
    dest = tmp_path / "copy"
    shutil.copytree(source, dest)
    shutil.copytree(records_dir(source), records_dir(dest))
    before = unchanged(dest)
    with pytest.raises(Conflict) as info:
        api.apply(dest, io.BytesIO(data))
    assert "03" * 32 in info.value.message and "02" * 32 in info.value.message
    assert unchanged(dest) == before


def test_the_batch_bound_is_a_named_refusal(graph: Path, tmp_path: Path) -> None:
    data = tail_bytes(graph)
    dest = tmp_path / "other"
    open_store(dest, create=True).close()
    before = unchanged(dest)
    with open_store(dest) as store, pytest.raises(ValidationFailed) as info:
        apply_stream(store, io.BytesIO(data), max_batch=4096)
    assert info.value.context["errors"][0]["code"] == "limit-exceeded"
    assert "nothing was applied" in info.value.message
    assert unchanged(dest) == before


def test_apply_while_the_owner_holds_bbg_lock_is_locked(
    graph: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tail_bytes(graph)
    dest = tmp_path / "copy"
    api.apply(dest, io.BytesIO(data[: data.index(b"\n") + 1]))
    before = unchanged(dest)
    monkeypatch.setitem(open_store.__kwdefaults__, "busy_timeout", 0.3)
    fd = os.open(dest / bbgdb.LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as bbg's owner holds it
        with pytest.raises(Locked) as info:
            api.apply(dest, io.BytesIO(data))
        assert info.value.exit_code == 11
    finally:
        os.close(fd)
    assert unchanged(dest) == before


@pytest.mark.slow
def test_apply_cli_exits_11_while_the_owner_holds_bbg_lock(graph: Path, tmp_path: Path) -> None:
    """The CLI waits its busy timeout (30 s) for bbg.lock, then exits 11."""
    fd = os.open(graph / bbgdb.LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = run_cli("--store", str(graph), "apply", "-", "--json", stdin=tail_bytes(graph))
    finally:
        os.close(fd)
    assert res.returncode == 11, res.stderr
    assert json.loads(res.stdout)["code"] == "locked"


def test_sqlite_engine_still_creates_a_sqlite_store(graph: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENGINE_ENV, SQLITE)
    dest = tmp_path / "sq"
    api.apply(dest, io.BytesIO(tail_bytes(graph)))
    assert stores.engine_of(dest) == SQLITE
    assert stores.live_digest(dest) == stores.live_digest(graph)


def test_a_bad_stream_into_a_store_the_cyber_code_wrote_leaves_no_records(
    tmp_path: Path,
) -> None:
    """bbg-small (written by the real fjall crate, no records of ours): a refused stream
    leaves its keyspace byte for byte and creates no records directory beside it; its own
    stream replays onto it as a no-op on the keyspace."""
    from tests.fjall.conftest import extract

    store = extract("bbg-small", tmp_path / "src")
    data = tail_bytes(store)
    lines = data.splitlines(keepends=True)
    before = keyspace_bytes(store)
    with pytest.raises(ValidationFailed):
        api.apply(store, io.BytesIO(b"".join(lines[:3]) + b"{not json\n"))
    assert keyspace_bytes(store) == before
    assert not records_dir(store).exists()
    rows = {t: r for t, r in stores.dump(store).items() if t.startswith("fjall:")}
    report = api.apply(store, io.BytesIO(data))
    assert report["replayed"] == report["events"] == len(lines)
    assert {t: r for t, r in stores.dump(store).items() if t.startswith("fjall:")} == rows


def test_a_sqlite_stream_with_a_retained_boundary_applies_into_a_fjall_store(
    cell_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``nohistory`` a stream starts the namespace at a boundary (its head set to the
    head below the first retained entry): into a Fjall store that head goes to the keyspace,
    as into a SQLite store to its table, and both replicas are the same."""
    heads = stores.live_rows(cell_store, "application_heads")
    ns = max(heads, key=lambda kv: int.from_bytes(kv[1][:8], "little"))[0]
    done = run_cli("--store", str(cell_store), "nohistory", ns.hex(), "--yes", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["dropped"] > 0, done.stderr
    data = tail_bytes(cell_store)
    assert b'"kind":"boundary"' in data
    replicas = {}
    for engine in (SQLITE, FJALL):
        monkeypatch.setenv(ENGINE_ENV, engine)
        replicas[engine] = tmp_path / engine
        report = api.apply(replicas[engine], io.BytesIO(data))
        assert report["deltas"]["boundaries"] >= 1
    assert stores.engine_of(replicas[FJALL]) == FJALL
    assert stores.live_digest(replicas[FJALL]) == stores.live_digest(replicas[SQLITE])
    assert stores.live_get(replicas[FJALL], "application_heads", ns) == dict(heads)[ns]
    assert api.doctor(replicas[FJALL])["healthy"] is True
