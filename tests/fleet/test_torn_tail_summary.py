"""A job that accepted a torn tail (``accept_torn_tail``: the bytes after the valid prefix
dropped) is named in the fleet's summary (human and ``--json`` totals) and in the HTML
report, not only in its own job result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import schemas
from tests.conftest import FIXTURES
from tests.fleet.helpers import fleet_cli

LOG = FIXTURES / "legacy" / "bbg-cli-torn-tail.log"


def test_an_accepted_torn_tail_is_in_the_summary_and_the_html(tmp_path: Path) -> None:
    shutil.copy(LOG, tmp_path / "torn.log")
    expected = json.loads((FIXTURES / "legacy" / f"{LOG.name}.expected.json").read_text())
    manifest = tmp_path / "fleet.toml"
    manifest.write_text('[[jobs]]\nsource = "torn.log"\nstore = "bbg/torn"\n'
                        "accept_torn_tail = true\n")  # fmt: skip
    rep = tmp_path / "rep"
    res = fleet_cli("run", str(manifest), "--report-dir", str(rep), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    job = json.loads(next((rep / "jobs").glob("*.json")).read_text())
    torn = job["receipt"]["legacy"]["torn_tail"]
    assert torn is not None and torn["discarded_bytes"] > 0, job
    dropped = torn["discarded_bytes"]
    assert expected["size_bytes"] - expected["valid_prefix_end"] == dropped  # the fixture's
    assert f"torn tail accepted: {dropped:,} bytes after byte" in res.stderr
    assert f"1 torn tail accepted ({dropped:,} bytes dropped)" in res.stderr
    page = tmp_path / "report.html"
    merged = fleet_cli("report", str(rep), "--html", str(page), "--json", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    doc = json.loads(merged.stdout)
    schemas.validate(doc, "fleet-report")
    assert doc["totals"]["torn_tails"] == 1 and doc["totals"]["torn_bytes_dropped"] == dropped
    text = page.read_text()
    assert "torn tails accepted" in text and f"{dropped:,} bytes after byte" in text
