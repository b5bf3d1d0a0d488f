"""Off a terminal, nothing wraps (issue 28, item 9).

Human output written to a file or a pipe (``2> audit.log``) used to be squeezed to rich's 80
columns (or COLUMNS): table cells were folded, so ids and paths were hard-wrapped across
lines (``fleet plan`` of 13 jobs became 282 lines).  Off a terminal every line is printed
whole and a table is as wide as its widest row, whatever COLUMNS says; on a terminal
nothing changes (tests/test_human_output.py).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

HEX = re.compile(r"[0-9a-f]{16,}")
NAME = "ab" * 32  # a 64-hex-digit folder name, as a node id would be
JOBS = 13


def _to_file(argv: list[str], cwd: Path, columns: str | None, engine: str | None = None) -> str:
    """Run ``bbg-migrate ARGV`` with stderr to a file; the file's text."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    if engine is not None:
        env["BBG_MIGRATE_ENGINE"] = engine
    log = cwd / f"audit-{columns}.log"
    with open(log, "w") as fh:
        done = subprocess.run(
            [sys.executable, "-m", "migrate", *argv], stdout=subprocess.DEVNULL, stderr=fh,
            cwd=cwd, env=env, timeout=300, check=False,
        )  # fmt: skip
    text = log.read_text()
    assert done.returncode == 0, text
    return text


def _source(path: Path) -> Path:
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    return path


def _whole_ids(text: str) -> None:
    """Every run of hex digits is a whole id or digest: none was split across lines."""
    for run in HEX.findall(text):
        assert len(run) in (32, 64), (run, text)


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A manifest of 13 jobs whose stores are named by 64 hex digits."""
    jobs = []
    for i in range(1, JOBS + 1):
        _source(tmp_path / f"node-{i}.redb")
        jobs.append(f'[[jobs]]\nsource = "node-{i}.redb"\nstore = "stores/{NAME}-{i}"\n')
    (tmp_path / "fleet.toml").write_text("\n".join(jobs))
    return tmp_path / "fleet.toml"


@pytest.mark.parametrize("columns", [None, "80"])
def test_fleet_plan_in_a_file_is_one_line_per_job(fleet: Path, columns: str | None) -> None:
    text = _to_file(["fleet", "plan", str(fleet)], fleet.parent, columns)
    _whole_ids(text)
    lines = text.splitlines()
    for i in range(1, JOBS + 1):  # a job's row holds its source and its whole store path
        row = [line for line in lines if f"node-{i}.redb " in line]
        assert len(row) == 1 and f"stores/{NAME}-{i} " in row[0], text
    assert len(lines) < JOBS + 20, text  # the report was 282 lines of folded cells
    wide = _to_file(["fleet", "plan", str(fleet)], fleet.parent, "1000")
    assert len(wide.splitlines()) == len(lines)  # (free space may change between the runs)


@pytest.mark.parametrize("columns", [None, "80"])
def test_inspect_in_a_file_does_not_depend_on_columns(tmp_path: Path, columns: str | None) -> None:
    src = _source(tmp_path / f"{NAME}.redb")  # a long name in the report's first line
    text = _to_file(["inspect", str(src)], tmp_path, columns)
    _whole_ids(text)
    assert any(str(src) in line for line in text.splitlines()), text
    assert text == _to_file(["inspect", str(src)], tmp_path, "1000")


@pytest.mark.parametrize("engine", ["fjall", "sqlite"])
def test_run_in_a_file_does_not_wrap(tmp_path: Path, engine: str) -> None:
    reports = []
    for columns in (None, "80", "1000"):
        work = tmp_path / f"c{columns}"
        work.mkdir()
        src = _source(work / "cell.redb")
        store = work / f"{NAME}-store"
        reports.append(_to_file(["run", str(src), "--store", str(store)], work, columns, engine))
        doc = json.loads(subprocess.run(
            [sys.executable, "-m", "migrate", "run", str(src), "--store", str(store), "--json"],
            capture_output=True, text=True, cwd=work, check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "BBG_MIGRATE_ENGINE": engine},
        ).stdout)  # fmt: skip
        text = reports[-1].replace(str(work), "WORK")
        _whole_ids(text.replace(f"{NAME}-store", "STORE"))
        assert doc["import_id"] in text
        reports[-1] = text
    assert reports[0] == reports[1] == reports[2]
