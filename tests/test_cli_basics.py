"""Meta-tests of the CLI surface: help, version, exit codes documented."""

from __future__ import annotations

import re
import subprocess
import sys

from bbg_core.errors import EXIT_CODES
from tests.conftest import ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, check=False
    )


def test_version_names_readers() -> None:
    res = run("--version")
    assert res.returncode == 0
    assert res.stdout.startswith("bbg-migrate ")
    assert re.search(r"^redb reader: (c|python)$", res.stdout, re.M)


def test_unknown_command_is_usage_error() -> None:
    res = run("no-such-command")
    assert res.returncode == 2


def test_every_exit_code_is_documented_in_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for code in EXIT_CODES:
        assert re.search(rf"^\| {code} \|", readme, re.M), code


def test_demo_runs() -> None:
    res = run("demo")
    assert res.returncode == 0, res.stderr
    assert "application_content" in res.stdout
