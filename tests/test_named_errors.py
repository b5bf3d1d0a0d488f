"""Inputs an adversary picks never end in "internal error" (issue 28, "What an operator can
trust"): bytes that are not UTF-8 in a mapping or options file, JSON/TOML nested 100,000
levels deep wherever a document is read (mapping, options file, fleet manifest and report,
the output file of ``tail --follow``, a seal record in a store, a retirement record), a loop
of symbolic links or a name longer than the file system allows as a source, a ``--store`` or
an output, and a FIFO as an output file.

Each case runs the real command line in a subprocess and must end with the documented exit
code (1: an input that cannot be read or is corrupt; 2: a usage error), exactly one
``error:`` line on stderr naming the file, no traceback, and with ``--json`` the error
document on stdout.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

DEEP = 100_000
NOT_UTF8_JSON = b'{"subject": "\xff\xfe"}'
NOT_UTF8_TOML = b'store = "\xff"\n'
DEEP_JSON = b"[" * DEEP
DEEP_TOML = b"a = " + b"[" * DEEP
LONG = "x" * 300  # a path component over NAME_MAX (255 bytes): ENAMETOOLONG


def _cli(argv: list[str], cwd: Path, engine: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    if engine is not None:
        env["BBG_MIGRATE_ENGINE"] = engine
    # A hang fails the test (TimeoutExpired): a FIFO must be refused, not waited on.
    return subprocess.run(
        [sys.executable, "-m", "migrate", *argv], capture_output=True, text=True, cwd=cwd,
        env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with one import (copied by the cases that change it)."""
    base = tmp_path_factory.mktemp("named-errors")
    src = base / "cell.redb"
    src.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    done = _cli(["run", str(src), "--store", str(base / "bbg")], base, "sqlite")
    assert done.returncode == 0, done.stderr
    return base / "bbg"


@dataclass(frozen=True)
class Case:
    """``make(work, sqlite_store)`` writes the bad input into ``work`` and returns the command
    line and the path the error must name."""

    make: Callable[[Path, Path], tuple[list[str], str]]
    code: int
    engines: tuple[str | None, ...] = (None,)  # None: the store engine plays no part
    json: bool = True  # the command has --json


BOTH = ("fjall", "sqlite")


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _loop(work: Path) -> Path:
    (work / "b").symlink_to(work / "a")
    (work / "a").symlink_to(work / "b")
    return work / "a"


def _fifo(work: Path) -> Path:
    os.mkfifo(work / "fifo")
    return work / "fifo"


def _source(work: Path) -> Path:
    src = work / "cell.redb"
    if not src.exists():
        src.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    return src


def _mapping(data: bytes) -> Callable[[Path, Path], tuple[list[str], str]]:
    def make(work: Path, _: Path) -> tuple[list[str], str]:
        bad = _write(work / "mapping.json", data)
        src = str(_source(work))
        return ["run", src, "--store", str(work / "bbg"), "--mapping", str(bad)], str(bad)

    return make


def _options(data: bytes, *, named: bool) -> Callable[[Path, Path], tuple[list[str], str]]:
    def make(work: Path, _: Path) -> tuple[list[str], str]:
        bad = _write(work / ("opts.toml" if named else "bbg-migrate.toml"), data)
        argv = ["inspect", str(_source(work))]
        return (["--config", str(bad), *argv] if named else argv), bad.name

    return make


def _manifest(name: str, data: bytes) -> Callable[[Path, Path], tuple[list[str], str]]:
    def make(work: Path, _: Path) -> tuple[list[str], str]:
        bad = _write(work / name, data)
        return ["fleet", "plan", str(bad)], str(bad)

    return make


def _report_job(work: Path, _: Path) -> tuple[list[str], str]:
    (work / "report" / "jobs").mkdir(parents=True)
    bad = _write(work / "report" / "jobs" / "job-1.json", DEEP_JSON)
    return ["fleet", "report", str(work / "report")], str(bad)


def _report_run(work: Path, _: Path) -> tuple[list[str], str]:
    bad = _write(work / "run-1.json", NOT_UTF8_JSON)
    return ["fleet", "report", str(bad)], str(bad)


def _follow_output(data: bytes) -> Callable[[Path, Path], tuple[list[str], str]]:
    def make(work: Path, store: Path) -> tuple[list[str], str]:
        bad = _write(work / "events.jsonl", data + b"\n")
        return ["--store", str(store), "tail", "--follow", "--output", str(bad)], str(bad)

    return make


def _seal_record(work: Path, store: Path) -> tuple[list[str], str]:
    copy = work / "bbg"
    shutil.copytree(store, copy)
    depth = 990  # within what SQLite's own JSON check accepts (1,000), beyond Python's stack
    with sqlite3.connect(copy / "bbg.sqlite3") as db:
        db.execute("UPDATE bbg_import_v1_seals SET seal = ?", ("[" * depth + "]" * depth,))
    db.close()
    return ["--store", str(copy), "imports"], str(copy / "bbg.sqlite3")


def _retirement_record(work: Path, _: Path) -> tuple[list[str], str]:
    retired = work / "cell.redb"  # a retired source is a directory holding the record
    retired.mkdir()
    bad = _write(retired / "retirement.json", DEEP_JSON)
    return ["run", str(retired), "--store", str(work / "bbg")], str(bad)


def _loop_source(work: Path, _: Path) -> tuple[list[str], str]:
    loop = _loop(work)
    return ["run", str(loop), "--store", str(work / "bbg")], str(loop)


def _loop_store(work: Path, _: Path) -> tuple[list[str], str]:
    loop = _loop(work)
    return ["run", str(_source(work)), "--store", str(loop)], str(loop)


def _long_source(work: Path, _: Path) -> tuple[list[str], str]:
    return ["run", str(work / LONG), "--store", str(work / "bbg")], LONG


def _long_store(work: Path, _: Path) -> tuple[list[str], str]:
    return ["run", str(_source(work)), "--store", str(work / LONG)], LONG


def _long_store_parent(work: Path, _: Path) -> tuple[list[str], str]:
    return ["run", str(_source(work)), "--store", str(work / LONG / "bbg")], LONG


def _long_report(work: Path, _: Path) -> tuple[list[str], str]:
    return ["fleet", "report", str(work / LONG)], LONG


def _long_backup(work: Path, store: Path) -> tuple[list[str], str]:
    return ["--store", str(store), "backup", str(work / LONG)], LONG


def _output(target: Callable[[Path], Path]) -> Callable[[Path, Path], tuple[list[str], str]]:
    def make(work: Path, store: Path) -> tuple[list[str], str]:
        bad = target(work)
        return ["--store", str(store), "tail", "--follow", "--output", str(bad)], str(bad)

    return make


def _fifo_receipt(work: Path, _: Path) -> tuple[list[str], str]:
    fifo = _fifo(work)
    src = str(_source(work))
    return ["run", src, "--store", str(work / "bbg"), "--receipt", str(fifo)], str(fifo)


def _fifo_html(work: Path, _: Path) -> tuple[list[str], str]:
    fifo = _fifo(work)
    (work / "report" / "jobs").mkdir(parents=True)
    return ["fleet", "report", str(work / "report"), "--html", str(fifo)], str(fifo)


CASES: dict[str, Case] = {
    # 1. not UTF-8
    "mapping-not-utf8": Case(_mapping(NOT_UTF8_JSON), 2, BOTH),
    "config-not-utf8": Case(_options(NOT_UTF8_TOML, named=True), 2),
    "default-options-file-not-utf8": Case(_options(NOT_UTF8_TOML, named=False), 2),
    # 2. nested 100,000 deep
    "mapping-deep": Case(_mapping(DEEP_JSON), 2, BOTH),
    "config-deep": Case(_options(DEEP_TOML, named=True), 2),
    "manifest-json-deep": Case(_manifest("fleet.json", DEEP_JSON), 2),
    "manifest-toml-deep": Case(_manifest("fleet.toml", DEEP_TOML), 2),
    "fleet-report-job-deep": Case(_report_job, 2),
    "fleet-report-run-not-utf8": Case(_report_run, 2),
    "follow-output-deep": Case(_follow_output(DEEP_JSON), 2, ("sqlite",), json=False),
    "seal-record-deep": Case(_seal_record, 1, ("sqlite",)),
    "retirement-record-deep": Case(_retirement_record, 1, BOTH),
    # 3. symbolic-link loops, names over 255 bytes
    "symlink-loop-source": Case(_loop_source, 1, BOTH),
    "symlink-loop-store": Case(_loop_store, 1, BOTH),
    "long-name-source": Case(_long_source, 1, BOTH),
    "long-name-store": Case(_long_store, 1, BOTH),
    "long-name-store-parent": Case(_long_store_parent, 1, BOTH),
    "long-name-fleet-report": Case(_long_report, 1),
    "long-name-backup": Case(_long_backup, 1, ("sqlite",)),
    "symlink-loop-follow-output": Case(_output(_loop), 1, ("sqlite",), json=False),
    "long-name-follow-output": Case(_output(lambda w: w / LONG), 1, ("sqlite",), json=False),
    # 4. a FIFO as an output file
    "fifo-follow-output": Case(_output(_fifo), 1, ("sqlite",), json=False),
    "fifo-receipt": Case(_fifo_receipt, 1, BOTH),
    "fifo-html": Case(_fifo_html, 1),
}
PARAMS = [
    pytest.param(name, engine, id=name if engine is None else f"{name}-{engine}")
    for name, case in CASES.items()
    for engine in case.engines
]


def _one_error_line(stderr: str, named: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stderr, stderr
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and errors == lines[-1:], stderr
    assert named in errors[0], (named, stderr)
    return errors[0]


@pytest.mark.parametrize(("name", "engine"), PARAMS)
def test_a_hostile_input_is_a_named_error(
    name: str, engine: str | None, tmp_path: Path, sqlite_store: Path
) -> None:
    case = CASES[name]
    argv, named = case.make(tmp_path, sqlite_store)
    res = _cli(argv, tmp_path, engine)
    assert res.returncode == case.code, res.stderr
    _one_error_line(res.stderr, named)
    if case.json:
        res = _cli([*argv, "--json"], tmp_path, engine)
        assert res.returncode == case.code, res.stderr
        _one_error_line(res.stderr, named)
        doc = json.loads(res.stdout.splitlines()[-1])
        assert doc["exit_code"] == case.code and doc["code"] != "internal", doc
        assert named in doc["message"], doc


def test_the_fifo_cases_are_not_written_to(tmp_path: Path, sqlite_store: Path) -> None:
    """The FIFO stays a FIFO (nothing replaced it) and nothing was written to the store."""
    argv, _ = _fifo_receipt(tmp_path, sqlite_store)
    assert _cli(argv, tmp_path, None).returncode == 1
    assert (tmp_path / "fifo").is_fifo()
    assert not (tmp_path / "bbg").exists()
