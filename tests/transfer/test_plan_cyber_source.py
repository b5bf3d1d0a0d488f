"""``plan`` of a transfer from a Fjall store the cyber code wrote (no records beside it, so
no store id yet): the default nonce derives from a store id the seal has not made, so the
plan says so (``nonce`` and ``source.store_id`` null) instead of predicting one from an id
made up at random -- two plans are identical, and a given ``--nonce`` is shown as given."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

import schemas
from tests.conftest import FIXTURES
from tests.pipeline.helpers import cli, tree_state

NONCE = "ab" * 32


@pytest.fixture
def cyber(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURES / "fjall" / "bbg-small.tar.gz") as tar:
        tar.extractall(tmp_path, filter="tar")
    return tmp_path / "bbg-small"


@pytest.mark.engine("fjall")
@pytest.mark.parametrize("target", ["new", "existing"])
def test_plan_of_a_store_without_records_is_deterministic(
    cyber: Path, tmp_path: Path, target: str
) -> None:
    store = tmp_path / "target"
    if target == "existing":
        made = cli("--store", str(store), "run", str(FIXTURES / "legacy" / "bbg-cli-small.log"))
        assert made.returncode == 0, made.stderr
    before = tree_state(tmp_path)
    docs = []
    for _ in range(2):
        res = cli("--store", str(store), "plan", str(cyber), "--json")
        assert res.returncode == 0, res.stderr
        docs.append(json.loads(res.stdout))
        schemas.validate(docs[-1], "transfer-plan")
    assert docs[0] == docs[1]
    assert docs[0]["nonce"] is None and docs[0]["source"]["store_id"] is None
    human = cli("--store", str(store), "plan", str(cyber))
    assert "made at the seal" in human.stderr and "--nonce fixes it" in human.stderr
    given = json.loads(cli("--store", str(store), "plan", str(cyber), "--nonce", NONCE,
                           "--json").stdout)  # fmt: skip
    assert given["nonce"] == NONCE
    assert tree_state(tmp_path) == before  # plan wrote nothing, no records either

