"""Retiring a source: resumable after a kill at any file operation, through symbolic links,
and answering only for the import that retired it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.pipeline.helpers import LEGACY, cli, unpack

SMALL = LEGACY / "cell-small.redb.gz"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The receipt a retiring run prints (a pure function of the source and options)."""
    base = tmp_path_factory.mktemp("ref")
    src = unpack(SMALL, base)
    done = cli(
        "run", str(src), "--store", str(base / "bbg"), "--retire-source", "--yes", "--json"
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _retired_well(src: Path, original: bytes, receipt: str) -> None:
    assert src.is_dir(), "the source path must be the retirement directory"
    assert (src / "source").read_bytes() == original
    record = json.loads((src / "retirement.json").read_text())
    assert record["receipt"] == json.loads(receipt)
    assert not [n for n in os.listdir(src.parent) if n.endswith(".retiring")]


def _kill_then_rerun(tmp_path: Path, point: int, reference: str, *, again: tuple[str, ...]) -> bool:
    """Kill a retiring run before its ``point``-th file operation, rerun; False once the
    run gets past the last operation (nothing left to kill)."""
    work = tmp_path / f"p{point}"
    src = unpack(SMALL, work)
    original = src.read_bytes()
    store = str(work / "bbg")
    killed = cli("run", str(src), "--store", store, "--retire-source", "--yes", "--json",
                 kill_at_file_op=point)  # fmt: skip
    if killed.returncode == 0:
        return False
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    rerun = cli("run", str(src), "--store", store, "--json", *again)
    assert rerun.returncode == 0, (point, rerun.stderr)
    assert rerun.stdout == reference, point
    _retired_well(src, original, reference)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("point", [1, 2, 8, 9])
def test_a_retirement_killed_at_a_file_operation_is_finished_by_the_rerun(
    tmp_path: Path, reference: str, point: int
) -> None:
    # 1: before the directory exists; 2: before the link; 8: before the source's name is
    # unlinked; 9: unlinked, not yet renamed into place (the case that could not resume).
    assert _kill_then_rerun(tmp_path, point, reference, again=("--retire-source", "--yes"))


@pytest.mark.slow
def test_kill_at_every_file_operation_of_a_retirement(tmp_path: Path, reference: str) -> None:
    point = 0
    while True:
        point += 1
        # Alternate: the rerun finishes the retirement with or without --retire-source
        # (the journal says one is under way).
        again = ("--retire-source", "--yes") if point % 2 else ()
        if not _kill_then_rerun(tmp_path, point, reference, again=again):
            break
    assert point > 9  # mkdir, link, open, write, fsync, replace, fsync, unlink, rename, fsync


@pytest.mark.parametrize("relative", [False, True], ids=["absolute-link", "relative-link"])
def test_a_symlinked_source_retires_the_file_it_names(
    tmp_path: Path, reference: str, relative: bool
) -> None:
    real = unpack(SMALL, tmp_path / "data")
    original = real.read_bytes()
    link = tmp_path / "links" / "cell.redb"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(real, link.parent) if relative else real)
    store = str(tmp_path / "bbg")
    done = cli("run", str(link), "--store", store, "--retire-source", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == reference
    _retired_well(real, original, reference)  # the file the link names, not the link
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert not [n for n in os.listdir(link.parent) if n.endswith(".retiring")]
    again = cli("run", str(link), "--store", store, "--retire-source", "--yes", "--json")
    assert again.returncode == 0 and again.stdout == reference, again.stderr


@pytest.mark.slow
def test_a_retired_path_answers_only_for_its_import(tmp_path: Path, reference: str) -> None:
    src = unpack(SMALL, tmp_path)
    a, b = tmp_path / "A", tmp_path / "B"
    assert cli("run", str(src), "--store", str(a), "--retire-source", "--yes").returncode == 0
    same = cli("run", str(src), "--store", str(a), "--json")
    assert same.returncode == 0 and same.stdout == reference
    plan = cli("plan", str(src), "--store", str(a))
    assert plan.returncode == 0 and "internal error" not in plan.stderr, plan.stderr
    for args in (
        ("run", str(src), "--store", str(b), "--json"),
        ("plan", str(src), "--store", str(b)),
        ("plan", str(src), "--store", str(b), "--json"),
        ("run", str(src), "--store", str(a), "--nonce", "ab" * 32),
        ("run", str(src), "--store", str(a), "--subject", "cd" * 32, "--map",
         f"{'ef' * 32}={'01' * 32}"),
    ):
        done = cli(*args)
        assert done.returncode == 4, (args, done.stdout, done.stderr)
        assert "retired" in done.stderr and str(src / "source") in done.stderr, done.stderr
        if "--json" in args:  # one error document
            assert json.loads(done.stdout)["exit_code"] == 4
        else:
            assert done.stdout == ""
    assert not b.exists()
