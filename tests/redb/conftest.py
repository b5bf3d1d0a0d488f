"""Fixtures for the redb tests: gunzipped copies, made once per session, read-only on disk;
and the reader backend every test runs against (both, in turn).

A module that compares the two backends itself sets ``COMPARES_BACKENDS = True``: its tests
are generated once (under the "c" parameter), not once per backend and then skipped.  The
only skip left is a real absence: the C extension was not built."""

from __future__ import annotations

import gzip
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from importers.redb import backend
from tests.redb.cases import Case


@pytest.fixture(scope="session")
def redb_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Case], Path]:
    """``redb_file(case)``: the case's decompressed file (made read-only: the reader must
    never need write access)."""
    root = tmp_path_factory.mktemp("redb")
    made: dict[str, Path] = {}

    def _get(case: Case) -> Path:
        if case.id not in made:
            path = root / f"{case.id}.redb"
            path.write_bytes(gzip.decompress(case.redb_gz.read_bytes()))
            os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            made[case.id] = path
        return made[case.id]

    return _get


NOT_BUILT = pytest.mark.skip(reason="the redb C extension is not built (pure-Python fallback)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    c = pytest.param("c", marks=NOT_BUILT) if backend.c_impl is None else "c"
    names = [c] if getattr(metafunc.module, "COMPARES_BACKENDS", False) else ["python", c]
    metafunc.parametrize("redb_backend", names, indirect=True, scope="session")


@pytest.fixture(scope="session", autouse=True)
def redb_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every redb test runs once per reader backend (see the module docstring): the default
    backend is switched for the session, and subprocesses follow it through
    ``BBG_MIGRATE_PURE``."""
    name: str = request.param
    previous = backend.set_default(name)
    saved = os.environ.get("BBG_MIGRATE_PURE")
    if name == "python":
        os.environ["BBG_MIGRATE_PURE"] = "1"
    else:
        os.environ.pop("BBG_MIGRATE_PURE", None)
    try:
        yield name
    finally:
        backend.set_default(previous)
        if saved is None:
            os.environ.pop("BBG_MIGRATE_PURE", None)
        else:
            os.environ["BBG_MIGRATE_PURE"] = saved
