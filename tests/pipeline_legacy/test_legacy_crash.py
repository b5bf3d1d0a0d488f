"""kill -9 at every commit point of a Signal log import; the medium fixtures when present."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from migrate import pipeline
from migrate.probe.inspect import inspect_bbg
from migrate.store.engine import default_engine
from tests.conftest import shared_fixtures
from tests.pipeline.helpers import cli, kill_at_every_commit, tree_state
from tests.pipeline_legacy.support import copy_fixture


@pytest.mark.slow
@pytest.mark.parametrize("path", ["one-pass", "staged"])
def test_kill_9_at_every_commit_point_of_a_log(path: str, tmp_path: Path) -> None:
    src = copy_fixture("signals-small.log", tmp_path / "src")
    source_state = tree_state(src)
    # ``--pages`` keeps a run into a new store on the staged path.
    pages = ("--pages", "1000") if path == "staged" else ()
    args = ("run", str(src), "--json", "--page-rows", "8", *pages)
    ref = cli(*args, "--store", str(tmp_path / "ref"))
    assert ref.returncode == 0, ref.stderr
    want = json.loads(ref.stdout)["digests"]["source_archive_sha256"]
    killed = kill_at_every_commit(args, tmp_path, want, ref.stdout)
    if path == "staged":
        # seal, 44 rows in pages of 8 (6 pages), staged, validated, activated: 2 points each.
        assert killed >= 2 * (1 + 6 + 3), killed
    else:
        # Built aside (:mod:`migrate.pipeline.fresh_legacy`): SQLite commits each page into
        # its build file; the real database's points are the guard, the build's files, the
        # rename, the records and the guard's removal.
        assert killed >= (2 * 6 if default_engine() == "sqlite" else 6), killed
    assert tree_state(src) == source_state


MEDIUM = ["signals-medium.log", "texts-medium.jsonl"]


@pytest.mark.slow
@pytest.mark.parametrize("name", MEDIUM)
def test_medium_fixture_migrates(name: str, tmp_path: Path) -> None:
    shared = shared_fixtures()
    if shared is None:
        pytest.skip("medium fixtures need BBG_SHARED_FIXTURES")
    src = shared / "legacy" / name
    want = json.loads(Path(f"{src}.expected.json").read_text())
    count = want.get("event_count", want.get("line_count"))
    started = time.monotonic()
    outcome = pipeline.run(pipeline.Job(src, tmp_path / "bbg"))
    elapsed = time.monotonic() - started
    assert outcome.receipt is not None
    legacy = outcome.receipt["legacy"]
    assert legacy["items"] == count
    report = inspect_bbg(tmp_path / "bbg")
    assert report["valid"], report["errors"]
    # A Signal log's namespace starts with our import record (index 0); a TextArchive's lines
    # sit at 0..n-1 as cybergraph puts them, its import record lives in the receipt.
    records = 1 if legacy["kind"] == "signal-log" else 0
    assert report["namespaces"][legacy["namespace"]]["history_rows"] == count + records
    size = want["size_bytes"]
    print(f"{name}: {count} items, {size} bytes in {elapsed:.2f} s: "
          f"{count / elapsed:.0f} items/s, {size / elapsed / 1e6:.2f} MB/s")  # fmt: skip
