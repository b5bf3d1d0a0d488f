"""The transfer seal is for good, so it is confirmed like ``--retire-source``: asked on a
terminal, ``--yes`` in a script, refused (exit 2, nothing done) when nobody can be asked --
by ``transfer`` and by ``run``/``seal``/``stage`` of a BBG store; a source already sealed
is not asked about again (issue 28 item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.helpers import cli, tree_state
from tests.pipeline.test_retire_confirm import _on_a_terminal
from tests.transfer.helpers import migrated_store, status


@pytest.mark.parametrize("verb", ["transfer", "run", "seal", "stage"])
def test_off_a_terminal_the_seal_needs_yes(tmp_path: Path, verb: str) -> None:
    source = migrated_store(tmp_path)
    before = tree_state(tmp_path)
    res = cli(verb, str(source), "--store", str(tmp_path / "t"))
    assert res.returncode == 2, res.stderr
    assert "the transfer seals" in res.stderr and "pass --yes" in res.stderr
    assert "nothing was done" in res.stderr
    assert tree_state(tmp_path) == before  # not sealed, no target
    assert status(source) == "complete"


def test_yes_seals_and_a_sealed_source_is_not_asked_again(tmp_path: Path) -> None:
    source = migrated_store(tmp_path)
    target = tmp_path / "t"
    assert cli("seal", "--yes", str(source), "--store", str(target)).returncode == 0
    assert status(source) == "export-v1"
    res = cli("transfer", str(source), "--store", str(target))  # the seal is there already
    assert res.returncode == 0, res.stderr


def test_on_a_terminal_it_asks_and_no_does_nothing(tmp_path: Path) -> None:
    source = migrated_store(tmp_path)
    before = tree_state(tmp_path)
    args = ["transfer", str(source), "--store", str(tmp_path / "t")]
    code, text = _on_a_terminal(args, b"n\n", tmp_path)
    flat = " ".join(text.split())
    assert code == 2, text
    assert "Seal the source and transfer? [y/N]" in flat and "refuses every write" in flat
    assert "the transfer seal was not confirmed; nothing was done" in flat
    assert tree_state(tmp_path) == before
    code, text = _on_a_terminal(args, b"y\n", tmp_path)
    assert code == 0, text
    assert status(source) == "export-v1"
