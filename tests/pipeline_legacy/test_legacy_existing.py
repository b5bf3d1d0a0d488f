"""A Signal log, a bbg frame log and a TextArchive ``run`` into a BBG database that already
holds history take the single pass (:mod:`migrate.pipeline.existing`; the log's pass:
:mod:`migrate.pipeline.fresh_legacy`): the new segments written aside while the source is
checked, published under the import's guard.  The result is the staged path's (``--pages``
keeps a run on it) -- the receipt byte for byte, every key of the keyspace, the records, the
namespace's records, ``doctor`` --, an invalid source or loaded rows that fail validation
leave the store byte for byte as it was, and an exact rerun returns the same receipt.

``KILL_RUNNER_BATCH_ROWS`` / ``stages.BATCH_ROWS`` is lowered so that these small sources'
activation goes in as segments on the staged path too (the single pass leaves an activation
small enough for one batch to the staged path).  The kill -9 sweep of every kind is
:func:`tests.pipeline.test_existing_single_pass.test_kill_9_at_every_point_then_rerun`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbg_core.errors import Conflict, ValidationFailed
from migrate import pipeline
from migrate.pipeline import fresh_legacy, stages
from migrate.pipeline.legacy import LegacyImport
from migrate.pipeline.legacy_text import TextImport
from migrate.store import guard
from migrate.store.codec import CONTENT, ID_LEN
from tests.pipeline.helpers import (
    STAGED,
    copy_store,
    doctor_logical,
    keyspace_of,
    ledger_kinds,
    prefilled_store,
    records_of,
    run_in_segments,
    segment_folders,
    tree_state,
)
from tests.pipeline_legacy.support import ONE_OF_EACH, REFUSAL_OF_EACH, copy_fixture, records
from tests.support.stores import live_rows, put_raw

pytestmark = pytest.mark.engine("fjall")

def _ok(src: Path, store: Path, *args: str) -> str:
    res = run_in_segments("run", str(src), "--store", str(store), "--json", *args)
    assert res.returncode == 0, res.stderr
    return str(res.stdout)


def _passes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets an entry each time the single pass reads a log or archive."""
    made: list[str] = []
    real = fresh_legacy.checking_pass
    monkeypatch.setattr(fresh_legacy, "checking_pass",
                        lambda *a, **k: made.append("x") or real(*a, **k))  # fmt: skip
    return made


def _same_results(one: Path, two: Path, namespace: str) -> None:
    assert keyspace_of(one) == keyspace_of(two)
    assert records_of(one) == records_of(two)
    assert records(one, namespace) == records(two, namespace)
    assert doctor_logical(one) == doctor_logical(two)
    assert doctor_logical(one)["healthy"] is True


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_equal_to_the_staged_path(name: str, tmp_path: Path) -> None:
    store, src = prefilled_store(tmp_path, name)
    staged = copy_store(store, tmp_path / "staged")
    one = _ok(src, store)
    two = _ok(src, staged, *STAGED)
    assert one == two  # the receipt, byte for byte
    receipt = json.loads(one)
    iid = receipt["import_id"]
    # The single pass: one transaction of the import in the ledger; the staged path: one a
    # stage and a page.
    assert ledger_kinds(store, iid) == ["activate"]
    assert len(ledger_kinds(staged, iid)) > 1
    _same_results(store, staged, receipt["legacy"]["namespace"])
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    # An exact rerun returns the same receipt and changes nothing.
    state = tree_state(store, store.with_name(store.name + ".bbg-migrate"))
    assert _ok(src, store) == one
    assert tree_state(store, store.with_name(store.name + ".bbg-migrate")) == state


def test_rows_the_store_holds_already_are_not_new(tmp_path: Path) -> None:
    """The archive already imported into another namespace: its texts, raw lines and
    observations are there with the same bytes (not new, no conflict); the receipt's new
    rows are the staged path's."""
    store, src = prefilled_store(tmp_path, "texts-small.jsonl")
    other = "ab" * 32
    _ok(src, store, "--namespace", other, "--nonce", "ee" * 16)
    staged = copy_store(store, tmp_path / "staged")
    one = _ok(src, store)
    assert one == _ok(src, staged, *STAGED)
    receipt = json.loads(one)
    assert ledger_kinds(store, receipt["import_id"]) == ["activate"]
    counts = receipt["counts"]
    assert counts["new_rows"][CONTENT] < counts["rows"][CONTENT]
    _same_results(store, staged, receipt["legacy"]["namespace"])


@pytest.mark.parametrize(("name", "flags"), REFUSAL_OF_EACH)
def test_an_invalid_source_leaves_the_store_byte_identical(
    name: str, flags: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = prefilled_store(tmp_path)
    bad = copy_fixture(name, tmp_path / "bad")
    both = (store, store.with_name(store.name + ".bbg-migrate"))
    before = tree_state(*both)
    made = _passes(monkeypatch)
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    with pytest.raises(ValidationFailed):
        pipeline.run(pipeline.Job(bad, store, strict="--strict" in flags))
    assert made  # the single pass read it, and refused it as the preflight does
    assert tree_state(*both) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    # The CLI: the preflight's exit code and message, as on the staged path.
    res = run_in_segments("run", str(bad), "--store", str(store), "--json", *flags)
    assert res.returncode == 3, res.stderr
    assert "nothing was written" in res.stderr
    assert tree_state(*both) == before
    staged = run_in_segments("run", str(bad), "--store", str(store), "--json", *flags, *STAGED)
    assert (staged.returncode, staged.stdout, staged.stderr) == (3, res.stdout, res.stderr)


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_loaded_rows_are_refused_as_staged_rows_are(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows that break a link (a request whose head disagrees with history: only a fault of
    the conversion could write one) are refused with the validate stage's own error, as the
    staged path refuses them -- by the single pass, after the admission, with the store left
    byte for byte as it was (the staged path has sealed and staged by then)."""
    cls = TextImport if name.endswith(".jsonl") else LegacyImport
    original = cls.request_row

    def broken(self: LegacyImport, index: int) -> tuple[bytes, bytes]:
        key, value = original(self, index)
        return (key, value[:-ID_LEN] + b"\x5a" * ID_LEN) if index == 1 else (key, value)

    monkeypatch.setattr(cls, "request_row", broken)
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    store, src = prefilled_store(tmp_path, name)
    staged = copy_store(store, tmp_path / "staged")
    both = (store, store.with_name(store.name + ".bbg-migrate"))
    before = tree_state(*both)
    made = _passes(monkeypatch)
    refusals = []
    for where, pages in ((store, None), (staged, 10**9)):
        with pytest.raises(ValidationFailed) as caught:
            pipeline.run(pipeline.Job(src, where), max_pages=pages)
        refusals.append(
            (str(caught.value).replace(str(where), "STORE"), caught.value.context["errors"])
        )
    assert made == ["x"]  # the single pass, then the staged path
    assert refusals[0] == refusals[1]
    assert refusals[0][1][0]["code"] == "request-head-mismatch"
    assert tree_state(*both) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []


def test_a_conflicting_row_is_refused_as_the_staged_path_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row of the log the store holds with other bytes: left to the staged path, whose
    activation refuses it (Conflict) -- nothing published, no guard."""
    store, src = prefilled_store(tmp_path, "signals-small.log")
    scratch = tmp_path / "scratch"
    _ok(src, scratch)  # the log's rows, to find one of its content keys
    key = live_rows(scratch, CONTENT)[0][0]
    put_raw(store, CONTENT, key, b"\x00other bytes")
    before = keyspace_of(store)
    made = _passes(monkeypatch)
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    with pytest.raises(Conflict):
        pipeline.run(pipeline.Job(src, store))
    assert made == ["x"]
    assert keyspace_of(store) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []


def test_a_namespace_the_store_holds_is_left_to_the_staged_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TextArchive read into a namespace that has a head in the store already: the staged
    path's admission decides (here: a head conflict, exit 4, nothing written)."""
    store, src = prefilled_store(tmp_path, "texts-small.jsonl")
    taken = bytes(live_rows(store, "application_heads")[0][0])
    both = (store, store.with_name(store.name + ".bbg-migrate"))
    before = tree_state(*both)
    made = _passes(monkeypatch)
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    with pytest.raises(Conflict) as caught:
        pipeline.run(pipeline.Job(src, store, namespace=taken))
    assert made == ["x"]  # the single pass was made, then left it to the staged path
    assert "head-conflict" in str(caught.value)
    assert tree_state(*both) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
