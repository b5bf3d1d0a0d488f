"""``run``/``validate``/``activate --receipt FILE``: the receipt is written
atomically and never over a different receipt (named refusal, exit 4); the same receipt again
is fine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import schemas
from bbg_core.errors import Conflict
from bbg_core.files import write_once
from tests.pipeline.helpers import LEGACY, cli, unpack


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return unpack(LEGACY / "cell-small.redb.gz", tmp_path / "src")


def test_run_writes_the_receipt_once(tmp_path: Path, source: Path) -> None:
    store, receipt = tmp_path / "bbg", tmp_path / "receipt.json"
    res = cli("run", str(source), "--store", str(store), "--receipt", str(receipt), "--json")
    assert res.returncode == 0, res.stderr
    written = json.loads(receipt.read_text())
    schemas.validate(written, "receipt")
    assert written == json.loads(res.stdout)  # the same document --json prints
    assert f"receipt written to {receipt}" in res.stderr
    before = receipt.stat()
    again = cli("run", str(source), "--store", str(store), "--receipt", str(receipt))
    assert again.returncode == 0, again.stderr
    assert "already holds this receipt; left as it was" in again.stderr
    assert "already complete, nothing written" in again.stderr
    assert receipt.stat().st_mtime_ns == before.st_mtime_ns  # not even rewritten
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_different_receipt_is_refused(tmp_path: Path, source: Path) -> None:
    store, receipt = tmp_path / "bbg", tmp_path / "receipt.json"
    receipt.write_text('{"import_id": "someone else\'s"}\n')
    res = cli("run", str(source), "--store", str(store), "--receipt", str(receipt))
    assert res.returncode == 4
    assert res.stderr.splitlines()[-1] == (
        f"error: {receipt}: already holds a different receipt; it is never overwritten: "
        "name a new file (nothing was written there)"
    )
    assert receipt.read_text() == '{"import_id": "someone else\'s"}\n'


def _validate_then_activate(
    tmp_path: Path, source: Path, store: str, report_schema: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``validate`` then ``activate`` with ``--receipt``: the two documents written, checked."""
    report = tmp_path / "validated.json"
    res = cli("validate", str(source), "--store", store, "--receipt", str(report))
    assert res.returncode == 0, res.stderr
    doc = json.loads(report.read_text())
    schemas.validate(doc, report_schema)
    assert doc["status"] == "validated"
    receipt = tmp_path / "receipt.json"
    res = cli("activate", str(source), "--store", store, "--receipt", str(receipt))
    assert res.returncode == 0, res.stderr
    return doc, json.loads(receipt.read_text())


@pytest.mark.slow
def test_validate_and_activate_write_their_documents(tmp_path: Path, source: Path) -> None:
    store = str(tmp_path / "bbg")
    for step in ("seal", "stage"):
        assert cli(step, str(source), "--store", store).returncode == 0
    doc, written = _validate_then_activate(tmp_path, source, store, "stage-report")
    assert written["import_id"] == doc["import_id"]


def test_a_staging_run_writes_no_receipt(tmp_path: Path, source: Path) -> None:
    receipt = tmp_path / "r.json"
    res = cli("run", str(source), "--store", str(tmp_path / "bbg"), "--pages", "1",
              "--page-rows", "10", "--receipt", str(receipt))  # fmt: skip
    assert res.returncode == 5, res.stderr  # staging stopped with pages left
    assert f"no receipt yet (staging): {receipt} not written" in res.stderr
    assert not receipt.exists()


def test_write_once_is_atomic_and_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file and its directory are fsynced; a failure before the link leaves no file."""
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    path = tmp_path / "r.json"
    assert write_once(path, b"one\n") is True
    assert len(synced) == 2  # the temporary file, then the directory
    assert write_once(path, b"one\n") is False
    with pytest.raises(Conflict):
        write_once(path, b"two\n")
    assert path.read_bytes() == b"one\n"

    def boom(src: str, dst: str) -> None:
        raise KeyboardInterrupt  # a crash between the write and the publication

    monkeypatch.setattr(os, "link", boom)
    with pytest.raises(KeyboardInterrupt):
        write_once(tmp_path / "r2.json", b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pytest.fixture
def store_source(tmp_path: Path, source: Path) -> Path:
    """A BBG store to transfer from (the migrated legacy fixture)."""
    store = tmp_path / "bbg"
    assert cli("run", str(source), "--store", str(store)).returncode == 0
    return store


# Transfer (a BBG store as the source) on Fjall is being built on another branch; today it
# moves SQLite stores only.
@pytest.mark.engine("sqlite")
@pytest.mark.parametrize("verb", ["run", "transfer"])
def test_a_transfer_writes_its_receipt_once(tmp_path: Path, store_source: Path, verb: str) -> None:
    """A BBG store as the source: ``--receipt`` writes the transfer receipt, by the same
    write-once rules as a migration's."""
    target, receipt = tmp_path / "t", tmp_path / "receipt.json"
    res = cli(verb, "--yes", str(store_source), "--store", str(target), "--receipt",
              str(receipt), "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    written = json.loads(receipt.read_text())
    schemas.validate(written, "transfer-receipt")
    assert written == json.loads(res.stdout)
    assert f"receipt written to {receipt}" in res.stderr
    before = receipt.stat()
    again = cli(verb, str(store_source), "--store", str(target), "--receipt", str(receipt))
    assert again.returncode == 0, again.stderr
    assert "already holds this receipt; left as it was" in again.stderr
    assert receipt.stat().st_mtime_ns == before.st_mtime_ns
    other = tmp_path / "other.json"
    other.write_text("{}\n")
    res = cli(verb, str(store_source), "--store", str(target), "--receipt", str(other))
    assert res.returncode == 4
    assert "already holds a different receipt; it is never overwritten" in res.stderr
    assert other.read_text() == "{}\n"


@pytest.mark.engine("sqlite")  # transfer: SQLite stores only for now (see above)
@pytest.mark.slow
def test_transfer_steps_write_their_documents(tmp_path: Path, store_source: Path) -> None:
    target = str(tmp_path / "t")
    staged = tmp_path / "staged.json"
    res = cli("run", "--yes", str(store_source), "--store", target, "--pages", "1",
              "--page-rows", "10", "--receipt", str(staged))  # fmt: skip
    assert res.returncode == 5, res.stderr  # copying is not complete
    assert f"no receipt yet (staging): {staged} not written" in res.stderr
    assert not staged.exists()
    assert cli("stage", str(store_source), "--store", target).returncode == 0
    doc, written = _validate_then_activate(tmp_path, store_source, target, "transfer-report")
    schemas.validate(written, "transfer-receipt")
    assert written["manifest"] == doc["manifest"]
