"""backup: a verified, atomically published copy; never overwrites; works under a writer."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bbg_core.errors import StoreRefused, UsageError
from migrate.share import backup, doctor
from migrate.store import DB_NAME, connection, open_store
from tests.share.conftest import run_cli
from tests.share.stores import birth


def test_backup_is_a_healthy_equal_store(any_store: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    summary = backup(any_store, dest)
    assert sorted(p.name for p in dest.iterdir()) == [DB_NAME]  # no -wal left behind
    original, copy = doctor(any_store), doctor(dest)
    assert copy["healthy"]
    assert summary["archive_digest_sha256"] == original["tables"]["archive_digest_sha256"]
    assert copy["tables"]["archive_digest_sha256"] == original["tables"]["archive_digest_sha256"]
    assert copy["fences"] == original["fences"]
    assert copy["generation"] == original["generation"]
    # no temporary directory is left beside the destination
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_refuses_to_overwrite(graph: Path, tmp_path: Path) -> None:
    any_store = graph
    dest = tmp_path / "copy"
    dest.mkdir()
    with pytest.raises(UsageError, match="never overwrites"):
        backup(any_store, dest)
    assert list(dest.iterdir()) == []
    (tmp_path / "file").write_text("keep")
    done = run_cli("--store", str(any_store), "backup", str(tmp_path / "file"))
    assert done.returncode == 2
    assert b"already exists" in done.stderr
    assert (tmp_path / "file").read_text() == "keep"


def test_no_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreRefused):
        backup(tmp_path / "nothing", tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_cli_backup_then_doctor(cell_store: Path, tmp_path: Path) -> None:
    dest = tmp_path / "b"
    done = run_cli("backup", str(dest), "--store", str(cell_store), "--json")
    assert done.returncode == 0, done.stderr
    assert run_cli("--store", str(dest), "doctor").returncode == 0


@pytest.mark.parametrize("watched", [False, True], ids=["one-step", "stepwise-progress"])
def test_backup_while_another_process_writes(
    graph: Path,
    tmp_path: Path,
    spawn_writer: Callable[..., subprocess.Popen[str]],
    watched: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Watched (progress), the copy goes 2 pages a step, all in one read
    transaction: still a consistent state under a writer, and the page counter only grows."""
    seen: list[tuple[str, int, int | None, str]] = []
    if watched:
        monkeypatch.setattr(connection, "BACKUP_STEP_PAGES", 2)
    writer = spawn_writer(graph, 0)
    assert writer.stdout is not None
    for _ in range(5):  # let it commit a few times first
        writer.stdout.readline()
    copies = []
    for n in range(3):
        dest = tmp_path / f"b{n}"
        backup(graph, dest, progress=(lambda *a: seen.append(a)) if watched else None)
        copies.append(dest)
        time.sleep(0.05)
    assert writer.poll() is None, "the writer must still be running"
    writer.kill()
    indices = []
    for dest in copies:
        report = doctor(dest)
        assert report["healthy"], report["problems"]
        with open_store(dest) as st:
            head = st.head(birth("child").namespace)
            assert head is not None
            indices.append(head.index)
    assert indices == sorted(indices) and indices[-1] > indices[0]
    if watched:
        runs: list[list[tuple[int, int | None]]] = []
        for stage, done, total, unit in seen:
            if stage == "backup":
                assert unit == "pages"
                if done == 0:
                    runs.append([])  # a new copy starts
                runs[-1].append((done, total))
        assert len(runs) == 3
        for run in runs:
            assert len(run) > 2, run  # several steps, the total known from the first report
            assert [d for d, _ in run] == sorted(d for d, _ in run)
            assert run[-1][0] == run[-1][1] == run[0][1]
