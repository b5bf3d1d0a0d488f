"""``fleet run``: jobs run as the ordinary ``run``; kills resume; failures stay per job."""

from __future__ import annotations

import fcntl
import json
import os
import random
import time
from pathlib import Path

import pytest

import schemas
from migrate import api
from migrate.fleet.manifest import shard_of
from migrate.fleet.pool import Pool
from tests.fleet.helpers import (
    build_fleet,
    check_against_single_runs,
    fleet_cli,
    kill_group_after,
    no_process_left,
    start_fleet,
)


def _kill_and_resume(tmp_path: Path, cells: int, kills: int, seed: int) -> None:
    # A kill races the fleet by nature: on an idle machine the last jobs can finish before it
    # lands. Such an attempt proves nothing, so it is repeated on a fresh fleet with the kill
    # moved earlier; the test fails only if no attempt gets its kills in.
    rng = random.Random(seed)
    for attempt in range(5):
        fleet = build_fleet(tmp_path / f"f{attempt}", cells)
        report = tmp_path / f"report{attempt}"
        total = fleet.valid + fleet.invalid
        killed = 0
        for _ in range(kills):
            proc = start_fleet(
                "run", str(fleet.manifest), "--workers", "2", "--report-dir", str(report)
            )
            jobs = report / "jobs"
            done = len(list(jobs.glob("*.json"))) if jobs.is_dir() else 0
            # Leave at least 6 jobs to go, so the kill lands while the fleet is still running.
            late = max(done + 1, total - 6) if attempt == 0 else done + 1
            target = rng.randint(done + 1, late)
            extra = rng.uniform(0, 0.15) if attempt == 0 else 0.0
            if kill_group_after(proc, report, target, extra):
                killed += 1
                deadline = time.monotonic() + 10
                while not no_process_left(proc.pid) and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert no_process_left(proc.pid), "a worker outlived the SIGKILL of its group"
        if killed == kills:
            break
    assert killed == kills, f"seed {seed}: every attempt ended before its kills"
    res = fleet_cli(
        "run", str(fleet.manifest), "--workers", "2", "--report-dir", str(report), "--json"
    )
    doc = json.loads(res.stdout)
    schemas.validate(doc, "fleet-report")
    assert len(doc["jobs"]) == total
    ok, failed = check_against_single_runs(doc, tmp_path / "single")
    assert (ok, failed) == (fleet.valid, fleet.invalid), f"seed {seed}"
    assert res.returncode == max(j["exit_code"] for j in doc["jobs"]) == 3
    # Every job result file agrees with the final report.
    files = {p.stem: json.loads(p.read_text()) for p in (report / "jobs").glob("*.json")}
    assert {j["job"]: j for j in doc["jobs"]} == files


@pytest.mark.slow
def test_fleet_killed_once_resumes_to_single_run_receipts(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    _kill_and_resume(tmp_path, cells=9, kills=1, seed=seed)


@pytest.mark.slow
def test_fleet_of_fifty_killed_twice_resumes_to_single_run_receipts(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    _kill_and_resume(tmp_path, cells=50, kills=2, seed=seed)


@pytest.mark.slow
def test_one_failure_never_stops_the_others_and_codes_are_per_job(tmp_path: Path) -> None:
    """A locked source (11), a nonce conflict (4), invalid inputs (3, 2, 1), and the rest 0."""
    fleet = build_fleet(tmp_path / "f", 3)
    root = fleet.root
    # A store where nonce 01 is already used by another import: a job reusing it conflicts.
    other = root / "other.redb"
    other.write_bytes((root / "nodes" / "n000" / "cell.redb").read_bytes())
    api.run(api.Job(source=root / "nodes" / "n001" / "cell.redb", store=root / "bbg" / "taken",
                    nonce="01"))  # fmt: skip
    with fleet.manifest.open("a") as fh:
        fh.write('\n[[jobs]]\nsource = "other.redb"\nstore = "bbg/taken"\nnonce = "01"\n')
    locked = root / "nodes" / "n002" / "cell.redb"
    fd = os.open(locked, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as the old binary would hold it
    try:
        res = fleet_cli("run", str(fleet.manifest), "--workers", "2", "--json")
    finally:
        os.close(fd)
    doc = json.loads(res.stdout)
    codes = {j["name"]: j["exit_code"] for j in doc["jobs"]}
    assert codes["nodes/n002/cell.redb"] == 11
    assert codes["other.redb"] == 4
    assert codes["bad/junk/cell.redb"] == 1
    assert codes["empty log"] == 2
    assert codes["bad/cell-invalid-history-gap/cell.redb"] == 3
    assert codes["nodes/n000/cell.redb"] == codes["nodes/n001/cell.redb"] == 0
    assert codes["logs/signals-small.log"] == codes["logs/texts-small.jsonl"] == 0
    assert res.returncode == 11  # the highest job exit code
    by_name = {j["name"]: j for j in doc["jobs"]}
    assert by_name["other.redb"]["error"]["code"] == "conflict"
    assert by_name["nodes/n002/cell.redb"]["error"]["code"] == "locked"
    # The locked job runs once the lock is gone; nothing else changes.
    again = json.loads(fleet_cli("run", str(fleet.manifest), "--json").stdout)
    assert {j["name"]: j["exit_code"] for j in again["jobs"]}["nodes/n002/cell.redb"] == 0


def test_jobs_sharing_a_store_never_overlap(tmp_path: Path) -> None:
    """The store has no whole-run lock (two runs of one import into one store race), so
    the scheduler serialises jobs per destination: their run intervals never overlap."""
    root = tmp_path / "f"
    fleet = build_fleet(root, 6, invalid=False)
    fleet.manifest.write_text(
        '[[jobs]]\nsource = "nodes/*/cell.redb"\nstore = "bbg/one"\n'
        '[[jobs]]\nsource = "logs/*-small.*"\nstore = "bbg/one"\n'
    )
    doc = json.loads(fleet_cli("run", str(fleet.manifest), "--workers", "2", "--json").stdout)
    assert doc["exit_code"] == 0, doc
    spans = sorted((j["started"], j["finished"]) for j in doc["jobs"])
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start, spans
    # Content-identical cells share one import: every copy reports the same receipt.
    cells = [j["receipt"] for j in doc["jobs"] if j["name"].endswith("n000/cell.redb")
             or j["name"].endswith("n003/cell.redb")]  # fmt: skip
    assert cells[0] == cells[1]


def _suicide(arg: int, progress: object) -> int:
    if arg == 2:
        os._exit(9)
    time.sleep(0.05)
    return arg * 10


def test_a_dead_worker_fails_only_its_own_task() -> None:
    results: dict[int, object] = {}
    todo = list(range(6))
    with Pool(2) as pool:
        while todo or len(results) < 6:
            while todo and pool.free:
                n = todo.pop(0)
                pool.submit(n, _suicide, n)
            for token, what, payload in pool.events(1.0):
                if what != "progress":
                    results[token] = (what, payload)
    assert results[2] == ("died", 9)
    assert {k: v for k, v in results.items() if k != 2} == {
        n: ("done", n * 10) for n in (0, 1, 3, 4, 5)
    }


@pytest.mark.slow
def test_skip_done_reuses_successful_results(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 2)
    report = tmp_path / "r"
    first = json.loads(
        fleet_cli("run", str(fleet.manifest), "--report-dir", str(report), "--json").stdout
    )
    again = json.loads(
        fleet_cli(
            "run", str(fleet.manifest), "--report-dir", str(report), "--skip-done", "--json"
        ).stdout
    )
    ok_first = {j["job"]: j for j in first["jobs"] if j["exit_code"] == 0}
    ok_again = {j["job"]: j for j in again["jobs"] if j["exit_code"] == 0}
    assert ok_first == ok_again  # same documents, timings included: they were not rerun
    failed_again = [j for j in again["jobs"] if j["exit_code"] != 0]
    assert failed_again and all(
        j["started"] > first["finished"] for j in failed_again
    )  # failures are retried


def test_progress_view_is_silent_without_a_terminal(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "f", 2, invalid=False)
    res = fleet_cli("run", str(fleet.manifest), "--json")
    assert res.returncode == 0
    assert res.stderr == ""
    json.loads(res.stdout)


def test_progress_view_draws_on_a_terminal(tmp_path: Path) -> None:
    import pty
    import subprocess
    import sys

    fleet = build_fleet(tmp_path / "f", 4, invalid=False)
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "fleet", "run", str(fleet.manifest), "--workers", "2"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "160"},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    proc.wait()
    os.close(leader)
    text = seen.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "fleet run: " in text and "done" in text and "ETA" in text, text


@pytest.mark.parametrize(
    "how", ["SIGINT to the group", pytest.param("SIGTERM to the parent", marks=pytest.mark.slow)]
)
def test_interrupt_exits_130_stops_the_workers_and_a_rerun_finishes(
    tmp_path: Path, how: str
) -> None:
    import signal
    import subprocess
    import sys

    fleet = build_fleet(tmp_path / "f", 8, invalid=False)
    report = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "fleet", "run", str(fleet.manifest), "--workers", "2",
         "--report-dir", str(report)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    jobs = report / "jobs"
    while proc.poll() is None and not (jobs.is_dir() and any(jobs.glob("*.json"))):
        time.sleep(0.02)
    if how.startswith("SIGINT"):
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the fleet finished before the signal arrived")
    assert proc.returncode == 130, stderr
    assert b"fleet run interrupted" in stderr and b"rerun the same command" in stderr
    deadline = time.monotonic() + 10
    while not no_process_left(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert no_process_left(proc.pid), "workers outlived the interrupted fleet"
    res = fleet_cli("run", str(fleet.manifest), "--report-dir", str(report), "--json")
    assert res.returncode == 0
    assert check_against_single_runs(json.loads(res.stdout), tmp_path / "single") == (10, 0)


@pytest.mark.slow
def test_manifest_options_reach_run(tmp_path: Path) -> None:
    """kind, accept_torn_tail, mapping, nonce and bounds give what `run` with the same
    options gives (a JSON manifest here)."""
    import gzip
    import shutil

    from migrate.job import mapping as mapping_mod
    from tests.fleet.helpers import LEGACY, single_run

    root = tmp_path / "f"
    root.mkdir()
    (root / "empty.log").write_bytes(b"")
    shutil.copy(LEGACY / "signals-truncated-tail.log", root / "torn.log")
    cell = gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes())
    for name in ("mapped", "nonced", "bounded"):
        (root / f"{name}.redb").write_bytes(cell)
    namespaces = sorted(api.plan(api.Job(source=root / "mapped.redb", store=None))["namespaces"])
    subject = "5a" * 32
    pairs = {ns: f"{i + 1:064x}" for i, ns in enumerate(namespaces)}
    manifest = {
        "jobs": [
            {"source": "empty.log", "store": "bbg/e", "kind": "signal-log"},
            {"source": "torn.log", "store": "bbg/t", "accept_torn_tail": True},
            {"source": "mapped.redb", "store": "bbg/m", "subject": subject, "map": pairs},
            {"source": "nonced.redb", "store": "bbg/n", "nonce": "abcd"},
            {"source": "bounded.redb", "store": "bbg/b", "bounds": {"max_rows": 10}},
        ]
    }
    (root / "fleet.json").write_text(json.dumps(manifest))
    res = fleet_cli("run", str(root / "fleet.json"), "--json")
    got = {Path(j["source"]).name: j for j in json.loads(res.stdout)["jobs"]}
    work = tmp_path / "single"
    work.mkdir()
    refs = {
        "empty.log": single_run(root / "empty.log", work, kind="signal-log"),
        "torn.log": single_run(root / "torn.log", work, accept_torn_tail=True),
        "mapped.redb": single_run(
            root / "mapped.redb", work, mapping=mapping_mod.build(subject, sorted(pairs.items()))
        ),
        "nonced.redb": single_run(root / "nonced.redb", work, nonce="abcd"),
        "bounded.redb": single_run(root / "bounded.redb", work, bounds=api.Bounds(max_rows=10)),
    }
    for name, ref in refs.items():
        assert got[name]["exit_code"] == ref["exit_code"], (name, got[name].get("error"))
        if ref["exit_code"] == 0:
            assert got[name]["receipt"] == ref["receipt"], name
        else:
            assert got[name]["error"]["code"] == ref["error"]["code"], name
    # The receipt is the exact document `run --json` prints.
    from tests.pipeline.helpers import cli

    single = cli("run", str(root / "nonced.redb"), "--store", str(tmp_path / "cli"), "--nonce",
                 "abcd", "--json")  # fmt: skip
    assert json.loads(single.stdout) == got["nonced.redb"]["receipt"]
    # No store holds the subject: refused as neuron refuses (Missing), as a single run is.
    assert got["mapped.redb"]["error"]["code"] == "subject-not-activated"
    assert got["nonced.redb"]["receipt"]["nonce"] == "abcd"
    assert got["torn.log"]["receipt"]["legacy"]["torn_tail"] is not None
    assert got["bounded.redb"]["exit_code"] == 3
    assert got["empty.log"]["exit_code"] == 0
    assert res.returncode == 3


# A BBG store as a fleet source is a transfer: transfer from a Fjall store is being built on
# another branch (today it is refused, store-refused); this checks the SQLite transfer path.
@pytest.mark.engine("sqlite")
def test_a_bbg_store_source_is_a_sealed_transfer(tmp_path: Path) -> None:
    import gzip

    from tests.fleet.helpers import LEGACY

    root = tmp_path / "f"
    root.mkdir()
    cell = root / "cell.redb"
    cell.write_bytes(gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes()))
    api.run(api.Job(source=cell, store=root / "old"))  # the BBG store to move
    (root / "fleet.toml").write_text(
        '[[jobs]]\nsource = "old"\nstore = "new"\n'
        '[[jobs]]\nsource = "old"\nstore = "other"\nkind = "redb"\n'
    )
    plan = json.loads(fleet_cli("plan", str(root / "fleet.toml"), "--json").stdout)
    assert [(r["kind"], r["exit_code"], r["action"]) for r in plan["jobs"]] == [
        ("bbg", 0, "transfer"),
        ("redb", 2, "fail"),  # the kind the manifest gives, refused for a store
    ]
    res = fleet_cli("run", str(root / "fleet.toml"), "--json", "--yes")
    doc = json.loads(res.stdout)
    moved, refused = doc["jobs"]
    assert (moved["exit_code"], moved["kind"], moved["status"]) == (0, "bbg", "complete")
    schemas.validate(moved["receipt"], "transfer-receipt")
    assert moved["rows"] == 220  # cell-small: 105+3+50+50+12
    assert (
        refused["exit_code"] == 2
        and "apply to legacy sources only" in (refused["error"]["message"])
    )
    # An exact rerun of the single transfer returns the very receipt the fleet reported.
    again = api.transfer(api.TransferJob(source=root / "old", store=root / "new"))
    assert again.receipt == moved["receipt"]
    assert res.returncode == 2


def test_manifest_kinds_are_the_pipelines() -> None:
    from migrate.pipeline.preflight import KINDS

    enum = schemas.load("fleet-manifest")["$defs"]["options"]["properties"]["kind"]["enum"]
    assert sorted(enum) == sorted(KINDS)


def test_an_empty_shard_runs_nothing_and_succeeds(tmp_path: Path) -> None:
    # Shards are a hash of each lane, so with few lanes a shard can be empty: its run writes a
    # report with no job and exits 0 (a scheduler must not see that task as failed).
    fleet = build_fleet(tmp_path / "f", 1, invalid=False)
    manifest = api.fleet_load(fleet.manifest)
    count = len(manifest.jobs) + 1
    used = {shard_of(j, count) for j in manifest.jobs}
    empty = min(set(range(count)) - used)
    report = tmp_path / "report"
    res = fleet_cli(
        "run", str(fleet.manifest), "--shard", f"{empty}/{count}", "--report-dir", str(report),
        "--json",
    )  # fmt: skip
    doc = json.loads(res.stdout)
    schemas.validate(doc, "fleet-report")
    assert (res.returncode, doc["jobs"]) == (0, [])
    assert json.loads((report / f"run-{empty}-of-{count}.json").read_text())["jobs"] == []
    assert not (fleet.root / "bbg").exists()
