"""A Signal log, a bbg frame log and a TextArchive ``run`` into a new destination take the one
checking pass that loads a store built aside (:mod:`migrate.pipeline.fresh_legacy`); the
result is the staged path's, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbg_core.errors import ValidationFailed
from migrate import pipeline
from migrate.pipeline.legacy import LegacyImport
from migrate.pipeline.legacy_text import TextImport
from migrate.store.codec import ARCHIVE_ORDER, ID_LEN
from migrate.store.engine import FJALL
from tests.pipeline.helpers import cli, tree_state
from tests.pipeline_legacy.support import ONE_OF_EACH, REFUSAL_OF_EACH, copy_fixture
from tests.support.stores import bookkeeping, engine_of, last_transaction, live_rows, status

# One fixture of each kind, and a refusal of each (the bbg frame log: read strictly).
VALID = list(ONE_OF_EACH)
INVALID = list(REFUSAL_OF_EACH)


def _receipt(*args: str) -> str:
    res = cli("run", *args, "--json")
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("name", VALID)
def test_the_one_pass_equals_the_staged_path(name: str, tmp_path: Path) -> None:
    src = copy_fixture(name, tmp_path / "src")
    fresh, staged = tmp_path / "fresh", tmp_path / "staged"
    # Pages of 8 rows: the staged path commits page by page, the one pass loads them aside.
    one = _receipt(str(src), "--store", str(fresh), "--page-rows", "8")
    # ``seal`` first makes the store, so this run takes the staged path.
    assert cli("seal", str(src), "--store", str(staged)).returncode == 0
    two = _receipt(str(src), "--store", str(staged), "--page-rows", "8")
    assert one == two  # the receipt, byte for byte
    receipt = json.loads(one)
    for table in ARCHIVE_ORDER:
        assert live_rows(fresh, table) == live_rows(staged, table), table
    assert sum(len(live_rows(fresh, t)) for t in ARCHIVE_ORDER) == sum(
        receipt["counts"]["rows"].values()
    )
    assert _bookkeeping(fresh) == _bookkeeping(staged)  # seal, cursor, journal, receipt
    assert status(fresh) == status(staged)
    # The one pass: one transaction of the records, not one per page and stage.
    assert last_transaction(fresh) < last_transaction(staged)
    assert not any(".bbg-build-" in n or ".fjall-build-" in n for n in _names(tmp_path))


@pytest.mark.parametrize(("name", "flags"), INVALID)
def test_an_invalid_source_leaves_no_destination(
    name: str, flags: tuple[str, ...], tmp_path: Path
) -> None:
    src = copy_fixture(name, tmp_path / "src")
    store = tmp_path / "bbg"
    before = tree_state(tmp_path)
    res = cli("run", str(src), "--store", str(store), "--json", *flags)
    assert res.returncode == 3, res.stderr
    assert "nothing was written" in res.stderr
    assert tree_state(tmp_path) == before  # no store, no records, no guard, no build
    # The staged path (an existing store) refuses with the same error.
    existing = tmp_path / "existing"
    assert cli("seal", str(copy_fixture("signals-small.log", tmp_path / "other")),
               "--store", str(existing)).returncode == 0  # fmt: skip
    staged = cli("run", str(src), "--store", str(existing), "--json", *flags)
    assert staged.returncode == 3
    assert (staged.stdout, staged.stderr) == (res.stdout, res.stderr)


@pytest.mark.parametrize("name", VALID)
def test_a_source_over_a_bound_leaves_no_destination(name: str, tmp_path: Path) -> None:
    """The pass stops loading at the bound; the preflight's refusal follows (exit 3)."""
    src = copy_fixture(name, tmp_path / "src")
    before = tree_state(tmp_path)
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--max-rows", "5")
    assert res.returncode == 3, res.stderr
    assert "over the bound of 5" in res.stderr
    assert tree_state(tmp_path) == before


@pytest.mark.parametrize("name", VALID)
def test_an_exact_rerun_returns_the_same_receipt(name: str, tmp_path: Path) -> None:
    src = copy_fixture(name, tmp_path / "src")
    store = tmp_path / "bbg"
    first = _receipt(str(src), "--store", str(store))
    state = tree_state(store)
    assert _receipt(str(src), "--store", str(store)) == first
    assert tree_state(store) == state


def test_into_an_empty_directory(tmp_path: Path) -> None:
    src = copy_fixture("texts-small.jsonl", tmp_path / "src")
    store = tmp_path / "bbg"
    store.mkdir()
    first = _receipt(str(src), "--store", str(store), "--page-rows", "8")
    # Built aside: a few transactions of the records, not one per page (100 rows).
    assert last_transaction(store) < 100 // 8
    assert _receipt(str(src), "--store", str(store), "--page-rows", "8") == first


def _bookkeeping(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """The import's records; on the real database without what only an activation into an
    existing database writes -- its plan (journal ``activating``) and the records' copy of
    the status marker (bbg's own is compared) -- as for a cell.redb built aside."""
    out = bookkeeping(store)
    if engine_of(store) == FJALL:
        out["journal"] = [row for row in out["journal"] if row[1] != "activating"]
        del out["status"]
    return out


def _names(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


@pytest.mark.parametrize("name", VALID)
def test_loaded_rows_are_validated_as_staged_rows_are(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows that break a link (a receipt whose head disagrees with history: only a fault of
    the conversion could write one) are refused by the one pass with the validate stage's
    own error, as the staged path refuses them, and no destination is left."""
    cls = TextImport if name.endswith(".jsonl") else LegacyImport
    original = cls.request_row
    wrong = b"\x5a" * ID_LEN

    def broken(self: LegacyImport, index: int) -> tuple[bytes, bytes]:
        key, value = original(self, index)
        return (key, value[: -ID_LEN] + wrong) if index == 1 else (key, value)

    monkeypatch.setattr(cls, "request_row", broken)
    src = copy_fixture(name, tmp_path / "src")
    fresh, staged = tmp_path / "fresh", tmp_path / "staged"
    pipeline.seal_only(pipeline.Job(src, staged))
    refusals = []
    for store in (fresh, staged):
        with pytest.raises(ValidationFailed) as caught:
            pipeline.run(pipeline.Job(src, store))
        refusals.append(
            (str(caught.value).replace(str(store), "STORE"), caught.value.context["errors"])
        )
    assert refusals[0] == refusals[1]
    assert refusals[0][1][0]["code"] == "request-head-mismatch"
    assert not [n for n in _names(tmp_path) if n.startswith(("fresh", ".fresh"))]
