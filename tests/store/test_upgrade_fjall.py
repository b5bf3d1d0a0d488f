"""``upgrade`` on a Fjall store says what upgrade does there -- nothing: a Fjall store has no
schema version 1 (its records are made with the ledger; one the cyber code wrote has no
records) -- and changes nothing; never a SQLite file error (``bbg.sqlite3 missing``)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

import schemas
from tests.conftest import FIXTURES
from tests.pipeline.helpers import cli, tree_state


def _store(kind: str, tmp_path: Path) -> Path:
    if kind == "cyber":  # written by the real fjall crate through bbg: no records directory
        with tarfile.open(FIXTURES / "fjall" / "bbg-small.tar.gz") as tar:
            tar.extractall(tmp_path, filter="tar")
        return tmp_path / "bbg-small"
    store = tmp_path / "bbg"
    made = cli("--engine", "fjall", "--store", str(store), "run",
               str(FIXTURES / "legacy" / "bbg-cli-small.log"))  # fmt: skip
    assert made.returncode == 0, made.stderr
    return store


@pytest.mark.parametrize("kind", ["cyber", "ours"])
def test_upgrade_on_a_fjall_store_does_nothing_and_says_so(tmp_path: Path, kind: str) -> None:
    store = _store(kind, tmp_path)
    before = tree_state(tmp_path)
    human = cli("--store", str(store), "upgrade")
    assert human.returncode == 0, human.stderr
    assert human.stderr.startswith(f"nothing to do: {store} is a Fjall store"), human.stderr
    assert "bbg.sqlite3" not in human.stderr and "nothing written" in human.stderr
    res = cli("--store", str(store), "upgrade", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    schemas.validate(doc, "upgrade")
    assert doc["engine"] == "fjall" and doc["upgraded"] is False and doc["tx"] is None
    assert tree_state(tmp_path) == before
