"""The progress renderers driven with a fake clock (no timed assertions): a rate only once a
stage has run a second (an instant stage claims no billions of rows a second), an ETA from
it, a complete count whose stage has not ended shown as finishing rather than frozen at
100 %, and a legacy seal counting the file's bytes up to -- never past -- its size."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import schemas
from migrate.cli import _progress
from tests.conftest import FIXTURES


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Bar:
    """Records what the watcher tells rich's Progress."""

    def __init__(self) -> None:
        self.fields: dict[int, dict[str, Any]] = {}

    def add_task(self, description: str, **fields: Any) -> int:
        self.fields[len(self.fields)] = {"description": description, **fields}
        return len(self.fields) - 1

    def update(self, task: int, **fields: Any) -> None:
        self.fields[task].update(fields)


def _lines(err: str) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in err.splitlines()]
    for doc in docs:
        schemas.validate(doc, "progress")
    return docs


def test_an_instant_stage_reports_no_rate(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    watcher = _progress._Watcher(None, True, clock)
    watcher("stage", 0, 220, "rows")
    clock.now += 0.0003
    watcher("stage", 220, 220, "rows")
    watcher.close()
    docs = _lines(capsys.readouterr().err)
    assert [d["status"] for d in docs] == ["started", "finished"]
    assert [d["rate_per_second"] for d in docs] == [None, None]
    assert docs[-1]["eta_seconds"] == 0.0 and docs[-1]["percent"] == 100.0


def test_a_rate_and_eta_once_the_stage_has_run_a_second(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    watcher = _progress._Watcher(None, True, clock)
    watcher("seal", 0, 1000, "bytes")
    clock.now += 0.5
    watcher("seal", 100, 1000, "bytes")  # within the first second: no line yet, no rate
    clock.now += 1.5
    watcher("seal", 400, 1000, "bytes")
    docs = _lines(capsys.readouterr().err)
    assert docs[-1]["status"] == "running"
    assert docs[-1]["rate_per_second"] == 200.0  # 400 bytes in 2 s
    assert docs[-1]["eta_seconds"] == 3.0  # 600 bytes left at 200 bytes/s


def test_a_complete_count_of_a_running_stage_says_finishing() -> None:
    clock, bar = Clock(), Bar()
    watcher = _progress._Watcher(bar, False, clock)
    watcher("activate", 0, 50, "rows")
    watcher("activate", 25, 50, "rows")
    assert bar.fields[0]["note"] == ""
    watcher("activate", 50, 50, "rows")  # counted; the commit is still to come
    assert bar.fields[0]["note"] == _progress.FINISHING
    watcher("next", 0, 1, "steps")  # the stage ended
    assert bar.fields[0]["note"] == "" and bar.fields[0]["completed"] == 50


def test_a_log_seal_counts_the_file_bytes_up_to_its_size(tmp_path: Any) -> None:
    log = FIXTURES / "legacy" / "bbg-cli-small.log"
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "--json-progress", "--store", str(tmp_path / "bbg"),
         "run", str(log), "--json"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    seal = [d for d in _lines(res.stderr) if d["stage"] == "seal"]
    size = log.stat().st_size
    assert all(d["total"] == size and d["done"] <= size for d in seal), seal
    assert seal[-1]["status"] == "finished" and seal[-1]["done"] == size
