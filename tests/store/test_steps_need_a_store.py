"""The steps after the seal (``validate``, ``activate``) and every command that reads or
changes an existing store never create one: a ``--store`` that does not exist is the one
``PATH: cannot read: REASON`` error (exit 1, docs/operations.md's exit-code table), and
nothing appears on disk -- no store, no records directory, no seal on a BBG store source.
Only the creating verbs (``run``, ``seal``, ``stage``, ``apply``, ``restore``, ...) create.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.pipeline.helpers import cli, tree_state

NS = "a" * 64
LOG = FIXTURES / "legacy" / "bbg-cli-small.log"


def _bbg_small(dest: Path) -> Path:
    with tarfile.open(FIXTURES / "fjall" / "bbg-small.tar.gz") as tar:
        tar.extractall(dest, filter="tar")
    return dest / "bbg-small"


@pytest.mark.parametrize("verb", ["validate", "activate"])
@pytest.mark.parametrize("source", ["legacy", "bbg-store"])
def test_a_step_refuses_a_missing_store_and_creates_nothing(
    tmp_path: Path, verb: str, source: str
) -> None:
    src = str(LOG) if source == "legacy" else str(_bbg_small(tmp_path / "src"))
    before = tree_state(tmp_path)
    # --yes: the seal's confirmation is given, so only the missing store can stop the step.
    res = cli("--store", "nope", verb, src, *(["--yes"] if source == "bbg-store" else []),
              cwd=tmp_path)  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "nope: cannot read: No such file or directory; no BBG store here" in res.stderr
    assert not (tmp_path / "nope").exists() and not (tmp_path / "nope.bbg-migrate").exists()
    assert tree_state(tmp_path) == before  # the BBG store source was not sealed either


@pytest.mark.parametrize("verb", ["validate", "activate"])
def test_a_step_refuses_an_empty_directory(tmp_path: Path, verb: str) -> None:
    (tmp_path / "empty").mkdir()
    res = cli("--store", "empty", verb, str(LOG), cwd=tmp_path)
    assert res.returncode == 1 and "empty: no BBG store here" in res.stderr, res.stderr
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize("args", [
    ["doctor"], ["tail"], ["snapshot"], ["imports"], ["upgrade"], ["discard", "ab" * 32],
    ["nohistory", NS], ["excise", "--namespace", NS], ["backup", "dest"], ["mcp"],
])  # fmt: skip
def test_commands_on_an_existing_store_create_none(tmp_path: Path, args: list[str]) -> None:
    res = cli("--store", "nope", *args, cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    assert "nope: cannot read: No such file or directory" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
