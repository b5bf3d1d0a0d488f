"""bbg's own transfer tests, transcribed (cyberia-to/bbg
``rs/src/storage/application/transfer/tests.rs``, commit
5f4d9bdf79e51986e4c46925be5009591c4c9d66).

Each test builds its source the way bbg's ``publish(store, namespace, n)`` helper does: head
index = previous + 1, request = fingerprint = ``[n; 32]``, content ``[1, n]`` (codec 1 = Blob,
payload ``[n]``).  Two differences of this project are kept, so the rows are valid here:
a Blob's id is hemera(payload) (bbg's test passes ``validate_content = Ok`` and uses ``[n; 32]``
as the id), and a namespace's index-0 commit is the namespace id (this project's GraphPort
birth rule; bbg's test uses namespace ``[1; 32]`` with first commit ``[2; 32]``).  The expected
values -- table counts ``[2, 0, 2, 2, 1]``, 7 rows, cursor states per kill phase, what is
refused when -- are bbg's.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bbg_core.errors import Fenced, StoreSealed, ValidationFailed
from fences import generations
from hashing import hemera
from migrate import transfer
from migrate.probe.inspect import inspect_bbg
from migrate.rules.transfer_form import Cursor
from migrate.store import Head, Store, imports, open_store
from migrate.transfer.source import bbg_prior, export_seal, prior_of
from migrate.transfer.target import STREAM
from tests.pipeline.helpers import cli
from tests.transfer.helpers import bbg_last, last_transaction, put_row, rows

NS = hemera.hash(bytes([2]))  # the id of the first commit (birth rule; bbg: [1; 32])


def _id(n: int) -> bytes:
    out: bytes = hemera.hash(bytes([n]))
    return out


def publish(store: Store, namespace: bytes, n: int) -> Head:
    """bbg's test helper: the next commit ``[n]`` of ``namespace``."""
    expected = store.head(namespace)
    head = Head(0 if expected is None else expected.index + 1, _id(n))
    return store.commit(
        namespace, bytes([n]) * 32, expected, head, {head.commit: bytes([1, n])}, {},
        bytes([n]) * 32,
    )  # fmt: skip


def _source(tmp: Path, name: str = "source") -> tuple[Path, Head]:
    path = tmp / name
    with open_store(path, create=True) as db:
        publish(db, NS, 2)
        head = publish(db, NS, 3)
    return path, head


def _job(source: Path, target: Path) -> transfer.TransferJob:
    return transfer.TransferJob(source=source, store=target, nonce="08" * 32)


def _cursor(target: Path, manifest: str) -> Cursor | None:
    with open_store(target, maintenance=True) as db:
        found = imports.cursor_of(db, manifest, STREAM)
    return None if found is None else Cursor.decode(found[0])


def test_interrupted_page_does_not_advance_cursor_or_copy_a_partial_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = _source(tmp_path)
    target = tmp_path / "target"
    sealed = transfer.seal(_job(source, target))

    def crash(*args: object, **kwargs: object) -> int:
        raise RuntimeError("crash before page commit")

    monkeypatch.setattr(imports, "stage_rows", crash)
    with pytest.raises(RuntimeError, match="crash before page commit"):
        transfer.stage(_job(source, target), max_pages=1)
    monkeypatch.undo()
    cursor = _cursor(target, sealed.manifest)
    assert cursor is not None and cursor.rows == 0
    with open_store(target, maintenance=True) as db:
        assert db.one("SELECT count(*) FROM bbg_import_v1_staged") == (0,)
        assert db.head(NS) is None
    # The source refuses writes, through a handle that could write it before the seal ...
    with open_store(source, maintenance=True) as src:
        h = src.head(NS)
        assert h is not None
        with pytest.raises(Fenced):
            src.commit(NS, bytes([4]) * 32, h, Head(h.index + 1, _id(4)),
                       {_id(4): bytes([1, 4])}, {}, bytes([4]) * 32)  # fmt: skip
    # ... and a normal open of it fails.
    with pytest.raises(StoreSealed):
        open_store(source)
    done = transfer.run(_job(source, target))
    assert done.status == "complete"
    with open_store(target) as db, open_store(source, maintenance=True) as src:
        assert db.head(NS) == src.head(NS)


def test_activation_requires_complete_transfer_and_keeps_a_higher_generation(
    tmp_path: Path,
) -> None:
    source, head = _source(tmp_path)
    target = tmp_path / "target"
    with open_store(target, create=True) as db, db.transaction() as tx:
        generations.promote(tx, "auth-v1")
    job = transfer.TransferJob(source=source, store=target, nonce="08" * 32, page_rows=1)
    while transfer.stage(job, max_pages=1).status == "staging":
        # Until the transfer completes, the reserved namespace refuses writes (bbg: 's' →
        # Fenced) ...
        with open_store(target) as db, pytest.raises(Fenced):
            db.commit(NS, bytes([10]) * 32, None, Head(0, NS), {NS: bytes([1, 2])}, {},
                      bytes([10]) * 32)  # fmt: skip
    receipt = transfer.run(job).receipt
    assert receipt is not None
    with open_store(target) as db:
        assert db.head(NS) == head
        assert db.generation == "auth-v1"  # bbg: reader generation stays AuthenticatedV1
        # ... and after it, for good (bbg never removes 's' ‖ namespace).
        with pytest.raises(Fenced):
            db.commit(NS, bytes([10]) * 32, head, Head(head.index + 1, _id(10)),
                      {_id(10): bytes([1, 10])}, {}, bytes([10]) * 32)  # fmt: skip
        other = _id(11)  # another namespace of the target is writable
        born = db.commit(other, bytes([11]) * 32, None, Head(0, other),
                         {other: bytes([1, 11])}, {}, bytes([11]) * 32)  # fmt: skip
        assert born == Head(0, other)
    assert receipt["generation"] == "auth-v1"


def test_broken_receipt_coverage_never_completes(tmp_path: Path) -> None:
    source, _ = _source(tmp_path)
    put_row(source, "application_history", NS + bytes(8), None)
    target = tmp_path / "target"
    with pytest.raises(ValidationFailed):
        transfer.run(_job(source, target))
    # bbg: the cursor never reaches table 5.  Here the source is refused before it is even
    # sealed, so there is no cursor at all and the source is not sealed.
    assert not target.exists() or _cursor(target, "00" * 32) is None
    with open_store(source, maintenance=True) as db:
        assert export_seal(db) is None


def test_archive_inspection_is_read_only_and_survives_the_seal(tmp_path: Path) -> None:
    source, _ = _source(tmp_path)
    before = last_transaction(source)
    before_id = bbg_last(source)
    summary = inspect_bbg(source)
    counts = [summary["tables"][t]["rows"] for t in (
        "application_content", "application_unique_claims", "application_requests",
        "application_history", "application_heads")]  # fmt: skip
    assert counts == [2, 0, 2, 2, 1]
    assert sum(counts) == 7
    assert last_transaction(source) == before
    sealed = transfer.seal(_job(source, tmp_path / "target"))
    with open_store(source, maintenance=True) as db:
        seal = export_seal(db)
        after = int(db.info()["last_transaction"])
    assert seal is not None and seal.manifest.hex() == sealed.manifest
    # bbg (tests.rs:L235): prior = the source's last_transaction before sealing -- its change
    # id, on the real database bbg's key, on SQLite the id the store recorded.
    assert before_id is not None and seal.prior == bbg_prior(before_id) == before_id
    assert seal.prior != prior_of(before)  # not the transaction counter
    again = inspect_bbg(source)
    assert {k: again[k] for k in ("tables", "archive_digest_sha256", "namespaces")} == {
        k: summary[k] for k in ("tables", "archive_digest_sha256", "namespaces")
    }
    assert last_transaction(source) == after  # inspecting the sealed source wrote nothing
    with pytest.raises(StoreSealed):
        open_store(source)


def test_archive_rejects_missing_receipt_and_empty_path_without_a_source_transaction(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("transfer", "--yes", str(empty), "--store", str(tmp_path / "t"))
    assert res.returncode == 2, res.stderr  # a directory that holds no store: a usage error
    assert f"{empty} is not a BBG store" in res.stderr
    assert list(empty.iterdir()) == []
    absent = tmp_path / "absent"
    res = cli("transfer", "--yes", str(absent), "--store", str(tmp_path / "t"))
    assert res.returncode == 1, res.stderr  # a path that cannot be read names the OS's reason
    assert f"{absent}: cannot read" in res.stderr and not absent.exists()
    source, _ = _source(tmp_path)
    put_row(source, "application_requests", NS + bytes([3]) * 32, None)
    before = last_transaction(source)
    with pytest.raises(ValidationFailed, match="missing-receipt"):
        transfer.run(_job(source, tmp_path / "target"))
    assert last_transaction(source) == before
    with open_store(source, maintenance=True) as db:
        assert export_seal(db) is None


# Kill phases of bbg's killed_transfer_resumes_source_seal_target_reservation_pages_and_
# completion, as COMMIT points of `transfer` into an existing target (the kill hook counts a
# "before" and an "after" call per COMMIT): 1 seal (source), 2 reservation (target), 3..6 the
# four pages (claims is empty), 7 staged, 8 validated, 9 activation.  On Fjall the seal and
# the reservation also write a keyspace batch first (two points more each), so the same
# phases (after the seal's, the reservation's, the first page's, the fourth page's commit)
# are later points.
PHASES = {
    "sqlite": {"sealed": 2, "prepared": 4, "page": 6, "complete": 12},
    "fjall": {"sealed": 4, "prepared": 8, "page": 10, "complete": 16},
}


@pytest.mark.slow
@pytest.mark.parametrize("phase", list(PHASES["sqlite"]))
def test_killed_transfer_resumes_seal_reservation_pages_and_completion(
    tmp_path: Path, phase: str, transfer_engine: str
) -> None:
    source, head = _source(tmp_path)
    target = tmp_path / "target"
    open_store(target, create=True).close()
    args = ("transfer", "--yes", str(source), "--store", str(target), "--nonce", "08" * 32,
            "--json")
    killed = cli(*args, kill_at_commit=PHASES[transfer_engine][phase])
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with pytest.raises(StoreSealed):
        open_store(source)  # sealed at every phase
    with open_store(source, maintenance=True) as db:
        seal = export_seal(db)
    assert seal is not None
    cursor = _cursor(target, seal.manifest.hex())
    if phase == "sealed":
        assert cursor is None
    else:
        assert cursor is not None
        assert cursor.complete == (phase == "complete")
        assert (cursor.rows == 0) == (phase == "prepared")
    with open_store(target, maintenance=True) as db:
        assert db.head(NS) is None  # staged rows stay inert until activation
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    again = cli(*args)
    assert again.returncode == 0 and again.stdout == first.stdout
    with open_store(target) as db:
        assert db.head(NS) == head
        assert db.live_get("application_content", _id(2)) == bytes([1, 2])
        assert db.resolve(NS, bytes([3]) * 32) == head
    with open_store(source, maintenance=True) as src:
        assert src.head(NS) == head
    assert rows(source, "application_heads") == [(NS, head.encode())]
