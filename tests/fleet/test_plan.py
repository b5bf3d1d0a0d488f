"""``fleet plan``: a plan per job predicting run's exit code; totals; disk; writes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import schemas
from migrate import api
from tests.fleet.helpers import build_fleet, fleet_cli, single_run


def entries(*roots: Path) -> dict[str, Any]:
    """Every directory entry under ``roots``: type, size, mtime, mode and content hash."""
    out: dict[str, Any] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in sorted(dirnames + filenames):
                p = Path(dirpath) / name
                st = p.lstat()
                digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
                out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
        st = root.stat()
        out[str(root)] = (st.st_mode, st.st_mtime_ns)
    return out


@pytest.mark.slow
def test_plan_predicts_every_job_and_writes_nothing(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 4)
    before = entries(tmp_path)
    res = fleet_cli("plan", str(fleet.manifest), "--json", "--workers", "2")
    assert entries(tmp_path) == before, "fleet plan wrote something"
    doc = json.loads(res.stdout)
    schemas.validate(doc, "fleet-plan")
    assert res.returncode == doc["exit_code"] == max(r["exit_code"] for r in doc["jobs"]) == 3
    assert doc["totals"]["jobs"] == fleet.valid + fleet.invalid
    assert doc["totals"]["rows"] == sum(r["rows"] for r in doc["jobs"]) > 0
    # The prediction is the exit code (and error code) a single run gives.
    _predictions_match_single_runs(doc["jobs"], tmp_path / "single")
    # After a real run, a second plan still writes nothing and predicts "already active".
    assert fleet_cli("run", str(fleet.manifest), "--workers", "2").returncode == 3
    before = entries(tmp_path / "f")
    again = json.loads(fleet_cli("plan", str(fleet.manifest), "--json").stdout)
    assert entries(tmp_path / "f") == before, "fleet plan wrote into existing stores"
    ok = [r for r in again["jobs"] if r["exit_code"] == 0]
    assert ok and all(r["action"].startswith("none (already activated") for r in ok)
    assert again["totals"]["disk_bytes_needed"] == 0


def _predictions_match_single_runs(rows: list[dict[str, Any]], work: Path) -> None:
    work.mkdir()
    for r in rows:
        ref = single_run(Path(r["source"]), work, bounds=api.Bounds(page_rows=16))
        assert r["exit_code"] == ref["exit_code"], r["source"]
        if ref["exit_code"]:
            assert r["outcome"] == ref["error"]["code"]
            assert r["problems"] == [ref["error"]["message"]]


def test_disk_is_grouped_per_filesystem_and_a_short_one_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = build_fleet(tmp_path / "f", 2, invalid=False)
    other = Path("/dev/shm")
    two = (
        other.is_dir()
        and os.access(other, os.W_OK)
        and (other.stat().st_dev != tmp_path.stat().st_dev)
    )
    away = f"{other}/fleet-test-{os.getpid()}"
    extra = f'[[jobs]]\nsource = "nodes/n000/cell.redb"\nstore = "{away}/x"\n'
    if two:
        fleet.manifest.write_text(fleet.manifest.read_text() + extra)
    manifest = api.fleet_load(fleet.manifest)
    doc = api.fleet_plan(manifest, workers=1)
    assert doc["exit_code"] == 0
    disks = doc["filesystems"]
    assert len(disks) == (2 if two else 1)
    local = next(d for d in disks if d["path"] == str(fleet.root))
    assert (
        local["needed_bytes"]
        == sum(
            r["disk_bytes_needed"] for r in doc["jobs"] if r["store"].startswith(str(fleet.root))
        )
        > 0
    )
    assert local["enough"] and local["free_bytes"] > 0
    assert not Path(away).exists()

    real = shutil.disk_usage

    def tiny(path: str) -> Any:
        got = real(path)
        return type(got)(got.total, got.used, 1000)

    monkeypatch.setattr("migrate.fleet.plan.shutil.disk_usage", tiny)
    short = api.fleet_plan(manifest, workers=1)
    assert short["exit_code"] == 1
    assert not short["filesystems"][0]["enough"]
    assert "1000 are free" in short["problems"][0]


@pytest.mark.slow
def test_human_table_never_cuts_ids(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 1)
    doc = json.loads(fleet_cli("plan", str(fleet.manifest), "--json").stdout)
    narrow = fleet_cli("plan", str(fleet.manifest), env={**os.environ, "COLUMNS": "60"})
    assert "…" not in narrow.stderr and "..." not in narrow.stderr
    wide = fleet_cli("plan", str(fleet.manifest), env={**os.environ, "COLUMNS": "900"})
    assert wide.returncode == doc["exit_code"] == 3
    for r in doc["jobs"]:
        assert r["name"] in wide.stderr
        for problem in r["problems"]:
            assert problem in wide.stderr
    assert "disk per destination filesystem" in wide.stderr


def test_shard_plan_plans_the_shard_only(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 5, invalid=False)
    part = json.loads(fleet_cli("plan", str(fleet.manifest), "--json", "--shard", "1/3").stdout)
    want = api.fleet_select(api.fleet_load(fleet.manifest), (1, 3))
    assert [r["job"] for r in part["jobs"]] == [j.key for j in want]
    assert part["shard"] == {"index": 1, "count": 3}


def test_bad_manifest_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "fleet.toml").write_text('[[jobs]]\nsource = "x/*/c"\nstore = "b"\n')
    res = fleet_cli("plan", str(tmp_path / "fleet.toml"))
    assert res.returncode == 2
    assert "jobs[0]: source: the glob 'x/*/c' matches nothing" in res.stderr
    assert "Traceback" not in res.stderr
