"""Progress on stderr -- a rich display per stage on a terminal (tested through a
pseudo-terminal), JSON lines with --json-progress (schemas/progress.schema.json), silence with
--json, --quiet or when stderr is not a terminal; counters never run backwards."""

from __future__ import annotations

import json
import os
import re
import shutil
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


#: What the seal's checking pass does after its last row is counted (issue 28 item 11).
def _finishing(stage: str) -> list[str]:
    return [f"{stage}: finishing: {what}" for what in ("content ids", "links", "namespaces")]


SEAL_FINISHING = _finishing("seal")
#: A new store is written (Fjall: segments, synced) and renamed into place after activation.
PUBLISH = "activate: finishing: publish"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return unpack(LEGACY / "cell-small.redb.gz", tmp_path / "src")


def test_run_on_a_terminal_shows_each_stage(tmp_path: Path, source: Path) -> None:
    code, screen = run_on_pty("run", str(source), "--store", str(tmp_path / "bbg"),
                              columns=140)  # fmt: skip
    assert code == 0, screen
    for stage in STAGES:  # validate: rows checked; activate: rows published
        line = next((ln for ln in screen.split("\r")
                     if f" {stage} " in ln and "220/220 rows" in ln), None)  # fmt: skip
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


def _each_stage_rises_to_its_total(docs: list[dict[str, Any]], stages: list[str]) -> None:
    """Stages started and finished in order; each one's counter never falls and ends at 100 %."""
    assert [d["stage"] for d in docs if d["status"] == "started"] == stages
    assert [d["stage"] for d in docs if d["status"] == "finished"] == stages
    for stage in stages:
        mine = [d for d in docs if d["stage"] == stage]
        done = [d["done"] for d in mine]
        assert done == sorted(done), (stage, done)  # never backwards
        assert mine[-1]["total"] and mine[-1]["done"] == mine[-1]["total"], mine[-1]
        assert mine[-1]["percent"] == 100.0


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
    _each_stage_rises_to_its_total(docs, [STAGES[0], *SEAL_FINISHING, *STAGES[1:], PUBLISH])
    assert next(d for d in docs if d["stage"] == "stage" and d["status"] == "finished")[
        "total"] == 220  # fmt: skip


def test_json_progress_names_what_runs_after_a_count_is_complete(
    tmp_path: Path, source: Path
) -> None:
    """The work after a stage's last counted row (the link check, ...) is a step of its own,
    ``STAGE: finishing: WHAT``, between the stage's end and the next stage's start; and no
    line claims a rate before its stage has run a second (an instant stage would claim
    billions of rows a second)."""
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "--json-progress", "run", str(source), "--store",
         str(tmp_path / "bbg")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    docs = _lines(res.stderr)
    order = [(d["stage"], d["status"]) for d in docs if d["status"] != "running"]
    seal_end, stage_start = order.index(("seal", "finished")), order.index(("stage", "started"))
    between = order[seal_end + 1 : stage_start]
    assert between == [(f, s) for f in SEAL_FINISHING for s in ("started", "finished")]
    assert order[-2:] == [(PUBLISH, "started"), (PUBLISH, "finished")]
    assert order[-3] == ("activate", "finished")
    for doc in docs:
        if doc["stage"] in [*SEAL_FINISHING, PUBLISH]:
            assert doc["unit"] == "steps" and doc["total"] == 1
            assert doc["done"] == (1 if doc["status"] == "finished" else 0)
        if doc["elapsed_seconds"] < 1.0:
            assert doc["rate_per_second"] is None, doc


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


def _progress_into_a_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``bbg-migrate --json-progress ARGS`` with stderr a pipe whose reader is gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "migrate", "--json-progress", *args],
            stdout=subprocess.PIPE, stderr=write_end, text=True, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    finally:
        os.close(write_end)


def test_a_closed_progress_reader_never_stops_the_work(tmp_path: Path, source: Path) -> None:
    """`--json-progress` into a pipe nobody reads any more (`2>&1 | head`): the migration
    still finishes and prints its receipt."""
    res = _progress_into_a_closed_pipe(["run", str(source), "--store", str(tmp_path / "bbg"),
                                        "--json"])  # fmt: skip
    assert res.returncode == 0
    schemas.validate(json.loads(res.stdout), "receipt")


# -- the other long commands: a total, a counter that never runs backwards ------------------

COUNTS = re.compile(r"([0-9][0-9,]*)/([0-9][0-9,]*) ([a-z]+)")
CLEAN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LOGS = ["bbg-cli-small.log", "bbg-cli-bad-flag.log", "bbg-cli-torn-tail.log"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A store (the 220 rows of cell-small), its snapshot and its event stream, a source and
    a small fixtures directory: the inputs of every command below.  The store is a SQLite
    one: the share commands below (doctor, backup, snapshot, restore, apply) work on SQLite
    stores only in this version; ``run``'s progress on the default engine is tested above."""
    base = tmp_path_factory.mktemp("progress")
    src = unpack(LEGACY / "cell-small.redb.gz", base / "src")
    store = base / "store"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args, out in ((["--engine", "sqlite", "run", str(src), "--store", str(store)], None),
                      (["--store", str(store), "snapshot"], base / "snap.ndjson"),
                      (["--store", str(store), "tail"], base / "events.ndjson")):  # fmt: skip
        with open(out or os.devnull, "wb") as fh:
            subprocess.run([sys.executable, "-m", "migrate", *args], stdout=fh, env=env,
                           check=True)  # fmt: skip
    fixtures = base / "fixtures"
    fixtures.mkdir()
    for name in LOGS:
        for suffix in ("", ".expected.json"):
            shutil.copy(LEGACY / (name + suffix), fixtures)
    return {"src": src, "store": store, "snap": base / "snap.ndjson",
            "events": base / "events.ndjson", "fixtures": fixtures, "base": base}  # fmt: skip


def _commands(made: dict[str, Path], fresh: Path) -> dict[str, tuple[list[str], list[str]]]:
    """Command line and the stages it shows, per command."""
    store = ["--store", str(made["store"])]
    new = ["--engine", "sqlite", "--store", str(fresh)]  # restore and apply make SQLite stores
    return {
        "redb scan": (["redb", "scan", str(made["src"])], ["redb scan"]),
        "doctor": ([*store, "doctor"], ["integrity", "tables", *_finishing("tables")]),
        "backup": (
            [*store, "backup", str(fresh)],
            ["backup", "integrity", "tables", *_finishing("tables")],
        ),  # fmt: skip
        "snapshot": ([*store, "snapshot"], ["snapshot"]),
        "restore": ([*new, "restore", str(made["snap"])], ["restore"]),
        "apply": ([*new, "apply", str(made["events"])], ["apply"]),
        "fixtures check": (["fixtures", "check", str(made["fixtures"])], ["fixtures check"]),
        "hemera": (["hemera", str(made["snap"])], [f"hemera {made['snap']}"]),
    }


COMMANDS = ["redb scan", "doctor", "backup", "snapshot", "restore", "apply", "fixtures check",
            "hemera"]  # fmt: skip


def _counts(screen: str, stage: str) -> list[tuple[int, int, str]]:
    """Every ``done/total unit`` the terminal showed on the task line of ``stage``."""
    found = []
    for frame in CLEAN.sub("", screen).replace("\n", "\r").split("\r"):
        if f" {stage} " not in frame:
            continue
        after = frame.split(f" {stage} ", 1)[1]
        m = COUNTS.search(after)
        if m is not None:
            found.append((int(m[1].replace(",", "")), int(m[2].replace(",", "")), m[3]))
    return found


@pytest.mark.parametrize("name", COMMANDS)
def test_long_commands_show_a_total_on_a_terminal(
    tmp_path: Path, made: dict[str, Path], name: str
) -> None:
    args, stages = _commands(made, tmp_path / "fresh")[name]
    code, screen = run_on_pty(*args, columns=200, stdout_to=tmp_path / "stdout")
    assert code == 0, screen
    assert "ETA" in screen and "%" in screen, screen
    for stage in stages:
        seen = _counts(screen, stage)
        assert seen, (stage, screen)
        done = [d for d, _, _ in seen]
        assert done == sorted(done), (stage, seen)  # never backwards
        last_done, total, unit = seen[-1]
        assert total > 0 and last_done == total, (stage, seen)
        assert unit in ("rows", "bytes", "pages", "lines", "entries", "fixtures", "steps")
        assert len({t for _, t, _ in seen}) == 1, (stage, seen)  # the total is known at once


@pytest.mark.parametrize("name", COMMANDS)
def test_long_commands_json_progress(tmp_path: Path, made: dict[str, Path], name: str) -> None:
    args, stages = _commands(made, tmp_path / "fresh")[name]
    with open(tmp_path / "stdout", "wb") as out:
        res = subprocess.run(
            [sys.executable, "-m", "migrate", "--json-progress", *args], stdout=out,
            stderr=subprocess.PIPE, text=True, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    docs = _lines(res.stderr)
    _each_stage_rises_to_its_total(docs, stages)
    for stage in stages:
        first = next(d for d in docs if d["stage"] == stage)
        assert first["total"] is not None, first  # known from the start


@pytest.mark.parametrize("name", ["doctor", "backup", "restore", "apply", "redb scan",
                                  "fixtures check"])  # fmt: skip
@pytest.mark.parametrize("flag", ["--json", "--quiet", "not a tty"])
def test_long_commands_silent(tmp_path: Path, made: dict[str, Path], name: str, flag: str) -> None:
    args, _ = _commands(made, tmp_path / "fresh")[name]
    if flag == "not a tty":
        res = subprocess.run(
            [sys.executable, "-m", "migrate", *args], capture_output=True, text=True,
            check=False, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert "ETA" not in res.stderr and "\x1b[" not in res.stderr
        return
    args = [flag, *args] if flag == "--quiet" else [*args, flag]
    code, screen = run_on_pty(*args, columns=200, stdout_to=tmp_path / "stdout")
    assert code == 0, screen
    assert "ETA" not in screen and not COUNTS.search(CLEAN.sub("", screen)), screen


@pytest.mark.slow
def test_hemera_and_snapshot_silent_when_quiet_or_not_a_tty(
    tmp_path: Path, made: dict[str, Path]
) -> None:
    """The two commands without --json: --quiet and a stderr that is no terminal."""
    for name in ("hemera", "snapshot"):
        args, _ = _commands(made, tmp_path / "fresh")[name]
        code, screen = run_on_pty("--quiet", *args, columns=200, stdout_to=tmp_path / "out")
        assert code == 0 and "ETA" not in screen, screen
        res = subprocess.run(
            [sys.executable, "-m", "migrate", *args], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert res.returncode == 0 and "ETA" not in res.stderr, res.stderr


@pytest.mark.slow
def test_validate_and_activate_count_rows_step_by_step(tmp_path: Path, source: Path) -> None:
    """The staged path: validate counts the staged rows it checks, activate the rows it
    publishes (no more one-step tasks)."""
    store = tmp_path / "bbg"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for verb in ("seal", "stage"):
        res = subprocess.run(
            [sys.executable, "-m", "migrate", verb, str(source), "--store", str(store)],
            env=env, check=False, capture_output=True, text=True,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
    for verb in ("validate", "activate"):
        code, screen = run_on_pty(verb, str(source), "--store", str(store), columns=200)
        assert code == 0, screen
        seen = _counts(screen, verb)
        assert seen and seen[-1] == (220, 220, "rows"), (verb, screen)
        assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)


@pytest.mark.parametrize("name", ["backup", "apply"])
def test_a_closed_reader_never_stops_the_long_commands(
    tmp_path: Path, made: dict[str, Path], name: str
) -> None:
    args, _ = _commands(made, tmp_path / "fresh")[name]
    res = _progress_into_a_closed_pipe([*args, "--json"])
    assert res.returncode == 0
    schemas.validate(json.loads(res.stdout), name)
    assert (tmp_path / "fresh").is_dir()


def test_watched_or_not_the_library_returns_the_same(tmp_path: Path, made: dict[str, Path]) -> None:
    """An observer only watches: doctor, scan, snapshot and hemera give what they give
    without one."""
    from migrate import api

    seen: list[tuple[str, int, int | None, str]] = []

    def observe(stage: str, done: int, total: int | None, unit: str = "rows") -> None:
        seen.append((stage, done, total, unit))

    plain = api.doctor(made["store"])
    watched = api.doctor(made["store"], progress=observe)
    assert plain == watched
    scanned = api.redb_scan(made["src"], progress=observe)
    assert scanned["entries"] == api.redb_scan(made["src"])["entries"] == 220
    assert api.hemera_file(str(made["snap"]), progress=observe) == api.hemera_file(
        str(made["snap"]))  # fmt: skip
    outs = []
    for progress in (None, observe):
        out = tmp_path / f"snap-{progress is None}"
        with open(out, "wb") as fh:
            api.write_snapshot(made["store"], fh, created_at=1, progress=progress)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    stages = {s for s, *_ in seen}
    assert stages == {"integrity", "tables", *_finishing("tables"), "redb scan", "hemera",
                      "snapshot"}  # fmt: skip
    for stage in stages:
        mine = [(d, t) for s, d, t, _ in seen if s == stage]
        assert mine[-1][0] == mine[-1][1], (stage, mine)
    snap = [(d, t) for s, d, t, _ in seen if s == "snapshot"]
    assert snap[-1][0] == outs[0].count(b"\n")  # the total is every line written


def test_stream_size_is_what_is_left_of_a_regular_file(tmp_path: Path) -> None:
    from migrate.progress import stream_size

    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    with open(path, "rb") as fh:
        assert stream_size(fh) == 100
        fh.raw.seek(40)
        assert stream_size(fh) == 60
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "rb", closefd=False) as pipe:
            assert stream_size(pipe) is None  # a pipe cannot tell
    finally:
        os.close(read_end)
        os.close(write_end)
    assert stream_size(object()) is None
