"""``bbg-migrate fixtures check``: golden replays pass, and any difference fails."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

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


# Shared expected files the real code contradicts: the project's copy is corrected (its
# ``note`` cites the source) and the replay of the shared set uses it.  Each entry must still
# differ from the shared file, so a corrected oracle upstream takes it off this list.
CORRECTED = {
    # cybergraph@546853d src/content.rs Content::from_stored -> nox particle_of (8 or 64
    # bytes only): tagged-scheme Data rows are refused under --content-check codec.
    "cell-data-tagged-ids.expected.json",
}


def test_full_shared_set_matches_when_available(tmp_path: Path) -> None:
    shared = shared_fixtures()
    if shared is None:
        pytest.skip("BBG_SHARED_FIXTURES is not set: the complete set is only beside CI's clone")
    replay = tmp_path / "legacy"
    replay.mkdir()
    for item in (shared / "legacy").iterdir():
        (replay / item.name).symlink_to(item)
    for name in sorted(CORRECTED):
        ours, theirs = LEGACY / name, shared / "legacy" / name
        assert json.loads(ours.read_text()) != json.loads(theirs.read_text()), (
            f"{name}: the shared oracle now agrees with the correction; drop it from CORRECTED"
        )
        (replay / name).unlink()
        shutil.copy(ours, replay / name)
    res = cli("fixtures", "check", str(replay))
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


def test_a_text_archive_is_imported_where_cybergraph_puts_it(tmp_path: Path) -> None:
    """The replay imports a valid TextArchive into the namespace its ``destination`` names
    and compares the head index and history rows (cybergraph: line i at index i-1)."""
    name = "texts-cybergraph.jsonl"
    d = _copy(tmp_path, name, f"{name}.expected.json")
    doc = json.loads((d / f"{name}.expected.json").read_text())
    assert doc["destination"]["head_index"] == doc["line_count"] - 1
    assert cli("fixtures", "check", str(d)).returncode == 0
    for key, wrong in (("head_index", doc["line_count"]), ("history_rows", 6)):
        changed = json.loads(json.dumps(doc))
        changed["destination"][key] = wrong
        (d / f"{name}.expected.json").write_text(json.dumps(changed))
        res = cli("fixtures", "check", str(d))
        assert res.returncode == 3 and f"FAIL {name}" in res.stderr, (key, res.stderr)
        assert "destination" in res.stderr


def test_a_wrong_expected_error_fails(tmp_path: Path) -> None:
    d = _copy(tmp_path, "signals-unknown-sigil.log", "signals-unknown-sigil.log.expected.json")
    doc = json.loads((d / "signals-unknown-sigil.log.expected.json").read_text())
    doc["error"]["offset"] += 1
    (d / "signals-unknown-sigil.log.expected.json").write_text(json.dumps(doc))
    res = cli("fixtures", "check", str(d))
    assert res.returncode == 3 and "error.offset" in res.stderr


def test_not_a_fixture_dir_is_a_usage_error(tmp_path: Path) -> None:
    assert cli("fixtures", "check", str(tmp_path)).returncode == 2
    # A directory that cannot be read is exit 1 naming the OS's reason (README, exit codes).
    assert cli("fixtures", "check", str(tmp_path / "nope")).returncode == 1


# --- every expected key and every expected error, all differences --------


def _edit(d: Path, name: str, change: Any) -> None:
    doc = json.loads((d / name).read_text())
    change(doc)
    (d / name).write_text(json.dumps(doc))


def _check(d: Path, *args: str) -> tuple[int, dict[str, Any]]:
    res = cli("fixtures", "check", str(d), "--json", *args)
    report = json.loads(res.stdout)
    schemas.validate(report, "fixtures-check")
    return res.returncode, report


def test_later_expected_errors_and_details_are_compared(tmp_path: Path) -> None:
    name = "cell-invalid-history-gap.expected.json"
    d = _copy(tmp_path, "cell-invalid-history-gap.redb.gz", name)

    def later(doc: dict[str, Any]) -> None:
        doc["expected_errors"][1]["detail"] += " (changed)"  # not the first error

    _edit(d, name, later)
    code, report = _check(d)
    diffs = report["results"][0]["differences"]
    assert code == 3
    assert any("expected_errors" in x and "(changed)" in x for x in diffs)
    assert any("expected_errors: unexpected" in x for x in diffs)  # the real one, reported too

    def first_detail(doc: dict[str, Any]) -> None:
        doc["expected_errors"] = [dict(doc["expected_errors"][0], detail="elsewhere")]

    (tmp_path / "b").mkdir()
    d2 = _copy(tmp_path / "b", "cell-invalid-history-gap.redb.gz", name)
    _edit(d2, name, first_detail)
    code, report = _check(d2)
    assert code == 3
    assert any(x.startswith("expected_errors[0]") for x in report["results"][0]["differences"])


def test_an_expected_key_the_report_lacks_is_a_difference(tmp_path: Path) -> None:
    d = _copy(tmp_path, "texts-small.jsonl", "texts-small.jsonl.expected.json")
    _edit(d, "texts-small.jsonl.expected.json", lambda doc: doc.update(bom_count=0))
    code, report = _check(d)
    assert code == 3
    assert report["results"][0]["differences"] == [
        "bom_count: expected 0, the report has no such field"
    ]


def test_frames_and_lines_are_compared_with_what_the_readers_decode(tmp_path: Path) -> None:
    d = _copy(tmp_path, "signals-small.log", "signals-small.log.expected.json",
              "texts-small.jsonl", "texts-small.jsonl.expected.json")  # fmt: skip

    def frame(doc: dict[str, Any]) -> None:
        doc["frames"][3][4] += 1  # payload_len of frame 3

    def line(doc: dict[str, Any]) -> None:
        doc["lines"][5]["sha256"] = "00" * 32

    _edit(d, "signals-small.log.expected.json", frame)
    _edit(d, "texts-small.jsonl.expected.json", line)
    code, report = _check(d)
    assert code == 3
    by_name = {r["fixture"]: r["differences"] for r in report["results"]}
    assert [x.split(":")[0] for x in by_name["signals-small.log"]] == ["frames"]
    assert [x.split(":")[0] for x in by_name["texts-small.jsonl"]] == ["lines"]


def test_the_kind_comes_from_the_input_and_the_command_line_not_the_answer(
    tmp_path: Path,
) -> None:
    # An empty .log is read as a Signal log (its name), whatever the answer file claims.
    d = tmp_path / "d"
    d.mkdir()
    (d / "empty.log").write_bytes(b"")
    archive = json.loads((LEGACY / "texts-small.jsonl.expected.json").read_text())
    claim = {"valid": True, "line_count": 0, "distinct_texts": 0, "size_bytes": 0}
    (d / "empty.log.expected.json").write_text(json.dumps(claim))
    code, report = _check(d)
    assert code == 3
    assert any("line_count" in x for x in report["results"][0]["differences"])
    # The command line may say what content cannot: then the same answer holds.
    code, report = _check(d, "--kind", "empty.*=text-archive")
    assert code == 0, report
    assert archive["valid"]  # (the shape of a real archive answer, for the reader)
    # A 0-byte file with no suffix rule and no --kind is refused by name.
    (d / "empty.log").rename(d / "blank.dat")
    (d / "empty.log.expected.json").rename(d / "blank.dat.expected.json")
    code, report = _check(d)
    assert code == 3 and "--kind GLOB=KIND" in report["results"][0]["differences"][0]


def test_unpinned_fields_are_named_and_not_compared(tmp_path: Path) -> None:
    name = "cell-small.expected.json"
    d = _copy(tmp_path, "cell-small.redb.gz", name, "cell-small.receipt.json")

    def unpin(doc: dict[str, Any]) -> None:
        doc["archive_digest_hemera"] = "00" * 32
        doc["unpinned"] = ["archive_digest_hemera"]

    _edit(d, name, unpin)
    code, report = _check(d)
    assert code == 0
    assert report["results"][0]["unpinned"] == ["archive_digest_hemera"]


# --- golden receipts are change detectors; facts are checked independently


def test_receipt_facts_are_checked_against_the_expected_file_not_only_the_golden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migrate import api
    from migrate.pipeline import stages

    real = stages.build_receipt

    def drifting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        receipt = real(*args, **kwargs)
        receipt["counts"]["namespaces"] += 1  # a bug the blessed copy would inherit
        return receipt

    monkeypatch.setattr(stages, "build_receipt", drifting)
    d = _copy(tmp_path, "cell-small.redb.gz", "cell-small.expected.json")
    api.fixtures_check(d, bless=True)  # blessed from the buggy output
    report = api.fixtures_check(d)
    assert report["failed"] == 1
    assert report["results"][0]["differences"] == [
        "receipt counts.namespaces: expected 3, got 4"
    ]
