"""Issue 13.1: progress on stderr -- a rich display per stage on a terminal (tested through a
pseudo-terminal), JSON lines with --json-progress (schemas/progress.schema.json), silence with
--json, --quiet or when stderr is not a terminal; counters never run backwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import schemas
from migrate.progress import phase
from tests.conftest import ROOT
from tests.pipeline.helpers import LEGACY, unpack
from tests.pty_run import run_on_pty

STAGES = ["seal", "stage", "validate", "activate"]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return unpack(LEGACY / "cell-small.redb.gz", tmp_path / "src")


def test_run_on_a_terminal_shows_each_stage(tmp_path: Path, source: Path) -> None:
    code, screen = run_on_pty("run", str(source), "--store", str(tmp_path / "bbg"),
                              columns=140)  # fmt: skip
    assert code == 0, screen
    for stage, counts in zip(STAGES, ["220/220 rows", "220/220 rows", "1/1 steps",
                                      "1/1 steps"], strict=True):  # fmt: skip
        line = next((ln for ln in screen.split("\r") if f" {stage} " in ln and counts in ln),
                    None)  # fmt: skip
        assert line is not None, (stage, screen)
        assert "100%" in line and "ETA" in line, line
    assert "complete: import" in screen


def test_inspect_and_plan_on_a_terminal(tmp_path: Path, source: Path) -> None:
    code, screen = run_on_pty("inspect", str(source), columns=140)
    assert code == 0, screen
    assert "inspect" in screen and "220/220 rows" in screen
    code, screen = run_on_pty("plan", str(source), "--store", str(tmp_path / "new"),
                              columns=140)  # fmt: skip
    assert code == 0 and "220/220 rows" in screen, screen


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_silent_with_json_or_quiet(tmp_path: Path, source: Path, flag: str) -> None:
    args = ["run", str(source), "--store", str(tmp_path / "bbg")]
    args = [flag, *args] if flag == "--quiet" else [*args, flag]
    code, screen = run_on_pty(*args, columns=140)
    assert code == 0, screen
    assert "220/220" not in screen and "ETA" not in screen


def test_silent_when_stderr_is_not_a_terminal(tmp_path: Path, source: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "run", str(source), "--store", str(tmp_path / "b")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert res.returncode == 0
    assert "ETA" not in res.stderr and "\x1b[" not in res.stderr


def _lines(stderr: str) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    for doc in docs:
        schemas.validate(doc, "progress")
    return docs


def test_json_progress_lines(tmp_path: Path, source: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "--json-progress", "run", str(source), "--store",
         str(tmp_path / "bbg"), "--json"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    json.loads(res.stdout)  # the receipt stays alone on stdout
    docs = _lines(res.stderr)
    assert [d["stage"] for d in docs if d["status"] == "started"] == STAGES
    assert [d["stage"] for d in docs if d["status"] == "finished"] == STAGES
    for stage in STAGES:
        mine = [d for d in docs if d["stage"] == stage]
        done = [d["done"] for d in mine]
        assert done == sorted(done), (stage, done)  # never backwards
        assert mine[-1]["done"] == mine[-1]["total"] and mine[-1]["percent"] == 100.0
    assert next(d for d in docs if d["stage"] == "stage" and d["status"] == "finished")[
        "total"] == 220  # fmt: skip


def test_json_progress_marks_a_failed_stage_stopped(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "--json-progress", "run",
         str(LEGACY / "signals-truncated-tail.log"), "--store", str(tmp_path / "bbg")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert res.returncode == 3
    docs = _lines(res.stderr)
    assert docs[-1]["stage"] == "seal" and docs[-1]["status"] == "stopped"
    assert docs[0]["unit"] == "bytes" and docs[0]["total"] == (
        LEGACY / "signals-truncated-tail.log").stat().st_size  # fmt: skip


def test_a_stage_counter_never_runs_backwards() -> None:
    seen: list[tuple[str, int, int | None, str]] = []
    report = phase(lambda *a: seen.append(a), "stage", 10)
    assert report is not None
    for rows in (3, 7, 2, 12):  # a second pass counting again from zero; an overshoot
        report(rows, 0)
    assert [s[1] for s in seen] == [0, 3, 7, 7, 12]
    assert seen[-1][2] == 12  # the total grows rather than fall below done
