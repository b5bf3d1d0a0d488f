"""kill -9 at every commit boundary of a migration: never half-advanced, rerun finishes.

Each write transaction of the pipeline has two crash points (just before COMMIT and just
after it); ``BBG_MIGRATE_KILL_AT_COMMIT=N`` makes the child SIGKILL itself at the N-th.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
from pathlib import Path

import pytest

from migrate.cell_rules import DIGEST_ORDER
from tests.pipeline.helpers import cell_fixtures, cli, expected, tree_state, unpack

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")
EMPTY_DIGEST = hashlib.sha256(bytes(range(5))).hexdigest()


def live_digest(store: Path) -> str | None:
    """The archive digest of the store's live five tables, or None when there is no store."""
    db = store / "bbg.sqlite3"
    if not db.exists():
        return None
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        h = hashlib.sha256()
        for ordinal, table in enumerate(DIGEST_ORDER):
            h.update(bytes([ordinal]))
            for key, value in conn.execute(f"SELECT key, value FROM {table} ORDER BY key"):
                h.update(
                    len(key).to_bytes(8, "little") + key + len(value).to_bytes(8, "little") + value
                )
        return h.hexdigest()
    finally:
        conn.close()


@pytest.mark.slow
def test_kill_9_at_every_commit_point(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    source_state = tree_state(src)
    want = expected(SMALL)["archive_digest_sha256"]
    args = ("run", str(src), "--json", "--page-rows", "8")
    ref = cli(*args, "--store", str(tmp_path / "ref"))
    assert ref.returncode == 0, ref.stderr
    killed = 0
    point = 0
    while True:
        point += 1
        store = tmp_path / f"s{point}"
        res = cli(*args, "--store", str(store), env={"BBG_MIGRATE_KILL_AT_COMMIT": str(point)})
        if res.returncode == 0:
            break  # past the last commit point
        assert res.returncode == -signal.SIGKILL, res.stderr
        killed += 1
        assert live_digest(store) in (None, EMPTY_DIGEST, want), f"half-advanced at point {point}"
        again = cli(*args, "--store", str(store))
        assert again.returncode == 0, again.stderr
        assert again.stdout == ref.stdout, f"receipt differs after a kill at point {point}"
        assert live_digest(store) == want
    assert killed >= 50, killed
    assert tree_state(src) == source_state
