"""The documents stay true: every ``python`` block of docs/api.md runs, in order,
in a fresh directory; docs/operations.md names every exit code and environment variable; the
README links both documents."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bbg_core.errors import EXIT_CODES
from migrate.cli._help import ENVIRONMENT
from migrate.store.engine import ENGINE_ENV, default_engine
from tests.conftest import ROOT, gunzip_to
from tests.pipeline.helpers import LEGACY

DOCS = ROOT / "docs"


def test_every_python_block_of_the_api_guide_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(LEGACY / "signals-small.log", tmp_path / "signals.log")
    gunzip_to(LEGACY / "cell-small.redb.gz", tmp_path).rename(tmp_path / "cell.redb")
    monkeypatch.chdir(tmp_path)
    # The guide sets the engine of new stores as a user would; it is restored afterwards.
    monkeypatch.setenv(ENGINE_ENV, default_engine())
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "api.md").read_text("utf-8"), re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/api.md, python block {i + 1}", "exec"), namespace)


def test_the_operations_guide_names_every_exit_code_and_variable() -> None:
    text = (DOCS / "operations.md").read_text("utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in EXIT_CODES:
        assert re.search(rf"^\| {code} \|", section, re.M), f"exit code {code} not documented"
    for name in ENVIRONMENT:
        assert f"`{name}" in text, name


def test_the_readme_links_the_documents() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "docs/operations.md" in readme and "docs/api.md" in readme
