"""``run`` into a BBG database that already holds history: one checking pass writes the new
segments aside, published under the import's guard (:mod:`migrate.pipeline.existing`).  The
result is the staged path's -- the same receipt, every key of the keyspace the same, the
same records but for transaction numbers --, an invalid source leaves the store byte for
byte as it was, and a kill at any point leaves it unchanged or finished by the rerun.

The sources are small generated cell stores; ``stages.BATCH_ROWS`` is lowered so that their
activation goes in as segments on the staged path too (the single pass leaves an activation
small enough for one batch to the staged path).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import ValidationFailed
from migrate import pipeline
from migrate.pipeline import existing, stages
from migrate.share.health import doctor
from migrate.store import guard
from tests.pipeline.helpers import (
    CELL,
    cell_fixtures,
    cli,
    copy_store,
    keyspace_of,
    prefilled_store,
    records_of,
    segment_folders,
    tree_state,
    unpack,
)
from tests.pipeline_legacy.support import ONE_OF_EACH
from tests.support.cell_store import generate
from tests.support.stores import dump

pytestmark = pytest.mark.engine("fjall")

INVALID = next(p for p in cell_fixtures() if p.name == "cell-invalid-history-gap.redb.gz")


@pytest.mark.parametrize("journal_rows", [False, True])
def test_equal_to_the_staged_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, journal_rows: bool
) -> None:
    """``journal_rows``: the store also holds rows of the five tables that live only in its
    journal (a small import, activated in one batch), flushed before the publication."""
    store, src = prefilled_store(tmp_path)
    if journal_rows:
        generate(tmp_path / "c.redb", rows=60, namespaces=2, seed=3)
        pipeline.run(pipeline.Job(source=tmp_path / "c.redb", store=store))
        from migrate.store.fjall import open_keyspace

        with open_keyspace(store) as ks:
            assert ks.view("application_history").journal  # not flushed yet
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    staged = copy_store(store, tmp_path / "staged")
    staging: list[str] = []
    real_stage = stages.stage_stage
    monkeypatch.setattr(stages, "stage_stage",
                        lambda *a, **k: staging.append("x") or real_stage(*a, **k))  # fmt: skip
    one = pipeline.run(pipeline.Job(source=src, store=store))
    assert staging == []  # the single pass: nothing staged
    # ``seal`` first: the import is known to the records, so this run takes the staged path.
    pipeline.seal_only(pipeline.Job(source=src, store=staged))
    two = pipeline.run(pipeline.Job(source=src, store=staged))
    assert staging  # the staged path staged
    assert one.receipt == two.receipt and one.receipt is not None
    assert keyspace_of(store) == keyspace_of(staged)
    assert records_of(store) == records_of(staged)
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    if journal_rows:
        from migrate.store.fjall import open_keyspace

        with open_keyspace(store) as ks:  # flushed into segments before the publication
            assert not ks.view("application_history").journal
    report = doctor(store)
    assert report["healthy"] is True, report
    # An exact rerun returns the same receipt and changes nothing.
    again = pipeline.run(pipeline.Job(source=src, store=store))
    assert again.receipt == one.receipt and again.already
    assert keyspace_of(store) == keyspace_of(staged)


def test_a_small_activation_is_left_to_the_staged_path(tmp_path: Path) -> None:
    """Small enough for one batch: the staged path writes it in the activation's batch, so
    the single pass leaves it to it (the keyspace is the staged path's, key for key)."""
    store, src = prefilled_store(tmp_path)
    staged = copy_store(store, tmp_path / "staged")
    one = pipeline.run(pipeline.Job(source=src, store=store))
    pipeline.seal_only(pipeline.Job(source=src, store=staged))
    two = pipeline.run(pipeline.Job(source=src, store=staged))
    assert one.receipt == two.receipt
    assert keyspace_of(store) == keyspace_of(staged)
    assert segment_folders(tmp_path) == []


def test_invalid_source_leaves_the_store_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    store, _ = prefilled_store(tmp_path)
    bad = unpack(INVALID, tmp_path / "bad")
    passes: list[str] = []
    real = existing.fresh.checking_pass
    monkeypatch.setattr(existing.fresh, "checking_pass",
                        lambda *a, **k: passes.append("x") or real(*a, **k))  # fmt: skip
    records = store.with_name(store.name + ".bbg-migrate")
    before = tree_state(store, records)
    with pytest.raises(ValidationFailed):
        pipeline.run(pipeline.Job(source=bad, store=store))
    assert passes  # the single pass read it, and refused it as the preflight does
    assert tree_state(store, records) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    # The CLI's exit code is the preflight's.
    res = cli("run", str(bad), "--store", str(store), "--json")
    assert res.returncode == 3, res.stderr
    assert tree_state(store, records) == before


def test_a_conflicting_row_is_refused_as_the_staged_path_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row the store holds with other bytes: left to the staged path, whose activation
    refuses it (Conflict, exit 4) -- nothing published, no guard."""
    from bbg_core.errors import Conflict
    from tests.support.stores import put_raw

    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    store, src = prefilled_store(tmp_path)
    from importers.redb import open_redb

    with open_redb(src) as db:
        key, value = next(iter(db.iter_table("application_content")))
    put_raw(store, "application_content", bytes(key), b"\x00other bytes")
    before = keyspace_of(store)
    with pytest.raises(Conflict):
        pipeline.run(pipeline.Job(source=src, store=store))
    assert keyspace_of(store) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    del value


MAPPED = "mapped cell.redb"


def _run_killed(src: Path, store: Path, point: int, extra: tuple[str, ...]) -> Any:
    return cli("run", str(src), "--store", str(store), "--json", *extra, kill_at_commit=point,
               env={"KILL_RUNNER_BATCH_ROWS": "3"})  # fmt: skip


def _kill_case(tmp_path: Path, source: str) -> tuple[Path, Path, tuple[str, ...]]:
    """The store, the source and the run's options: ``prefilled_store``'s, or a mapped run's
    (3 origins mapped to a subject activated in the store)."""
    if source != MAPPED:
        return (*prefilled_store(tmp_path, source), ())
    from tests.support.cell_records import write_store
    from tests.support.subject import SUBJECT, activate_subject

    src = tmp_path / "cell.redb"
    names = write_store(src, origins=3, commits=3)
    activate_subject(tmp_path / "store")
    maps = [a for i, ns in enumerate(names) for a in ("--map", f"{ns}={i:064x}")]
    return tmp_path / "store", src, ("--subject", SUBJECT, "--nonce", "77" * 32, *maps)


@pytest.mark.slow
@pytest.mark.parametrize("source", [CELL, *ONE_OF_EACH, MAPPED])
def test_kill_9_at_every_point_then_rerun(tmp_path: Path, source: str) -> None:
    """SIGKILL after the segments are written, after each level swap, before and after the
    marker batch and the records' commit: the store is unchanged (no guard) or guarded, and
    the rerun finishes with the reference receipt and keyspace.  A cell.redb, each kind of
    legacy source (:mod:`migrate.pipeline.fresh_legacy`: a log's pass), a mapped run (its
    receipt and records name the store: compared with that path named alike)."""
    store, src, extra = _kill_case(tmp_path, source)
    ref = copy_store(store, tmp_path / "ref")
    done = _run_killed(src, ref, 0, extra)  # 0: never killed
    assert done.returncode == 0, done.stderr
    want_keys, want_records = keyspace_of(ref), repr(records_of(ref)).replace(str(ref), "S")
    iid = json.loads(done.stdout)["import_id"]
    # the single pass: one transaction of the import in the ledger (the staged path: several)
    assert [r[2] for r in dump(ref)["bbg_ledger_v1"] if r[3] == iid] == ["activate"]
    unchanged = keyspace_of(store)
    point = 0
    guarded = 0
    while True:
        point += 1
        work = copy_store(store, tmp_path / f"k{point}")
        res = _run_killed(src, work, point, extra)
        if res.returncode == 0:
            assert res.stdout.replace(str(work), str(ref)) == done.stdout
            break
        assert res.returncode == -signal.SIGKILL, res.stderr
        if guard.path_of(work).exists():
            guarded += 1  # bbg refuses the store until the rerun finishes it
            assert guard.owned_by(work, iid, guard.ACTIVATE)
        else:
            assert keyspace_of(work) in (unchanged, want_keys), f"half-advanced at {point}"
        again = _run_killed(src, work, 0, extra)
        assert again.returncode == 0, again.stderr
        assert again.stdout.replace(str(work), str(ref)) == done.stdout, (
            f"receipt differs after a kill at point {point}")  # fmt: skip
        assert keyspace_of(work) == want_keys
        assert repr(records_of(work)).replace(str(work), "S") == want_records
        assert not guard.path_of(work).exists()
        assert segment_folders(tmp_path) == []
        assert doctor(work)["healthy"] is True, point
        shutil.rmtree(work)
        shutil.rmtree(work.with_name(work.name + ".bbg-migrate"))
    # the segments written; a level swap per table with rows (a log writes no claims); the
    # batch and the records (before and after each); the guard's removal follows the last
    swaps = 5 if source == CELL else 4
    assert point >= 5 + swaps and guarded >= 1 + swaps, (point, guarded)


def test_a_source_changed_after_the_pass_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source is re-hashed before the guard is taken: changed bytes (same size) after
    the pass leave the store as it was, with no guard and no segments left."""
    from bbg_core.errors import MigrateError

    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    store, src = prefilled_store(tmp_path)
    real = existing.fresh.checking_pass

    def then_changed(*a: Any, **k: Any) -> Any:
        pre = real(*a, **k)
        data = bytearray(src.read_bytes())
        data[-1] ^= 0xFF
        st = src.stat()
        src.write_bytes(bytes(data))
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))  # a flip that keeps the mtime
        return pre

    monkeypatch.setattr(existing.fresh, "checking_pass", then_changed)
    before = keyspace_of(store), records_of(store)
    with pytest.raises(MigrateError):
        pipeline.run(pipeline.Job(source=src, store=store))
    assert (keyspace_of(store), records_of(store)) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
