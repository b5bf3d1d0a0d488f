"""A Fjall store under the SQLite-only read path: refused by name, nothing written.

Every sharing command works on a Fjall store (tail/follow: test_tail_fjall.py; snapshot,
restore, backup: test_snapshot_fjall.py, test_backup_fjall.py; apply, mcp:
test_apply_fjall.py, test_mcp_fjall.py; nohistory, excise: test_retention_fjall.py).  The
SQLite-only read path they dispatch away from still refuses a Fjall store by name
(:func:`migrate.store.readonly.refuse_fjall`) instead of opening it as SQLite.
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


def test_the_sqlite_only_reader_refuses_a_fjall_store_by_name(
    fjall_store: tuple[Path, str],
) -> None:
    """Every sharing command works on a Fjall store now; the SQLite-only read path under them
    still refuses one by name (StoreRefused, exit 1), never opening it as SQLite."""
    from bbg_core.errors import StoreRefused
    from migrate.store.readonly import open_sqlite_readonly

    store, _ = fjall_store
    before = stores.dump(store)
    with pytest.raises(StoreRefused, match=f"{REFUSED}.*{SQLITE_ONLY}"):
        with open_sqlite_readonly(store):
            pass
    assert stores.dump(store) == before
