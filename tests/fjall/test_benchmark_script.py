"""benchmarks/fjall.py runs end to end on a tiny keyspace (what it prints is measured, not
asserted: no timed assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.store.fjall import backend
from tests.conftest import ROOT


def test_the_fjall_benchmark_runs(tmp_path: Path) -> None:
    if "c" not in backend.available():
        pytest.skip("the Fjall C extension is not built: the benchmark measures both twins")
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fjall.py"), "--mb", "2", "--repeat", "1",
         "--python-mb", "1", "--json", "--dir", str(tmp_path / "bench")],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    for step in ("raw", "build", "build-python", "cat", "scan-c", "scan-python", "redb-c"):
        assert doc[step]["seconds"] > 0, step
    assert doc["scan-c"]["rows"] == doc["scan-python"]["rows"] == doc["redb-c"]["rows"]
    assert doc["scan-c"]["bytes"] == doc["build"]["bytes"]
    assert set(doc["goals"]) >= {"scan_goal_met", "build_goal_met", "rss_goal_met"}
