"""BBG → BBG sealed transfer through the CLI, on both engines (``conftest.py``).

A store migrated from the fixture cell-small.redb is transferred into a second store, fresh
or holding unrelated namespaces; the digests are equal, the source is sealed for good and
refuses writes, the target is ``neuron-v1`` and the transferred namespaces are fenced there
for good (bbg keeps ``bbg_import_v1['s' ‖ namespace]``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import schemas
from bbg_core.errors import Fenced, StoreRefused, StoreSealed, UsageError
from migrate import api
from migrate.probe.inspect import inspect_bbg
from migrate.store import Head, open_store
from tests.pipeline.helpers import LEGACY, cli, tree_state
from tests.transfer.helpers import (
    copy_store,
    dump,
    exists,
    files_of,
    migrated_store,
    put_row,
    rows,
    set_status,
    status,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, transfer_engine: str) -> Path:
    return migrated_store(tmp_path_factory.mktemp("transfer"))


@pytest.fixture(scope="module")
def busy_target(tmp_path_factory: pytest.TempPathFactory, transfer_engine: str) -> Path:
    """A store that already holds an unrelated namespace (a migrated Signal log)."""
    base = tmp_path_factory.mktemp("busy")
    # A private copy: a run locks its source, and the other engine's module (another worker)
    # converts the same fixture at the same time.
    log = shutil.copy(LEGACY / "signals-small.log", base / "signals-small.log")
    store = base / "target"
    res = cli("run", str(log), "--store", str(store))
    assert res.returncode == 0, res.stderr
    return store


@pytest.fixture
def source(template: Path, tmp_path: Path) -> Path:
    return copy_store(template, tmp_path / "source")


def _transfer(source: Path, target: Path, *extra: str) -> dict[str, object]:
    res = cli("transfer", "--yes", str(source), "--store", str(target), "--json", *extra)
    assert res.returncode == 0, res.stderr
    receipt: dict[str, object] = json.loads(res.stdout)
    schemas.validate(receipt, "transfer-receipt")
    return receipt


@pytest.mark.parametrize("with_unrelated", [False, True], ids=["fresh", "unrelated-namespaces"])
def test_transfer_moves_everything_and_seals_the_source(
    source: Path, busy_target: Path, tmp_path: Path, with_unrelated: bool
) -> None:
    target = copy_store(busy_target, tmp_path / "t") if with_unrelated else tmp_path / "t"
    before_target = inspect_bbg(target)["namespaces"] if with_unrelated else {}
    src_report = inspect_bbg(source)
    receipt = _transfer(source, target)
    # Digests equal: the target's rows of the source namespaces are the source's rows.
    assert receipt["digests"] == {
        "source_archive_sha256": src_report["archive_digest_sha256"],
        "staged_archive_sha256": src_report["archive_digest_sha256"],
    }
    after = inspect_bbg(target)
    assert after["valid"], after["errors"]
    if not with_unrelated:
        assert after["archive_digest_sha256"] == src_report["archive_digest_sha256"]
    assert after["namespaces"] == {**before_target, **src_report["namespaces"]}
    assert after["store"]["status"] == "neuron-v1"
    assert receipt["generation"] == "neuron-v1"
    assert receipt["manifest"] == receipt["import_id"]
    assert [s["namespace"] for s in receipt["sources"]] == sorted(src_report["namespaces"])  # type: ignore[index,union-attr]
    # The source: same rows, sealed for good.
    assert inspect_bbg(source)["archive_digest_sha256"] == src_report["archive_digest_sha256"]
    assert status(source) == "export-v1"
    with pytest.raises(StoreSealed):
        open_store(source)
    # An original-generation reader now refuses the target.
    with pytest.raises(StoreRefused):
        open_store(target, reader_generation="original")
    # Unrelated namespaces stay writable; the transferred ones are fenced for good (bbg keeps
    # 's' ‖ namespace after the transfer: application.rs apply_checked → Fenced).
    with open_store(target) as st:
        for ns_hex in list(src_report["namespaces"]):
            ns = bytes.fromhex(ns_hex)
            head = st.head(ns)
            assert head is not None
            with pytest.raises(Fenced, match="sealed transfer"):
                st.commit(ns, b"\x09" * 32, head, Head(head.index + 1, head.commit), {}, {},
                          b"\x08" * 32)  # fmt: skip
        for ns_hex in list(before_target)[:1]:
            ns = bytes.fromhex(ns_hex)
            head = st.head(ns)
            assert head is not None
            nxt = Head(head.index + 1, head.commit)
            got = st.commit(ns, b"\x09" * 32, head, nxt, {}, {}, b"\x08" * 32)
            assert got == nxt


def test_exact_rerun_prints_the_same_receipt_and_writes_nothing(
    source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "t"
    first = cli("transfer", "--yes", str(source), "--store", str(target), "--json")
    assert first.returncode == 0, first.stderr
    before = tree_state(*files_of(source), *files_of(target))
    again = cli("transfer", "--yes", str(source), "--store", str(target), "--json")
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert tree_state(*files_of(source), *files_of(target)) == before


def test_the_sealed_source_refuses_every_write(
    source: Path, tmp_path: Path, transfer_engine: str
) -> None:
    # On SQLite a handle opened before the seal stays open across it; a Fjall store's handle
    # holds bbg.lock (bbg's owner lock), so there the transfer would wait for it: the handle
    # is opened after the seal instead, for maintenance (the only open a sealed store allows).
    early = open_store(source) if transfer_engine == "sqlite" else None
    try:
        ns = bytes.fromhex(next(iter(inspect_bbg(source)["namespaces"])))
        _transfer(source, tmp_path / "t")
        before = dump(source)
        if early is None:
            with pytest.raises(StoreSealed):
                open_store(source)
            early = open_store(source, maintenance=True)
        head = early.head(ns)
        assert head is not None
        with pytest.raises(StoreSealed) as info:
            early.commit(ns, b"\x07" * 32, head, Head(head.index + 1, ns), {}, {}, b"\x01" * 32)
        assert info.value.exit_code == 4
        assert info.value.context["marker"] == "export-v1"
        with pytest.raises(StoreSealed), early.transaction() as tx:
            tx.execute("DELETE FROM bbg_import_v1_nonces")
        with pytest.raises(StoreSealed), early.transaction() as tx:
            tx.put("application_content", b"\x07" * 32, b"\x01x")
        assert dump(source) == before
    finally:
        if early is not None:
            early.close()
    # Through the CLI: any pipeline run into it is refused, naming the marker.
    log = shutil.copy(LEGACY / "signals-small.log", tmp_path / "signals-small.log")
    res = cli("run", str(log), "--store", str(source))
    assert res.returncode == 4 and "'export-v1'" in res.stderr
    assert dump(source) == before


def test_reseal_with_another_target_or_nonce_is_a_conflict(source: Path, tmp_path: Path) -> None:
    _transfer(source, tmp_path / "t1", "--nonce", "11" * 32)
    sealed = dump(source)
    other = tmp_path / "t2"
    res = cli("transfer", "--yes", str(source), "--store", str(other), "--nonce", "11" * 32)
    assert res.returncode == 4, res.stderr
    assert "already sealed for another transfer" in res.stderr
    assert not exists(other)  # a refused transfer leaves no empty target behind
    res = cli("transfer", "--yes", str(source), "--store", str(tmp_path / "t1"), "--nonce",
              "22" * 32)
    assert res.returncode == 4 and "resealing with another target or nonce" in res.stderr
    assert dump(source) == sealed


def test_a_colliding_namespace_is_refused_before_the_source_is_sealed(
    source: Path, template: Path, tmp_path: Path
) -> None:
    target = tmp_path / "t"
    # The target already holds the same namespaces (the same cell store migrated into it).
    assert cli("run", str(template.parent / "source-redb" / "cell.redb"), "--store",
               str(target)).returncode == 0  # fmt: skip
    before = (dump(source), dump(target))
    res = cli("transfer", "--yes", str(source), "--store", str(target))
    assert res.returncode == 4, res.stderr
    assert "cannot reserve the source's namespaces" in res.stderr
    assert "has a head" in res.stderr
    assert (dump(source), dump(target)) == before  # not sealed, nothing reserved
    plan = cli("plan", str(source), "--store", str(target))
    assert plan.returncode == 4 and "cannot reserve the source's namespaces" in plan.stderr


@pytest.mark.slow
def test_steps_one_at_a_time_give_the_same_receipt(
    template: Path, busy_target: Path, tmp_path: Path
) -> None:
    a_src, a_tgt = copy_store(template, tmp_path / "a"), copy_store(busy_target, tmp_path / "ta")
    b_src, b_tgt = copy_store(template, tmp_path / "b"), copy_store(busy_target, tmp_path / "tb")
    direct = _transfer(a_src, a_tgt)

    def step(*args: str) -> dict[str, object]:
        res = cli(*args, str(b_src), "--store", str(b_tgt), "--json")
        doc: dict[str, object] = json.loads(res.stdout)
        # exit 5: a stage that stopped with rows left (not-ready), 0 otherwise
        assert res.returncode == (5 if doc.get("status") == "staging" else 0), res.stderr
        return doc

    sealed = step("seal", "--yes")
    assert sealed["status"] == "sealed" and sealed["manifest"] == direct["manifest"]
    assert status(b_src) == "export-v1"
    # Reserved namespaces refuse GraphPort writes (bbg: the 's' key → Fenced); others do not.
    ns = bytes.fromhex(direct["sources"][0]["namespace"])  # type: ignore[index]
    with open_store(b_tgt) as st, pytest.raises(Fenced):
        st.commit(ns, b"\x05" * 32, None, Head(0, ns), {ns: b"\x01x"}, {}, b"\x05" * 32)
    first = step("stage", "--pages", "1", "--page-rows", "40")
    assert first["status"] == "staging"
    seen = [first["progress"]]
    job = api.TransferJob(source=b_src, store=b_tgt, page_rows=40)
    while True:  # the rest in-process (the same verb the CLI calls)
        outcome = api.transfer_stage(job, max_pages=1)
        doc = outcome.to_json()
        seen.append(doc["progress"])
        if doc["status"] == "staged":
            break
        assert doc["status"] == "staging"
    rows = [p["rows"] for p in seen]  # type: ignore[index]
    assert rows == sorted(rows) and rows[-1] == 220 and seen[-1]["complete"]  # type: ignore[index]
    assert all(b - a <= 40 for a, b in zip([0, *rows], rows, strict=False))
    assert step("validate")["status"] == "validated"
    res = cli("activate", str(b_src), "--store", str(b_tgt), "--json")
    assert res.returncode == 0, res.stderr
    stepped = json.loads(res.stdout)
    assert stepped == direct  # same source, same target store id, same nonce: same receipt


def test_plan_writes_nothing_and_predicts(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "t"
    before = tree_state(source, tmp_path)
    res = cli("plan", str(source), "--store", str(target), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    schemas.validate(doc, "transfer-plan")
    assert doc["action"] == "transfer" and doc["rows"] == 220  # cell-small: 105+3+50+50+12
    assert tree_state(source, tmp_path) == before and not exists(target)
    assert cli("seal", "--yes", str(source), "--store", str(target)).returncode == 0
    before = tree_state(*files_of(source), *files_of(target))
    res = cli("plan", str(source), "--store", str(target), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["action"] == "resume" and doc["source"]["sealed"]
    assert doc["progress"]["rows"] == 0
    assert tree_state(*files_of(source), *files_of(target)) == before


def test_inspect_and_doctor_report_a_sealed_source_and_a_transfer_in_progress(
    source: Path, tmp_path: Path, transfer_engine: str
) -> None:
    target = tmp_path / "t"
    res = cli("stage", "--yes", str(source), "--store", str(target), "--pages", "2", "--json")
    assert res.returncode == 5, res.stderr  # copying is not complete
    manifest = json.loads(res.stdout)["manifest"]
    src = api.inspect(source)["transfer"]["sealed_source"]
    assert src["seal"]["manifest"] == manifest and src["seal_valid"]
    assert src["target_found"] and src["state"] == "staging"
    assert 0 < src["progress"]["rows"] < 220 and not src["progress"]["complete"]
    tgt = api.inspect(target)["transfer"]["transfers"]
    assert [(t["manifest"], t["state"]) for t in tgt] == [(manifest, "staging")]
    if transfer_engine != "sqlite":
        return  # doctor reads SQLite stores only in this version
    res = cli("--store", str(source), "doctor", "--json")
    assert res.returncode == 0, res.stderr  # a sealed source is healthy
    doc = json.loads(res.stdout)
    assert doc["transfer"]["sealed_source"]["seal"]["manifest"] == manifest
    assert any(w["code"] == "sealed-source" for w in doc["warnings"])
    res = cli("--store", str(target), "doctor", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["transfer"]["transfers"][0]["progress"] == src["progress"]
    assert any(w["code"] == "import-in-progress" for w in doc["warnings"])


def test_a_seal_that_no_longer_recomputes_is_corrupt(
    source: Path, tmp_path: Path, transfer_engine: str
) -> None:
    target = tmp_path / "t"
    assert cli("seal", "--yes", str(source), "--store", str(target)).returncode == 0
    # Behind the tool's back, drop a namespace's last commit: the store is still valid
    # (links hold) but its heads are not the pinned ones, so the manifest cannot recompute.
    ns_hex, facts = max(inspect_bbg(source)["namespaces"].items(), key=lambda i: i[1]["head_index"])
    ns, last = bytes.fromhex(ns_hex), facts["head_index"]
    put_row(source, "application_history", ns + last.to_bytes(8, "big"), None)
    for key, value in rows(source, "application_requests"):
        if key[:32] == ns and value[32:40] == last.to_bytes(8, "little"):
            put_row(source, "application_requests", key, None)
    prev_commit = dict(rows(source, "application_history"))[ns + (last - 1).to_bytes(8, "big")]
    put_row(source, "application_heads", ns, (last - 1).to_bytes(8, "little") + prev_commit)
    assert inspect_bbg(source)["valid"]
    res = cli("transfer", "--yes", str(source), "--store", str(target))
    assert res.returncode == 1, res.stderr
    assert "no longer recomputes" in res.stderr
    if transfer_engine == "sqlite":  # doctor reads SQLite stores only in this version
        doctor = cli("--store", str(source), "doctor", "--json")
        assert doctor.returncode == 3
        assert "bad-export-seal" in doctor.stdout


def test_export_marker_without_a_seal_is_corrupt(source: Path, tmp_path: Path) -> None:
    set_status(source, "export-v1")
    res = cli("transfer", "--yes", str(source), "--store", str(tmp_path / "t"))
    assert res.returncode == 1 and "no export seal" in res.stderr
    assert not exists(tmp_path / "t")


def test_only_an_original_store_can_be_a_source(source: Path, tmp_path: Path) -> None:
    set_status(source, "neuron-v1", "neuron-v1")
    before = dump(source)
    res = cli("transfer", "--yes", str(source), "--store", str(tmp_path / "t"))
    assert res.returncode == 4 and "'neuron-v1'" in res.stderr
    assert dump(source) == before


def test_an_invalid_source_is_refused_before_sealing(source: Path, tmp_path: Path) -> None:
    first = rows(source, "application_history")[0][0]
    put_row(source, "application_history", first, None)
    before = dump(source)
    res = cli("transfer", "--yes", str(source), "--store", str(tmp_path / "t"))
    assert res.returncode == 3, res.stderr
    assert dump(source) == before and status(source) == "complete"


def test_bad_arguments(source: Path, tmp_path: Path) -> None:
    res = cli("transfer", "--yes", str(source), "--store", str(source))
    assert res.returncode == 2 and "the target is the source" in res.stderr
    res = cli("transfer", "--yes", str(source), "--store", str(tmp_path / "t"), "--nonce", "abcd")
    assert res.returncode == 2 and "64 hex digits" in res.stderr
    res = cli("seal", "--yes", str(source), "--store", str(tmp_path / "t"), "--subject", "ab" * 32)
    assert res.returncode == 2 and "--subject" in res.stderr
    res = cli("transfer", "--yes", str(LEGACY / "signals-small.log"), "--store",
              str(tmp_path / "t"))
    assert res.returncode == 2 and "is not a BBG store" in res.stderr
    assert status(source) == "complete"


def test_the_library_decides_migration_or_transfer(tmp_path: Path) -> None:
    """A library caller of api.run with a plain Job whose source is a BBG store gets the
    transfer (the decision is the API's, not the command line's), with the same receipt as
    the `transfer` command; make_job returns the TransferJob itself."""
    source = migrated_store(tmp_path)
    by_cli = copy_store(source, tmp_path / "again")
    outcome = api.run(api.Job(source=source, store=tmp_path / "t1"))
    assert isinstance(outcome, api.TransferOutcome) and outcome.status == "complete"
    res = cli("transfer", "--yes", str(by_cli), "--store", str(tmp_path / "t2"), "--json")
    assert res.returncode == 0, res.stderr
    cli_receipt = json.loads(res.stdout)
    assert outcome.receipt is not None
    assert outcome.receipt["counts"] == cli_receipt["counts"]
    job = api.make_job(source, tmp_path / "t1")
    assert isinstance(job, api.TransferJob)
    assert api.plan(job)["action"].startswith("none")  # activated already: the same receipt
    assert api.run(job).receipt == outcome.receipt


def test_legacy_only_options_on_a_store_are_refused_by_name(tmp_path: Path) -> None:
    source = migrated_store(tmp_path)
    with pytest.raises(UsageError) as caught:
        api.run(api.Job(source=source, store=tmp_path / "t", kind="redb"), retire_source=True)
    assert str(caught.value) == (
        f"{source} is a BBG store (a transfer source): kind, retire_source apply to legacy "
        "sources only"
    )
    with pytest.raises(UsageError) as caught:
        api.make_job(source, tmp_path / "t", subject="ab" * 32, retire_source=True)
    assert "--retire-source, --subject apply to legacy sources only" in str(caught.value)
    with pytest.raises(UsageError, match="is not a BBG store"):
        api.transfer_job(tmp_path / "source-redb" / "cell.redb", tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_a_transfer_crosses_engines(source: Path, tmp_path: Path, transfer_engine: str) -> None:
    """A source on one engine moves into a new target on the other: the same rows, the
    source's own prior (its bbg change id, recorded by either engine)."""
    from migrate.store.engine import ENGINE_ENV, engine_of
    from tests.support.stores import live_digest
    from tests.transfer.helpers import bbg_last

    other = "sqlite" if transfer_engine == "fjall" else "fjall"
    prior = bbg_last(source)
    target = tmp_path / "t"
    res = cli("transfer", "--yes", str(source), "--store", str(target), "--json",
              env={ENGINE_ENV: other})
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    assert engine_of(target) == other and engine_of(source) == transfer_engine
    assert live_digest(target) == live_digest(source)
    assert (status(source), status(target)) == ("export-v1", "neuron-v1")
    assert prior is not None and receipt["prior"] == prior.hex()
