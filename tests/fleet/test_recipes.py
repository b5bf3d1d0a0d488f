"""The scheduler recipes under docs/fleet/ work: each runs a fleet as 3 shards whose merged
report equals one ``fleet run``'s (the Kubernetes and Slurm scripts run here with the
variables their schedulers set; GNU parallel runs with ``:`` as its only host)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from migrate.fleet.manifest import load
from tests.fleet.helpers import ROOT, build_fleet, fleet_cli, strip_timing

DOCS = ROOT / "docs" / "fleet"
BIN = str(Path(sys.executable).parent)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"], **extra}


def _merged(report: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(fleet_cli("report", str(report), "--json").stdout)
    return doc


def _reference(tmp_path: Path, manifest: Path, root: Path) -> dict[str, Any]:
    shutil.rmtree(root / "bbg")
    ref = tmp_path / "ref"
    fleet_cli("run", str(manifest), "--report-dir", str(ref))
    return _merged(ref)


def _k8s() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "k8s-indexed-job.yaml").read_text())
    return doc


def test_k8s_indexed_job_is_consistent() -> None:
    job = _k8s()
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    (container,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert spec["completions"] == spec["parallelism"] == int(env["SHARDS"])
    (rule,) = spec["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [2]
    assert rule["onExitCodes"]["containerName"] == container["name"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert all(env[k].startswith(tuple(mounts)) for k in ("MANIFEST", "REPORTS"))


def test_recipe_scripts_are_valid_shell() -> None:
    for script in ("slurm-array.sh", "parallel-ssh.sh"):
        subprocess.run(["bash", "-n", str(DOCS / script)], check=True)
    script = _k8s()["spec"]["template"]["spec"]["containers"][0]["args"][0]
    subprocess.run(["sh", "-n", "-c", script], check=True)


def test_example_manifest_loads(tmp_path: Path) -> None:
    shutil.copy(DOCS / "fleet.example.toml", tmp_path / "fleet.toml")
    for f in ("nodes/a/cell.redb", "nodes/b/cell.redb", "logs/signals.log", "archives/x.jsonl",
              "cells/alice.redb"):  # fmt: skip
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"")
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "alice.json").write_text(
        json.dumps(
            {"subject": "aa" * 32, "origins": [{"origin": "bb" * 32, "install_nonce": "01" * 32}]}
        )
    )
    m = load(tmp_path / "fleet.toml")
    assert [j.store.name for j in m.jobs] == ["a", "b", "signals", "archives", "alice"]
    assert m.jobs[3].name == "archive x"
    assert m.jobs[2].accept_torn_tail and m.jobs[4].mapping is not None
    assert m.jobs[0].bounds["max_rows"] == 50_000_000


@pytest.mark.slow
def test_k8s_script_runs_three_shards(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 4)
    reports = tmp_path / "reports"
    container = _k8s()["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    env.update(MANIFEST=str(fleet.manifest), REPORTS=str(reports))
    for i in range(int(env["SHARDS"])):
        res = subprocess.run(
            container["command"] + [container["args"][0]],
            env=_env(**env, JOB_COMPLETION_INDEX=str(i)),
            capture_output=True,
            text=True,
        )
        # The pod succeeds when its shard's worst job ended in a final outcome (0, 3, 4); a
        # job's usage error (2: the empty log names no kind) fails it, as the recipe says.
        shard = json.loads((reports / f"run-{i}-of-{env['SHARDS']}.json").read_text())
        # Shards are a hash of each lane (here of tmp paths), so one may hold no job: it runs
        # nothing and succeeds.
        worst = max((j["exit_code"] for j in shard["jobs"]), default=0)
        assert res.returncode == (0 if worst in (0, 3, 4) else worst), res.stderr
    merged = _merged(reports)
    assert strip_timing(merged) == strip_timing(_reference(tmp_path, fleet.manifest, fleet.root))
    assert merged["anomalies"] == []


@pytest.mark.slow
def test_slurm_array_script_runs_three_shards(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 4)
    reports = tmp_path / "reports"
    for i in range(3):
        res = subprocess.run(
            ["bash", str(DOCS / "slurm-array.sh")],
            env=_env(
                MANIFEST=str(fleet.manifest), REPORTS=str(reports),
                SLURM_ARRAY_TASK_ID=str(i), SLURM_ARRAY_TASK_COUNT="3",
                SLURM_CPUS_PER_TASK="2",
            ),
            capture_output=True, text=True,
        )  # fmt: skip
        shard = json.loads((reports / f"run-{i}-of-3.json").read_text())
        worst = max((j["exit_code"] for j in shard["jobs"]), default=0)  # a shard may be empty
        assert res.returncode == worst, res.stderr
    merged = _merged(reports)
    assert merged["shards"] == ["run-0-of-3.json", "run-1-of-3.json", "run-2-of-3.json"]
    assert strip_timing(merged) == strip_timing(_reference(tmp_path, fleet.manifest, fleet.root))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("parallel") is None, reason="GNU parallel is not installed")
def test_gnu_parallel_script_runs_three_shards(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 4)
    reports = tmp_path / "reports"
    res = subprocess.run(
        ["bash", str(DOCS / "parallel-ssh.sh"), str(fleet.manifest), str(reports)],
        env=_env(HOSTS=":", SHARDS="3", HOME=str(tmp_path)),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 3, res.stderr  # the worst job's code, from the merged report
    assert (reports / "fleet.html").is_file()
    merged = _merged(reports)
    assert strip_timing(merged) == strip_timing(_reference(tmp_path, fleet.manifest, fleet.root))
