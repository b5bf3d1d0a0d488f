"""The share commands on a Fjall store: refused by name, never a traceback, nothing written.

apply and mcp work on SQLite stores only in this version (sharing a Fjall store is the
sharing issue; ``tail`` and ``follow`` read a Fjall store: test_tail_fjall.py;
``snapshot``, ``restore`` and ``backup`` work on both engines: test_snapshot_fjall.py,
test_backup_fjall.py; ``nohistory`` and ``excise`` too: test_retention_fjall.py).  Given a
Fjall store each exits 1 (store error) with the named refusal of
:func:`migrate.store.readonly.refuse_fjall`; apply, which creates the store it is given
when it does not exist, refuses to create a Fjall one (exit 2, naming ``--engine sqlite``)
and leaves nothing behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from migrate.store.engine import FJALL, records_dir
from tests.conftest import FIXTURES
from tests.share.conftest import run_cli
from tests.support import stores

pytestmark = pytest.mark.engine(FJALL)

REFUSED = "a BBG store on the Fjall engine"
SQLITE_ONLY = "works on SQLite stores only"


@pytest.fixture(scope="module")
def fjall_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A Fjall store migrated from cell-small, and one of its namespaces."""
    import gzip

    base = tmp_path_factory.mktemp("fjall-share")
    src = base / "cell.redb"
    src.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    store = base / "fj"
    res = run_cli("--engine", FJALL, "run", str(src), "--store", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert stores.engine_of(store) == FJALL
    res = run_cli("inspect", str(store), "--json")
    assert res.returncode == 0, res.stderr
    namespace = sorted(json.loads(res.stdout)["namespaces"])[0]
    return store, namespace


COMMANDS: dict[str, list[str]] = {
    "apply --json": ["apply", "-", "--json"],
    "apply": ["apply", "-"],
    "mcp": ["mcp"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_share_command_refuses_a_fjall_store_by_name(
    fjall_store: tuple[Path, str], tmp_path: Path, command: str
) -> None:
    store, namespace = fjall_store
    dest = tmp_path / "backup"
    args = [a.format(dest=dest, ns=namespace) for a in COMMANDS[command]]
    before = stores.dump(store)
    files = stores.store_files(store)
    res = run_cli("--store", str(store), *args, stdin=b"")
    err = res.stderr.decode()
    assert res.returncode == 1, (res.returncode, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert REFUSED in err and SQLITE_ONLY in err, err
    if args[-1] == "--json":
        doc = json.loads(res.stdout)
        assert (doc["code"], doc["exit_code"]) == ("store-refused", 1)
        assert doc["context"]["engine"] == FJALL
    assert stores.dump(store) == before and stores.store_files(store) == files
    assert not dest.exists()


@pytest.mark.parametrize("empty_dir", [False, True], ids=["absent", "empty-dir"])
@pytest.mark.parametrize("command", ["apply"])
def test_share_command_does_not_create_a_fjall_store(
    tmp_path: Path, command: str, empty_dir: bool
) -> None:
    """apply creates its store when it is absent (or an empty directory); on the Fjall
    engine (here asked for by name, as by default) it refuses before writing."""
    store = tmp_path / "new"
    if empty_dir:
        store.mkdir()
    res = run_cli("--engine", FJALL, "--store", str(store), command, "-", stdin=b"")
    err = res.stderr.decode()
    assert res.returncode == 2, (res.returncode, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert "SQLite stores only" in err and "--engine sqlite" in err, err
    assert sorted(os.listdir(tmp_path)) == (["new"] if empty_dir else [])
    assert not empty_dir or os.listdir(store) == []
    assert not records_dir(store).exists()
