"""Ctrl-C at any moment: exit 130 and exactly one line on stderr saying
what stopped and that a rerun resumes -- during start-up (while the CLI is still being
imported), during a migration, and in a long-running reader -- never silence, a traceback or
a death by signal.  Real SIGINTs to child processes; a rerun then finishes the job with the
receipt an uninterrupted run prints.

(The first milliseconds of a process, while the Python interpreter itself starts and before
any bbg-migrate code runs, are Python's and not tested.)
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from migrate.cli import interrupted_line
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "300"}
STARTING = "interrupted (Ctrl-C) while starting: nothing was done; run the same command again\n"


def _spawn(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=ENV,
    )


def _begun(store: Path) -> bool:
    """The migration into ``store`` has begun writing: the store exists, or (a new store is
    built beside it and published at the end by a rename) its build directory does."""
    if (store / "bbg.sqlite3").exists():
        return True
    return any(p.name.startswith(f".{store.name}.bbg-build-") for p in store.parent.iterdir())


def _wait(until: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if until():
            return True
        time.sleep(0.001)
    return False


def _loaded(pid: int, name: str) -> bool:
    try:
        return name in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _interrupt(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.fixture
def cell(tmp_path: Path) -> Path:
    path = tmp_path / "cell.redb"
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    return path


# The child sends itself a real SIGINT at the moment start-up begins to import ``module``
# (an import hook of the test, not of the product), so the signal lands inside start-up
# however fast or loaded the machine is.
_SIGINT_ON_IMPORT = """
import importlib.abc, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal, whatever the
# parent ignores (a shell's background job starts with SIGINT ignored)
MODULE = sys.argv.pop(1)
class _Trip(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, _Trip())
from migrate.entry import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("module", ["migrate.cli", "typer"])
def test_ctrl_c_during_start_up(cell: Path, tmp_path: Path, module: str) -> None:
    """Caught while the CLI's modules are still loading (the command has not begun)."""
    store = tmp_path / "s"
    proc = subprocess.run(
        [sys.executable, "-c", _SIGINT_ON_IMPORT, module, "run", str(cell), "--store", str(store)],
        capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=120, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (130, STARTING)
    assert "Traceback" not in proc.stderr
    assert not store.exists()


@pytest.mark.slow
def test_ctrl_c_during_a_migration_then_a_rerun_resumes(cell: Path, tmp_path: Path) -> None:
    """A real SIGINT lands at the N-th commit phase of the migration (the test's kill runner
    sends it from inside the process, so it lands at a known point however fast or loaded the
    machine is); the rerun then prints the receipt of an uninterrupted run."""
    args = ("run", str(cell), "--page-rows", "1", "--json")
    ref = _spawn(*args, "--store", str(tmp_path / "ref"), cwd=tmp_path)
    reference = ref.communicate()[0]
    assert reference
    want = json.loads(reference)
    interrupted = 0
    for point in (1, 2, 3, 5, 8, 13, 21):
        store = tmp_path / f"s{point}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.kill_runner", f"sigint:{point}", *args,
             "--store", str(store)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=ENV,
        )  # fmt: skip
        out, err = proc.communicate(timeout=120)
        if proc.returncode == 0:  # past the last commit phase: nothing was interrupted
            break
        interrupted += 1
        assert proc.returncode == 130, err
        assert err == (
            "interrupted (Ctrl-C): `bbg-migrate run` stopped; every completed step is kept; "
            "run the same command again to resume\n"
        )
        again = _spawn(*args, "--store", str(store), cwd=tmp_path)
        out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert json.loads(out) == want
    assert interrupted >= 2


def test_ctrl_c_stops_tail_follow(tmp_path: Path, cell: Path) -> None:
    store = tmp_path / "s"
    # tail is a share command: SQLite stores only in this version (ENV is fixed at import, so
    # the engine is named on the command line rather than by the engine marker).
    done = _spawn("--engine", "sqlite", "run", str(cell), "--store", str(store), cwd=tmp_path)
    done.communicate(timeout=120)
    assert done.returncode == 0
    proc = _spawn("--store", str(store), "tail", "--follow", "--poll", "0.05", cwd=tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("{")
    code, _, err = _interrupt(proc)
    assert code == 130
    assert err == (
        "interrupted (Ctrl-C): `bbg-migrate tail` stopped; nothing was changed; "
        "run the same command again\n"
    )


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["--store", "s", "tail", "--follow"], "`bbg-migrate tail` stopped; nothing was changed"),
        (["fleet", "run", "m.toml"], "`bbg-migrate fleet run` stopped; every completed step"),
        (["--debug", "apply", "-"], "`bbg-migrate apply` stopped; nothing was committed"),
        (["redb", "scan", "x"], "`bbg-migrate redb scan` stopped; nothing was changed"),
    ],
)
def test_the_line_names_the_command(argv: list[str], what: str) -> None:
    assert interrupted_line(argv).startswith(f"interrupted (Ctrl-C): {what}")
