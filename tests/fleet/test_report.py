"""``fleet report``: shards merge to the same report as one run; anomalies; the HTML page."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import html5lib
import pytest

import schemas
from migrate.fleet.html import render
from tests.fleet.helpers import LEGACY, build_fleet, fleet_cli, strip_timing


def _report(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    res = fleet_cli("report", *args, "--json")
    doc = json.loads(res.stdout)
    schemas.validate(doc, "fleet-report")
    return res.returncode, doc


@pytest.mark.slow
def test_three_shards_merge_to_the_same_report_as_one_run(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 7)
    shards = tmp_path / "shards"
    for i in range(3):
        res = fleet_cli("run", str(fleet.manifest), "--shard", f"{i}/3", "--workers", "2",
                        "--report-dir", str(shards / f"s{i}"))  # fmt: skip
        # The shard's exit status is the worst of its own jobs' codes, as its run report
        # says (a usage error of the command would have written no report).
        run = json.loads((shards / f"s{i}" / f"run-{i}-of-3.json").read_text())
        assert res.returncode == run["exit_code"], res.stderr
        assert run["exit_code"] == max((job["exit_code"] for job in run["jobs"]), default=0)
    code3, merged3 = _report(*(str(shards / f"s{i}") for i in range(3)))
    shutil.rmtree(fleet.root / "bbg")
    one = tmp_path / "one"
    res = fleet_cli("run", str(fleet.manifest), "--workers", "2", "--report-dir", str(one))
    code1, merged1 = _report(str(one))
    assert strip_timing(merged3) == strip_timing(merged1)
    assert merged3["totals"] == merged1["totals"]
    assert code3 == code1 == res.returncode == 3
    assert merged3["anomalies"] == merged1["anomalies"] == []
    assert merged3["shards"] == ["run-0-of-3.json", "run-1-of-3.json", "run-2-of-3.json"]
    assert len(merged1["jobs"]) == fleet.valid + fleet.invalid
    # Shards sharing one report directory merge the same way.
    both = tmp_path / "shared"
    for i in range(3):
        for p in (shards / f"s{i}").rglob("*.json"):
            dest = both / p.relative_to(shards / f"s{i}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dest)
    assert strip_timing(_report(str(both))[1]) == strip_timing(merged1)
    # A missing shard is an anomaly, not a silent success.
    code, partial = _report(str(shards / "s0"), str(shards / "s1"))
    assert [a["code"] for a in partial["anomalies"]] == ["missing-shard"]
    assert "2/3" in partial["anomalies"][0]["detail"]
    assert code >= 1


@pytest.mark.slow
def test_a_job_twice_with_different_receipts_is_an_anomaly(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 2, invalid=False)
    first, second = tmp_path / "r1", tmp_path / "r2"
    assert fleet_cli("run", str(fleet.manifest), "--report-dir", str(first)).returncode == 0
    # The same path now holds another cell store; the job (same source and store) differs.
    cell = fleet.root / "nodes" / "n000" / "cell.redb"
    cell.write_bytes(gzip.decompress((LEGACY / "cell-nondurable-tail.redb.gz").read_bytes()))
    shutil.rmtree(fleet.root / "bbg" / "n000")
    assert fleet_cli("run", str(fleet.manifest), "--report-dir", str(second)).returncode == 0
    code, doc = _report(str(first), str(second))
    assert code == 1
    (anomaly,) = doc["anomalies"]
    assert anomaly["code"] == "conflicting-results"
    assert str(cell) in anomaly["detail"]
    assert any(str(first) in f for f in anomaly["files"])
    assert any(str(second) in f for f in anomaly["files"])
    kept = next(j for j in doc["jobs"] if j["job"] == anomaly["job"])
    latest = json.loads((second / "jobs" / f"{anomaly['job']}.json").read_text())
    assert kept == latest


@pytest.mark.slow
def test_missing_jobs_are_named_with_the_manifest(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 3, invalid=False)
    rep = tmp_path / "r"
    fleet_cli("run", str(fleet.manifest), "--shard", "0/2", "--report-dir", str(rep))
    code, doc = _report(str(rep), "--manifest", str(fleet.manifest))
    missing = [a for a in doc["anomalies"] if a["code"] == "missing-job"]
    expected_missing = fleet.valid - len(doc["jobs"])
    assert len(missing) == expected_missing
    assert code == (1 if doc["anomalies"] else 0)


def test_report_of_nothing_is_a_usage_error(tmp_path: Path) -> None:
    res = fleet_cli("report", str(tmp_path))
    assert res.returncode == 2
    assert "not a fleet report directory" in res.stderr
    res = fleet_cli("report", str(tmp_path / "nope"))
    # An input that cannot be read is exit 1 naming the OS's reason (README, exit codes).
    assert res.returncode == 1
    assert res.stderr == f"error: {tmp_path / 'nope'}: cannot read: No such file or directory\n"


def _html_run(tmp_path: Path) -> tuple[Path, dict]:  # type: ignore[type-arg]
    fleet = build_fleet(tmp_path / "f", 2)
    text = fleet.manifest.read_text().replace(
        'name = "empty log"', 'name = "<script>x</script> & \\"co\'"'
    )
    fleet.manifest.write_text(text)
    rep = tmp_path / "r"
    fleet_cli("run", str(fleet.manifest), "--report-dir", str(rep))
    page = tmp_path / "report.html"
    res = fleet_cli("report", str(rep), "--html", str(page), "--json")
    return page, json.loads(res.stdout)


@pytest.mark.slow
def test_html_report_is_valid_self_contained_and_escaped(tmp_path: Path) -> None:
    page, doc = _html_run(tmp_path)
    text = page.read_text("utf-8")
    assert text == render(doc)
    parser = html5lib.HTMLParser(strict=True)
    parser.parse(text)  # raises on any parse error
    assert "<script" not in text.lower()
    assert "&lt;script&gt;x&lt;/script&gt; &amp; &quot;co&#x27;" in text
    for external in ("src=", "href=", "@import", "url("):
        assert external not in text
    for job in doc["jobs"]:
        if "receipt" in job:
            assert job["receipt"]["import_id"] in text
            assert job["receipt"]["digests"]["source_archive_sha256"] in text
        else:
            assert job["error"]["code"] in text


@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no /usr/bin/chromium")
def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    page, _ = _html_run(tmp_path)
    shot = tmp_path / "report.png"
    subprocess.run(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
         f"--screenshot={shot}", "--window-size=1400,1000", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.slow
def test_a_failure_then_a_success_is_a_retry_not_an_anomaly(tmp_path: Path) -> None:
    import fcntl
    import os

    fleet = build_fleet(tmp_path / "f", 2, invalid=False)
    first, second = tmp_path / "r1", tmp_path / "r2"
    cell = fleet.root / "nodes" / "n000" / "cell.redb"
    fd = os.open(cell, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the old binary still runs on this node
    try:
        assert fleet_cli("run", str(fleet.manifest), "--report-dir", str(first)).returncode == 11
    finally:
        os.close(fd)
    # The retry goes into the same directory (its old run report stays until replaced) and
    # into another one: neither merge is an anomaly, and the success is reported.
    fleet_cli("run", str(fleet.manifest), "--report-dir", str(second))
    stale = json.loads((first / "run-all.json").read_text())
    assert fleet_cli("run", str(fleet.manifest), "--report-dir", str(first)).returncode == 0
    (first / "run-old.json").write_text(json.dumps(stale))  # an old report kept beside it
    for dirs in ([first], [first, second]):
        code, doc = _report(*map(str, dirs))
        assert doc["anomalies"] == [] and code == 0, doc["anomalies"]
        assert all(j["exit_code"] == 0 for j in doc["jobs"])
    # The reverse order in time (a success, later a failure) is an anomaly.
    late = json.loads((second / "jobs" / next(iter(
        p.name for p in (second / "jobs").glob("*.json")))).read_text())  # fmt: skip
    failed = {k: v for k, v in late.items() if k not in ("receipt", "rows")}
    error = {"code": "store", "exit_code": 1, "message": "disk full", "context": {}}
    failed.update(exit_code=1, status="failed", finished="2999-01-01T00:00:00.000Z", error=error)
    third = tmp_path / "r3" / "jobs"
    third.mkdir(parents=True)
    (third / f"{late['job']}.json").write_text(json.dumps(failed))
    code, doc = _report(str(second), str(tmp_path / "r3"))
    assert [a["code"] for a in doc["anomalies"]] == ["conflicting-results"] and code == 1
