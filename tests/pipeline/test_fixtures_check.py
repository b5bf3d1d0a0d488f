"""``bbg-migrate fixtures check``: golden replays pass, and any difference fails (BRIEF §7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import schemas
from tests.conftest import FIXTURES, shared_fixtures
from tests.pipeline.helpers import cli

LEGACY = FIXTURES / "legacy"


def test_bundled_fixtures_match_their_golden_results() -> None:
    res = cli("fixtures", "check", str(LEGACY), "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    schemas.validate(report, "fixtures-check")
    assert report["failed"] == 0
    names = {r["fixture"] for r in report["results"]}
    assert {"cell-small.redb.gz", "signals-truncated-tail.log", "texts-small.jsonl"} <= names
    assert (LEGACY / "cell-small.receipt.json").exists()


def test_full_shared_set_matches_when_available() -> None:
    shared = shared_fixtures()
    if shared is None:
        pytest.skip("BBG_SHARED_FIXTURES is not set: the complete set is only beside CI's clone")
    res = cli("fixtures", "check", str(shared / "legacy"))
    assert res.returncode == 0, res.stderr


def _copy(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(LEGACY / name, tmp_path / name)
    return tmp_path


def test_a_changed_digest_fails(tmp_path: Path) -> None:
    d = _copy(tmp_path, "cell-small.redb.gz", "cell-small.expected.json")
    doc = json.loads((d / "cell-small.expected.json").read_text())
    doc["archive_digest_sha256"] = "00" * 32
    (d / "cell-small.expected.json").write_text(json.dumps(doc))
    res = cli("fixtures", "check", str(d))
    assert res.returncode == 3
    assert "FAIL cell-small.redb.gz" in res.stderr and "archive_digest_sha256" in res.stderr


def test_a_changed_golden_receipt_fails(tmp_path: Path) -> None:
    d = _copy(tmp_path, "cell-small.redb.gz", "cell-small.expected.json", "cell-small.receipt.json")
    receipt = (
        (d / "cell-small.receipt.json")
        .read_text()
        .replace('"generation": "original"', '"generation": "neuron-v1"')
    )
    (d / "cell-small.receipt.json").write_text(receipt)
    res = cli("fixtures", "check", str(d))
    assert res.returncode == 3 and "receipt differs" in res.stderr


def test_a_wrong_expected_error_fails(tmp_path: Path) -> None:
    d = _copy(tmp_path, "signals-unknown-sigil.log", "signals-unknown-sigil.log.expected.json")
    doc = json.loads((d / "signals-unknown-sigil.log.expected.json").read_text())
    doc["error"]["offset"] += 1
    (d / "signals-unknown-sigil.log.expected.json").write_text(json.dumps(doc))
    res = cli("fixtures", "check", str(d))
    assert res.returncode == 3 and "first error" in res.stderr


def test_not_a_fixture_dir_is_a_usage_error(tmp_path: Path) -> None:
    assert cli("fixtures", "check", str(tmp_path)).returncode == 2
    assert cli("fixtures", "check", str(tmp_path / "nope")).returncode == 2
