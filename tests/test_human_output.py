"""Human reports are for operators and audit logs.

* every command prints its human report on stderr; stdout carries only data (13.7);
* ids and digests are never cut short, whatever the width: COLUMNS=40, stderr to a file, or a
  pseudo-terminal of 40 columns (13.2);
* the reports read as prose and tables, never Python reprs; a rerun says "already complete,
  nothing written" (13.4).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.pipeline.helpers import LEGACY, unpack
from tests.pty_run import run_on_pty

NARROW = {"COLUMNS": "40", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
REPR = re.compile(r"\{'|'\}|\['|\bNone\b|\bTrue\b|\bFalse\b|(?<![\d,])1 (rows|pages|events)\b")
HEX = re.compile(r"[0-9a-f]{16,}")
SQLITE = ["--engine", "sqlite"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, check=False,
        cwd=cwd, env={**os.environ, **NARROW},
    )  # fmt: skip


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cell.redb, its store ``bbg`` (default engine), and the same on the SQLite engine
    (``audit``, for the share and transfer commands, SQLite stores only in this version)
    with that store's event stream and snapshot."""
    root = tmp_path_factory.mktemp("human")
    unpack(LEGACY / "cell-small.redb.gz", root)
    assert cli("run", "cell.redb", "--store", "bbg", cwd=root).returncode == 0
    made = cli(*SQLITE, "run", "cell.redb", "--store", "audit", cwd=root)
    assert made.returncode == 0, made.stderr
    for name, args in (("events", ["tail"]), ("snap", ["snapshot"])):
        res = cli("--store", "audit", *args, cwd=root)
        assert res.returncode == 0 and res.stdout, res.stderr
        (root / name).write_text(res.stdout)
    return root


SIGNALS = str(LEGACY / "signals-small.log")
TEXTS = str(LEGACY / "texts-cybergraph.jsonl")
COMMANDS = {
    "detect": ["detect", "cell.redb"],
    "inspect redb": ["inspect", "cell.redb"],
    "inspect signal log": ["inspect", SIGNALS],
    "inspect text archive": ["inspect", TEXTS],
    "inspect store": ["inspect", "bbg"],
    "plan": ["plan", "cell.redb", "--store", "fresh"],
    "plan torn tail": ["plan", str(LEGACY / "bbg-cli-torn-tail.log"), "--accept-torn-tail",
                       "--store", "fresh"],
    "rerun": ["run", "cell.redb", "--store", "bbg"],
    "run signal log": ["run", SIGNALS, "--store", "signals"],
    "redb tables": ["redb", "tables", "cell.redb"],
    "redb scan": ["redb", "scan", "cell.redb"],
    # share and transfer commands: on the SQLite store (and making SQLite stores)
    "doctor": ["--store", "audit", "doctor"],
    "apply": [*SQLITE, "--store", "applied", "apply", "events"],
    "apply again": [*SQLITE, "--store", "applied", "apply", "events"],
    "restore": [*SQLITE, "--store", "restored", "restore", "snap"],
    "backup": ["--store", "audit", "backup", "copy"],
    "transfer plan": [*SQLITE, "plan", "audit", "--store", "moved"],  # (plan writes nothing)
    "demo": ["demo"],
}  # fmt: skip


@pytest.mark.parametrize("name", list(COMMANDS))
def test_human_report_on_stderr_whole_and_in_prose(work: Path, name: str) -> None:
    res = cli(*COMMANDS[name], cwd=work)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "", "human output belongs on stderr"
    text = res.stderr
    assert "…" not in text, text  # rich's ellipsis: something was cut short
    assert not REPR.search(text), f"Python repr in the report: {REPR.search(text)}\n{text}"
    for run in HEX.findall(text):  # every id/digest printed in one piece, whole
        assert len(run) in (32, 64), (run, text)
    assert not any(len(line) > 40 and "\n" in line for line in text.splitlines())


def test_ids_whole_at_40_columns_and_in_a_file(work: Path) -> None:
    """The receipt's ids appear whole in the report, and again when stderr is a file."""
    doc = json.loads(cli("run", "cell.redb", "--store", "bbg", "--json", cwd=work).stdout)
    wanted = [doc["import_id"], doc["source"]["sha256"], doc["digests"]["source_archive_sha256"]]
    with open(work / "audit.log", "w") as log:
        subprocess.run([sys.executable, "-m", "migrate", "run", "cell.redb", "--store", "bbg"],
                       stderr=log, stdout=subprocess.DEVNULL, cwd=work,
                       env={**os.environ, **NARROW}, check=True)  # fmt: skip
    text = (work / "audit.log").read_text()
    for value in wanted:
        assert re.search(rf"(?<![0-9a-f]){value}(?![0-9a-f])", text), (value, text)


def _report(screen: str) -> str:
    """What stays on the terminal: after the (transient) progress display is gone."""
    return screen.rsplit("\x1b[?25h", 1)[-1]


def test_ids_whole_on_a_40_column_terminal(work: Path) -> None:
    doc = json.loads(cli("plan", "cell.redb", "--store", "new", "--json", cwd=work).stdout)
    code, screen = run_on_pty("plan", "cell.redb", "--store", "new", columns=40, cwd=work)
    assert code == 0, screen
    assert doc["import_id"] in _report(screen) and "…" not in _report(screen)
    code, screen = run_on_pty("run", "cell.redb", "--store", "bbg", columns=40, cwd=work)
    assert code == 0, screen
    assert "already complete, nothing written" in screen
    assert doc["import_id"] in _report(screen) and "…" not in _report(screen)
    assert "application_unique_claims" in _report(screen)  # table cells are not cut either


def test_a_rerun_says_nothing_was_written(work: Path) -> None:
    res = cli("run", "cell.redb", "--store", "bbg", cwd=work)
    assert res.returncode == 0
    last = res.stderr.splitlines()[-1]
    assert last.startswith("already complete, nothing written: import ")
    assert "new" not in last
    first = cli("run", SIGNALS, "--store", "fresh-signals", cwd=work)
    assert re.search(r"^complete: import [0-9a-f]{64}: [\d,]+ rows in \d+ tables, [\d,]+ new$",
                     first.stderr, re.M), first.stderr  # fmt: skip


def test_renderers_hold_no_reprs() -> None:
    """A grep of the human renderers: values go through show()/count()/size() or are known
    strings; no ``str(dict)`` or ``f"{k}={v}"`` dumps of whole documents."""
    leaks = re.compile(r"f\"\{k\}[=:] ?\{v\}|str\(doc\[|str\(report\[|print_json\(")
    found = [
        f"{p.name}:{n}: {line.strip()}"
        for p in sorted((ROOT / "migrate" / "cli").glob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if leaks.search(line)
    ]
    assert not found, found
