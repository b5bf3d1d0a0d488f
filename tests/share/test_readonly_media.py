"""Read-only means read-only: ``inspect STORE``, ``doctor``, ``tail`` and
``snapshot`` work on a store whose files and directory are read-only, and on a store on
read-only media (a read-only bind mount), also when a crashed writer left a ``-wal`` behind,
and change no byte, no mtime and no directory entry.

As root, ``chmod`` does not stop writes: there :func:`tests.fs.fs_state` (every entry's name,
type, size, mtime and content) is what proves nothing was written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.store import DB_NAME
from tests.conftest import ROOT
from tests.fs import chmod_readonly, chmod_writable, fs_state, readonly_mount

COMMANDS = {
    "inspect": lambda s: ["inspect", s, "--json"],
    "doctor": lambda s: ["--store", s, "doctor", "--json"],
    "tail": lambda s: ["--store", s, "tail"],
    "snapshot": lambda s: ["--store", s, "snapshot"],
}
CHILD_ENV = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def _crashed_writer(store: Path) -> None:
    """Commit one more namespace, then die without closing: the -wal (holding that commit)
    and the -shm stay behind, as after a kill -9."""
    code = (
        "import os, sys\n"
        "from migrate.store import open_store\n"
        "from tests.share.stores import birth\n"
        "st = open_store(sys.argv[1])\n"
        "birth('after-crash').apply(st)\n"
        "os._exit(0)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(store)],
        check=True,
        cwd=ROOT,
        env={**os.environ, **CHILD_ENV},
    )
    assert (store / f"{DB_NAME}-wal").stat().st_size > 0


def _check_output(name: str, out: bytes, wal: bool) -> None:
    """The command read the committed state, including what only the -wal holds."""
    if name == "inspect":
        assert len(json.loads(out)["namespaces"]) == (4 if wal else 3)
    elif name == "doctor":
        assert json.loads(out)["namespaces"] == (4 if wal else 3)
    else:
        # The crashed writer's birth payload ("birth/after-crash") travels as hex content.
        assert out.count(b"\n") > 3
        assert (b"after-crash".hex().encode() in out) is wal


@pytest.fixture(params=["clean", "wal"])
def prepared(request: pytest.FixtureRequest, graph: Path) -> tuple[Path, bool]:
    wal = request.param == "wal"
    if wal:
        _crashed_writer(graph)
    return graph, wal


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_works_on_a_chmod_readonly_store_and_writes_nothing(
    name: str, prepared: tuple[Path, bool]
) -> None:
    store, wal = prepared
    chmod_readonly(store)
    try:
        before = fs_state(store)
        res = subprocess.run(
            [sys.executable, "-m", "migrate", *COMMANDS[name](str(store))],
            capture_output=True,
            check=False,
            env={**os.environ, **CHILD_ENV},
            timeout=300,
        )
        after = fs_state(store)
    finally:
        chmod_writable(store)
    assert res.returncode == 0, res.stderr.decode()
    assert after == before
    _check_output(name, res.stdout, wal)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_works_on_readonly_media_and_writes_nothing(
    name: str, prepared: tuple[Path, bool], tmp_path: Path
) -> None:
    store, wal = prepared
    before = fs_state(store)
    mnt = tmp_path / "media"
    res = readonly_mount(
        store,
        mnt,
        [sys.executable, "-m", "migrate", *COMMANDS[name](str(mnt))],
        env=CHILD_ENV,
    )
    assert res.returncode == 0, res.stderr.decode()
    assert fs_state(store) == before
    _check_output(name, res.stdout, wal)


@pytest.mark.slow
def test_follow_works_on_readonly_media(graph: Path, tmp_path: Path) -> None:
    """``tail --follow`` on media nobody can write: the committed history, nothing written."""
    before = fs_state(graph)
    mnt = tmp_path / "media"
    argv = [sys.executable, "-m", "migrate", "--store", str(mnt), "tail", "--follow"]
    res = readonly_mount(graph, mnt, ["timeout", "-s", "INT", "4", *argv], env=CHILD_ENV)
    assert res.stdout.count(b"\n") > 3, res.stderr.decode()
    assert b"unable to open" not in res.stderr
    assert fs_state(graph) == before
