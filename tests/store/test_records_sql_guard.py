"""On a Fjall store bbg's five tables live in the keyspace; the records beside it hold tables
of the same names that stay empty.  SQL naming one of them on a Fjall transaction or view is
refused by name (it once silently wrote a boundary's head there), while SQL on the records'
own tables still runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bbg_core.errors import StoreError
from migrate.store import open_store
from migrate.store.engine import FJALL

pytestmark = pytest.mark.engine(FJALL)

BBG_TABLES = ("application_content", "application_unique_claims", "application_requests",
              "application_history", "application_heads")  # fmt: skip


@pytest.mark.parametrize("table", BBG_TABLES)
def test_sql_on_bbgs_tables_is_refused_on_a_fjall_store(tmp_path: Path, table: str) -> None:
    with open_store(tmp_path / "bbg", create=True) as store:
        with pytest.raises(StoreError, match="live in the keyspace"):
            store.one(f"SELECT count(*) FROM {table}")
        with store.transaction() as tx:
            with pytest.raises(StoreError, match="live in the keyspace"):
                tx.one(f"SELECT value FROM {table} WHERE key = ?", (b"k",))
            with pytest.raises(StoreError, match="live in the keyspace"):
                tx.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (b"k", b"v"))
            with pytest.raises(StoreError, match="live in the keyspace"):
                list(tx.rows(f"SELECT key FROM {table}"))
            assert tx.one("SELECT count(*) FROM bbg_retention_v1_boundaries") == (0,)
