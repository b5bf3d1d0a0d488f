"""Issue 13.8: start-up.  ``--version`` and ``detect`` import only what they need (which
modules, not how long: times are measured by benchmarks/startup.py); a run imports only the
command module it names, and the table saying which module that is stays right."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from migrate.cli import COMMAND_MODULES, first_word
from tests.conftest import ROOT

HEAVY = ("typer", "rich", "sqlite3", "_sqlite3", "jsonschema", "click", "migrate.cli",
         "migrate.pipeline", "migrate.fleet", "migrate.share", "migrate.store")  # fmt: skip


PROBE = """
import json, runpy, sys
sys.argv = ["bbg-migrate", *sys.argv[1:]]
try:
    runpy.run_module("migrate", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
sys.__stdout__.write("\\n" + json.dumps(sorted(sys.modules)) + "\\n")
"""


def imported(*args: str) -> set[str]:
    """Every module loaded by ``bbg-migrate ARGS`` by the time it exits."""
    res = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    found: set[str] = set(json.loads(res.stdout.splitlines()[-1]))
    return found


def test_version_imports_no_cli_no_sqlite_no_rich() -> None:
    found = imported("--version")
    assert "migrate.backends" in found
    assert not {m for m in found if m.split(".")[0] in HEAVY or m in HEAVY}


def test_detect_imports_typer_but_not_the_rest() -> None:
    found = imported("detect", "fixtures/legacy/signals-small.log")
    assert "typer" in found and "migrate.detect" in found
    assert "migrate.cli.cmd_inspect" in found and "migrate.cli.cmd_fleet" not in found
    unwanted = {"rich", "sqlite3", "_sqlite3", "jsonschema", "migrate.pipeline", "migrate.fleet",
                "migrate.share", "migrate.store"}  # fmt: skip
    assert not (found & unwanted), found & unwanted


@pytest.mark.parametrize("word", sorted(COMMAND_MODULES))
def test_command_table_names_the_defining_module(word: str) -> None:
    path = ROOT / "migrate" / "cli" / f"{COMMAND_MODULES[word]}.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "command":
            names.update(a.value for a in node.args if isinstance(a, ast.Constant))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_typer":
            names.update(k.value.value for k in node.keywords
                         if k.arg == "name" and isinstance(k.value, ast.Constant))  # fmt: skip
    assert word in names


def test_first_word_skips_root_options() -> None:
    assert first_word(["--store", "run", "doctor"]) == "doctor"
    assert first_word(["--debug", "-q", "detect", "x"]) == "detect"
    assert first_word(["--version"]) is None
