"""``fleet run`` confirms the transfer seal as ``run STORE`` does (issue 28): a job whose
source is a BBG store not yet sealed seals it for good, so the jobs that would are named
(job, source, target), asked about on a terminal, and need ``--yes`` in a script; refused,
nothing is done (no seal, no target, no report directory)."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.fleet.helpers import LEGACY, fleet_cli
from tests.pipeline.helpers import tree_state
from tests.pipeline.test_retire_confirm import _on_a_terminal
from tests.transfer.helpers import migrated_store, status


def _fleet(tmp_path: Path) -> tuple[Path, Path]:
    """A manifest of two jobs: the transfer of a BBG store and a legacy migration."""
    source = migrated_store(tmp_path, "old")
    (tmp_path / "cell.redb").write_bytes(
        gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes())
    )
    manifest = tmp_path / "fleet.toml"
    manifest.write_text(
        '[[jobs]]\nname = "moving"\nsource = "old"\nstore = "new"\n'
        '[[jobs]]\nname = "legacy"\nsource = "cell.redb"\nstore = "fresh"\n',
        encoding="utf-8",
    )
    return manifest, source


def test_off_a_terminal_fleet_run_needs_yes_naming_the_seals(tmp_path: Path) -> None:
    manifest, source = _fleet(tmp_path)
    before = tree_state(tmp_path)
    res = fleet_cli("run", str(manifest), "--report-dir", str(tmp_path / "reports"))
    assert res.returncode == 2, res.stderr
    assert f"job moving seals {source} for {tmp_path / 'new'}" in res.stderr
    assert "legacy" not in res.stderr  # a migration seals no store
    assert "pass --yes" in res.stderr and "nothing was done" in res.stderr
    assert tree_state(tmp_path) == before  # no seal, no target, no report directory
    assert status(source) == "complete"

    res = fleet_cli("run", str(manifest), "--yes", "--report-dir", str(tmp_path / "reports"))
    assert res.returncode == 0, res.stderr
    assert status(source) == "export-v1"
    # Sealed now: a rerun (resuming, or after a kill) has nothing more to confirm.
    res = fleet_cli("run", str(manifest), "--report-dir", str(tmp_path / "reports"))
    assert res.returncode == 0, res.stderr


def test_on_a_terminal_fleet_run_asks_and_no_does_nothing(tmp_path: Path) -> None:
    manifest, source = _fleet(tmp_path)
    before = tree_state(tmp_path)
    args = ["fleet", "run", str(manifest), "--workers", "1"]
    code, text = _on_a_terminal(args, b"n\n", tmp_path)
    flat = " ".join(text.split())
    assert code == 2, text
    assert "Seal these sources and run the fleet? [y/N]" in flat
    assert f"job moving: seals {source} for {tmp_path / 'new'}" in flat
    assert "the transfer seal was not confirmed; nothing was done" in flat
    assert tree_state(tmp_path) == before
    code, text = _on_a_terminal(args, b"y\n", tmp_path)
    assert code == 0, text
    assert status(source) == "export-v1"


def test_a_fleet_of_legacy_sources_asks_nothing(tmp_path: Path) -> None:
    (tmp_path / "cell.redb").write_bytes(
        gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes())
    )
    manifest = tmp_path / "fleet.toml"
    manifest.write_text('[[jobs]]\nsource = "cell.redb"\nstore = "fresh"\n', encoding="utf-8")
    res = fleet_cli("run", str(manifest))
    assert res.returncode == 0, res.stderr
