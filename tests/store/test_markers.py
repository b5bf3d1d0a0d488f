"""Store status markers as bbg defines them.

Expected values are transcribed from cyberia-to/bbg
``rs/src/storage/database/generation.rs`` (commit 5f4d9bdf79e51986e4c46925be5009591c4c9d66),
test ``generation_promotion_is_durable_monotonic_and_rejects_incomplete_states``: a fresh
store is Original; requiring AuthenticatedV1 promotes it; then requiring NeuronV1 returns
AuthenticatedV1 and leaves the last transaction unchanged; reopened it is still
AuthenticatedV1; with each status ``copying``, ``export-v1``, ``future-v9`` written raw,
requiring AuthenticatedV1 is an error and the status reads back unchanged.  The decode
table is that file's ``decode``; the write order (an existing receipt resolves before the
``export-v1`` refusal) is ``apply_checked`` in ``rs/src/storage/application.rs`` (commit
1467b68cd1eed880ad3d0c16f8b41758d0f62a27).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused, StoreSealed
from fences import generations
from migrate.store import bbgdb, open_store
from migrate.store.engine import default_engine, records_dir
from tests.pipeline.helpers import cell_fixtures, cli, expected, unpack
from tests.store.helpers import birth, follow
from tests.support import stores

A = birth("a")
A1 = follow(A, A.namespace, 1)
INCOMPLETE = ["copying", "export-v1", "future-v9"]


def _generation_column(store_dir: Path) -> str | None:
    """The SQLite ``bbg_import_v1.generation`` column (a Fjall store has none: the marker is
    the only status it keeps)."""
    with stores.records(store_dir) as conn:
        row = conn.execute("SELECT generation FROM bbg_import_v1").fetchone()
    return None if row is None else str(row[0])


@pytest.mark.parametrize(
    ("marker", "generation"),
    [
        (None, "original"),
        ("complete", "original"),
        ("neuron-v1", "neuron-v1"),
        ("auth-v1", "auth-v1"),
        ("copying", None),
        ("export-v1", None),
        ("future-v9", None),
    ],
)
def test_decode_table_of_bbg(marker: str | None, generation: str | None) -> None:
    assert generations.generation_of(marker) == generation


def test_promotion_is_durable_monotonic_and_rejects_incomplete_states(tmp_path: Path) -> None:
    store_dir = tmp_path / "bbg"
    with open_store(store_dir, create=True) as db:
        assert db.generation == "original"
        with db.transaction() as tx:
            assert generations.promote(tx, "auth-v1") == "auth-v1"
        before = db.info()["last_transaction"]
        with db.transaction() as tx:
            assert generations.promote(tx, "neuron-v1") == "auth-v1"
        assert db.info()["last_transaction"] == before
    with open_store(store_dir) as db:
        assert db.generation == "auth-v1"
    for status in INCOMPLETE:
        stores.set_status(store_dir, status)
        with open_store(store_dir, maintenance=True) as db:
            with pytest.raises((StoreRefused, StoreSealed)) as info, db.transaction(
                check_status=False
            ) as tx:
                generations.promote(tx, "auth-v1")
            assert info.value.context["marker"] == status
            with pytest.raises((StoreRefused, StoreSealed)), db.transaction(
                check_status=False
            ) as tx:
                generations.settle(tx)
        assert stores.status(store_dir) == status
        if stores.engine_of(store_dir) == "sqlite":
            assert _generation_column(store_dir) == "original"


# Another process writes the marker while this handle is open: SQLite only (a Fjall handle
# holds bbg.lock, so nobody else can write; its counterpart below marks the store through the
# handle itself).
@pytest.mark.engine("sqlite")
@pytest.mark.parametrize("status", INCOMPLETE)
def test_every_write_through_an_earlier_handle_is_refused(tmp_path: Path, status: str) -> None:
    store_dir = tmp_path / "bbg"
    with open_store(store_dir, create=True) as early:
        A.apply(early)
        stores.set_status(store_dir, status)  # another process marks the store
        before = stores.dump(store_dir)
        error = StoreSealed if status == "export-v1" else StoreRefused
        with pytest.raises(error) as info:
            A1.apply(early)
        assert info.value.context["marker"] == status
        assert info.value.exit_code == (4 if status == "export-v1" else 1)
        with pytest.raises(error), early.transaction() as tx:
            tx.execute("INSERT INTO bbg_import_v1_nonces (nonce, import_id) VALUES ('n', 'i')")
        # bbg resolves an existing receipt before the marker check: an exact retry of a
        # request committed before the marker changed still returns its original head.
        assert A.apply(early) == A.new_head
        assert stores.dump(store_dir) == before


@pytest.mark.engine("fjall")
@pytest.mark.parametrize("status", INCOMPLETE)
def test_fjall_every_write_after_the_marker_changed_is_refused(tmp_path: Path, status: str) -> None:
    """The Fjall counterpart: the marker is written raw (no rule checked) through the open
    handle, the only writer; every later write of that handle re-reads it and refuses, and an
    exact retry of a request committed before still resolves; nothing is written."""
    store_dir = tmp_path / "bbg"
    with open_store(store_dir, create=True) as db:
        A.apply(db)
        with db.transaction() as tx:
            stores.tx_put_raw(tx, bbgdb.MIGRATION, bbgdb.STATUS, status.encode())
        before = stores.dump(store_dir)
        error = StoreSealed if status == "export-v1" else StoreRefused
        with pytest.raises(error) as info:
            A1.apply(db)
        assert info.value.context["marker"] == status
        assert info.value.exit_code == (4 if status == "export-v1" else 1)
        with pytest.raises(error), db.transaction():
            raise AssertionError("the body of a refused transaction never runs")
        assert A.apply(db) == A.new_head
        assert stores.dump(store_dir) == before
    assert stores.status(store_dir) == status


@pytest.mark.engine("sqlite")  # the generation column of bbg_import_v1 (none on Fjall)
def test_unknown_generation_column_is_no_internal_error(tmp_path: Path) -> None:
    """A generation this build does not know is reported, never looked up (it once raised
    KeyError)."""
    store_dir = tmp_path / "bbg"
    open_store(store_dir, create=True).close()
    stores.set_status(store_dir, "future-v9", "future-v9")
    with pytest.raises(StoreRefused, match="'future-v9' is not a reader generation"):
        open_store(store_dir)
    stores.set_status(store_dir, "complete", "future-v9")  # the status alone decides
    with open_store(store_dir) as db, db.transaction() as tx:
        assert generations.promote(tx, "neuron-v1") == "neuron-v1"
    assert stores.status(store_dir) == "neuron-v1"
    assert _generation_column(store_dir) == "neuron-v1"


# -- the pipeline refuses such a store when it opens it, before any write -------------------

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")
EMPTY = next(p for p in cell_fixtures() if p.name == "cell-empty.redb.gz")


def _mapped_args(src: Path) -> list[str]:
    args = ["--subject", "ab" * 32]
    for i, ns in enumerate(sorted(expected(SMALL)["namespaces"])):
        args += ["--map", f"{ns}={i:064x}"]
    return args


Converted = Callable[[], tuple[Path, Path, Path]]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Converted:
    """A store converted from cell-empty, plus two legacy sources (small and empty): one per
    engine, made on the engine the calling test runs on (its ``engine`` marker or the
    default), copied with :func:`_copy_store`."""
    base = tmp_path_factory.mktemp("markers")
    made: dict[str, tuple[Path, Path, Path]] = {}

    def make() -> tuple[Path, Path, Path]:
        engine = default_engine()
        if engine not in made:
            small = unpack(SMALL, base / engine / "small")
            empty = unpack(EMPTY, base / engine / "empty")
            store = base / engine / "store"
            res = cli("run", str(empty), "--store", str(store), "--nonce", "01")
            assert res.returncode == 0, res.stderr
            assert stores.engine_of(store) == engine
            made[engine] = (store, small, empty)
        return made[engine]

    return make


def _copy_store(template: Path, store: Path) -> None:
    """Copy a store with its records directory (a Fjall store keeps its records beside it)."""
    shutil.copytree(template, store)
    if records_dir(template).is_dir():
        shutil.copytree(records_dir(template), records_dir(store))


@pytest.mark.parametrize("status", INCOMPLETE)
@pytest.mark.parametrize("how", ["new source", "mapped", "exact rerun", "plan"])
def test_run_into_a_marked_store_is_refused_before_any_write(
    converted: Converted, tmp_path: Path, status: str, how: str
) -> None:
    template, small, empty = converted()
    store = tmp_path / "store"
    _copy_store(template, store)
    stores.set_status(store, status, status)
    before = stores.dump(store)
    if how == "new source":
        args = ["run", str(small), "--nonce", "02"]
    elif how == "mapped":
        args = ["run", str(small), "--nonce", "03" * 32, *_mapped_args(small)]  # 32 bytes
    elif how == "exact rerun":
        args = ["run", str(empty), "--nonce", "01"]
    else:
        args = ["plan", str(small), "--nonce", "02"]
    res = cli(*args, "--store", str(store))
    assert res.returncode == (4 if status == "export-v1" else 1), res.stderr
    assert "internal error" not in res.stderr
    assert f"status marker {status!r}" in res.stderr
    # No seal, staging, cursor, journal or nonce row, no promotion: nothing at all.
    assert stores.dump(store) == before


@pytest.mark.parametrize("status", INCOMPLETE)
def test_inspect_reports_the_marker(converted: Converted, tmp_path: Path, status: str) -> None:
    """inspect reports the marker, on either engine, and writes nothing."""
    template, _, _ = converted()
    store = tmp_path / "store"
    _copy_store(template, store)
    stores.set_status(store, status, status)
    before = stores.dump(store)
    res = cli("inspect", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["store"]["status"] == status
    assert stores.dump(store) == before


# doctor, tail and snapshot are share commands: SQLite stores only in this version (a Fjall
# store is refused before its marker is read, tests/share/test_fjall_refused.py).
@pytest.mark.engine("sqlite")
@pytest.mark.parametrize("status", INCOMPLETE)
def test_every_path_that_reads_the_marker_names_it(
    converted: Converted, tmp_path: Path, status: str
) -> None:
    """inspect reports the marker; doctor flags it; tail and snapshot refuse with a named
    error -- never an internal error -- and nothing is written (a sealed transfer source,
    ``export-v1``, is read: the seal forbids writes, not reads)."""
    template, _, _ = converted()
    store = tmp_path / "store"
    _copy_store(template, store)
    stores.set_status(store, status, status)
    before = stores.dump(store)
    res = cli("inspect", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["store"]["status"] == status
    res = cli("--store", str(store), "doctor", "--json")
    assert res.returncode == 3 and "internal error" not in res.stderr
    assert status in res.stdout
    for args in (["tail"], ["snapshot"]):
        res = cli("--store", str(store), *args)
        if status == "export-v1":  # a transfer's sealed source: read, never written (item 6)
            assert res.returncode == 0, (args, res.stderr)
            continue
        assert res.returncode == 1, (args, res.stderr)
        assert "internal error" not in res.stderr
        assert f"status marker {status!r}" in res.stderr, (args, res.stderr)
    assert stores.dump(store) == before
