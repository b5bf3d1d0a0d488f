"""kill -9 at every commit boundary of a migration: never half-advanced, rerun finishes.

Each write transaction of the pipeline has two crash points (just before COMMIT and just
after it); ``tests.kill_runner`` makes the child SIGKILL itself at the N-th.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.store.engine import default_engine
from tests.pipeline.helpers import (
    cell_fixtures,
    cli,
    expected,
    kill_at_every_commit,
    tree_state,
    unpack,
)

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")


@pytest.mark.slow
def test_kill_9_at_every_commit_point(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    source_state = tree_state(src)
    want = expected(SMALL)["archive_digest_sha256"]
    args = ("run", str(src), "--json", "--page-rows", "8")
    ref = cli(*args, "--store", str(tmp_path / "ref"))
    assert ref.returncode == 0, ref.stderr
    killed = kill_at_every_commit(args, tmp_path, want, ref.stdout)
    # SQLite: a transaction per staged page; Fjall (the real database): bbg's conversion built
    # aside in one pass, so its commit points are the guard, the build's files, the rename,
    # the records and the guard's removal.
    assert killed >= (50 if default_engine() == "sqlite" else 6), killed
    assert tree_state(src) == source_state
