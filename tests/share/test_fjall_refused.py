"""The share commands on a Fjall store: refused by name, never a traceback, nothing written.

nohistory and excise work on SQLite stores only in this version (sharing a Fjall store is
the sharing issue; ``tail`` and ``follow`` read a Fjall store: test_tail_fjall.py;
``snapshot``, ``restore``, ``backup``, ``apply`` and ``mcp`` work on both engines:
test_snapshot_fjall.py, test_backup_fjall.py, test_apply_fjall.py, test_mcp_fjall.py).
Given a Fjall store each exits 1 (store error) with the named refusal of
:func:`migrate.store.readonly.refuse_fjall`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.store.engine import FJALL
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
    "nohistory": ["nohistory", "{ns}", "--yes"],
    "excise": ["excise", "--namespace", "{ns}", "--yes"],
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
