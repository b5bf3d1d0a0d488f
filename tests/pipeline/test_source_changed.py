"""A source changed after it was sealed is noticed at every step.

A step continues the import its source was sealed for.  A source that no longer matches the
seal -- bytes appended, bytes rewritten in place (same size), or one byte flipped with the
mtime put back -- is refused with exit 3 naming the sealed import, never migrated as a new
import (the sealed one would stay ``staging`` forever).  Putting the sealed bytes back lets
the import continue; ``discard`` gives it up so the new bytes can be migrated.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.pipeline.helpers import LEGACY, cli
from tests.support.stores import records

ARCHIVE = LEGACY / "texts-cybergraph.jsonl"


def append(path: Path) -> None:
    first = path.read_bytes().splitlines(keepends=True)[0]
    with path.open("ab") as fh:
        fh.write(first)  # a valid line more: the archive is still valid


def rewrite(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[0], lines[-1] = lines[-1], lines[0]  # same bytes, same size, other order
    data = b"".join(lines)
    assert len(data) == path.stat().st_size
    path.write_bytes(data)


def flip_keeping_mtime(path: Path) -> None:
    st = path.stat()
    data = path.read_bytes()
    assert b'"created":3' in data
    path.write_bytes(data.replace(b'"created":3', b'"created":4', 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


CHANGES = [append, rewrite, flip_keeping_mtime]


def imports_in(store: Path) -> list[tuple[str, str]]:
    with records(store) as conn:
        return conn.execute("SELECT import_id, state FROM bbg_import_v1_imports").fetchall()


def _refused(done: object, import_id: str) -> None:
    res = done  # subprocess.CompletedProcess[str]
    assert res.returncode == 3, (res.stdout, res.stderr)  # type: ignore[attr-defined]
    text = res.stderr  # type: ignore[attr-defined]
    assert "changed since import" in text and import_id in text and "discard" in text, text


def _steps_until(point: str, src: Path, store: Path) -> str:
    """Run the steps before ``point``; returns the sealed import's id."""
    sealed = cli("seal", str(src), "--store", str(store), "--json")
    assert sealed.returncode == 0, sealed.stderr
    iid = __import__("json").loads(sealed.stdout)["import_id"]
    order = ["stage", "validate", "activate"]
    for step in order[: order.index(point)]:
        done = cli(step, str(src), "--store", str(store))
        assert done.returncode == 0, (step, done.stderr)
    return iid


# Every step meets every change under -m slow; by default each step meets one change.
_FAST = {("stage", "append"), ("validate", "rewrite"), ("activate", "flip_keeping_mtime")}
_CASES = [
    pytest.param(point, change, id=f"{point}-{change.__name__}",
                 marks=() if (point, change.__name__) in _FAST else (pytest.mark.slow,))
    for point in ("stage", "validate", "activate")
    for change in CHANGES
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("point", "change"), _CASES)
def test_a_step_after_a_change_is_refused_naming_the_sealed_import(
    tmp_path: Path, point: str, change: Callable[[Path], None]
) -> None:
    src = tmp_path / "texts.jsonl"
    shutil.copyfile(ARCHIVE, src)
    original = src.read_bytes()
    store = tmp_path / "bbg"
    iid = _steps_until(point, src, store)
    change(src)
    _refused(cli(point, str(src), "--store", str(store)), iid)
    _refused(cli("run", str(src), "--store", str(store)), iid)
    _refused(cli("plan", str(src), "--store", str(store)), iid)
    if point == "activate":  # not "not validated yet; run validate", which migrated the file
        _refused(cli("validate", str(src), "--store", str(store)), iid)
    assert imports_in(store) == [(iid, "staging")]  # no second import was started
    # The sealed bytes back: the import continues where it was.
    src.write_bytes(original)
    done = cli(point, str(src), "--store", str(store))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.__name__)
def test_an_interrupted_run_on_a_changed_source_is_refused(
    tmp_path: Path, change: Callable[[Path], None]
) -> None:
    src = tmp_path / "texts.jsonl"
    shutil.copyfile(ARCHIVE, src)
    store = tmp_path / "bbg"
    first = cli("run", str(src), "--store", str(store), "--pages", "1", "--page-rows", "2",
                "--json")  # fmt: skip
    assert first.returncode == 5, first.stderr  # staging stopped with pages left
    iid = __import__("json").loads(first.stdout)["import_id"]
    change(src)
    _refused(cli("run", str(src), "--store", str(store)), iid)
    assert imports_in(store) == [(iid, "staging")]


@pytest.mark.slow
def test_discard_gives_the_sealed_import_up(tmp_path: Path) -> None:
    src = tmp_path / "texts.jsonl"
    shutil.copyfile(ARCHIVE, src)
    store = tmp_path / "bbg"
    iid = _steps_until("validate", src, store)
    append(src)
    _refused(cli("run", str(src), "--store", str(store)), iid)
    done = cli("discard", iid, "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    again = cli("run", str(src), "--store", str(store), "--json")
    assert again.returncode == 0, again.stderr
    states = dict(imports_in(store))
    assert states[iid] == "discarded" and sorted(states.values()) == ["active", "discarded"]
    # A published import cannot be discarded.
    active = next(i for i, s in states.items() if s == "active")
    assert cli("discard", active, "--store", str(store)).returncode == 4
    assert cli("discard", "0" * 64, "--store", str(store)).returncode == 1


def test_a_symlink_and_a_relative_path_name_the_same_source(tmp_path: Path) -> None:
    src = tmp_path / "texts.jsonl"
    shutil.copyfile(ARCHIVE, src)
    link = tmp_path / "link.jsonl"
    link.symlink_to(src.name)
    store = tmp_path / "bbg"
    iid = _steps_until("stage", src, store)
    append(src)
    done = cli("stage", "link.jsonl", "--store", str(store), cwd=tmp_path)
    _refused(done, iid)
