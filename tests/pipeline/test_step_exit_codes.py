"""Step verbs in a script (issue 28, item 8): `stage --pages N` exits 5 while rows are left
and 0 once staging is complete; a step run before an earlier one finished exits 5 naming the
step to run; the README's loop stages a source of many pages and stops on a real error."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True,
                          text=True, env=ENV, cwd=ROOT, timeout=300)  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "cell.redb"
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    return path


def test_out_of_order_steps_exit_5_and_name_the_step(source: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "bbg")
    assert cli("seal", str(source), "--store", store).returncode == 0
    early = cli("validate", str(source), "--store", store, "--json")
    assert early.returncode == 5, early.stderr
    assert json.loads(early.stdout)["code"] == "not-ready"
    assert "run `stage`" in early.stderr
    staged = []
    while True:
        step = cli("stage", str(source), "--store", store, "--pages", "1", "--page-rows", "64")
        staged.append(step.returncode)
        if step.returncode != 5:
            break
        assert "staging is not complete" in step.stderr
    assert staged == [5, 5, 5, 0]  # 220 rows in pages of 64
    too_soon = cli("activate", str(source), "--store", store)
    assert too_soon.returncode == 5 and "run `validate` first" in too_soon.stderr
    assert cli("validate", str(source), "--store", store).returncode == 0
    assert cli("activate", str(source), "--store", store).returncode == 0


def test_the_readmes_loop_stages_in_bounded_calls(source: Path, tmp_path: Path) -> None:
    """The README's script, run by bash as written there (paths and page size substituted)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    loop = next(line for line in readme.splitlines() if line.startswith("until bbg-migrate stage"))
    script = "\n".join([
        "set -u",
        f"bbg-migrate() {{ {sys.executable} -m migrate \"$@\" --store '{tmp_path / 'bbg'}'; }}",
        "bbg-migrate seal cell.redb",
        loop.replace("--pages 100", "--pages 1 --page-rows 64"),
        "bbg-migrate validate cell.redb && bbg-migrate activate cell.redb --json",
    ])  # fmt: skip
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=ENV,
                          cwd=source.parent, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout.splitlines()[-1])
    assert sum(receipt["counts"]["rows"].values()) == 220
    assert done.stderr.count("staging is not complete") == 3
