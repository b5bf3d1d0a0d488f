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

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import StoreRefused, StoreSealed
from fences import generations
from migrate.store import open_store
from tests.pipeline.helpers import cell_fixtures, cli, expected, unpack
from tests.store.helpers import birth, follow

A = birth("a")
A1 = follow(A, A.namespace, 1)
INCOMPLETE = ["copying", "export-v1", "future-v9"]


def _raw_status(store_dir: Path, status: str, generation: str | None = None) -> None:
    """Write the marker directly, as bbg's test does with ``tx.put(Migration, status)``."""
    conn = sqlite3.connect(store_dir / "bbg.sqlite3")
    with conn:
        conn.execute(
            "INSERT INTO bbg_import_v1 (id, status, generation, transaction_no) "
            "VALUES (1, ?, ?, 0) ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
            "generation = excluded.generation",
            (status, generation or "original"),
        )
    conn.close()


def _status(store_dir: Path) -> tuple[Any, ...] | None:
    conn = sqlite3.connect(f"file:{store_dir / 'bbg.sqlite3'}?mode=ro", uri=True)
    try:
        row: tuple[Any, ...] | None = conn.execute(
            "SELECT status, generation FROM bbg_import_v1"
        ).fetchone()
        return row
    finally:
        conn.close()


def _dump(store_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (the logical content of the store)."""
    conn = sqlite3.connect(f"file:{store_dir / 'bbg.sqlite3'}?mode=ro", uri=True)
    try:
        names = [
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {n: sorted(conn.execute(f"SELECT * FROM {n}").fetchall()) for n in names}
    finally:
        conn.close()


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
        _raw_status(store_dir, status)
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
        assert _status(store_dir) == (status, "original")


@pytest.mark.parametrize("status", INCOMPLETE)
def test_every_write_through_an_earlier_handle_is_refused(tmp_path: Path, status: str) -> None:
    store_dir = tmp_path / "bbg"
    with open_store(store_dir, create=True) as early:
        A.apply(early)
        _raw_status(store_dir, status)  # another process marks the store
        before = _dump(store_dir)
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
        assert _dump(store_dir) == before


def test_unknown_generation_column_is_no_internal_error(tmp_path: Path) -> None:
    """A generation this build does not know is reported, never looked up (it once raised
    KeyError)."""
    store_dir = tmp_path / "bbg"
    open_store(store_dir, create=True).close()
    _raw_status(store_dir, "future-v9", "future-v9")
    with pytest.raises(StoreRefused, match="'future-v9' is not a reader generation"):
        open_store(store_dir)
    _raw_status(store_dir, "complete", "future-v9")  # the status alone decides
    with open_store(store_dir) as db, db.transaction() as tx:
        assert generations.promote(tx, "neuron-v1") == "neuron-v1"
    assert _status(store_dir) == ("neuron-v1", "neuron-v1")


# -- the pipeline refuses such a store when it opens it, before any write -------------------

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")
EMPTY = next(p for p in cell_fixtures() if p.name == "cell-empty.redb.gz")


def _mapped_args(src: Path) -> list[str]:
    args = ["--subject", "ab" * 32]
    for i, ns in enumerate(sorted(expected(SMALL)["namespaces"])):
        args += ["--map", f"{ns}={i:02x}"]
    return args


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A store converted from cell-empty, plus two legacy sources (small and empty)."""
    base = tmp_path_factory.mktemp("markers")
    small = unpack(SMALL, base / "small")
    empty = unpack(EMPTY, base / "empty")
    store = base / "store"
    res = cli("run", str(empty), "--store", str(store), "--nonce", "01")
    assert res.returncode == 0, res.stderr
    return store, small, empty


@pytest.mark.parametrize("status", INCOMPLETE)
@pytest.mark.parametrize("how", ["new source", "mapped", "exact rerun", "plan"])
def test_run_into_a_marked_store_is_refused_before_any_write(
    converted: tuple[Path, Path, Path], tmp_path: Path, status: str, how: str
) -> None:
    import shutil

    template, small, empty = converted
    store = tmp_path / "store"
    shutil.copytree(template, store)
    _raw_status(store, status, status)
    before = _dump(store)
    if how == "new source":
        args = ["run", str(small), "--nonce", "02"]
    elif how == "mapped":
        args = ["run", str(small), "--nonce", "03", *_mapped_args(small)]
    elif how == "exact rerun":
        args = ["run", str(empty), "--nonce", "01"]
    else:
        args = ["plan", str(small), "--nonce", "02"]
    res = cli(*args, "--store", str(store))
    assert res.returncode == (4 if status == "export-v1" else 1), res.stderr
    assert "internal error" not in res.stderr
    assert f"status marker {status!r}" in res.stderr
    # No seal, staging, cursor, journal or nonce row, no promotion: nothing at all.
    assert _dump(store) == before


@pytest.mark.parametrize("status", INCOMPLETE)
def test_every_path_that_reads_the_marker_names_it(
    converted: tuple[Path, Path, Path], tmp_path: Path, status: str
) -> None:
    """inspect reports the marker; doctor flags it; tail and snapshot refuse with a named
    error -- never an internal error -- and nothing is written."""
    import json
    import shutil

    template, _, _ = converted
    store = tmp_path / "store"
    shutil.copytree(template, store)
    _raw_status(store, status, status)
    before = _dump(store)
    res = cli("inspect", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["store"]["status"] == status
    res = cli("--store", str(store), "doctor", "--json")
    assert res.returncode == 3 and "internal error" not in res.stderr
    assert status in res.stdout
    for args in (["tail"], ["snapshot"]):
        res = cli("--store", str(store), *args)
        assert res.returncode == (4 if status == "export-v1" else 1), (args, res.stderr)
        assert "internal error" not in res.stderr
        assert f"status marker {status!r}" in res.stderr, (args, res.stderr)
    assert _dump(store) == before
