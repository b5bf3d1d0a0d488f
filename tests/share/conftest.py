"""Fixtures for the share tests: built stores, a CLI runner, and a writer process."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from migrate.store.engine import ENGINE_ENV, FJALL, records_dir
from tests.conftest import ROOT
from tests.fjall.conftest import extract
from tests.share.stores import cell_small_store, graph_store

# Every sharing command works on both engines.  The tests here were written for the SQLite
# store and stay pinned to it: each test gets the engine("sqlite") marker unless it names an
# engine itself, and the stores built once for the package and by module fixtures are made on
# SQLite too.  The Fjall tests carry engine("fjall") and use the fjall_* fixtures at the end.
ENGINE = "sqlite"
HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.resolve().parents and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine(ENGINE))


@pytest.fixture(scope="package", autouse=True)
def _share_engine() -> Iterator[None]:
    """Module- and package-scoped fixtures run before the per-test engine marker applies."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENGINE_ENV, ENGINE)
        yield


@pytest.fixture(scope="session")
def _built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("share-stores")
    with pytest.MonkeyPatch.context() as mp:  # session-scoped: set up before the package's
        mp.setenv(ENGINE_ENV, ENGINE)
        return {"cell": cell_small_store(base / "cell"), "graph": graph_store(base / "graph")}


@pytest.fixture(params=["cell", "graph"])
def any_store(request: pytest.FixtureRequest, _built: dict[str, Path], tmp_path: Path) -> Path:
    """A fresh copy of one of the built stores (tests may write to it)."""
    dest = tmp_path / request.param
    shutil.copytree(_built[request.param], dest)
    return dest


@pytest.fixture
def cell_store(_built: dict[str, Path], tmp_path: Path) -> Path:
    dest = tmp_path / "cell"
    shutil.copytree(_built["cell"], dest)
    return dest


@pytest.fixture
def graph(_built: dict[str, Path], tmp_path: Path) -> Path:
    dest = tmp_path / "graph"
    shutil.copytree(_built["graph"], dest)
    return dest


def run_cli(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``bbg-migrate ARGS`` in a child process; returns its exit code and output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def spawn_writer() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start writer processes (tests.share._child); they are killed at teardown."""
    procs: list[subprocess.Popen[str]] = []

    def spawn(store: Path, count: int = 0, checkpoint: bool = False) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.share._child", "writer", str(store), str(count),
             "1" if checkpoint else "0"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        procs.append(proc)
        return proc

    yield spawn
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)


# -- Fjall stores, for the tests here that run on the Fjall engine ------------------------

CELL_SMALL = ROOT / "fixtures" / "legacy" / "cell-small.redb.gz"


@pytest.fixture(scope="session")
def fjall_migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fjall-stores")
    source = base / "cell.redb"
    source.write_bytes(gzip.decompress(CELL_SMALL.read_bytes()))
    dest = base / "bbg"
    done = run_cli("--engine", FJALL, "run", str(source), "--store", str(dest))
    assert done.returncode == 0, done.stderr
    return dest


@pytest.fixture(params=["migrated", "bbg-small"])
def fjall_source(request: pytest.FixtureRequest, fjall_migrated: Path, tmp_path: Path) -> Path:
    """A Fjall store ``run`` made (with our records), or bbg-small (none)."""
    if request.param == "bbg-small":
        return extract("bbg-small", tmp_path / "src")
    shutil.copytree(fjall_migrated, tmp_path / "bbg")
    shutil.copytree(records_dir(fjall_migrated), records_dir(tmp_path / "bbg"))
    return tmp_path / "bbg"
